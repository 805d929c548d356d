package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/report"
)

// timeouts is a report whose ranks 0..n-1 but rank 5 time out in NCCL after rank 5 ran out of
// GPU memory, one finding a rank: as format version 1 wrote it.
func timeouts(n int) *report.Report {
	rank := func(i int) *int { return &i }
	r := &report.Report{FormatVersion: 1, Verdict: analyze.VerdictUnhealthy}
	oom := &report.Finding{ID: "f1", RuleID: "cuda-oom/torch", Category: "cuda-oom", Severity: analyze.SeverityCritical,
		Title: "CUDA out of memory", Pod: "w-5", Rank: rank(5), Count: 1}
	r.Findings = append(r.Findings, oom)
	r.RootCause = &report.RootCause{Finding: *oom}
	for i := 0; i < n; i++ {
		if i != 5 {
			r.Findings = append(r.Findings, &report.Finding{ID: fmt.Sprintf("f%d", i+2), RuleID: "collective-timeout/nccl-watchdog",
				Category: "collective-timeout", Severity: analyze.SeverityError, Title: "NCCL ALLREDUCE timed out",
				Pod: fmt.Sprintf("w-%d", i), Rank: rank(i), Count: 1, SecondaryOf: "f1"})
		}
	}
	return r
}

// TestDiffFoldedAgainstVersion1: a version 1 report read from its JSON (one timeout finding a
// rank) against a version 2 report whose timeouts are folded: the same class on other ranks
// is one change naming both sides' ranks; the same class on the same ranks is none.
func TestDiffFoldedAgainstVersion1(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, report.Render(&buf, timeouts(8), "json"))
	var good report.Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &good))
	require.Equal(t, 1, good.FormatVersion)

	bad := timeouts(4096)
	bad.FormatVersion = report.FormatVersion
	folded := *bad.Findings[1]
	folded.Folded, folded.Processes, folded.Ranks, folded.Pod, folded.Rank, folded.Count = 4095, 4095, "0-4,6-4095", "", nil, 4095
	bad.Findings = []*report.Finding{bad.Findings[0], &folded}

	changes := diagnosisChanges(&good, bad)
	require.Len(t, changes, 1)
	c := changes[0]
	require.Equal(t, "finding-spread", c.Kind)
	require.Equal(t, "0-4,6-7", c.Good)
	require.Equal(t, "0-4,6-4095", c.Bad)
	require.Equal(t, "error collective-timeout on 7 processes (ranks 0-4,6-7) in GOOD, on 4,095 processes (ranks 0-4,6-4095) in BAD: NCCL ALLREDUCE timed out", c.Title)

	same := timeouts(20)
	same.FormatVersion = report.FormatVersion
	f := *same.Findings[1]
	f.Folded, f.Processes, f.Ranks, f.Pod, f.Rank = 19, 19, "0-4,6-19", "", nil
	same.Findings = []*report.Finding{same.Findings[0], &f}
	require.Empty(t, diagnosisChanges(timeouts(20), same), "the same ranks, folded or not, are no change")

	gone := diagnosisChanges(same, &report.Report{Verdict: analyze.VerdictUnhealthy, RootCause: same.RootCause, Findings: same.Findings[:1]})
	require.Empty(t, gone, "a symptom's class is not a primary finding")
	require.True(t, strings.HasPrefix(whereOf(&f), "on 19 ranks: 0-4,6-19"))
}

// TestDiffPodStates: a role's pods compare by how many are in each state, whether the report
// lists them one by one or folds alike pods into groups; restarts sum over the pods.
func TestDiffPodStates(t *testing.T) {
	code := func(n int) *int { return &n }
	listed := &report.Report{Job: report.Job{Replicas: []report.Replica{
		{Role: "Worker", Pods: []report.Pod{
			{Name: "w-0", Phase: "Succeeded", Ended: "Completed, exit 0", ExitCode: code(0)},
			{Name: "w-1", Phase: "Succeeded", Ended: "Completed, exit 0", ExitCode: code(0)},
			{Name: "w-2", Phase: "Succeeded", Ended: "Completed, exit 0", ExitCode: code(0)},
		}},
		{Role: "Launcher", Running: 1},
	}}}
	folded := &report.Report{Job: report.Job{Replicas: []report.Replica{
		{Role: "Worker", Groups: []*report.PodGroup{{ID: "Worker/1", Phase: "Succeeded", Ended: "Completed, exit 0", ExitCode: code(0), Count: 3}}},
		{Role: "Launcher", Pods: []report.Pod{{Name: "l-0", Phase: "Running"}}},
	}}}
	require.Empty(t, podChanges(listed, folded), "the same states, listed or folded, are no change")

	bad := &report.Report{Job: report.Job{Replicas: []report.Replica{
		{Role: "Worker", Pods: []report.Pod{{Name: "w-1", Phase: "Failed", Ended: "OOMKilled, exit 137", ExitCode: code(137), Restarts: 2}},
			Groups: []*report.PodGroup{{ID: "Worker/1", Phase: "Running", Restarts: 1, Count: 4095}}},
	}}}
	changes := podChanges(folded, bad)
	require.Len(t, changes, 3)
	require.Equal(t, "Launcher pods: 1 Running in GOOD, no pod in BAD", changes[0].Title)
	require.Equal(t, "Worker pods: 3 Succeeded (Completed, exit 0) in GOOD, 4,095 Running, 1 Failed (OOMKilled, exit 137) in BAD", changes[1].Title)
	require.Equal(t, "pods", changes[1].Kind)
	require.Equal(t, "Worker restarts: none in GOOD, 4,097 on 4,096 pods in BAD", changes[2].Title)
	require.Equal(t, "restarts", changes[2].Kind)
}
