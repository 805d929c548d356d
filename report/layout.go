package report

import (
	"fmt"
	"strings"
)

// maxLayoutLines bounds the gaps and the analyzers' results the terminal summary lists for a
// bundle of another tool's layout; the HTML and Markdown reports list them all.
const maxLayoutLines = 8

// writeLayoutText lists, for a bundle of another tool's layout (a troubleshoot support
// bundle), what it lacks and what that tool's analyzers concluded that is not a pass.
func writeLayoutText(b *strings.Builder, r *Report, paint painter) {
	if r.Bundle.Layout == "" {
		return
	}
	for i, g := range r.Bundle.Gaps {
		if i == maxLayoutLines {
			fmt.Fprintf(b, "%s %d more\n", paint(toneWarn, "gap:"), len(r.Bundle.Gaps)-i)
			break
		}
		fmt.Fprintf(b, "%s %s %s: %s\n", paint(toneWarn, "gap:"), g.Step, oneLine(g.Object, 200), oneLine(g.Message, 1<<10))
	}
	var shown []string
	passes := 0
	for _, a := range r.Bundle.Analyzers {
		if a.Severity != "error" && a.Severity != "warn" {
			passes++
			continue
		}
		line := fmt.Sprintf("  %-5s %s", a.Severity, oneLine(a.Title, 200))
		if a.Message != "" {
			line += ": " + oneLine(a.Message, 300)
		}
		shown = append(shown, line)
	}
	if len(r.Bundle.Analyzers) == 0 {
		return
	}
	tool := r.Bundle.Analyzers[0].Tool
	fmt.Fprintf(b, "%s %d result(s), %d failing or warning, %d passing or informational\n",
		paint(toneBold, tool+"'s own analyzers:"), len(r.Bundle.Analyzers), len(shown), passes)
	for i, l := range shown {
		if i == maxLayoutLines {
			fmt.Fprintf(b, "  and %d more (the JSON, HTML and Markdown reports list them)\n", len(shown)-i)
			break
		}
		b.WriteString(l + "\n")
	}
}
