package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run is a made-up analysis for the report's tests: the numbers below are counted by hand.
type run struct {
	uid, name, ns, kind, owner string
	created                    time.Time
	images                     []string
	verdict                    string
	cause, fault, retry        string
	node, xid                  string
	failed                     time.Time
	delay                      time.Duration // from the failure to the analysis
	used, lost                 float64
	rules                      string
	// attributed: the diagnosis put the failure down to its node's GPU with node evidence.
	attributed bool
}

func (r run) analysis() *Analysis {
	rules := r.rules
	if rules == "" {
		rules = "rules-1"
	}
	name := r.name
	if name == "" {
		name = r.uid
	}
	a := &Analysis{
		Job: Job{Cluster: "c1", UID: r.uid, Kind: r.kind, Namespace: r.ns, Name: name, OwnerKind: "TrainJob", OwnerName: r.owner,
			Created: &r.created, Images: r.images},
		BundleDigest: "sha256:" + r.uid, CoronerVersion: "test", RulesVersion: rules,
		AnalyzedAt: r.failed.Add(r.delay), Status: "complete", Verdict: r.verdict, VerdictReason: "made up",
		GPUHoursUsed: r.used, GPUHoursLost: r.lost,
	}
	if r.owner == "" {
		a.Job.OwnerKind = ""
	}
	if r.verdict != "healthy" {
		a.FailedAt = &r.failed
	}
	if r.cause != "" {
		title := "a " + r.cause
		if r.xid != "" {
			title = "GPU fell off the bus (Xid " + r.xid + ")"
		}
		a.Root = &Root{Category: r.cause, RuleID: r.cause, Title: title, Confidence: "high", Fault: r.fault, Retry: r.retry, Node: r.node}
		a.Findings = []Finding{{ID: "f1", RuleID: r.cause, Category: r.cause, Severity: "critical", Layer: "execution", Fault: r.fault,
			Retry: r.retry, Root: true, Title: title, Node: r.node, First: &r.failed, Last: &r.failed, Count: 1}}
	}
	if r.node != "" {
		a.Nodes = []Node{{Name: r.node, Attributed: r.attributed}}
		if r.attributed {
			a.Nodes[0].Agents = []string{"device-plugin"}
		}
	}
	return a
}

