package fleetreport

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"sync"

	"github.com/coroner-dev/coroner/report"
)

//go:embed fleet.html.tmpl
var htmlSource string

// htmlTmpl is parsed when a page is first written, not as the package starts (every
// process starts it: a warm coroner search paid for parsing it).
var htmlTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("fleet").Funcs(template.FuncMap{
		"hours":     hours,
		"duration":  duration,
		"percent":   percent,
		"dimension": dimensionTitle,
		"retry":     retryTitle,
		"xids":      xids,
		"count":     count,
		"delta":     func(from, to int) string { return fmt.Sprintf("%+d", to-from) },
		"date":      func(t interface{ Format(string) string }) string { return t.Format("2006-01-02") },
		"width": func(share float64) string {
			return strconv.FormatFloat(math.Max(0, math.Min(100, share)), 'f', 1, 64) + "%"
		},
		"rateWidth": func(rate float64) string {
			return strconv.FormatFloat(math.Max(0, math.Min(1, rate))*100, 'f', 1, 64) + "%"
		},
	}).Parse(htmlSource))
})

func renderHTML(w io.Writer, v *view) error {
	data := struct {
		*view
		CauseChart, FaultChart *svgChart
	}{view: v}
	if len(v.Weeks) > 0 {
		data.CauseChart = newChart(v, v.ByCause, "Interruptions per week, by root cause")
		data.FaultChart = newChart(v, v.ByFault, "Interruptions per week, by fault")
	}
	return report.WriteHTML(w, htmlTmpl(), data)
}

// svgChart is a stacked bar chart as SVG primitives; the template draws them, and
// html/template escapes every text. Coordinates are numbers formatted here.
type svgChart struct {
	W, H    int
	Caption string
	Legend  []series
	Grid    []svgLine
	Bars    []svgRect
	Labels  []svgText
}

type svgRect struct {
	X, Y, W, H, Fill, Title string
	// Partial marks a week the period holds only part of.
	Partial bool
}

type svgLine struct {
	X1, Y1, X2, Y2 string
}

type svgText struct {
	X, Y, Anchor, Text string
}

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// The chart's layout, in SVG units (pixels at its natural size).
const (
	chartW   = 1000.0
	chartH   = 230.0
	plotLeft = 44.0
	plotTop  = 10.0
	plotBot  = chartH - 26.0
)

func newChart(v *view, c chart, caption string) *svgChart {
	s := &svgChart{W: int(chartW), H: int(chartH), Caption: caption, Legend: c.Series}
	most := 0
	for _, vals := range c.Values {
		most = max(most, total(vals))
	}
	step := niceStep(most)
	top := step * math.Max(1, math.Ceil(float64(most)/step))
	y := func(n float64) float64 { return plotBot - (plotBot-plotTop)*n/top }
	for t := 0.0; t <= top+step/2; t += step {
		s.Grid = append(s.Grid, svgLine{X1: f1(plotLeft), Y1: f1(y(t)), X2: f1(chartW - 4), Y2: f1(y(t))})
		s.Labels = append(s.Labels, svgText{X: f1(plotLeft - 6), Y: f1(y(t) + 4), Anchor: "end", Text: strconv.FormatFloat(t, 'f', -1, 64)})
	}
	slot := (chartW - 4 - plotLeft) / float64(len(v.Weeks))
	bw := math.Max(1, slot*0.78)
	everyWeek := len(v.Weeks) <= 16
	for i, w := range v.Weeks {
		x := plotLeft + slot*float64(i) + (slot-bw)/2
		part, note := v.partial(w), ""
		if part {
			note = " (part of the week)"
		}
		base := 0
		for j, n := range c.Values[i] {
			if n == 0 {
				continue
			}
			s.Bars = append(s.Bars, svgRect{X: f1(x), Y: f1(y(float64(base + n))), W: f1(bw), H: f1(y(float64(base)) - y(float64(base+n))),
				Fill: c.Series[j].Color, Partial: part, Title: fmt.Sprintf("week of %s%s: %s %d", w.Format("2006-01-02"), note, c.Series[j].Name, n)})
			base += n
		}
		label := ""
		switch {
		case everyWeek:
			label = w.Format("Jan 2")
		case i == 0 || w.Day() <= 7:
			// The first week of each month (the first week of the chart, too, when it
			// starts late enough in its month not to crowd the next label).
			if i > 0 || w.Day() <= 24 {
				label = w.Format("Jan")
				if i == 0 || w.Month() == 1 {
					label = w.Format("Jan 2006")
				}
			}
		}
		if label != "" {
			s.Labels = append(s.Labels, svgText{X: f1(x + bw/2), Y: f1(plotBot + 17), Anchor: "middle", Text: label})
		}
	}
	return s
}

// niceStep is the gridline step for a chart whose tallest bar is most: the smallest of 1,
// 2 and 5 times a power of ten that needs at most five steps (counts are whole).
func niceStep(most int) float64 {
	for p := 1.0; ; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if float64(most) <= 5*m*p {
				return m * p
			}
		}
	}
}
