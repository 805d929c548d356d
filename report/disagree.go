package report

import (
	"strings"

	"github.com/coroner-dev/coroner/analyze"
)

// LLMDisagreement says in words when the model's Healthy answer contradicts coroner's
// rule-based verdict: the model's answer never changes the verdict or the exit code, and a
// reader who sees "UNHEALTHY" beside "healthy: Yes" must be told which one counts. It is ""
// when they agree, when the model did not say, or when the verdict is neither healthy nor
// unhealthy.
func (r *Report) LLMDisagreement() string {
	l := r.LLM
	if l == nil || l.Failure != "" || l.Healthy == nil {
		return ""
	}
	says := analyze.VerdictUnhealthy
	if *l.Healthy {
		says = analyze.VerdictHealthy
	}
	if r.Verdict != analyze.VerdictHealthy && r.Verdict != analyze.VerdictUnhealthy || r.Verdict == says {
		return ""
	}
	return "The model disagrees: it says " + string(says) + "; coroner's verdict (and exit code) follow the rules: " + string(r.Verdict) + "."
}

// answerText makes the model's answer safe to show, line by line: an escape sequence or other
// control character in it is written as its Go escape (TerminalSafe), so it cannot drive the
// terminal of whoever reads report.md or the summary; the answer's lines stay lines.
func answerText(s string) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = TerminalSafe(strings.TrimSuffix(l, "\r"))
	}
	return strings.Join(ls, "\n")
}
