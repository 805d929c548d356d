package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlightRecorderDumpsBesideLogs: dumps given as plain inputs, whatever their names, are
// read by content and matched; the report names the rank that never entered the collective
// and shows the group's table.
func TestFlightRecorderDumpsBesideLogs(t *testing.T) {
	dumps, err := filepath.Glob("../../frtrace/testdata/missing-rank/*")
	require.NoError(t, err)
	r, _ := analyzeJSON(t, nil, append([]string{"../../samples/logs/train-plain.log"}, dumps...)...)
	require.NotNil(t, r.FlightRecorder)
	require.Equal(t, []int{0, 1, 2, 3}, r.FlightRecorder.Ranks)
	var found bool
	for _, f := range r.Findings {
		if f.RuleID == "collective-timeout/flight-recorder-missing-rank" {
			found = true
			require.Contains(t, f.Title, "Rank 2 never entered all_reduce #48 of the default group")
			require.Contains(t, f.Title, "evaluate (/workspace/train.py:160)")
		}
	}
	require.True(t, found, "the missing rank is a finding")
	require.Len(t, r.FlightRecorder.Groups, 1)
	for _, l := range r.FlightRecorder.Groups[0].Lanes {
		require.Equal(t, l.Rank == 2, l.Culprit, "rank %d", l.Rank)
	}
	require.Equal(t, "missing-rank", r.FlightRecorder.Problems[0].Kind)
	require.NotEmpty(t, r.FlightRecorder.Problems[0].FindingID)
}

// TestFlightRecorderSampleTarballAndRedact: the sample reads the same as a tarball, and after
// `coroner redact`, which rewrites the pickles as JSON to redact them, it is diagnosed alike.
func TestFlightRecorderSampleTarballAndRedact(t *testing.T) {
	dir := filepath.Join(samplesDir, "pytorchjob-hang-flight-recorder")
	a, _ := analyzeJSON(t, nil, dir)
	tgz := tarSample(t, dir)
	b, _ := analyzeJSON(t, nil, tgz)
	require.Equal(t, a.RootCause.Title, b.RootCause.Title)
	require.Equal(t, a.FlightRecorder, b.FlightRecorder)

	red := filepath.Join(t.TempDir(), "red.tar.gz")
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"redact", dir, "-o", red}, &IOStreams{Out: &out, ErrOut: &errOut})
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, errOut.String(), "rewritten: flightrecorder/ml/llama-ft-worker-1/comm_lib_trace_rank_2: flight recorder dump (pickle) rewritten as JSON")
	require.NotContains(t, errOut.String(), "withheld")
	c, _ := analyzeJSON(t, nil, red)
	require.Equal(t, a.RootCause.Title, c.RootCause.Title)
	require.Equal(t, a.RootCause.Rank, c.RootCause.Rank)
	require.Equal(t, len(a.FlightRecorder.Problems), len(c.FlightRecorder.Problems))
	require.Equal(t, a.FlightRecorder.Problems[0].Stack, c.FlightRecorder.Problems[0].Stack, "the frames survive the rewrite")
	for i := range c.FlightRecorder.Groups[0].Lanes {
		require.True(t, strings.HasPrefix(c.FlightRecorder.Groups[0].Lanes[i].Dump, "flightrecorder/ml/"))
	}
}
