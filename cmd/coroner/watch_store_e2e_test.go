//go:build e2e

package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/testpg"
	"github.com/coroner-dev/coroner/internal/tests3"
	"github.com/coroner-dev/coroner/store"
)

// TestWatchStoreE2E: a watcher whose store is down when the job fails keeps the diagnosis on
// its volume, writes it once the store is back, and the fleet views count it once.
func TestWatchStoreE2E(t *testing.T) {
	env := startWatchE2E(t)
	pg := testpg.Start(t)
	dsn := pg.NewDatabase(t)
	code, _, stderr := run(t, "store", "migrate", "--store", dsn)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, pg.Stop())

	env.c.LoadSample(t, filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "ws-oom", env.kubelet)
	dir := t.TempDir()
	w := startWatcher(t, env.kubeconfig, dir, "-n", "ws-oom", "--store", dsn, "--cluster-name", "e2e", "--store-retry", "1s")
	waitEvent(t, env.c, "ws-oom", "train-job", 60*time.Second)
	waitFor(t, 10*time.Second, "the refused write", func() bool { return w.metric(`coroner_watch_store_writes_total{result="failed"}`) >= 1 })
	require.Equal(t, 1.0, w.metric("coroner_watch_store_queued"))
	queued, err := (&store.Queue{Dir: filepath.Join(dir, ".store-queue")}).Pending()
	require.NoError(t, err)
	require.Len(t, queued, 1)

	require.NoError(t, pg.Start())
	waitFor(t, 20*time.Second, "the queued write", func() bool { return w.metric(`coroner_watch_store_writes_total{result="ok"}`) == 1 })
	require.Equal(t, 0.0, w.metric("coroner_watch_store_queued"))

	code, out, stderr := run(t, "fleet", "query", "fleet_interruptions", "--store", dsn, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var tab store.Table
	require.NoError(t, json.Unmarshal([]byte(out), &tab))
	require.Len(t, tab.Rows, 1)
	row := map[string]string{}
	for i, c := range tab.Columns {
		row[c] = tab.Rows[0][i]
	}
	require.Equal(t, "e2e", row["cluster"])
	require.Equal(t, "cuda-oom", row["cause"])
	require.Equal(t, "ws-oom", row["namespace"])
	require.Equal(t, "file://"+filepath.Join(dir, "ws-oom", "train-job", "20260314T100215Z.tar.gz"), row["bundle_uri"])
}

// TestWatchFleetE2E: with both --store and --bundle-store ($CORONER_BUNDLE_STORE), a failed job ends as a bundle in
// the bucket (versitygw) and as rows in the store that point at it; the fleet report counts
// it, and the bundle is analyzed again from the bucket to the same cause.
func TestWatchFleetE2E(t *testing.T) {
	env := startWatchE2E(t)
	s3 := tests3.Start(t, "bundles")
	s3.Env(t)
	dsn := testpg.Start(t).NewDatabase(t)
	code, _, stderr := run(t, "store", "migrate", "--store", dsn)
	require.Equal(t, 0, code, stderr)

	env.c.LoadSample(t, filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "wf-oom", env.kubelet)
	// The bucket as the Deployment gives it, from the Secret coroner-bundle-store.
	t.Setenv(bundleStoreEnv, "s3://bundles/fleet")
	w := startWatcher(t, env.kubeconfig, t.TempDir(), "-n", "wf-oom", "--store", dsn, "--cluster-name", "e2e")
	waitEvent(t, env.c, "wf-oom", "train-job", 60*time.Second)
	waitFor(t, 20*time.Second, "the store's write", func() bool { return w.metric(`coroner_watch_store_writes_total{result="ok"}`) == 1 })

	objects, err := filepath.Glob(filepath.Join(s3.Root, "bundles", "fleet", "e2e", "wf-oom", "train-job", "*.tar.gz"))
	require.NoError(t, err)
	require.Len(t, objects, 1, "the bundle is in the bucket under cluster/namespace/job")
	uri := "s3://bundles/fleet/e2e/wf-oom/train-job/" + filepath.Base(objects[0])

	code, out, stderr := run(t, "fleet", "query", "fleet_interruptions", "--store", dsn, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var tab store.Table
	require.NoError(t, json.Unmarshal([]byte(out), &tab))
	require.Len(t, tab.Rows, 1)
	row := map[string]string{}
	for i, c := range tab.Columns {
		row[c] = tab.Rows[0][i]
	}
	require.Equal(t, uri, row["bundle_uri"], "the store's row points at the bucket's copy")
	require.Equal(t, "cuda-oom", row["cause"])

	code, out, stderr = run(t, "fleet", "report", "--store", dsn, "--since", "all", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var r store.FleetReport
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, 1, r.Totals.Interruptions)
	require.Len(t, r.Causes, 1)
	require.Equal(t, "cuda-oom", r.Causes[0].Category)
	require.Equal(t, 1, r.Diagnosis.Count)

	code, out, stderr = run(t, "analyze", uri, "--format", "json", "--no-cache")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, `"category": "cuda-oom"`)
	require.NotContains(t, w.log.String(), tests3.SecretKey)
}
