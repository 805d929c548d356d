package report

import (
	"strings"
	"testing"

	"github.com/coroner-dev/coroner/analyze"
)

// A model that calls an unhealthy job healthy is shown beside the verdict with a sentence
// saying which one coroner follows; an answer that agrees gets no such sentence.
func TestLLMDisagreementStated(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		verdict analyze.Verdict
		healthy *bool
		want    string
	}{
		{analyze.VerdictUnhealthy, &yes, "it says healthy; coroner's verdict (and exit code) follow the rules: unhealthy"},
		{analyze.VerdictHealthy, &no, "it says unhealthy; coroner's verdict (and exit code) follow the rules: healthy"},
		{analyze.VerdictUnhealthy, &no, ""},
		{analyze.VerdictUnhealthy, nil, ""},
	} {
		r := hostileReport("a", "b", "c")
		r.Verdict = c.verdict
		r.LLM = &Narrative{Model: "m", Healthy: c.healthy, Error: "all fine", AnswerFormat: "json", Solution: []string{}}
		for _, format := range []string{"text", "md", "html"} {
			var b strings.Builder
			if err := Render(&b, r, format); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if format == "md" {
				out = strings.ReplaceAll(out, `\(`, "(")
				out = strings.ReplaceAll(out, `\)`, ")")
			}
			if format == "html" {
				out = strings.ReplaceAll(out, "&#39;", "'")
			}
			switch {
			case c.want != "" && !strings.Contains(out, c.want):
				t.Errorf("verdict %s, model healthy=%s: the %s report does not say %q:\n%s", c.verdict, yesNo(c.healthy), format, c.want, out)
			case c.want == "" && strings.Contains(out, "model disagrees"):
				t.Errorf("verdict %s, model healthy=%s: the %s report states a disagreement", c.verdict, yesNo(c.healthy), format)
			}
		}
	}
}

// Escape sequences in the model's answer are shown as escapes, never written raw into the
// Markdown or HTML report or the terminal summary.
func TestLLMAnswerEscapesNeutralised(t *testing.T) {
	r := hostileReport("a", "b", "c")
	esc := "\x1b]0;pwned\x07\x1b[2J"
	r.LLM = &Narrative{Model: "m", AnswerFormat: "json", Error: "err" + esc, Analysis: "line one\n" + esc + "line two",
		Solution: []string{"step" + esc}, Raw: `{"error":"` + esc + `"}`,
		Roles: []RoleDiagnosis{{Role: "worker", Diagnosis: "died" + esc, Source: "model"}}}
	for _, format := range []string{"text", "md", "html"} {
		var b strings.Builder
		if err := Render(&b, r, format); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(b.String(), "\x1b\x07") {
			t.Errorf("the %s report carries a raw escape sequence from the model's answer:\n%q", format, b.String())
		}
	}
}
