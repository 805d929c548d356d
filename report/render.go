package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/templates"
)

// Formats are the output formats of Render.
var Formats = []string{"text", "json", "md", "html"}

// FormatFromPath guesses the format from an output file's extension, or "".
func FormatFromPath(p string) string {
	switch {
	case strings.HasSuffix(p, ".json"):
		return "json"
	case strings.HasSuffix(p, ".md"), strings.HasSuffix(p, ".markdown"):
		return "md"
	case strings.HasSuffix(p, ".html"), strings.HasSuffix(p, ".htm"):
		return "html"
	case strings.HasSuffix(p, ".txt"):
		return "text"
	}
	return ""
}

// Render writes the report in a format. The same report gives the same bytes.
func Render(w io.Writer, r *Report, format string) error {
	switch format {
	case "json":
		return RenderJSON(w, r)
	case "md":
		return renderTemplate(w, r, "report.md.tmpl", false)
	case "html":
		return renderTemplate(w, r, "report.html.tmpl", true)
	case "text":
		return RenderText(w, r)
	}
	return fmt.Errorf("unknown format %q (use %s)", format, strings.Join(Formats, ", "))
}

// RenderJSON writes the report as indented JSON.
func RenderJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

func fmtTime(t any) string {
	switch v := t.(type) {
	case *time.Time:
		if v == nil {
			return "—"
		}
		return v.UTC().Format("2006-01-02 15:04:05.000Z")
	case time.Time:
		if v.IsZero() {
			return "—"
		}
		return v.UTC().Format("2006-01-02 15:04:05.000Z")
	}
	return ""
}

func where(pod, container string) string {
	switch {
	case pod == "":
		return "—"
	case container == "":
		return pod
	}
	return pod + "/" + container
}

func expected(n *int) string {
	if n == nil {
		return "?"
	}
	return itoa(*n)
}

