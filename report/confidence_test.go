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
