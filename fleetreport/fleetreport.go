// Package fleetreport renders what the fleet store counts of a period (store.FleetReport) as
// a report a platform team reads every week: HTML with its charts drawn as inline SVG (no
// script, no network), Markdown, and JSON (the contract of docs/fleet.md). The same report
// gives the same bytes; every text from the store (which came from bundles) is escaped.
package fleetreport

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/store"
)

// Formats are the forms Render writes.
var Formats = []string{"html", "md", "json"}

// Render writes r as html, md or json.
func Render(w io.Writer, r *store.FleetReport, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "md":
		return renderMarkdown(w, newView(r))
	case "html":
		return renderHTML(w, newView(r))
	}
	return fmt.Errorf("unknown format %q (use html, md or json)", format)
}

// faults are the fault classes in the order the charts stack them, with their colours.
var faults = []series{
	{Name: "hardware", Color: "#d62728"},
	{Name: "platform", Color: "#ff7f0e"},
	{Name: "user", Color: "#1f77b4"},
	{Name: "unknown", Color: "#9a9a9a"},
}

// palette colours the causes the weekly chart names, in the table's order; the rest are
// "other".
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"}

const otherColor = "#bab0ac"

// series is one colour of a stacked chart.
type series struct {
	Name, Color string
}

// view is the report with what the forms compute from it: the weeks in order (the empty ones
// too), and each week's interruptions by cause and by fault.
type view struct {
	*store.FleetReport
	Weeks   []time.Time
	ByCause chart
	ByFault chart
	// Rates groups the failure rates by dimension, in the report's order.
	Rates []rateGroup
}

type rateGroup struct {
	Dimension string
	Rows      []store.FailureRate
}

// chart is a stacked bar per week: Values[week][series].
type chart struct {
	Series []series
	Values [][]int
}

func newView(r *store.FleetReport) *view {
	v := &view{FleetReport: r, Weeks: weeks(r)}
	at := map[time.Time]int{}
	for i, w := range v.Weeks {
		at[w] = i
	}
	// The causes the chart names: the table's first (by count), the rest as "other".
	named := map[string]int{}
	for i, c := range r.Causes {
		if i == len(palette)-1 && len(r.Causes) > len(palette) {
			break
		}
		named[c.Category] = i
		v.ByCause.Series = append(v.ByCause.Series, series{Name: c.Category, Color: palette[i]})
	}
	other := len(v.ByCause.Series)
	if len(r.Causes) > len(v.ByCause.Series) {
		v.ByCause.Series = append(v.ByCause.Series, series{Name: "other", Color: otherColor})
	}
	v.ByFault.Series = faults
	v.ByCause.Values = grid(len(v.Weeks), len(v.ByCause.Series))
	v.ByFault.Values = grid(len(v.Weeks), len(faults))
	for _, wc := range r.Weekly {
		i, ok := at[wc.Week]
		if !ok {
			continue
		}
		s, ok := named[wc.Category]
		if !ok {
			s = other
		}
		v.ByCause.Values[i][s] += wc.Interruptions
		f := len(faults) - 1
		for j, fs := range faults {
			if fs.Name == wc.Fault {
				f = j
			}
		}
		v.ByFault.Values[i][f] += wc.Interruptions
	}
	for _, fr := range r.FailureRates {
		if n := len(v.Rates); n == 0 || v.Rates[n-1].Dimension != fr.Dimension {
			v.Rates = append(v.Rates, rateGroup{Dimension: fr.Dimension})
		}
		g := &v.Rates[len(v.Rates)-1]
		g.Rows = append(g.Rows, fr)
	}
	return v
}

func grid(rows, cols int) [][]int {
	g := make([][]int, rows)
	for i := range g {
		g[i] = make([]int, cols)
	}
	return g
}

// weeks are the Mondays (UTC) from the period's first week (the first interruption's, when the
// period has no start) to its last, at most 160 (three years: a longer period shows its end).
func weeks(r *store.FleetReport) []time.Time {
	var first, last time.Time
	if r.Since != nil {
		first = monday(*r.Since)
	}
	if !r.Until.IsZero() {
		last = monday(r.Until.Add(-time.Nanosecond))
	}
	for _, w := range r.Weekly {
		if first.IsZero() || w.Week.Before(first) {
			first = monday(w.Week)
		}
		if last.IsZero() || w.Week.After(last) {
			last = monday(w.Week)
		}
	}
	if first.IsZero() || last.Before(first) {
		return nil
	}
	const most = 160
	if n := int(last.Sub(first).Hours()/(24*7)) + 1; n > most {
		first = last.AddDate(0, 0, -7*(most-1))
	}
	var ws []time.Time
	for w := first; !w.After(last); w = w.AddDate(0, 0, 7) {
		ws = append(ws, w)
	}
	return ws
}

// monday is the start of t's week (ISO: Monday, UTC), as PostgreSQL's date_trunc('week').
func monday(t time.Time) time.Time {
	t = t.UTC()
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
}

// CauseColor is the colour the weekly chart gives a cause.
func (v *view) CauseColor(category string) string {
	for _, s := range v.ByCause.Series {
		if s.Name == category {
			return s.Color
		}
	}
	return otherColor
}

// Period says which failures the report counts.
func (v *view) Period() string {
	until := v.Until.UTC().Format("2006-01-02 15:04 UTC")
	if v.Since == nil {
		return "all failures before " + until
	}
	return v.Since.UTC().Format("2006-01-02 15:04 UTC") + " to " + until
}

// LostShare is the share of the GPU-hours used that failures lost, in percent.
func (v *view) LostShare() string {
	if v.Totals.GPUHoursUsed <= 0 {
		return "—"
	}
	return strconv.FormatFloat(100*v.Totals.GPUHoursLost/v.Totals.GPUHoursUsed, 'f', 1, 64) + "%"
}

// hours writes GPU-hours: whole above 100, with thousands separated.
func hours(h float64) string {
	if h < 100 {
		return strconv.FormatFloat(h, 'f', 1, 64)
	}
	return thousands(int64(math.Round(h)))
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// duration writes seconds as "45s", "7m 30s", "2h 5m" or "3d 4h".
func duration(sec float64) string {
	d := time.Duration(math.Round(sec)) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}

// xids writes a node's Xid codes with their interruptions, the four most frequent.
func xids(xs []store.XidCount) string {
	var parts []string
	for i, x := range xs {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("%d more", len(xs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d)", x.Xid, x.Interruptions))
	}
	return strings.Join(parts, ", ")
}

// partial says whether the period holds only part of a week (the first or the last).
func (v *view) partial(week time.Time) bool {
	return (v.Since != nil && week.Before(*v.Since)) || week.AddDate(0, 0, 7).After(v.Until)
}

func count(n int) string { return thousands(int64(n)) }

func percent(rate float64) string { return strconv.FormatFloat(100*rate, 'f', 1, 64) + "%" }

// dimensionTitles name the failure rates' dimensions.
var dimensionTitles = map[string]string{"cluster": "Clusters", "namespace": "Namespaces", "kind": "Job kinds", "image": "Images"}

func dimensionTitle(d string) string {
	if t, ok := dimensionTitles[d]; ok {
		return t
	}
	return d
}

// retryTitle names a retry class's rows.
func retryTitle(class string) string {
	switch class {
	case "transient":
		return "transient (a retry can help)"
	case "permanent":
		return "permanent (a retry cannot help)"
	}
	return class
}

// total sums a week's bars.
func total(vals []int) int {
	n := 0
	for _, x := range vals {
		n += x
	}
	return n
}
