package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/testpg"
	"github.com/coroner-dev/coroner/store"
)

// TestFleetReport: the report of what analyze --store wrote, in every form, counts each job
// attempt once; -o writes the file whole; bad flags are usage errors.
func TestFleetReport(t *testing.T) {
	dsn := testpg.Start(t).NewDatabase(t)
	code, _, stderr := run(t, "store", "migrate", "--store", dsn)
	require.Equal(t, 0, code, stderr)
	oom := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	xid := filepath.Join(samplesDir, "pytorchjob-gpu-xid")
	for _, b := range []string{oom, xid, oom} {
		code, _, stderr = run(t, "analyze", b, "--store", dsn, "--cluster-name", "prod-a", "-q")
		require.Equal(t, 0, code, stderr)
	}
	code, out, stderr := run(t, "fleet", "report", "--store", dsn, "--since", "all", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var r store.FleetReport
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Equal(t, 2, r.Totals.Runs, "the same failure analyzed twice counts once")
	assert.Equal(t, 2, r.Totals.Interruptions)
	require.Len(t, r.Causes, 2)
	assert.Equal(t, 50.0, r.Causes[0].SharePercent)
	require.NotEmpty(t, r.Nodes, "the GPU that fell off the bus names its node")
	assert.Equal(t, 1, r.Nodes[0].Hardware)
	assert.NotEmpty(t, r.Nodes[0].Xids)
	assert.Equal(t, 2, r.Diagnosis.Count)

	// The samples failed in 2026: the last 30 days (the default) of a later date hold none.
	code, out, stderr = run(t, "fleet", "report", "--store", dsn, "--until", "2031-01-01")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "**0 interruptions** of 0 job runs")

	html := filepath.Join(t.TempDir(), "fleet.html")
	code, out, stderr = run(t, "fleet", "report", "--store", dsn, "--since", "all", "-o", html)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "Fleet:       2 interruptions of 2 job runs")
	data, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "<!DOCTYPE html>"))
	assert.Contains(t, string(data), "<svg ")

	for _, bad := range [][]string{{"--format", "pdf"}, {"--since", "yesterday"}, {"--until", "soon"}, {"--top", "0"}} {
		code, _, stderr = run(t, append([]string{"fleet", "report", "--store", dsn}, bad...)...)
		assert.Equal(t, 2, code, "%v: %s", bad, stderr)
	}
}

// TestFleetSeedIsDeterministic: the generator behind the docs' picture and sizing gives the
// same store, whatever order its writers took, and the report's totals agree with the views.
func TestFleetSeedIsDeterministic(t *testing.T) {
	srv := testpg.Start(t)
	var reports []string
	for range 2 {
		dsn := srv.NewDatabase(t)
		code, _, stderr := run(t, "store", "migrate", "--store", dsn)
		require.Equal(t, 0, code, stderr)
		code, out, stderr := run(t, "fleet", "seed", "--store", dsn, "--start", "2026-01-05", "--days", "14", "--per-day", "15", "--seed", "7")
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, out, "analyses written")
		code, out, stderr = run(t, "fleet", "report", "--store", dsn, "--since", "all", "--until", "2026-03-01", "--format", "json")
		require.Equal(t, 0, code, stderr)
		var r store.FleetReport
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		assert.Greater(t, r.Totals.Interruptions, 20)
		assert.NotEmpty(t, r.Nodes)
		assert.NotEmpty(t, r.Retries)
		code, rows, stderr := run(t, "fleet", "query", "fleet_interruptions", "--store", dsn, "--format", "csv")
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, strconv.Itoa(r.Totals.Interruptions), strconv.Itoa(strings.Count(rows, "\n")-1), "the report counts the view's rows")
		r.Store = ""
		canon, err := json.Marshal(r)
		require.NoError(t, err)
		reports = append(reports, string(canon))
	}
	assert.Equal(t, reports[0], reports[1])
}