// mdEscape keeps bundle text from becoming Markdown structure (tables, links, HTML).
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '#', '!', '(', ')':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n', '\r':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdCode puts bundle text in a code span that its own backticks cannot close.
func mdCode(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

// mdBlock is a fenced code block for evidence context lines.
func mdBlock(lines []string) string {
	fence := "```"
	for _, l := range lines {
		for strings.Contains(l, fence) {
			fence += "`"
		}
	}
	return fence + "text\n" + strings.Join(lines, "\n") + "\n" + fence
}

// evidenceLines renders an evidence with its context as "  212 | text" lines, the evidence
// line marked with ">".
func evidenceLines(e Evidence) []string {
	var out []string
	for _, c := range e.Before {
		out = append(out, fmt.Sprintf("  %6d | %s", c.Line, c.Text))
	}
	if e.Line > 0 {
		out = append(out, fmt.Sprintf("> %6d | %s", e.Line, e.Text))
	} else {
		out = append(out, "> "+e.Text)
	}
	for _, c := range e.After {
		out = append(out, fmt.Sprintf("  %6d | %s", c.Line, c.Text))
	}
	return out
}

func repeated(e Evidence, count int) string {
	if count <= 1 {
		return ""
	}
	s := fmt.Sprintf("seen %d times", count)
	if e.LastLine > 0 {
		s += fmt.Sprintf(", last at line %d", e.LastLine)
	}
	if e.LastTime != nil {
		s += " (" + fmtTime(e.LastTime) + ")"
	}
	return s
}

// findingGroup is the findings of one rule that follow from the same cause, shown as one
// line in summaries ("collective-timeout on 7 pods").
type findingGroup struct {
	First *Finding
	Pods  []string
	Count int
}

func groupSecondary(fs []*Finding, rootID string) []findingGroup {
	var out []findingGroup
	idx := map[string]int{}
	for _, f := range fs {
		if f.ID == rootID {
			continue
		}
		// One line per rule and title: the same failure on many pods reads as one line.
		key := f.RuleID + "\x00" + f.Title + "\x00" + f.Severity.String() + "\x00" + strconv.FormatBool(f.SecondaryOf != "")
		i, ok := idx[key]
		if !ok {
			idx[key] = len(out)
			out = append(out, findingGroup{First: f})
			i = len(out) - 1
		}
		g := &out[i]
		g.Count += f.Count
		if f.Pod != "" && !containsStr(g.Pods, f.Pod) {
			g.Pods = append(g.Pods, f.Pod)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].First.Severity > out[j].First.Severity })
	return out
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// PodList names pods for a summary line: all of up to three, else two and how many more.
func PodList(pods []string) string {
	if len(pods) <= 3 {
		return strings.Join(pods, ", ")
	}
	return fmt.Sprintf("%s and %d more pods", strings.Join(pods[:2], ", "), len(pods)-2)
}

var funcs = map[string]any{
	"time": fmtTime, "where": where, "expected": expected, "md": mdEscape, "code": mdCode, "codeblock": mdBlock,
	"evidenceLines": evidenceLines, "repeated": repeated, "groups": groupSecondary, "podList": PodList,
	"upper": func(v analyze.Verdict) string { return strings.ToUpper(string(v)) }, "join": strings.Join,
	"sev":   func(s analyze.Severity) string { return s.String() },
	"yesNo": yesNo, "short": shortDigest, "lines": func(s string) []string { return strings.Split(s, "\n") }, "sent": sentParts,
}

// sentParts lists what a prompt carried for Markdown, with the bytes each line added.
func sentParts(parts []PromptPart) []string {
	var out []string
	for _, s := range SummarizeParts(parts) {
		out = append(out, fmt.Sprintf("%s (%d bytes)", s, s.Bytes))
	}
	return out
}

// shortDigest is the first 12 hex digits of a digest, as `ollama list` shows it.
func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

func renderTemplate(w io.Writer, r *Report, name string, html bool) error {
	src, err := templates.FS.ReadFile(name)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if html {
		t, err := htmltemplate.New(name).Funcs(htmltemplate.FuncMap(funcs)).Parse(string(src))
		if err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
		err = t.Execute(&buf, r)
		if err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
	} else {
		t, err := texttemplate.New(name).Funcs(texttemplate.FuncMap(funcs)).Parse(string(src))
		if err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
		if err := t.Execute(&buf, r); err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// RenderText writes the terminal summary: job, status, verdict, root cause with its one
// evidence line, then the other findings one line each.
//
// Names and messages come from the bundle: a pod named with a newline or an escape sequence
// must not forge a line of the summary or drive the reader's terminal. Each is shown through
// TerminalSafe.
func RenderText(w io.Writer, r *Report) error {
	var b strings.Builder
	job := r.Job.Kind
	if r.Job.Name != "" {
		job += " " + strings.TrimPrefix(r.Job.Namespace+"/"+r.Job.Name, "/")
	}
	if r.Bundle.Plain {
		job = "plain logs: " + r.Bundle.Name
	}
	job = TerminalSafe(job)
	fmt.Fprintf(&b, "Job:         %s\n", job)
	if r.Job.Status != "" {
		fmt.Fprintf(&b, "Status:      %s\n", TerminalSafe(string(r.Job.Status)))
	}
	fmt.Fprintf(&b, "Verdict:     %s — %s\n", strings.ToUpper(string(r.Verdict)), TerminalSafe(r.VerdictReason))
	if rc := r.RootCause; rc != nil {
		fmt.Fprintf(&b, "Root cause:  [%s] %s\n", rc.Category, TerminalSafe(rc.Title))
		at := TerminalSafe(where(rc.Pod, rc.Container))
		if rc.Pod == "" {
			at = job
		}
		fmt.Fprintf(&b, "             at %s, %s; fault: %s, retry: %s\n", at, fmtTime(rc.Time), rc.Fault, rc.Retry)
		if len(rc.Evidence) > 0 {
			e := rc.Evidence[0]
			fmt.Fprintf(&b, "Evidence:    %s\n             %s\n", TerminalSafe(e.Location()), oneLine(e.Text, 160))
		}
	}
	rootID := ""
	if r.RootCause != nil {
		rootID = r.RootCause.ID
	}
	groups := groupSecondary(r.Findings, rootID)
	if len(groups) > 0 {
		fmt.Fprintf(&b, "Other findings:\n")
	}
	for _, g := range groups {
		f := g.First
		at := where(f.Pod, f.Container)
		if f.Pod == "" {
			at = "the job"
		}
		if len(g.Pods) > 1 {
			at = PodList(g.Pods)
		}
		at = TerminalSafe(at)
		line := fmt.Sprintf("  %-8s %-19s %s — %s", f.Severity, f.Category, oneLine(f.Title, 70), at)
		if g.Count > 1 {
			line += fmt.Sprintf(" (x%d)", g.Count)
		}
		if f.SecondaryOf != "" {
			line += " [follows " + f.SecondaryOf + "]"
		}
		b.WriteString(line + "\n")
	}
	if l := r.LLM; l != nil {
		writeLLMText(&b, l)
	}
	for _, wr := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", TerminalSafe(wr))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeLLMText adds the narrative's gist to the terminal summary.
func writeLLMText(b *strings.Builder, l *Narrative) {
	label := "LLM:"
	if l.Failure != "" {
		fmt.Fprintf(b, "%-12s no narrative: %s\n", label, oneLine(l.Failure, 300))
		return
	}
	how := oneLine(l.Model, 60)
	if l.Cached {
		how += ", cached"
	}
	switch {
	case l.AnswerFormat == "":
		fmt.Fprintf(b, "%-12s (%s) answered out of form; the report has its raw text\n", label, how)
	default:
		fmt.Fprintf(b, "%-12s (%s) healthy: %s — %s\n", label, how, yesNo(l.Healthy), oneLine(l.Error, 200))
	}
}

// yesNo shows the seed's Healthy field.
func yesNo(h *bool) string {
	switch {
	case h == nil:
		return "?"
	case *h:
		return "Yes"
	}
	return "No"
}

// TerminalSafe shows a name or message from a bundle on a terminal as it is, but for what
// would act on the terminal instead of being shown: control characters (a newline that would
// forge a line of output, an escape sequence that would move the cursor or retitle the window)
// and the Unicode controls that reorder what follows (bidirectional overrides and isolates)
// are written as Go escapes: \n, \x1b, \u202e.
func TerminalSafe(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unsafeRune(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToASCII(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == utf8.RuneError
}

// oneLine makes bundle text safe for a terminal: one line, no control characters (an escape
// sequence in an event message must not drive the reader's terminal), at most n runes.
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	if len([]rune(s)) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}
