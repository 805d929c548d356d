package report

import "fmt"

// The swimlane picture as SVG primitives; templates/report.html.tmpl draws them. Every text
// goes through html/template, which escapes it; coordinates are numbers formatted here.

// svgView is the picture: its size and what to draw, in drawing order.
type svgView struct {
	W, H int
	// Grid is drawn first, under the bars; Lines over them.
	Grid  []svgLine
	Rects []svgRect
	Lines []svgLine
	Texts []svgText
	Marks []svgMark
	// Caption says what the picture shows, for the figure and for screen readers.
	Caption string
}

type svgRect struct {
	X, Y, W, H string
	Class      string
	Title      string
}

type svgLine struct {
	X1, Y1, X2, Y2 string
	Class          string
}

type svgText struct {
	X, Y   string
	Class  string
	Anchor string
	Text   string
	Title  string
	// Rotate turns the text by -90 degrees about (X, Y).
	Rotate bool
}

// svgMark is a finding: a dot, or a capsule over a span of times on a folded lane; Href
// links to its card.
type svgMark struct {
	X, Y, W, H, R string
	Class         string
	Title         string
	Href          string
}

// The layout, in SVG units (about pixels at 1200 wide).
const (
	svgW        = 1200.0
	svgLabelEnd = 178.0 // labels end here
	svgPlot0    = 188.0 // the plot starts here
	svgPlot1    = 790.0 // and ends here
	svgSum0     = 802.0 // the summary column
	svgTop      = 40.0  // above: the first-failure label and the axis
	svgRow      = 24.0
	svgRoleRow  = 20.0
	svgBar      = 10.0
	svgGapW     = 30.0
	svgSumChars = 62
	svgLabChars = 24
)

func f1(x float64) string { return fmt.Sprintf("%.1f", x) }

