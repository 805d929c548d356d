package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// RenderText writes the terminal summary with the default options (no colour, 100 columns).
func RenderText(w io.Writer, r *Report) error { return RenderTextWith(w, r, Options{}) }

// RenderTextWith writes the terminal summary: job, status and how long things took, the
// verdict, the root cause with its evidence line, the swimlanes as a text chart, then the
// other findings one group a line, each with the id that [follows fN] refers to.
func RenderTextWith(w io.Writer, r *Report, opt Options) error {
	paint := painter(noPaint)
	if opt.Color {
		paint = ansiPaint
	}
	// Without a terminal's width lines are whole (a pipe, a file: grep finds everything).
	width, cut := opt.Width, opt.Width > 0
	if cut {
		width = max(width, 60)
	} else {
		width = 1 << 20
	}
	fit := func(s string, n int) string {
		if !cut {
			return oneLine(s, 1<<20)
		}
		return oneLine(s, n)
	}
	var b strings.Builder
	label := func(l string) string { return paint(toneBold, fmt.Sprintf("%-13s", l)) }
	job := r.Job.Kind
	if r.Job.Name != "" {
		job += " " + strings.TrimPrefix(r.Job.Namespace+"/"+r.Job.Name, "/")
	}
	if r.Bundle.Plain {
		job = "plain logs: " + r.Bundle.Name + " (" + plural(r.Bundle.LogLines, "line", "lines") + " read)"
	}
	fmt.Fprintf(&b, "%s%s\n", label("Job:"), fit(job, width-13))
	if r.Job.Status != "" {
		status := r.Job.Status
		if story := r.Story(); strings.HasPrefix(story, strings.ToLower(status)+" ") {
			status = capitalize(story)
		} else if story != "" {
			status += ", " + story
		}
		fmt.Fprintf(&b, "%s%s\n", label("Status:"), fit(status, width-13))
	}
	verdictTone := map[string]tone{"unhealthy": toneRoot, "healthy": toneOK}[string(r.Verdict)]
	if verdictTone == toneNone {
		verdictTone = toneWarn
	}
	fmt.Fprintf(&b, "%s%s — %s\n", label("Verdict:"), paint(verdictTone, strings.ToUpper(string(r.Verdict))), fit(r.VerdictReason, width-13-len(r.Verdict)-3))
	groups := r.Groups()
	if rc := r.RootCause; rc != nil {
		fmt.Fprintf(&b, "%s%s %s\n", label("Root cause:"), paint(toneBold, rc.ID), paint(toneRoot, fit("["+string(rc.Category)+"] "+rc.Title, width-13-len(rc.ID)-1)))
		at := r.where(rc.Pod, rc.Container)
		if rc.Pod == "" {
			at = job
		}
		if rank := r.rankOf(rc.Pod); rank != "" {
			at += " (" + rank + ")"
		}
		when := ""
		if rc.Time != nil {
			when = ", " + fmtTime(rc.Time)
		}
		for _, l := range wrap(fmt.Sprintf("at %s%s; fault: %s, retry: %s", at, when, rc.Fault, rc.Retry), width-13) {
			fmt.Fprintf(&b, "%s%s\n", label(""), l)
		}
		if rc.Hedged() {
			for i, l := range wrap(rc.ConfidenceText(), width-13) {
				lb := ""
				if i == 0 {
					lb = "Confidence:"
				}
				fmt.Fprintf(&b, "%s%s\n", label(lb), l)
			}
		}
		for _, g := range groups {
			if g.Root && len(g.Pods) > 1 {
				var others []string
				for _, p := range g.Pods {
					if p != rc.Pod {
						others = append(others, p)
					}
				}
				fmt.Fprintf(&b, "%s%s\n", label(""), fit("the same failure on "+PodsText(others, 4), width-13))
			}
		}
		if len(rc.Evidence) > 0 {
			e := rc.Evidence[0]
			fmt.Fprintf(&b, "%s%s\n%s%s\n", label("Evidence:"), fit(e.Location(), width-13), label(""), oneLine(e.Text, min(width-13, 160)))
		}
	}
	if text := r.NodeEvidence.Summary(); text != "" {
		for i, l := range wrap(text, width-13) {
			lb := ""
			if i == 0 {
				lb = "GPU nodes:"
			}
			fmt.Fprintf(&b, "%s%s\n", label(lb), l)
		}
	}
	if lanes := buildLanes(r, groups, foldPolicy{minPods: 1, maxLanes: 6}); lanes != nil && lanes.Shown > 0 {
		cw := width
		if !cut {
			cw = 100
		}
		labelMax := 11 // a pipe or a file gets whole pod names
		if !cut {
			labelMax = 0
		}
		chart := textChart(lanes, chartOptions{Width: cw, Cut: cut, Indent: "  ", LabelMax: labelMax, Paint: paint})
		// The heading is the first line, as "Timeline:    ...".
		for _, l := range chart {
			b.WriteString(l + "\n")
		}
	}
	var lines []string
	idW := 3
	for _, g := range groups {
		idW = max(idW, len(g.ID()))
		for _, s := range g.Symptoms {
			idW = max(idW, len(s.ID()))
		}
	}
	line := func(g *Group) {
		f := g.Lead()
		head := fmt.Sprintf("  %-*s %-8s %-19s ", idW, g.ID(), f.Severity, f.Category)
		tail := ""
		if g.Count > 1 {
			tail += fmt.Sprintf(" (x%s)", Commas(g.Count))
		}
		follows := ""
		if g.Follows != "" {
			follows = " [follows " + g.Follows + "]"
		}
		mid := oneLine(f.Title, 70) + " — " + r.GroupWhere(g)
		room := width - utf8.RuneCountInString(head) - len(tail) - len(follows)
		mid = fit(mid, max(room, 20))
		sev := map[string]tone{"critical": toneRoot, "error": toneErr, "warning": toneWarn}[f.Severity.String()]
		head = fmt.Sprintf("  %s %s %-19s ", paint(toneBold, fmt.Sprintf("%-*s", idW, g.ID())), paint(sev, fmt.Sprintf("%-8s", f.Severity)), f.Category)
		lines = append(lines, head+mid+tail+paint(toneDim, follows))
	}
	for _, g := range groups {
		if !g.Root {
			line(g)
		}
	}
	for _, g := range groups {
		for _, s := range g.Symptoms {
			line(s)
		}
	}
	if len(lines) > 0 {
		b.WriteString(paint(toneBold, "Other findings:") + "\n")
		b.WriteString(strings.Join(lines, "\n") + "\n")
	}
	if l := r.LLM; l != nil {
		writeLLMText(&b, l)
		writeDisagreement(&b, r)
	}
	writeLayoutText(&b, r, paint)
	for _, wr := range r.Warnings {
		fmt.Fprintf(&b, "%s %s\n", paint(toneWarn, "warning:"), oneLine(wr, 1<<20))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrap breaks text into lines of at most width runes at spaces.
func wrap(s string, width int) []string {
	s = oneLine(s, 1<<20)
	var out []string
	for utf8.RuneCountInString(s) > width {
		r := []rune(s)
		cut := strings.LastIndex(string(r[:width]), " ")
		if cut <= 0 {
			cut = len(string(r[:width]))
		}
		out = append(out, strings.TrimRight(s[:cut], " "))
		s = strings.TrimLeft(s[cut:], " ")
	}
	return append(out, s)
}
