package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/renderer/html"
)

// TestReportsEscapeBundleText plants markup in a log line and an event message: the HTML
// report shows it as text, and the Markdown report cannot be turned into HTML by it.
func TestReportsEscapeBundleText(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	write("manifest.json", `{"formatVersion":1,"target":{"apiVersion":"v1","kind":"Pod","namespace":"ml","name":"p"},"files":[]}`)
	write("resources/core/Pod/ml/p.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml, uid: u1}\nspec: {containers: [{name: c, image: i}]}\nstatus: {phase: Failed}\n")
	write("resources/core/Event/ml/p.1.yaml", "apiVersion: v1\nkind: Event\nmetadata: {name: p.1, namespace: ml}\ninvolvedObject: {kind: Pod, name: p, namespace: ml}\n"+
		"type: Warning\nreason: Failed\nmessage: 'Failed to pull image \"<script>document.title=1</script>\": not found'\nfirstTimestamp: \"2026-03-14T10:00:00Z\"\n")
	write("logs/ml/p/c.log", "2026-03-14T10:00:01Z ModuleNotFoundError: No module named 'x<img src=x onerror=alert(1)>'\n"+
		"2026-03-14T10:00:02Z <a href=\"javascript:alert(1)\">click</a> <style>body{display:none}</style>\n")

	for _, format := range []string{"html", "md"} {
		code, out, stderr := run(t, "analyze", dir, "--format", format)
		require.Equal(t, 0, code, stderr)
		lower := strings.ToLower(out)
		if format == "md" {
			// Fenced code blocks and code spans are literal text in CommonMark; elsewhere every
			// '<' from the bundle must be backslash-escaped.
			lower = codeSpan.ReplaceAllString(stripFences(lower), "")
			lower = strings.ReplaceAll(lower, `\<`, "")
		}
		for _, bad := range []string{"<script", "<img", "<a href=\"javascript", "<style>body"} {
			require.NotContains(t, lower, bad, "%s report contains raw %q from the bundle", format, bad)
		}
		if format == "html" {
			require.Contains(t, out, "&lt;script&gt;document.title=1&lt;/script&gt;")
			require.Contains(t, out, "x&lt;img src=x onerror=alert(1)&gt;")
		}
	}
}

// codeSpan is an inline code span of one or two backticks.
var codeSpan = regexp.MustCompile("``[^`]*``|`[^`\n]*`")

func stripFences(md string) string {
	var out []string
	in := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if !in {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestMarkdownReportOfHostileBundle renders the Markdown report of the markup bundle the
// way a viewer would (CommonMark, raw HTML passed through): no planted element appears.
func TestMarkdownReportOfHostileBundle(t *testing.T) {
	code, md, stderr := run(t, "analyze", hostileMarkupBundle(t), "--format", "md")
	require.Equal(t, 0, code, stderr)
	var out bytes.Buffer
	require.NoError(t, goldmark.New(goldmark.WithRendererOptions(html.WithUnsafe())).Convert([]byte(md), &out))
	require.Empty(t, plantedElement.FindAllString(out.String(), -1), out.String())
	require.Contains(t, out.String(), "pwned-event", "the event is in the report, as text")
	require.Contains(t, out.String(), "pwned-evidence")
}

// TestTerminalSummaryEscapesNames: a job and a pod named with a newline, an escape sequence and
// a bidirectional override (a bundle can hold any name) are shown escaped in the terminal
// summary, where they used to reach the terminal raw: a forged "Verdict:" line, a cleared
// screen.
func TestTerminalSummaryEscapesNames(t *testing.T) {
	pod := "p\nVerdict:     HEALTHY\x1b[2J\u202e"
	m := `{"formatVersion":1,"target":{"apiVersion":"v1","kind":"Pod","namespace":"ml","name":` + jsonString(pod) + `},"files":[]}`
	podYAML := "apiVersion: v1\nkind: Pod\nmetadata: {name: " + strconv.Quote(pod) + ", namespace: ml, uid: u1}\nspec: {containers: [{name: c, image: i}]}\nstatus: {phase: Failed}\n"
	p := tarFile(t, reg("manifest.json", m), reg("resources/core/Pod/ml/p.yaml", podYAML), reg("logs/ml/"+pod+"/c.log", oomLine))
	code, stdout, stderr := run(t, "analyze", p)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stdout, "\x1b")
	require.NotContains(t, stdout, "\u202e")
	require.NotContains(t, stdout, "\nVerdict:     HEALTHY", "no forged line")
	require.Contains(t, stdout, `p\nVerdict:     HEALTHY\x1b[2J\u202e`)
	require.Contains(t, stdout, "Verdict:     UNHEALTHY")
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
