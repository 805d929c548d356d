package report

import (
	"strings"
	"unicode/utf8"
)

// The text chart: the swimlanes in a few lines for the terminal summary and the Markdown.
//
//	Timeline:    2026-03-14 09:58:02 → 10:12:14 UTC (14 min 12 s)
//	  job        C━R━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━F  Failed 10 min 3 s after the first error
//	  worker-4   ·━━━━━━━━━━━━━✖┤                                  CUDA out of memory at 10:02:11 (root cause)
//	  6 ranks    ·━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━×┤   NCCL ALLREDUCE timed out at 10:12:11–10:12:13

// tone is a colour of the terminal summary; a painter turns it into escape sequences, or
// into nothing (Markdown, a pipe, NO_COLOR).
type tone int

const (
	toneNone tone = iota
	toneRoot
	toneErr
	toneWarn
	toneDim
	toneOK
	toneBold
	toneHit
)

// painter colours text with a tone.
type painter func(t tone, s string) string

func noPaint(_ tone, s string) string { return s }

// ansiPaint colours with ANSI SGR sequences.
func ansiPaint(t tone, s string) string {
	code := [...]string{"", "1;31", "31", "33", "2", "32", "1", "1;30;43"}[t]
	if code == "" || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// chartOptions shape the chart.
type chartOptions struct {
	// Width is the whole line's width; Summary false leaves the text after the bars out of
	// the width (Markdown lets a code block scroll).
	Width    int
	Cut      bool
	Paint    painter
	Indent   string
	LabelMax int
}

const (
	chPending = '·'
	chRunning = '━'
	chStalled = '┄'
	chEnd     = '┤'
	chRoot    = '✖'
	chError   = '×'
	chWarn    = '!'
	chRestart = '↻'
	chGap     = '≈'
)

// chartLegend explains the chart's characters.
const chartLegend = "· pending  ━ running  ┤ ended  ✖ root cause  × error or symptom  ! warning  ↻ restart  ≈ hours cut"

// legendOf is the legend of a chart: chartLegend, and the stalled line when one is drawn.
func legendOf(s *swimlanes) string {
	if s != nil && s.anyStalled() {
		return strings.Replace(chartLegend, "━ running  ", "━ running  ┄ stalled  ", 1)
	}
	return chartLegend
}

// textChart draws the lanes; "" when there is nothing dated.
func textChart(s *swimlanes, opt chartOptions) []string {
	if s == nil {
		return nil
	}
	paint := opt.Paint
	if paint == nil {
		paint = noPaint
	}
	// Labels.
	type row struct {
		label, sub string
		l          *lane
	}
	var rows []row
	for _, rl := range s.Roles {
		for _, l := range rl.Lanes {
			rows = append(rows, row{label: s.label(l), l: l})
		}
	}
	labelW := 3 // "job"
	for _, r := range rows {
		labelW = max(labelW, utf8.RuneCountInString(r.label))
	}
	if opt.LabelMax > 0 {
		labelW = min(labelW, opt.LabelMax)
	}
	chartW := opt.Width - len(opt.Indent) - labelW - 4 - 44
	chartW = max(16, min(chartW, 60))
	var instants = s.instants()
	sc := newScale(instants, 0, float64(chartW), 3, s.cuttable)
	at := func(x float64) int {
		c := int(x)
		return max(0, min(chartW-1, c))
	}
	var out []string
	head := "Timeline:    " + s.From.UTC().Format("2006-01-02 15:04:05") + " → "
	if s.To.UTC().Format("2006-01-02") == s.From.UTC().Format("2006-01-02") {
		head += clock(s.To)
	} else {
		head += s.To.UTC().Format("2006-01-02 15:04:05")
	}
	head += " UTC (" + Duration(s.To.Sub(s.From)) + ")"
	out = append(out, paint(toneBold, head))
	line := func(label string, cells []rune, colors []tone, summary string, summaryTone tone) {
		// Bundle text: one line, no control characters (see oneLine).
		lab := truncRunes(oneLine(label, 1<<20), labelW)
		summary = oneLine(summary, 1<<20)
		var b strings.Builder
		b.WriteString(opt.Indent)
		b.WriteString(lab + strings.Repeat(" ", labelW-utf8.RuneCountInString(lab)) + "  ")
		// Runs of one colour.
		for i := 0; i < len(cells); {
			j := i
			for j < len(cells) && colors[j] == colors[i] {
				j++
			}
			b.WriteString(paint(colors[i], string(cells[i:j])))
			i = j
		}
		if summary != "" {
			room := opt.Width - len(opt.Indent) - labelW - 2 - chartW - 2
			if opt.Cut && room > 0 {
				summary = truncRunes(summary, room)
			}
			if !opt.Cut || room > 0 {
				b.WriteString("  " + paint(summaryTone, summary))
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	newCells := func() ([]rune, []tone) {
		cells := make([]rune, chartW)
		colors := make([]tone, chartW)
		for i := range cells {
			cells[i] = ' '
		}
		for _, g := range sc.Gaps() {
			for c := at(g.x0); c < at(g.x1) && c < chartW; c++ {
				cells[c] = chGap
				colors[c] = toneDim
			}
		}
		return cells, colors
	}
	fill := func(cells []rune, colors []tone, from, to float64, ch rune, color tone) {
		for c := at(from); c <= at(to); c++ {
			if cells[c] != chGap {
				cells[c] = ch
				colors[c] = color
			}
		}
	}
	// The job.
	if len(s.Job) > 0 || !s.JobCreated.IsZero() {
		cells, colors := newCells()
		start := s.JobCreated
		if start.IsZero() && len(s.Job) > 0 {
			start = s.Job[0].Time
		}
		fill(cells, colors, sc.X(start), sc.X(s.jobEnd(start)), '─', toneDim)
		for _, m := range s.Job {
			c := at(sc.X(m.Time))
			if m.Cond {
				ch := []rune(m.Label)[0]
				cells[c], colors[c] = ch, toneBold
				if m.Kind == markError {
					colors[c] = toneErr
				}
			} else {
				cells[c], colors[c] = markChar(m.Kind), markTone(m.Kind)
			}
		}
		line("job", cells, colors, s.Story, toneNone)
	}
	for _, r := range rows {
		l := r.l
		cells, colors := newCells()
		end := l.Ended
		if end.IsZero() {
			end = s.To
		}
		if !l.Created.IsZero() {
			to := l.Started
			if to.IsZero() {
				to = end
			}
			fill(cells, colors, sc.X(l.Created), sc.X(to), chPending, toneDim)
		}
		if !l.Started.IsZero() {
			fill(cells, colors, sc.X(l.Started), sc.X(end), chRunning, toneNone)
		}
		if !l.Stalled.IsZero() {
			fill(cells, colors, sc.X(l.Stalled), sc.X(end), chStalled, toneDim)
		}
		if !l.Ended.IsZero() {
			color := toneOK
			if l.Phase == "Failed" {
				color = toneErr
			}
			to := l.EndedTo
			if to.IsZero() {
				to = l.Ended
			}
			fill(cells, colors, sc.X(l.Ended), sc.X(to), chEnd, color)
		}
		if !l.LastRestart.IsZero() {
			c := at(sc.X(l.LastRestart))
			cells[c], colors[c] = chRestart, toneWarn
		}
		for _, k := range []markKind{markSymptom, markInfo, markWarning, markError, markRoot} {
			for _, m := range l.Marks {
				if m.Kind == k && m.Kind != markInfo {
					c := at(sc.X(m.From))
					cells[c], colors[c] = markChar(k), markTone(k)
				}
			}
		}
		summaryTone := toneNone
		if l.Root {
			summaryTone = toneRoot
		}
		line(r.label, cells, colors, s.summary(l, true), summaryTone)
	}
	return out
}

func markChar(k markKind) rune {
	switch k {
	case markRoot:
		return chRoot
	case markWarning:
		return chWarn
	case markInfo:
		return chPending
	}
	return chError
}

func markTone(k markKind) tone {
	switch k {
	case markRoot:
		return toneRoot
	case markError:
		return toneErr
	case markWarning:
		return toneWarn
	}
	return toneDim
}

func truncRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