func TestReportCountsByHand(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) // a Monday
	h := time.Hour
	runs := []run{
		// A lineage (the TrainJob "llama"): a GPU that fell off the bus, first read as a CUDA
		// error and then re-analyzed by newer rules (counted once, as the newer), retried on
		// the same node, failing again of the same cause.
		{uid: "a1", ns: "team-a", kind: "PyTorchJob", owner: "llama", created: t0, images: []string{"img-1", "img-1"},
			verdict: "unhealthy", cause: "cuda-error", fault: "user", retry: "permanent", node: "n1",
			failed: t0.Add(h), delay: 5 * time.Minute, used: 100, lost: 10},
		{uid: "a1", ns: "team-a", kind: "PyTorchJob", owner: "llama", created: t0, images: []string{"img-1", "img-1"},
			verdict: "unhealthy", cause: "gpu-hardware", fault: "hardware", retry: "transient", node: "n1", xid: "79",
			failed: t0.Add(h), delay: 48 * h, used: 100, lost: 10, rules: "rules-2"},
		{uid: "a2", ns: "team-a", kind: "PyTorchJob", owner: "llama", created: t0.Add(2 * h), images: []string{"img-1"},
			verdict: "unhealthy", cause: "gpu-hardware", fault: "hardware", retry: "transient", node: "n1", xid: "48",
			failed: t0.Add(24 * h), delay: 10 * time.Minute, used: 50, lost: 20, attributed: true},
		// B: a collective timeout on n2 in the second week; the job resubmitted under the same
		// name succeeded.
		{uid: "b1", name: "bert", ns: "team-b", kind: "JobSet", created: t0.Add(7 * 24 * h), images: []string{"img-1", "img-2"},
			verdict: "unhealthy", cause: "collective-timeout", fault: "platform", retry: "transient", node: "n2",
			failed: t0.Add(8 * 24 * h), delay: time.Minute, used: 40, lost: 5},
		{uid: "b2", name: "bert", ns: "team-b", kind: "JobSet", created: t0.Add(8*24*h + h), images: []string{"img-1", "img-2"},
			verdict: "healthy", failed: t0.Add(9 * 24 * h), used: 30},
		// C: the user's out-of-memory, not retried.
		{uid: "c1", ns: "team-a", kind: "PyTorchJob", created: t0.Add(9 * 24 * h), images: []string{"img-2"},
			verdict: "unhealthy", cause: "cuda-oom", fault: "user", retry: "permanent", failed: t0.Add(9*24*h + h),
			delay: 20 * time.Minute, used: 8, lost: 2},
		// D: a bundle that could not tell.
		{uid: "d1", ns: "team-c", kind: "Job", created: t0.Add(3 * 24 * h), verdict: "unknown", failed: t0.Add(3 * 24 * h), used: 1},
		// E: before the period.
		{uid: "e1", ns: "team-a", kind: "PyTorchJob", created: t0.Add(-30 * 24 * h), verdict: "unhealthy", cause: "cuda-oom",
			fault: "user", retry: "permanent", failed: t0.Add(-30 * 24 * h), used: 7, lost: 7},
	}
	for _, r := range runs {
		require.NoError(t, s.Put(ctx, r.analysis()))
	}
	rep, err := s.Report(ctx, ReportOptions{Since: t0, Until: t0.Add(14 * 24 * h)})
	require.NoError(t, err)

	assert.Equal(t, Totals{Runs: 6, Interruptions: 4, Unknown: 1, GPUHoursUsed: 229, GPUHoursLost: 37}, rep.Totals)
	assert.Equal(t, []CauseCount{
		{Category: "gpu-hardware", Fault: "hardware", Interruptions: 2, SharePercent: 50, GPUHoursLost: 30},
		{Category: "collective-timeout", Fault: "platform", Interruptions: 1, SharePercent: 25, GPUHoursLost: 5},
		{Category: "cuda-oom", Fault: "user", Interruptions: 1, SharePercent: 25, GPUHoursLost: 2},
	}, rep.Causes)
	week2 := t0.Add(7 * 24 * h)
	assert.Equal(t, []WeekCount{
		{Week: t0, Category: "gpu-hardware", Fault: "hardware", Interruptions: 2, GPUHoursLost: 30},
		{Week: week2, Category: "collective-timeout", Fault: "platform", Interruptions: 1, GPUHoursLost: 5},
		{Week: week2, Category: "cuda-oom", Fault: "user", Interruptions: 1, GPUHoursLost: 2},
	}, rep.Weekly)
	assert.Equal(t, []NodeFailures{
		{Cluster: "c1", Node: "n1", Hardware: 2, Interruptions: 2, WithEvidence: 1, Xids: []XidCount{{"48", 1}, {"79", 1}}, Last: t0.Add(24 * h)},
		{Cluster: "c1", Node: "n2", Collective: 1, Interruptions: 1, Xids: []XidCount{}, Last: t0.Add(8 * 24 * h)},
	}, rep.Nodes)
	rates := map[string]FailureRate{}
	for _, f := range rep.FailureRates {
		rates[f.Dimension+"/"+f.Value] = f
	}
	assert.Equal(t, FailureRate{Dimension: "image", Value: "img-1", Runs: 4, Failures: 3, Rate: 0.75, GPUHoursLost: 35}, rates["image/img-1"], "an image a job lists twice counts once")
	assert.Equal(t, FailureRate{Dimension: "image", Value: "img-2", Runs: 3, Failures: 2, Rate: 2.0 / 3, GPUHoursLost: 7}, rates["image/img-2"])
	assert.Equal(t, FailureRate{Dimension: "kind", Value: "PyTorchJob", Runs: 3, Failures: 3, Rate: 1, GPUHoursLost: 32}, rates["kind/PyTorchJob"])
	assert.Equal(t, FailureRate{Dimension: "namespace", Value: "team-c", Runs: 1}, rates["namespace/team-c"])
	assert.Equal(t, "cluster", rep.FailureRates[0].Dimension)
	assert.Equal(t, "team-a", rates["namespace/team-a"].Value)
	assert.Equal(t, []RetryOutcome{
		{Category: "gpu-hardware", Retry: "transient", Failures: 2, FailedAgain: 1, NotRetried: 1},
		{Category: "collective-timeout", Retry: "transient", Failures: 1, Succeeded: 1},
		{Category: "cuda-oom", Retry: "permanent", Failures: 1, NotRetried: 1},
	}, rep.Retries)
	// 1, 5, 10 and 20 minutes (a1's first analysis, not its re-analysis two days later).
	assert.Equal(t, DiagnosisDelay{Count: 4, MedianSeconds: 450, P90Seconds: 1020}, rep.Diagnosis)

	// Without a start: E too.
	all, err := s.Report(ctx, ReportOptions{Until: t0.Add(14 * 24 * h)})
	require.NoError(t, err)
	assert.Nil(t, all.Since)
	assert.Equal(t, 7, all.Totals.Runs)
	assert.Equal(t, 5, all.Totals.Interruptions)
	assert.Equal(t, 44.0, all.Totals.GPUHoursLost)

	// Top bounds the nodes and each dimension.
	top, err := s.Report(ctx, ReportOptions{Since: t0, Until: t0.Add(14 * 24 * h), Top: 1})
	require.NoError(t, err)
	assert.Len(t, top.Nodes, 1)
	assert.Len(t, top.FailureRates, 4, "one cluster, namespace, kind and image")
}

