package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/testpg"
	"github.com/coroner-dev/coroner/store"
)

// TestStoreAnalyzeAndFleetQuery: analyze --store writes each diagnosis once per job attempt,
// into a store that migrate made, and fleet query reads the views back.
func TestStoreAnalyzeAndFleetQuery(t *testing.T) {
	dsn := testpg.Start(t).NewDatabase(t)
	oom := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	xid := filepath.Join(samplesDir, "pytorchjob-gpu-xid")

	code, _, stderr := run(t, "analyze", oom, "--store", dsn, "-q")
	require.Equal(t, 1, code)
	assert.Contains(t, stderr, "run 'coroner store migrate' first")

	code, out, stderr := run(t, "store", "migrate", "--store", dsn)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "applied 0001_schema\n")
	code, out, _ = run(t, "store", "migrate", "--store", dsn)
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "applied", "a second migrate applies nothing")

	for _, b := range []string{oom, xid, oom} {
		code, _, stderr = run(t, "analyze", b, "--store", dsn, "--cluster-name", "prod-a", "-q")
		require.Equal(t, 0, code, stderr)
	}
	code, out, stderr = run(t, "fleet", "query", "fleet_causes", "--store", dsn, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var causes store.Table
	require.NoError(t, json.Unmarshal([]byte(out), &causes))
	require.Equal(t, []string{"category", "interruptions", "share_percent", "gpu_hours_lost"}, causes.Columns)
	require.Len(t, causes.Rows, 2, "the same failure analyzed twice counts once")
	got := map[string]string{}
	for _, r := range causes.Rows {
		got[r[0]] = r[1] + " " + r[2]
	}
	assert.Equal(t, map[string]string{"cuda-oom": "1 50.0", "gpu-hardware": "1 50.0"}, got)

	code, out, _ = run(t, "fleet", "query", "fleet_interruptions", "--store", dsn, "--format", "csv")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[1]+lines[2], "prod-a")
	assert.Contains(t, lines[1]+lines[2], "file://"+filepath.ToSlash(mustAbs(t, oom)))

	code, out, _ = run(t, "fleet", "query", "--store", dsn)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "fleet_causes\n")
	code, _, stderr = run(t, "fleet", "query", "jobs; DROP TABLE jobs", "--store", dsn)
	require.Equal(t, 2, code)
	assert.Contains(t, stderr, `no view "jobs; DROP TABLE jobs" (the views: fleet_analyses`)
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}
