package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
)

// TestLongListsAreCut: many distinct failures, warnings and gaps stop after a few dozen in
// the default Markdown and HTML, saying how many more --full lists.
func TestLongListsAreCut(t *testing.T) {
	r := manyRanks(4)
	for i := 0; i < 100; i++ {
		r.Findings = append(r.Findings, &Finding{ID: fmt.Sprintf("g%d", i), RuleID: fmt.Sprintf("x/rule-%d", i), Category: "unknown",
			Severity: analyze.SeverityWarning, Title: fmt.Sprintf("odd thing %d", i), Count: 1,
			Evidence: []Evidence{{Source: "log", File: "logs/ml/p/c.log", Line: i + 1, Text: strings.Repeat("x", 500)}}})
		r.Warnings = append(r.Warnings, fmt.Sprintf("warning %d", i))
		r.Bundle.Gaps = append(r.Bundle.Gaps, bundle.Gap{Step: "logs", Object: fmt.Sprintf("Pod ml/p-%d", i), Message: "gone"})
	}
	for _, format := range []string{"md", "html"} {
		var short, full bytes.Buffer
		if err := RenderWith(&short, r, format, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := RenderWith(&full, r, format, Options{Full: true}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"70 more failures are left out here", "70 more: ", "odd thing 29"} {
			if !strings.Contains(short.String(), want) {
				t.Errorf("%s: no %q", format, want)
			}
		}
		if strings.Contains(short.String(), "odd thing 30<") || strings.Contains(short.String(), "odd thing 30\n") || strings.Contains(short.String(), "warning 30<") {
			t.Errorf("%s: the 31st is shown", format)
		}
		for _, want := range []string{"odd thing 99", "warning 99", "Pod ml/p-99"} {
			if !strings.Contains(full.String(), want) {
				t.Errorf("%s --full: no %q", format, want)
			}
		}
	}
}