func TestTrialBesideCurrentThenPromoted(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	t0 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	runs := []run{
		{uid: "a", ns: "n", kind: "Job", created: t0, verdict: "unhealthy", cause: "cuda-error", fault: "user", retry: "permanent", failed: t0},
		{uid: "b", ns: "n", kind: "Job", created: t0, verdict: "unhealthy", cause: "cuda-oom", fault: "user", retry: "permanent", failed: t0},
		{uid: "c", ns: "n", kind: "Job", created: t0, verdict: "unhealthy", failed: t0},
	}
	for _, r := range runs {
		require.NoError(t, s.Put(ctx, r.analysis()))
	}
	// New rules read a's CUDA error as the GPU's, and name c's cause; b is unchanged. The
	// trial's analyses are made later than the current ones, and still do not replace them.
	trial := []run{runs[0], runs[1], runs[2]}
	trial[0].cause, trial[0].fault, trial[0].xid = "gpu-hardware", "hardware", "79"
	trial[2].cause, trial[2].fault = "hang", "platform"
	for i := range trial {
		trial[i].rules, trial[i].delay = "rules-2", 24*time.Hour
		require.NoError(t, s.PutTrial(ctx, "xid-79", trial[i].analysis()))
	}
	before, err := s.Report(ctx, ReportOptions{Until: t0.Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, 3, before.Totals.Interruptions)
	assert.Equal(t, "cuda-error", before.Causes[0].Category, "the views count the current analyses only")

	c, err := s.CompareTrial(ctx, "xid-79")
	require.NoError(t, err)
	assert.Equal(t, &TrialComparison{Trial: "xid-79", Attempts: 3, Changed: 2,
		Causes:  []TrialCause{{"cuda-oom", 1, 1}, {"cuda-error", 1, 0}, {"gpu-hardware", 0, 1}, {"hang", 0, 1}, {"unknown", 1, 0}},
		Changes: []TrialChange{{"cuda-error", "gpu-hardware", 1}, {"unknown", "hang", 1}},
	}, c)
	_, err = s.CompareTrial(ctx, "nope")
	assert.ErrorAs(t, err, new(*NoTrialError))

	n, err := s.Promote(ctx, "xid-79")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	after, err := s.Report(ctx, ReportOptions{Until: t0.Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, 3, after.Totals.Interruptions, "promoted, still one analysis per attempt")
	got := map[string]int{}
	for _, c := range after.Causes {
		got[c.Category] = c.Interruptions
	}
	assert.Equal(t, map[string]int{"gpu-hardware": 1, "cuda-oom": 1, "hang": 1}, got)
	_, err = s.Promote(ctx, "xid-79")
	assert.ErrorAs(t, err, new(*NoTrialError), "a trial is promoted once")
	// The watcher's queue replaying an old analysis does not undo the promotion.
	require.NoError(t, s.Put(ctx, runs[0].analysis()))
	again, err := s.Report(ctx, ReportOptions{Until: t0.Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, after.Causes, again.Causes)
}
