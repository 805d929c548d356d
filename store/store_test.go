package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/internal/testpg"
)

// The package's tests share one PostgreSQL server (each test its own database); the outage
// test runs its own, which it stops and starts.
var (
	pgOnce   sync.Once
	pgShared *testpg.Server
	pgErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pgShared != nil {
		pgShared.Close()
	}
	os.Exit(code)
}

// newDB is an empty database on the shared server.
func newDB(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL server; skipped with -short (make test and CI run it)")
	}
	pgOnce.Do(func() { pgShared, pgErr = testpg.New() })
	if pgErr != nil {
		if errors.Is(pgErr, testpg.ErrNoBinaries) && testing.Short() {
			t.Skip(pgErr)
		}
		t.Fatal(pgErr)
	}
	return pgShared.NewDatabase(t)
}

// open opens and migrates a new database.
func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), newDB(t))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	_, err = s.Migrate(context.Background(), 0)
	require.NoError(t, err)
	return s
}

// sample diagnoses one of the repository's sample bundles as `coroner analyze` does.
func sample(t *testing.T, name string, meta Meta) *Analysis {
	t.Helper()
	ctx := context.Background()
	o := diagnose.DefaultOptions()
	o.Version = "test"
	d, err := diagnose.Run(ctx, diagnose.Input{Paths: []string{filepath.Join("..", "samples", name)}}, o)
	require.NoError(t, err)
	defer d.Close()
	if meta.RulesVersion == "" {
		meta.RulesVersion = "rules-1"
	}
	a, err := FromDiagnosis(ctx, d, meta)
	require.NoError(t, err)
	return a
}

// count runs a counting query.
func count(t *testing.T, s *Store, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, s.pool.QueryRow(context.Background(), query, args...).Scan(&n), query)
	return n
}

func TestMigrateFromEmptyAndFromEveryVersion(t *testing.T) {
	ctx := context.Background()
	ms, err := Migrations()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(ms), 2)
	for from := 0; from < len(ms); from++ {
		t.Run(fmt.Sprintf("from-%d", from), func(t *testing.T) {
			s, err := Open(ctx, newDB(t))
			require.NoError(t, err)
			defer s.Close()
			if from > 0 {
				applied, err := s.Migrate(ctx, from)
				require.NoError(t, err)
				require.Len(t, applied, from)
			}
			v, err := s.SchemaVersion(ctx)
			require.NoError(t, err)
			assert.Equal(t, from, v)
			if from < len(ms) {
				assert.ErrorAs(t, s.Put(ctx, &Analysis{BundleDigest: "x", Job: Job{UID: "u"}}), new(*SchemaError), "a store behind the schema takes no rows")
			}
			applied, err := s.Migrate(ctx, 0)
			require.NoError(t, err)
			require.Len(t, applied, len(ms)-from)
			for i, m := range applied {
				assert.Equal(t, from+i+1, m.Version)
			}
			v, err = s.SchemaVersion(ctx)
			require.NoError(t, err)
			assert.Equal(t, len(ms), v)
			applied, err = s.Migrate(ctx, 0)
			require.NoError(t, err)
			assert.Empty(t, applied, "a second migrate applies nothing")
			require.NoError(t, s.Put(ctx, sample(t, "pytorchjob-gpu-xid", Meta{Cluster: "c1", AnalyzedAt: time.Unix(1e9, 0)})))
		})
	}
}

func TestMigrateRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	_, err := s.pool.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (999, 'future')`)
	require.NoError(t, err)
	var se *SchemaError
	_, err = s.Migrate(ctx, 0)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 999, se.Have)
	require.ErrorAs(t, s.Put(ctx, sample(t, "pytorchjob-gpu-xid", Meta{Cluster: "c1"})), &se)
}

func TestPutOneCurrentAnalysisPerAttempt(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	a := sample(t, "pytorchjob-cuda-oom-rank", Meta{Cluster: "c1", BundleURI: "file:///b/1.tar.gz", AnalyzedAt: t0})
	require.NotEmpty(t, a.Findings)

	current := func() (n int, rules string) {
		require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*), max(rules_version) FROM fleet_analyses`).Scan(&n, &rules))
		return n, rules
	}
	// The same analysis twice: one row of each.
	require.NoError(t, s.Put(ctx, a))
	require.NoError(t, s.Put(ctx, a))
	assert.Equal(t, 1, count(t, s, `SELECT count(*) FROM analyses`))
	assert.Equal(t, len(a.Findings), count(t, s, `SELECT count(*) FROM findings`))
	assert.Equal(t, len(a.Pods), count(t, s, `SELECT count(*) FROM pods`))
	assert.Equal(t, len(a.Nodes), count(t, s, `SELECT count(*) FROM nodes`))
	assert.Equal(t, 1, count(t, s, `SELECT count(*) FROM jobs`))

	// Re-analyzed with new rules: a second analysis, which is now the current one.
	b := *a
	b.RulesVersion, b.AnalyzedAt = "rules-2", t0.Add(time.Hour)
	require.NoError(t, s.Put(ctx, &b))
	assert.Equal(t, 2, count(t, s, `SELECT count(*) FROM analyses`))
	n, rules := current()
	assert.Equal(t, 1, n)
	assert.Equal(t, "rules-2", rules)

	// A queue replaying the older analysis does not take it back.
	require.NoError(t, s.Put(ctx, a))
	n, rules = current()
	assert.Equal(t, 1, n)
	assert.Equal(t, "rules-2", rules)

	// The same failure collected again (another bundle of the same job attempt): still one.
	c := b
	c.BundleDigest, c.BundleURI, c.AnalyzedAt = "sha256:another", "file:///b/2.tar.gz", t0.Add(2*time.Hour)
	require.NoError(t, s.Put(ctx, &c))
	assert.Equal(t, 1, count(t, s, `SELECT count(*) FROM fleet_interruptions`))
	assert.Equal(t, "file:///b/2.tar.gz", str(t, s, `SELECT bundle_uri FROM fleet_analyses`))

	// The job restarted as a whole and failed again: a second attempt, a second interruption.
	d := c
	d.BundleDigest, d.Attempt, d.AnalyzedAt = "sha256:attempt-1", 1, t0.Add(3*time.Hour)
	require.NoError(t, s.Put(ctx, &d))
	assert.Equal(t, 2, count(t, s, `SELECT count(*) FROM fleet_interruptions`))

	// The same job uid in another cluster is another job.
	e := *a
	e.Job.Cluster = "c2"
	require.NoError(t, s.Put(ctx, &e))
	assert.Equal(t, 3, count(t, s, `SELECT count(*) FROM fleet_interruptions`))
	assert.Equal(t, 2, count(t, s, `SELECT count(*) FROM jobs`))
}

