package watch

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/report"
)

// The Event of the sample the issue quotes, from the same analysis as `coroner analyze`.
func TestSummaryOfTheCudaOOMSample(t *testing.T) {
	rules, err := diagnose.BuiltinRules()
	require.NoError(t, err)
	rep, err := Analyze(t.Context(), "../samples/pytorchjob-cuda-oom-rank", rules, bundle.DefaultLimits(), 0, "test")
	require.NoError(t, err)
	require.Equal(t, 5, rankOf(rep))
	reason, msg := summary(rep, rankOf(rep), "/var/lib/coroner/ml/train-job/20260314T100215Z.html", maxEventMessage)
	require.Equal(t, ReasonRootCause, reason)
	require.Equal(t, "coroner: cuda-oom at train-job-worker-4 (rank 5): CUDA out of memory; report /var/lib/coroner/ml/train-job/20260314T100215Z.html", msg)

	healthy, err := Analyze(t.Context(), "../samples/pytorchjob-succeeded", rules, bundle.DefaultLimits(), 0, "test")
	require.NoError(t, err)
	reason, msg = summary(healthy, rankOf(healthy), "/r.html", maxEventMessage)
	require.Equal(t, ReasonDiagnosed, reason)
	require.True(t, strings.HasPrefix(msg, "coroner: healthy: "), msg)
	require.True(t, strings.HasSuffix(msg, "; report /r.html"), msg)
}

func TestSummaryIsBounded(t *testing.T) {
	long := strings.Repeat("CUDA out of memory — déjà vu ", 100) // multi-byte characters
	rep := &report.Report{Verdict: "unhealthy", RootCause: &report.RootCause{Finding: report.Finding{Category: "cuda-oom", Pod: "p", Title: long + "\nsecond line"}}}
	path := "/var/lib/coroner/ml/train-job/20260314T100215Z.html"
	_, msg := summary(rep, 3, path, maxEventMessage)
	require.LessOrEqual(t, len(msg), maxEventMessage)
	require.True(t, utf8.ValidString(msg))
	require.True(t, strings.HasPrefix(msg, "coroner: cuda-oom at p (rank 3): CUDA out of memory"), msg)
	require.True(t, strings.HasSuffix(msg, "…; report "+path), "the path stays whole: %s", msg)
	require.NotContains(t, msg, "\n")

	// A path longer than the limit itself still gives a bounded, valid message.
	_, msg = summary(rep, -1, "/"+strings.Repeat("é", 2000), maxEventMessage)
	require.LessOrEqual(t, len(msg), maxEventMessage)
	require.True(t, utf8.ValidString(msg))
	require.True(t, strings.HasPrefix(msg, "coroner: cuda-oom at p: "), msg)

	unknown := &report.Report{Verdict: "unknown", VerdictReason: "the bundle holds no logs"}
	reason, msg := summary(unknown, -1, "/r.html", maxEventMessage)
	require.Equal(t, ReasonDiagnosed, reason)
	require.Equal(t, "coroner: no root cause found: the bundle holds no logs; report /r.html", msg)
}

func TestRankOf(t *testing.T) {
	ev := func(source analyze.Source, text string) report.Evidence {
		return report.Evidence{Source: source, Text: text}
	}
	for _, tc := range []struct {
		evidence []report.Evidence
		want     int
	}{
		{[]report.Evidence{ev("log", "[rank5]: torch.OutOfMemoryError: CUDA out of memory.")}, 5},
		{[]report.Evidence{ev("event", "[rank1]: x"), ev("log", "[rank12]:[E314 10:12:04.182731 ProcessGroupNCCL.cpp:616] timeout")}, 12},
		{[]report.Evidence{ev("log", "torch.OutOfMemoryError: CUDA out of memory.")}, -1},
		{[]report.Evidence{ev("log", "[rank]: x")}, -1},
		{[]report.Evidence{ev("log", "[rank99999999]: x")}, -1},
		{nil, -1},
	} {
		rep := &report.Report{RootCause: &report.RootCause{Finding: report.Finding{Evidence: tc.evidence}}}
		require.Equal(t, tc.want, rankOf(rep), "%+v", tc.evidence)
	}
	require.Equal(t, -1, rankOf(&report.Report{}))
}

func TestCut(t *testing.T) {
	require.Equal(t, "d", cut("déjà", 2), "never half a character")
	require.Equal(t, "dé", cut("déjà", 3))
	require.Equal(t, "déjà", cut("déjà", 100))
	require.Equal(t, "", cut("déjà", 0))
}
