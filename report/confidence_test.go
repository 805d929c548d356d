package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
)

// TestConfidenceInEveryForm: a root cause that is not sure says so in words in the terminal
// summary, the Markdown and HTML reports and the JSON; a sure one is not hedged in the
// summary.
func TestConfidenceInEveryForm(t *testing.T) {
	for _, tt := range []struct {
		c          analyze.Confidence
		words      string
		hedgedText bool
	}{
		{analyze.ConfidenceHigh, "high — a specific rule matched", false},
		{analyze.ConfidenceMedium, "medium — likely", true},
		{analyze.ConfidenceLow, "low — could not tell for sure", true},
	} {
		t.Run(string(tt.c), func(t *testing.T) {
			r := hostileReport("a", "b", "c")
			r.RootCause.Confidence = tt.c
			for _, format := range []string{"text", "md", "html", "json"} {
				var out bytes.Buffer
				require.NoError(t, Render(&out, r, format))
				s := out.String()
				switch format {
				case "json":
					require.Contains(t, s, `"confidence": "`+string(tt.c)+`"`)
				case "text":
					require.Equal(t, tt.hedgedText, strings.Contains(s, "Confidence:  "+tt.words), s)
				default:
					require.Contains(t, s, tt.words, format)
				}
			}
		})
	}
}

// TestConfidenceSaysWhy: a root cause sure less than its kind of finding usually is says why:
// a symptom whose words name no cause, a cause named from a traceback's cut frame. Without
// that reason the usual sentence stays.
func TestConfidenceSaysWhy(t *testing.T) {
	for _, tt := range []struct {
		c     analyze.Confidence
		basis analyze.Basis
		words string
	}{
		{analyze.ConfidenceMedium, analyze.BasisSymptom, "its words name no cause of their own"},
		{analyze.ConfidenceLow, analyze.BasisFrame, "named from the innermost frame of a traceback cut before its exception line"},
		{analyze.ConfidenceMedium, analyze.BasisOneRow, "on one row at the end of a job still running"},
		{analyze.ConfidenceMedium, analyze.BasisUsualCause, "its usual cause is named (the OOM killer for a SIGKILL)"},
		{analyze.ConfidenceLow, analyze.BasisKillAfterTimeout, "a collective that had already timed out before it"},
		{analyze.ConfidenceLow, analyze.BasisKillAfterTerm, "the process was sent SIGTERM before it"},
		{analyze.ConfidenceMedium, "", "no specific rule matched"},
		{analyze.ConfidenceLow, "", "only an exit code, a signal"},
	} {
		rc := &RootCause{Confidence: tt.c, Basis: tt.basis}
		require.Contains(t, rc.ConfidenceText(), tt.words)
	}
	// A generic rule (an abort) whose category the failure's words confirmed at medium did
	// match: the text does not say that no rule did.
	rc := &RootCause{Confidence: analyze.ConfidenceMedium, Finding: Finding{RuleID: "crash-signal/abort"}}
	require.Contains(t, rc.ConfidenceText(), "a generic rule matched")
	require.NotContains(t, rc.ConfidenceText(), "no specific rule matched, the cause")
	rc.RuleID = analyze.SecondTierRuleID + "crash-signal"
	require.Contains(t, rc.ConfidenceText(), "no specific rule matched, the cause was named from the words")
	r := hostileReport("a", "b", "c")
	r.RootCause.Confidence, r.RootCause.Basis = analyze.ConfidenceMedium, analyze.BasisSymptom
	var out bytes.Buffer
	require.NoError(t, Render(&out, r, "md"))
	require.Contains(t, out.String(), "its words name no cause of their own")
}
