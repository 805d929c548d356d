package compare

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/coroner-dev/coroner/report"
)

// Formats are the output formats of Render, as analyze's.
var Formats = report.Formats

// sectionTitles name the sections in every form.
var sectionTitles = map[string]string{
	SectionDiagnosis: "Diagnoses",
	SectionSpec:      "Spec and environment",
	SectionLogs:      "Logs",
	SectionProgress:  "Progress",
}

// Render writes the report in a format: text, json, md or html. The same report gives the same
// bytes.
func Render(w io.Writer, r *Report, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "md":
		return renderMarkdown(w, r)
	case "html":
		return renderHTML(w, r)
	case "text":
		return RenderText(w, r)
	}
	return fmt.Errorf("unknown format %q (use %s)", format, strings.Join(Formats, ", "))
}

// verdictLine is one run's verdict and root cause in a line.
func verdictLine(s Side) string {
	line := string(s.Verdict)
	if s.RootCause != nil {
		line += ": " + s.RootCause.Title
		if s.RootCause.Pod != "" {
			line += " (" + s.RootCause.Pod + ")"
		}
	} else if s.VerdictReason != "" {
		line += ": " + s.VerdictReason
	}
	return line
}

// RenderText writes the terminal summary: both verdicts, what most likely explains the
// difference, then each section's changes.
func RenderText(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	ts := report.TerminalSafe
	fmt.Fprintf(bw, "GOOD:        %s (%s)\n", ts(r.Good.Name), ts(r.Good.Job))
	fmt.Fprintf(bw, "             %s\n", ts(verdictLine(r.Good)))
	fmt.Fprintf(bw, "BAD:         %s (%s)\n", ts(r.Bad.Name), ts(r.Bad.Job))
	fmt.Fprintf(bw, "             %s\n", ts(verdictLine(r.Bad)))
	if r.Empty() {
		fmt.Fprintln(bw, "\nNo difference: the runs' diagnoses, spec, environment, log templates and pace agree.")
	} else if top := r.Top(); top != nil {
		fmt.Fprintf(bw, "Most likely: %s\n", ts(top.Title))
	}
	for _, s := range Sections {
		cs := r.Section(s)
		if len(cs) == 0 {
			continue
		}
		fmt.Fprintf(bw, "\n%s (%d):\n", sectionTitles[s], len(cs)+r.Omitted[s])
		for _, c := range cs {
			fmt.Fprintf(bw, "  %-15s %s\n", c.Kind, ts(c.Title))
			if t := c.Template; t != nil && t.First != nil {
				fmt.Fprintf(bw, "  %-15s first: %s\n", "", ts(occurrenceText(t.First)))
			}
		}
		if n := r.Omitted[s]; n > 0 {
			fmt.Fprintf(bw, "  ... and %d more\n", n)
		}
		if s == SectionLogs && r.Divergence != nil {
			fmt.Fprintf(bw, "  BAD diverges first at %s\n", ts(occurrenceText(r.Divergence)))
		}
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(bw, "warning: %s\n", ts(wn))
	}
	return bw.Flush()
}

