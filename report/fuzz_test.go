package report

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/renderer/html"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
)

// hostileReport puts a, b and c in every field of a report that comes from a bundle.
func hostileReport(a, b, c string) *Report {
	t := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	t0 := t.Add(-time.Hour)
	n := 2
	ev := Evidence{Source: "log", File: "logs/ml/" + a + "/" + b + ".log", Line: 7, Time: &t, Text: c,
		Before: []ContextLine{{Line: 6, Text: a}}, After: []ContextLine{{Line: 8, Text: b}}}
	f := &Finding{ID: "f1", RuleID: "cuda-oom/torch-alloc", Category: "cuda-oom", Severity: analyze.SeverityError,
		Layer: "execution", Title: "CUDA out of memory: " + a, Fault: "user", Retry: "permanent", Pod: a, Container: b,
		Time: &t, Count: 3, Evidence: []Evidence{ev}}
	g := &Finding{ID: "f2", RuleID: "control/pod-failed", Category: "unknown", Severity: analyze.SeverityWarning,
		Layer: "control", Title: b, Fault: "unknown", Retry: "transient", Pod: c, SecondaryOf: "f1", Count: 1,
		Evidence: []Evidence{{Source: "event", Object: "Pod ml/" + c, Text: a}}}
	return &Report{
		FormatVersion: FormatVersion, CoronerVersion: "test",
		Bundle: BundleInfo{Name: a + ".tar.gz", ServerVersion: b, CollectedAt: &t,
			Gaps: []bundle.Gap{{Step: "logs", Object: "Pod ml/" + a, Message: b}}, Redaction: &bundle.RedactionInfo{}},
		Job: Job{Kind: "PyTorchJob", Namespace: a, Name: b, Status: c, Conditions: []Condition{{Type: "Failed", Status: "True", Reason: a, Message: b, Time: &t}},
			Replicas: []Replica{{Role: a, Expected: &n, Created: 2, Pods: []Pod{
				{Name: a, Phase: "Failed", Node: b, Ended: c, Created: &t0, Started: &t0, Finished: &t, Rank: &n},
				{Name: c, Phase: c, Node: a, Ended: b, Created: &t0}}}}},
		Verdict: "unhealthy", VerdictReason: c,
		RootCause: &RootCause{Finding: Finding{ID: "f1", Category: "cuda-oom", RuleID: "cuda-oom/torch-alloc", Title: f.Title, Severity: f.Severity,
			Fault: "user", Retry: "permanent", Pod: a, Container: b, Time: &t, Evidence: f.Evidence, Explanation: "x", Remediation: "y"}},
		Findings: []*Finding{f, g},
		Timeline: []TimelineEntry{{Time: t, Kind: "event", Pod: a, Container: b, Text: c}, {Time: t, Kind: "finding", Pod: a, Text: b, Severity: "error", FindingID: "f1"}},
		Events:   []Event{{Time: &t, Type: "Warning", Reason: a, Object: "Pod ml/" + b, Message: c, Count: 1}},
		Logs:     []LogSummary{{Path: "logs/ml/" + a + "/" + b + ".log", Pod: a, Container: b, Lines: 1}},
		Warnings: []string{a, b, c},
	}
}

var (
	// baseline is the HTML tags of the report with harmless text.
	baseline     string
	baselineOnce sync.Once

	tagRE     = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9]*)`)
	fullTagRE = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	attrRE    = regexp.MustCompile(`(?i)\s(?:href|src|style|on[a-z]+)\s*=`)
	mdTags    = map[string]bool{"p": true, "h1": true, "h2": true, "h3": true, "h4": true, "table": true, "thead": true, "tbody": true,
		"tr": true, "th": true, "td": true, "strong": true, "em": true, "code": true, "pre": true, "ul": true, "li": true, "hr": true, "br": true,
		"details": true, "summary": true} // the report's own folds
)

// checkEscaped fails when bundle text became markup: the HTML report has exactly the tags of
// the same report with harmless text, and the Markdown report, rendered by a CommonMark
// renderer that passes raw HTML through, has only the tags Markdown itself makes.
func checkEscaped(t *testing.T, a, b, c string) {
	t.Helper()
	render := func(r *Report, format string) string {
		var buf bytes.Buffer
		if err := Render(&buf, r, format); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	got := render(hostileReport(a, b, c), "html")
	baselineOnce.Do(func() {
		// Harmless text with the same relations as the inputs: three different names.
		baseline = strings.Join(tagRE.FindAllString(render(hostileReport("ax", "bx", "cx"), "html"), -1), " ")
	})
	if g, w := strings.Join(tagRE.FindAllString(got, -1), " "), baseline; g != w {
		t.Fatalf("bundle text changed the HTML's tags:\n got %v\nwant %v\ninput %q %q %q", g, w, a, b, c)
	}
	if strings.Contains(strings.ToLower(got), "<script") {
		t.Fatalf("<script in the HTML report for %q %q %q", a, b, c)
	}
	md := render(hostileReport(a, b, c), "md")
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithRendererOptions(html.WithUnsafe()))
	if err := gm.Convert([]byte(md), &out); err != nil {
		t.Fatal(err)
	}
	for _, m := range tagRE.FindAllStringSubmatch(out.String(), -1) {
		if !mdTags[strings.ToLower(m[2])] {
			t.Fatalf("bundle text became a <%s> tag in the Markdown report for %q %q %q:\n%s", m[2], a, b, c, out.String())
		}
	}
	for _, tag := range fullTagRE.FindAllString(out.String(), -1) {
		if attrRE.MatchString(tag) {
			t.Fatalf("bundle text became an attribute in the Markdown report: %s for %q %q %q", tag, a, b, c)
		}
	}
}

func TestHostileTextStaysText(t *testing.T) {
	for _, s := range hostileSeeds {
		checkEscaped(t, "a"+s, "b"+s, "c"+s)
	}
}

var hostileSeeds = []string{
	"<script>document.title='pwned'</script>",
	`<img src=x onerror="document.title='pwned'">`,
	`<a href="javascript:alert(1)">x</a>`,
	"[x](javascript:alert(1))",
	"<javascript:alert(1)>",
	"<style>body{display:none}</style>",
	`" style="background:url(javascript:alert(1))`,
	"```\n<script>x</script>\n```",
	"`` <script> ``",
	"| a | <b>",
	"&lt;script&gt;",
	"<!-- x --><svg onload=alert(1)>",
	"\r<script>\r",
	"![x](http://evil/x.png)",
	"\\<script>",
}

// FuzzRender: no text from a bundle becomes markup in the HTML or Markdown report.
func FuzzRender(f *testing.F) {
	for _, s := range hostileSeeds {
		f.Add(s, "pod-"+s, s+" tail")
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		checkEscaped(t, "a"+a, "b"+b, "c"+c)
	})
}
