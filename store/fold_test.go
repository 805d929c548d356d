package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/internal/samplegen"
)

// TestFoldedFindingsInTheStore: the folded finding of a 64-rank job (63 ranks timing out
// behind the one out of memory) is one row with its exact count, processes, ranks and time
// span; rows written before the store knew folded findings read as findings of one process.
func TestFoldedFindingsInTheStore(t *testing.T) {
	ctx := context.Background()
	d := diagnose64(t)
	a, err := FromDiagnosis(ctx, d, Meta{Cluster: "c1", RulesVersion: "rules-1", AnalyzedAt: time.Unix(1e9, 0)})
	require.NoError(t, err)

	s := open(t)
	require.NoError(t, s.Put(ctx, a))
	var folded, processes, total int
	var ranks, pod string
	var first, last time.Time
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT folded, processes, ranks, pod, count, first_at, last_at FROM findings
		WHERE rule_id = 'collective-timeout/nccl-watchdog'`).Scan(&folded, &processes, &ranks, &pod, &total, &first, &last))
	assert.Equal(t, 63, folded)
	assert.Equal(t, 63, processes)
	assert.Equal(t, "0-36,38-63", ranks)
	assert.Empty(t, pod)
	assert.Equal(t, 63, total)
	assert.False(t, last.Before(first))
	assert.Equal(t, 1, count(t, s, `SELECT count(*) FROM findings WHERE root AND folded = 0 AND pod = 'big-train-worker-36'`), "the root cause is its own row")

	old, err := Open(ctx, newDB(t))
	require.NoError(t, err)
	defer old.Close()
	_, err = old.Migrate(ctx, 5)
	require.NoError(t, err)
	_, err = old.pool.Exec(ctx, `
		WITH j AS (INSERT INTO jobs (cluster, uid, kind) VALUES ('c1', 'u', 'PyTorchJob') RETURNING id),
		a AS (INSERT INTO analyses (job_id, attempt, bundle_digest, coroner_version, rules_version, analyzed_at, status, verdict, verdict_reason)
			SELECT id, 0, 'd', 'v', 'r', now(), 'Failed', 'unhealthy', 'x' FROM j RETURNING id)
		INSERT INTO findings (analysis_id, finding_id, rule_id, category, severity, layer, fault, retry, root, pod, rank, count)
			SELECT id, 'f2', 'collective-timeout/nccl-watchdog', 'collective-timeout', 'error', 'execution', 'platform', 'transient', false, 'w-3', 3, 2 FROM a`)
	require.NoError(t, err)
	_, err = old.Migrate(ctx, 0)
	require.NoError(t, err)
	require.NoError(t, old.pool.QueryRow(ctx, `SELECT folded, processes, ranks, pod FROM findings`).Scan(&folded, &processes, &ranks, &pod))
	assert.Equal(t, []any{0, 1, "", "w-3"}, []any{folded, processes, ranks, pod})
}

// diagnose64 is the diagnosis of a generated 64-rank job (worker-36, rank 37, out of GPU
// memory, the 63 other ranks timing out behind it), closed when the test ends.
func diagnose64(t *testing.T) *diagnose.Diagnosis {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, samplegen.Generate(dir, 64, 64*8<<10, 1))
	o := diagnose.DefaultOptions()
	o.Version = "test"
	d, err := diagnose.Run(context.Background(), diagnose.Input{Paths: []string{dir}}, o)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}
