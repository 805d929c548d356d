//go:build e2e

package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/testpg"
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