func str(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	var v string
	require.NoError(t, s.pool.QueryRow(context.Background(), query, args...).Scan(&v), query)
	return v
}

func TestPutWritesTheDiagnosis(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	a := sample(t, "pytorchjob-gpu-xid", Meta{Cluster: "c1", AnalyzedAt: time.Unix(2e9, 0)})
	require.NoError(t, s.Put(ctx, a))
	require.NotNil(t, a.Root)
	var category, fault, node string
	var gpus int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT cause, cause_fault, node, gpus FROM fleet_interruptions`).Scan(&category, &fault, &node, &gpus))
	assert.Equal(t, a.Root.Category, category)
	assert.Equal(t, "hardware", fault)
	assert.Equal(t, a.Root.Node, node)
	assert.Equal(t, a.Job.GPUs, gpus)
	// The node of a hardware root cause is ranked with its Xid.
	var xid *string
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT xid FROM fleet_node_failures WHERE root`).Scan(&xid))
	require.NotNil(t, xid, "the root cause's title names its Xid: %q", a.Root.Title)
	assert.True(t, strings.Contains(a.Root.Title, *xid))
}

func TestPasswordsNeverInErrors(t *testing.T) {
	for _, dsn := range []string{
		"postgres://coroner:s3cr3t-pw@127.0.0.1:1/fleet?sslmode=disable&connect_timeout=2",
		"host=127.0.0.1 port=1 user=coroner password=s3cr3t-pw dbname=fleet connect_timeout=2",
		"postgres://coroner@127.0.0.1:1/fleet?password=s3cr3t-pw&connect_timeout=2",
		"postgres://coroner:s3cr3t-pw@[::1", // does not parse
	} {
		assert.NotContains(t, RedactDSN(dsn), "s3cr3t-pw")
		_, err := Open(context.Background(), dsn)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "s3cr3t-pw")
		assert.Contains(t, err.Error(), "store ")
	}
}

func TestStoreDownLosesNothing(t *testing.T) {
	ctx := context.Background()
	srv := testpg.Start(t)
	dsn := srv.NewDatabase(t)
	s, err := Open(ctx, dsn)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Migrate(ctx, 0)
	require.NoError(t, err)

	q := &Queue{Dir: filepath.Join(t.TempDir(), "queue")}
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	var all []*Analysis
	for i, name := range []string{"pytorchjob-cuda-oom-rank", "pytorchjob-gpu-xid", "pytorchjob-nan-loss"} {
		a := sample(t, name, Meta{Cluster: "c1", AnalyzedAt: t0.Add(time.Duration(i) * time.Minute)})
		all = append(all, a)
	}
	// The first is written while the store is up.
	_, err = q.Add(all[0])
	require.NoError(t, err)
	n, err := q.Flush(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	// The store goes away: the next analyses wait in the queue (one of them queued twice,
	// as a watcher that restarted before removing it would).
	require.NoError(t, srv.Stop())
	for _, a := range all[1:] {
		_, err = q.Add(a)
		require.NoError(t, err)
	}
	_, err = q.Add(all[2])
	require.NoError(t, err)
	n, err = q.Flush(ctx, s)
	require.Error(t, err)
	assert.Equal(t, 0, n)
	pending, err := q.Pending()
	require.NoError(t, err)
	assert.Len(t, pending, 2)

	// Back: everything is written once, and the queue is empty.
	require.NoError(t, srv.Start())
	n, err = q.Flush(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	pending, err = q.Pending()
	require.NoError(t, err)
	assert.Empty(t, pending)
	assert.Equal(t, 3, count(t, s, `SELECT count(*) FROM analyses`))
	assert.Equal(t, 3, count(t, s, `SELECT count(*) FROM fleet_analyses`))
	// Replaying everything (a Put that worked but whose file stayed) doubles nothing.
	for _, a := range all {
		_, err = q.Add(a)
		require.NoError(t, err)
	}
	n, err = q.Flush(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, 3, count(t, s, `SELECT count(*) FROM analyses`))
	assert.Equal(t, 3, count(t, s, `SELECT count(*) FROM fleet_analyses`))
}
