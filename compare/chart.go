package compare

import (
	"fmt"
	htmltemplate "html/template"
	"math"
	"strconv"
	"strings"
)

// Colours of the runs in charts.
const (
	goodColor = "#2f855a"
	badColor  = "#c0392b"
)

// curveChart draws one metric of a role, GOOD and BAD on one chart and one scale: a line per
// run (broken where a value is not finite), a mark above the plot at each nan or inf, axes
// with five ticks each. Every text from the bundle is escaped.
func curveChart(p *CurvePair) htmltemplate.HTML {
	if p == nil {
		return ""
	}
	const width, height, left, right, top, bottom = 900, 270, 70, 20, 40, 42
	pw, ph := float64(width-left-right), float64(height-top-bottom)
	xmin, xmax := int64(math.MaxInt64), int64(math.MinInt64)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range []*Series{p.Good, p.Bad} {
		if s == nil {
			continue
		}
		for i, x := range s.X {
			xmin, xmax = min(xmin, x), max(xmax, x)
			if y := s.Y[i]; y != nil {
				ymin, ymax = math.Min(ymin, *y), math.Max(ymax, *y)
			}
		}
	}
	if xmin > xmax || (points(p.Good) < 2 && points(p.Bad) < 2) {
		return "" // one value a run is no curve: the caption says it
	}
	if xmin == xmax {
		xmin, xmax = xmin-1, xmax+1
	}
	if ymin > ymax {
		ymin, ymax = 0, 1
	}
	if ymin == ymax {
		ymin, ymax = ymin-1, ymax+1
	}
	pad := (ymax - ymin) * 0.05
	lo := ymin - pad
	if ymin >= 0 && lo < 0 {
		lo = 0 // a loss or a rate is not drawn below zero
	}
	ymin, ymax = lo, ymax+pad
	sx := func(x int64) float64 { return float64(left) + pw*float64(x-xmin)/float64(xmax-xmin) }
	sy := func(y float64) float64 { return float64(top) + ph*(1-(y-ymin)/(ymax-ymin)) }

	var b strings.Builder
	esc := htmltemplate.HTMLEscapeString
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s by %s, GOOD and BAD">`,
		width, height, esc(p.Metric), xName(p.ByStep))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#dde1e8"/>`, left, top, pw, ph)
	for i := 0; i <= 4; i++ {
		y := ymin + (ymax-ymin)*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eef0f4"/>`, left, width-right, sy(y), sy(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, left-6, sy(y)+4, strconv.FormatFloat(y, 'g', 4, 64))
		x := xmin + (xmax-xmin)*int64(i)/4
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`, sx(x), height-bottom+16, x)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, float64(left)+pw/2, height-6, xName(p.ByStep))
	legend := left
	for _, run := range []struct {
		name, color string
		s           *Series
		line        string
	}{{"GOOD", goodColor, p.Good, `stroke-width="3"`}, {"BAD", badColor, p.Bad, `stroke-width="2" stroke-dasharray="7 4"`}} {
		if run.s == nil {
			continue
		}
		var seg []string
		flush := func() {
			if len(seg) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" %s points="%s"/>`, run.color, run.line, strings.Join(seg, " "))
			} else if len(seg) == 1 {
				xy := strings.Split(seg[0], ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`, xy[0], xy[1], run.color)
			}
			seg = seg[:0]
		}
		for i, x := range run.s.X {
			y := run.s.Y[i]
			if y == nil {
				flush()
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" style="fill:%s">×</text>`, sx(x), top-6, run.color)
				continue
			}
			seg = append(seg, fmt.Sprintf("%.1f,%.1f", sx(x), sy(*y)))
		}
		flush()
		label := fmt.Sprintf("%s %s", run.name, run.s.Pod)
		if run.s.NonFinite > 0 {
			label += fmt.Sprintf(" (× %d nan/inf)", run.s.NonFinite)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="4" width="12" height="12" fill="%s"/><text x="%d" y="14">%s</text>`, legend, run.color, legend+16, esc(label))
		legend += 16 + 7*len([]rune(label)) + 24
	}
	b.WriteString(`</svg>`)
	return htmltemplate.HTML(b.String())
}

func points(s *Series) int {
	if s == nil {
		return 0
	}
	return len(s.X)
}

func xName(byStep bool) string {
	if byStep {
		return "step"
	}
	return "progress line"
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
