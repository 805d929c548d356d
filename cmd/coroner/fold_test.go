package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/report"
)

// TestFoldedAcrossRanks: a generated job of 64 ranks, one out of GPU memory and the 63 others
// timing out in NCCL behind it: the culprit is the root cause with its own evidence, and each
// symptom seen on every other rank is one finding with the exact count and the ranks, in the
// JSON and in the summary, whatever the number of ranks.
func TestFoldedAcrossRanks(t *testing.T) {
	b := generated(t, 64)
	out := requireExit(t, exitOK, "", "analyze", b, "--format", "json", "--no-cache")
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, 3, r.FormatVersion, "the workers that failed alike are a pod group")
	workers := r.Job.Replicas[len(r.Job.Replicas)-1]
	require.Equal(t, "Worker", workers.Role)
	require.Len(t, workers.Groups, 1)
	require.Equal(t, 62, workers.Groups[0].Count)
	require.Equal(t, "1-36,38-63", workers.Groups[0].Ranks)
	require.Len(t, workers.Pods, 1, "the root cause's pod keeps its row")
	require.Equal(t, "big-train-worker-36", workers.Pods[0].Name)
	require.NotNil(t, r.RootCause)
	require.Equal(t, "big-train-worker-36", r.RootCause.Pod)
	require.Contains(t, r.RootCause.Evidence[0].Text, "CUDA out of memory")
	require.NotEmpty(t, r.RootCause.Evidence[0].Before, "the root cause keeps its context")

	var timeout *report.Finding
	for _, f := range r.Findings {
		if f.RuleID == "collective-timeout/nccl-watchdog" {
			require.Nil(t, timeout, "one finding for the timeouts of every rank")
			timeout = f
		}
	}
	require.NotNil(t, timeout)
	require.Equal(t, 63, timeout.Folded)
	require.Equal(t, 63, timeout.Processes)
	require.Equal(t, "0-36,38-63", timeout.Ranks)
	require.Equal(t, 63, timeout.PodCount)
	require.Len(t, timeout.Pods, report.MaxFoldPods)
	require.LessOrEqual(t, len(timeout.Evidence), report.MaxSamples)
	for _, e := range timeout.Evidence {
		require.NotEmpty(t, e.Before, "a sample keeps its context")
	}
	require.Less(t, len(r.Findings), 10, "findings by class, not by rank")

	summary := requireExit(t, exitOK, "", "analyze", b, "--format", "text", "--no-cache")
	require.Contains(t, summary, "— on 63 ranks: 0-36,38-63 (x63)")
	require.False(t, strings.Contains(summary, "big-train-worker-7"), "no rank of the 63 has a line of its own")
}