func newSVG(s *swimlanes) *svgView {
	v := &svgView{W: int(svgW)}
	sc := newScale(s.instants(), svgPlot0, svgPlot1, svgGapW, s.cuttable)
	rect := func(x0, y, x1, h float64, class, title string) {
		if x1-x0 < 2 {
			x1 = x0 + 2
		}
		v.Rects = append(v.Rects, svgRect{X: f1(x0), Y: f1(y), W: f1(x1 - x0), H: f1(h), Class: class, Title: title})
	}
	text := func(x, y float64, class, anchor, t, title string) {
		v.Texts = append(v.Texts, svgText{X: f1(x), Y: f1(y), Class: class, Anchor: anchor, Text: t, Title: title})
	}
	y := svgTop
	// The job lane.
	if len(s.Job) > 0 || !s.JobCreated.IsZero() {
		mid := y + svgRow/2
		text(svgLabelEnd, mid+4, "lab", "end", "job", "")
		start := s.JobCreated
		if start.IsZero() {
			start = s.Job[0].Time
		}
		rect(sc.X(start), mid-1.5, sc.X(s.jobEnd(start)), 3, "jobbar", "")
		var conds []jobMark
		for _, m := range s.Job {
			if m.Cond {
				conds = append(conds, m)
			}
		}
		i, lastLabel := 0, 0.0
		for _, m := range s.Job {
			x := sc.X(m.Time)
			if m.Cond {
				v.Marks = append(v.Marks, svgMark{X: f1(x - 5), Y: f1(mid - 5), W: "10", H: "10", R: "1", Class: "cond " + m.Kind.class(),
					Title: m.Label + " " + fmtTime(m.Time)})
				// Its name beside it, when the next condition leaves room.
				if x-lastLabel > 0 && (i+1 == len(conds) || sc.X(conds[i+1].Time)-x > float64(len(m.Label))*6+18) {
					text(x+8, mid+4, "condlab", "start", m.Label, "")
					lastLabel = x + 8 + float64(len(m.Label))*6
				}
				i++
				continue
			}
			v.Marks = append(v.Marks, svgMark{X: f1(x - 4), Y: f1(mid - 4), W: "8", H: "8", R: "4", Class: m.Kind.class(),
				Title: m.ID + " " + m.Label + " " + fmtTime(m.Time), Href: "#" + m.ID})
		}
		text(svgSum0, mid+4, "sum", "start", truncRunes(s.Story, svgSumChars), s.Story)
		y += svgRow
	}
	for _, rl := range s.Roles {
		// The role's header.
		head := rl.Role + " · " + plural(rl.Pods, "pod", "pods")
		text(8, y+14, "role", "start", head, "")
		v.Grid = append(v.Grid, svgLine{X1: f1(8), Y1: f1(y + 0.5), X2: f1(svgW - 8), Y2: f1(y + 0.5), Class: "sep"})
		y += svgRoleRow
		for _, l := range rl.Lanes {
			mid := y + svgRow/2
			if l.Root {
				rect(0, y, svgW, svgRow, "rootrow", "")
			}
			lab := s.label(l)
			class := "lab"
			if l.Folded() {
				class = "lab folded"
			}
			if l.Root {
				class = "lab rootlab"
			}
			title := l.Pods[0]
			if l.Folded() {
				title = PodsText(l.Pods, 12)
			}
			if l.Folded() {
				text(svgLabelEnd, mid+4, class, "end", truncRunes(lab, svgLabChars), title)
			} else {
				text(svgLabelEnd-52, mid+4, class, "end", truncRunes(lab, svgLabChars-7), title)
				text(svgLabelEnd, mid+4, "rank", "end", s.sublabel(l), "")
			}
			end := l.Ended
			if end.IsZero() {
				end = s.To
			}
			if !l.Created.IsZero() {
				to := l.Started
				if to.IsZero() {
					to = end
				}
				what := "pending " + Duration(to.Sub(l.Created))
				rect(sc.X(l.Created), mid-svgBar/2, sc.X(to), svgBar, "pend", what)
			}
			if !l.Started.IsZero() {
				class := "run"
				if l.Phase == "Succeeded" {
					class = "run ok"
				}
				rect(sc.X(l.Started), mid-svgBar/2, sc.X(end), svgBar, class, "running "+Duration(end.Sub(l.Started)))
			}
			if !l.Stalled.IsZero() {
				rect(sc.X(l.Stalled), mid-svgBar/2, sc.X(end), svgBar, "stall", "no progress from "+clock(l.Stalled)+" for "+Duration(end.Sub(l.Stalled)))
			}
			if !l.Ended.IsZero() {
				class := "end"
				if l.Phase == "Failed" {
					class = "end fail"
				}
				to := l.EndedTo
				if to.IsZero() {
					to = l.Ended
				}
				how := l.How
				if how == "" {
					how = l.Phase
				}
				rect(sc.X(l.Ended)-1, mid-svgBar/2-2, sc.X(to)+2, svgBar+4, class, "ended "+span(l.Ended, to)+": "+how)
			}
			if !l.LastRestart.IsZero() {
				x := sc.X(l.LastRestart)
				rect(x-1, mid-svgBar/2-3, x+1, svgBar+6, "restart", fmt.Sprintf("restarted (%s), last at %s", plural(l.Restarts, "restart", "restarts"), clock(l.LastRestart)))
			}
			for _, k := range []markKind{markInfo, markSymptom, markWarning, markError, markRoot} {
				for _, m := range l.Marks {
					if m.Kind != k {
						continue
					}
					title := m.ID + " · " + m.Title + " · " + span(m.From, m.To)
					if m.Kind == markRoot {
						title = "root cause " + title
					}
					x0, x1 := sc.X(m.From), sc.X(m.To)
					r := 4.0
					switch m.Kind {
					case markRoot:
						r = 7
					case markSymptom, markInfo:
						r = 4.5
					}
					if m.Kind == markRoot {
						h := r + 5
						v.Marks = append(v.Marks, svgMark{X: f1(x0 - h), Y: f1(mid - h), W: f1(x1 - x0 + 2*h), H: f1(2 * h), R: f1(h), Class: "halo"})
					}
					if x1-x0 < 1 {
						v.Marks = append(v.Marks, svgMark{X: f1(x0 - r), Y: f1(mid - r), W: f1(2 * r), H: f1(2 * r), R: f1(r), Class: m.Kind.class(), Title: title, Href: "#" + m.ID})
						continue
					}
					v.Marks = append(v.Marks, svgMark{X: f1(x0 - r), Y: f1(mid - r), W: f1(x1 - x0 + 2*r), H: f1(2 * r), R: f1(r), Class: m.Kind.class(), Title: title, Href: "#" + m.ID})
				}
			}
			sum := s.summary(l, false)
			sclass, chars := "sum", svgSumChars
			if l.Root {
				sclass, chars = "sum rootsum", svgSumChars-8 // bold is wider
			}
			text(svgSum0, mid+4, sclass, "start", truncRunes(sum, chars), sum)
			y += svgRow
		}
	}
	plot1 := y
	// The axis, the cut gaps and the first failure, over the lanes.
	v.Grid = append(v.Grid, svgLine{X1: f1(svgPlot0), Y1: f1(svgTop - 4), X2: f1(svgPlot1), Y2: f1(svgTop - 4), Class: "axis"})
	for _, t := range sc.Ticks(80) {
		v.Grid = append(v.Grid, svgLine{X1: f1(t.X), Y1: f1(svgTop - 8), X2: f1(t.X), Y2: f1(plot1), Class: "tick"})
		text(t.X, svgTop-12, "ticklab", "middle", t.Label, "")
	}
	for _, g := range sc.Gaps() {
		rect(g.x0, svgTop-8, g.x1, plot1-svgTop+8, "gap", Duration(g.t1.Sub(g.t0))+" cut from the axis: nothing changed")
		v.Texts = append(v.Texts, svgText{X: f1((g.x0+g.x1)/2 + 4), Y: f1(plot1 - 6), Class: "gaplab", Anchor: "start",
			Text: "≈ " + Duration(g.t1.Sub(g.t0)), Rotate: true})
	}
	if !s.Root.IsZero() {
		x := sc.X(s.Root)
		v.Lines = append(v.Lines, svgLine{X1: f1(x), Y1: f1(14), X2: f1(x), Y2: f1(plot1), Class: "first"})
		label := "first failure " + clock(s.Root)
		if s.RootWhere != "" {
			label += " · " + s.short(s.RootWhere)
		}
		label += " · " + s.RootTitle
		anchor := "start"
		lx := x + 4
		if x > (svgPlot0+svgPlot1)/2 {
			anchor, lx = "end", x-4
		}
		text(lx, 12, "firstlab", anchor, truncRunes(label, 90), s.RootTitle)
	}
	date := s.From.UTC().Format("2006-01-02")
	if d := s.To.UTC().Format("2006-01-02"); d != date {
		date += " – " + d
	}
	text(8, svgTop-12, "ticklab", "start", "UTC "+date, "")
	// The legend.
	y = plot1 + 8
	lx := svgPlot0
	item := func(class, label string, mark bool) {
		if mark {
			if class == "root" {
				v.Marks = append(v.Marks, svgMark{X: f1(lx + 1), Y: f1(y - 1), W: "14", H: "14", R: "7", Class: "halo"})
			}
			v.Marks = append(v.Marks, svgMark{X: f1(lx + 3), Y: f1(y + 1), W: "10", H: "10", R: "5", Class: class})
		} else {
			rect(lx, y+2, lx+16, svgBar-2, class, "")
		}
		w := 22.0
		if !mark {
			w = 22
		}
		text(lx+w, y+10, "leg", "start", label, "")
		lx += w + float64(len(label))*6.2 + 16
	}
	item("pend", "pending", false)
	item("run", "running", false)
	if s.anyStalled() {
		item("stall", "stalled", false)
	}
	item("end fail", "failed", false)
	item("root", "root cause", true)
	item("err", "error", true)
	item("warn", "warning", true)
	item("sym", "symptom", true)
	v.H = int(y + 20)
	v.Caption = fmt.Sprintf("%s of %s drawn, %s", plural(s.Shown, "lane", "lanes"), plural(s.PodCount, "pod", "pods"), Duration(s.To.Sub(s.From)))
	if s.Shown < s.PodCount {
		v.Caption += "; identical lanes are folded"
	}
	return v
}