// occurrenceText says where a line is: log and line, time, and how far into the run.
func occurrenceText(o *Occurrence) string {
	s := fmt.Sprintf("%s:%d", o.Path, o.Line)
	var more []string
	if o.Time != nil {
		more = append(more, o.Time.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if o.Elapsed != "" {
		more = append(more, o.Elapsed+" into the run")
	}
	if o.Step >= 0 {
		more = append(more, fmt.Sprintf("after about %d progress lines", o.Step))
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, ", ") + ")"
	}
	if o.Text != "" {
		s += ": " + o.Text
	}
	return s
}

// mdText keeps bundle text from becoming Markdown structure or acting on a terminal.
func mdText(s string) string {
	s = report.TerminalSafe(strings.NewReplacer("\n", " ", "\r", " ").Replace(s))
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_{}[]()<>#+!|~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdCode is a code span of any text.
func mdCode(s string) string {
	s = report.TerminalSafe(strings.NewReplacer("\n", " ", "\r", " ").Replace(s))
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + " " + s + " " + fence
}

func renderMarkdown(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# coroner diff: %s vs %s\n\n", mdText(r.Good.Name), mdText(r.Bad.Name))
	fmt.Fprintln(bw, "| run | job | verdict |\n|---|---|---|")
	fmt.Fprintf(bw, "| GOOD %s | %s | %s |\n", mdText(r.Good.Name), mdText(r.Good.Job), mdText(verdictLine(r.Good)))
	fmt.Fprintf(bw, "| BAD %s | %s | %s |\n\n", mdText(r.Bad.Name), mdText(r.Bad.Job), mdText(verdictLine(r.Bad)))
	if r.Empty() {
		fmt.Fprintln(bw, "**No difference**: the runs' diagnoses, spec, environment, log templates and pace agree.")
	} else if top := r.Top(); top != nil {
		fmt.Fprintf(bw, "**Most likely:** %s\n", mdText(top.Title))
	}
	for _, s := range Sections {
		cs := r.Section(s)
		if len(cs) == 0 {
			continue
		}
		fmt.Fprintf(bw, "\n## %s (%d)\n\n", sectionTitles[s], len(cs)+r.Omitted[s])
		switch s {
		case SectionSpec:
			fmt.Fprintln(bw, "| kind | field | GOOD | BAD |\n|---|---|---|---|")
			for _, c := range cs {
				fmt.Fprintf(bw, "| %s | %s | %s | %s |\n", c.Kind, mdCode(c.Path), mdCode(c.Good), mdCode(c.Bad))
			}
		case SectionLogs:
			fmt.Fprintln(bw, "| kind | role | GOOD | BAD | template | first |\n|---|---|---|---|---|---|")
			for _, c := range cs {
				t := c.Template
				first := ""
				if t.First != nil {
					first = mdText(occurrenceText(t.First))
				}
				fmt.Fprintf(bw, "| %s | %s | %d | %d | %s | %s |\n", c.Kind, mdText(c.Role), t.GoodCount, t.BadCount, mdCode(t.Text), first)
			}
			if r.Divergence != nil {
				fmt.Fprintf(bw, "\nBAD diverges first at %s\n", mdText(occurrenceText(r.Divergence)))
			}
		default:
			for _, c := range cs {
				fmt.Fprintf(bw, "- **%s** %s\n", c.Kind, mdText(c.Title))
			}
		}
		if n := r.Omitted[s]; n > 0 {
			fmt.Fprintf(bw, "\n… and %d more.\n", n)
		}
	}
	if len(r.Progress) > 0 {
		fmt.Fprintln(bw, "\n## Pace and curves")
		for _, rp := range r.Progress {
			fmt.Fprintf(bw, "\n### %s\n\n| run | logs | seconds per progress line | per second | spread | slowest |\n|---|---|---|---|---|---|\n", mdText(roleName(rp.Role)))
			for _, run := range paceRuns(rp) {
				if p := run.Pace; p != nil {
					fmt.Fprintf(bw, "| %s | %d | %g | %g | %g | %s |\n", run.Name, p.Logs, p.MedianStep, p.StepsPerSecond, p.Spread, mdCode(p.Slowest))
				} else {
					fmt.Fprintf(bw, "| %s | 0 | | | | |\n", run.Name)
				}
			}
			for _, c := range rp.Curves {
				fmt.Fprintf(bw, "\n- **%s** by %s: GOOD %s; BAD %s\n", c.Metric, xName(c.ByStep), mdText(seriesText(c.Good)), mdText(seriesText(c.Bad)))
			}
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(bw, "\n## Warnings")
		for _, wn := range r.Warnings {
			fmt.Fprintf(bw, "- %s\n", mdText(wn))
		}
	}
	return bw.Flush()
}

//go:embed diff.html.tmpl
var htmlTemplate string

// htmlTmpl is parsed when a page is first written, not as the package starts (every
// process starts it: a warm coroner search paid for parsing it).
var htmlTmpl = sync.OnceValue(func() *htmltemplate.Template {
	return htmltemplate.Must(htmltemplate.New("diff").Funcs(htmltemplate.FuncMap{
		"verdictLine": verdictLine,
		"title":       func(s string) string { return sectionTitles[s] },
		"occurrence":  occurrenceText,
		"chart":       paceChart,
		"curve":       curveChart,
		"seriesText":  seriesText,
		"roleName":    roleName,
		"runs":        paceRuns,
	}).Parse(htmlTemplate))
})

// roleName names a role in headings ("" is a job's logs without roles).
func roleName(role string) string {
	if role == "" {
		return "logs"
	}
	return role
}

type paceRun struct {
	Name, Class string
	Pace        *Pace
}

// paceRuns are the rows of a role's pace table.
func paceRuns(rp *RoleProgress) []paceRun {
	return []paceRun{{"GOOD", "good", rp.Good}, {"BAD", "bad", rp.Bad}}
}

// seriesText says what a curve did in a few words: its last finite value, its range, and
// where it turned nan or inf.
func seriesText(s *Series) string {
	if s == nil {
		return "none"
	}
	who := s.Path
	if s.Rank >= 0 {
		who += fmt.Sprintf(", rank %d", s.Rank)
	}
	t := fmt.Sprintf("%s (%s): %d values, last %s, range %s–%s", s.Pod, who, s.Lines, num(s.Last), num(s.Min), num(s.Max))
	if s.Lines == s.NonFinite {
		t = fmt.Sprintf("%s (%s): %d values, none finite", s.Pod, who, s.Lines)
	}
	if s.FirstNonFinite != nil {
		t += fmt.Sprintf("; %d nan/inf from %d", s.NonFinite, *s.FirstNonFinite)
	}
	return t
}

type htmlSection struct {
	Name    string
	Changes []*Change
	Omitted int
}

func renderHTML(w io.Writer, r *Report) error {
	var secs []htmlSection
	for _, s := range Sections {
		if cs := r.Section(s); len(cs) > 0 {
			secs = append(secs, htmlSection{Name: s, Changes: cs, Omitted: r.Omitted[s]})
		}
	}
	return report.WriteHTML(w, htmlTmpl(), struct {
		R        *Report
		Sections []htmlSection
		Top      *Change
	}{r, secs, r.Top()})
}

// paceChart draws the step time of every rank of both runs on one chart: a bar a rank, GOOD's
// in green and BAD's in red, slowest first, on one scale.
func paceChart(p *ProgressChange) htmltemplate.HTML {
	if p == nil || len(p.Ranks) == 0 {
		return ""
	}
	const barH, gap, labelW, width = 14, 4, 260, 900
	top := 0.0
	for _, rp := range p.Ranks {
		top = math.Max(top, rp.Step)
	}
	if top <= 0 {
		return ""
	}
	var b strings.Builder
	h := len(p.Ranks)*(barH+gap) + 24
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="seconds per progress line, per rank">`, width, h)
	for i, rp := range p.Ranks {
		y := i * (barH + gap)
		bw := (width - labelW - 80) * rp.Step / top
		color := "#2f855a"
		if rp.Run == "bad" {
			color = "#c0392b"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s %s</text>`, labelW-6, y+barH-3, strings.ToUpper(rp.Run), htmltemplate.HTMLEscapeString(rp.Pod))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, labelW, y, bw, barH, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`, float64(labelW)+bw+4, y+barH-3, secs(rp.Step))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">seconds per progress line (GOOD green, BAD red)</text>`, labelW, h-6)
	b.WriteString(`</svg>`)
	return htmltemplate.HTML(b.String())
}
