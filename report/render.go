package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"io"
	"reflect"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/frtrace"
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

// Render writes the report in a format with the default options. The same report gives the
// same bytes.
func Render(w io.Writer, r *Report, format string) error {
	return RenderWith(w, r, format, Options{})
}

// RenderWith writes the report in a format. The same report and options give the same bytes.
func RenderWith(w io.Writer, r *Report, format string, opt Options) error {
	switch format {
	case "json":
		return RenderJSON(w, r)
	case "md":
		return renderTemplate(w, newView(r, opt), "report.md.tmpl", false)
	case "html":
		return renderTemplate(w, newView(r, opt), "report.html.tmpl", true)
	case "text":
		return RenderTextWith(w, r, opt)
	}
	return fmt.Errorf("unknown format %q (use %s)", format, strings.Join(Formats, ", "))
}

// RenderJSON writes the report as indented JSON, the bytes json.Encoder would write, one
// list entry at a time: a report of 200,000 findings is never held whole (nor twice, compact
// and indented) in memory.
func RenderJSON(w io.Writer, r *Report) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// encode writes v as it stands at the given depth of the report, without the newline
	// Encode ends with.
	encode := func(v any, prefix string) error {
		buf.Reset()
		enc.SetIndent(prefix, "  ")
		if err := enc.Encode(v); err != nil {
			return err
		}
		_, err := bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		return err
	}
	v := reflect.ValueOf(r).Elem()
	t := v.Type()
	bw.WriteString("{")
	first := true
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || opts != "" && opts != "omitempty" || !t.Field(i).IsExported() {
			// Every field of Report is written under its name (TestRenderJSONStreams); a
			// section that only some inputs have (flightRecorder) is left out when empty.
			return fmt.Errorf("report: field %s has no plain JSON name", t.Field(i).Name)
		}
		f := v.Field(i)
		if opts == "omitempty" && f.IsZero() {
			continue
		}
		if !first {
			bw.WriteString(",")
		}
		first = false
		fmt.Fprintf(bw, "\n  %q: ", name)
		if f.Kind() != reflect.Slice || f.Len() == 0 {
			if err := encode(f.Interface(), "  "); err != nil {
				return err
			}
			continue
		}
		bw.WriteString("[")
		for j := range f.Len() {
			if j > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n    ")
			if err := encode(f.Index(j).Interface(), "    "); err != nil {
				return err
			}
		}
		bw.WriteString("\n  ]")
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
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

// mdEscape keeps bundle text from becoming Markdown structure (tables, links, HTML), or
// acting on the terminal of whoever reads the file (TerminalSafe).
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range TerminalSafe(strings.NewReplacer("\n", " ", "\r", " ").Replace(s)) {
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

// mdCode puts bundle text in a code span that its own backticks cannot close, its control
// characters shown as escapes (TerminalSafe).
func mdCode(s string) string {
	s = TerminalSafe(strings.NewReplacer("\n", " ", "\r", " ").Replace(s))
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

// mdBlock is a fenced code block for evidence context lines, their control characters shown
// as escapes (TerminalSafe).
func mdBlock(lines []string) string {
	fence := "```"
	safe := make([]string, len(lines))
	for i, l := range lines {
		safe[i] = TerminalSafe(l)
	}
	lines = safe
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
	"evidenceLines": evidenceLines, "repeated": repeated, "podList": PodList,
	"upper": func(v analyze.Verdict) string { return strings.ToUpper(string(v)) }, "join": strings.Join,
	"sev":   func(s analyze.Severity) string { return s.String() },
	"yesNo": yesNo, "short": shortDigest, "lines": func(s string) []string { return strings.Split(s, "\n") }, "sent": sentParts,
	"groupWhen": GroupWhen, "commas": Commas, "plural": plural, "duration": Duration,
	"add": func(a, b int) int { return a + b }, "answer": answerText,
	"frseq": FRSeq, "ranks": frtrace.RankList,
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

func renderTemplate(w io.Writer, r *view, name string, html bool) error {
	src, err := templates.FS.ReadFile(name)
	if err != nil {
		return err
	}
	fm := map[string]any{}
	for k, f := range funcs {
		fm[k] = f
	}
	fm["where"] = r.Report.where
	fm["groupWhere"] = r.Report.GroupWhere
	var buf bytes.Buffer
	if html {
		t, err := htmltemplate.New(name).Funcs(htmltemplate.FuncMap(fm)).Parse(string(src))
		if err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
		if err := WriteHTML(w, t, r); err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
		return nil
	} else {
		t, err := texttemplate.New(name).Funcs(texttemplate.FuncMap(fm)).Parse(string(src))
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

// writeDisagreement says, under the narrative's gist, when the model's answer contradicts the
// rule-based verdict.
func writeDisagreement(b *strings.Builder, r *Report) {
	if s := r.LLMDisagreement(); s != "" {
		fmt.Fprintf(b, "%-12s %s\n", "", s)
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

// HTMLSafe is a rendered HTML page with the control characters that came into it from a
// bundle (an escape sequence in a pod name, a bidi override in a log line) written as their Go
// escapes, as TerminalSafe writes them: html/template escapes markup but passes them through,
// and a page is also read with cat, less and grep. Line breaks stay; the templates hold no
// other control character.
func HTMLSafe(page string) string {
	if !strings.ContainsFunc(page, func(r rune) bool { return r != '\n' && unsafeRune(r) }) {
		return page
	}
	var b strings.Builder
	for line := range strings.Lines(page) {
		body, nl := strings.CutSuffix(line, "\n")
		b.WriteString(TerminalSafe(body))
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// WriteHTML executes an HTML page's template and writes the page through HTMLSafe: every HTML
// page coroner writes (analyze's, diff's, the fleet report's) goes this way.
func WriteHTML(w io.Writer, t *htmltemplate.Template, data any) error {
	var page strings.Builder
	if err := t.Execute(&page, data); err != nil {
		return err
	}
	_, err := io.WriteString(w, HTMLSafe(page.String()))
	return err
}

func unsafeRune(r rune) bool {
	return r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == utf8.RuneError
}

// oneLine makes bundle text safe for a terminal: one line, a tab a space, and every control
// character shown as its escape (TerminalSafe: a newline must not forge a line, an escape
// sequence in an event message must not drive the reader's terminal), at most n runes.
func oneLine(s string, n int) string {
	s = TerminalSafe(strings.ReplaceAll(s, "\t", " "))
	if len([]rune(s)) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}
