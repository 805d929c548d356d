package watch

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/report"
)

func TestNarrativeSummary(t *testing.T) {
	yes, no := true, false
	oom := &report.RootCause{Finding: report.Finding{Category: "cuda-oom"}}
	const path = "/var/lib/coroner/ml/train-job/20260314T100215Z.html"
	for _, tc := range []struct {
		name    string
		verdict analyze.Verdict
		root    *report.RootCause
		llm     report.Narrative
		want    string
	}{
		{"agrees", analyze.VerdictUnhealthy, oom,
			report.Narrative{Model: "qwen2.5:7b-instruct", AnswerFormat: "json", Healthy: &no, Error: "Rank 5 ran out of GPU memory.\nIn the backward pass."},
			"model qwen2.5:7b-instruct (not coroner's verdict): Rank 5 ran out of GPU memory. In the backward pass.; report " + path},
		{"calls a failed job healthy", analyze.VerdictUnhealthy, oom,
			report.Narrative{Model: "m", AnswerFormat: "json", Healthy: &yes, Error: "Nothing failed."},
			"model m (not coroner's verdict): Nothing failed.; the model disagrees: it says healthy, coroner's verdict stays unhealthy (cuda-oom); report " + path},
		{"calls a healthy job failed", analyze.VerdictHealthy, nil,
			report.Narrative{Model: "m", AnswerFormat: "text", Healthy: &no, Error: "The master crashed."},
			"model m (not coroner's verdict): The master crashed.; the model disagrees: it says unhealthy, coroner's verdict stays healthy; report " + path},
		{"no verdict to disagree with", analyze.VerdictUnknown, nil,
			report.Narrative{Model: "m", AnswerFormat: "json", Healthy: &no, Error: "It failed."},
			"model m (not coroner's verdict): It failed.; report " + path},
		{"no error line: the analysis", analyze.VerdictUnhealthy, oom,
			report.Narrative{Model: "m", AnswerFormat: "json", Analysis: "Out of memory."},
			"model m (not coroner's verdict): Out of memory.; report " + path},
		{"out of form: its first words, escapes shown", analyze.VerdictUnhealthy, oom,
			report.Narrative{Model: "tiny", Raw: "{\"healthy\":\"No\",\"error\":\"abc\x1b[31m"},
			`model tiny (not coroner's verdict): answered out of form: {"healthy":"No","error":"abc\x1b[31m; report ` + path},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &report.Report{Verdict: tc.verdict, RootCause: tc.root, LLM: &tc.llm}
			require.Equal(t, tc.want, narrativeSummary(rep, path, maxEventMessage))
		})
	}
}

// The model's words are cut first; what it disagrees with and the report's path stay whole.
func TestNarrativeSummaryIsBounded(t *testing.T) {
	yes := true
	rep := &report.Report{Verdict: analyze.VerdictUnhealthy, RootCause: &report.RootCause{Finding: report.Finding{Category: "nan-loss"}},
		LLM: &report.Narrative{Model: "m", AnswerFormat: "json", Healthy: &yes, Error: strings.Repeat("tout va bien — déjà ", 200)}}
	path := "/var/lib/coroner/ml/j/20260314T100215Z.html"
	msg := narrativeSummary(rep, path, maxEventMessage)
	require.LessOrEqual(t, len(msg), maxEventMessage)
	require.True(t, utf8.ValidString(msg))
	require.True(t, strings.HasPrefix(msg, "model m (not coroner's verdict): tout va bien"), msg)
	require.True(t, strings.HasSuffix(msg, "…; the model disagrees: it says healthy, coroner's verdict stays unhealthy (nan-loss); report "+path), msg)
}

func TestNarrationsQueue(t *testing.T) {
	q := newNarrations(2)
	a, b, c := &narration{key: "a"}, &narration{key: "b"}, &narration{key: "c"}
	require.True(t, q.add(a))
	require.True(t, q.add(b))
	require.False(t, q.add(c), "full: a collect is never held up by the model")
	require.Equal(t, 2, q.len())
	require.Same(t, a, q.get(), "first in, first out")

	// A waiting get is woken by an add, and by shut.
	got := make(chan *narration)
	require.Same(t, b, q.get())
	go func() { got <- q.get() }()
	time.Sleep(10 * time.Millisecond)
	require.True(t, q.add(c))
	require.Same(t, c, <-got)
	go func() { got <- q.get() }()
	time.Sleep(10 * time.Millisecond)
	require.Empty(t, q.shut())
	require.Nil(t, <-got)
	require.False(t, q.add(a), "shut: nothing more is queued")

	q = newNarrations(4)
	q.add(a)
	q.add(b)
	require.Equal(t, []*narration{a, b}, q.shut(), "what was waiting is returned")
	require.Nil(t, q.get())
}
