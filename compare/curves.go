package compare

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

const (
	// curveFactor is how far apart the end of two runs' loss or grad-norm curves must be (the
	// median of their last quarter) to be a change: two seeds of one spec end closer.
	curveFactor = 2.0
	// throughputFactor is the least ratio of throughputs that is a change.
	throughputFactor = 1.25
)

// RoleProgress is the pace and the curves of one role in both runs: what the Progress section
// shows whether or not it changed.
type RoleProgress struct {
	Role string `json:"role"`
	// Good and Bad are the pace of the role's logs in each run (null: no progress lines).
	Good *Pace `json:"good"`
	Bad  *Pace `json:"bad"`
	// Curves are the metrics of the progress lines (loss, grad_norm, throughput) that either
	// run printed, in that order.
	Curves []*CurvePair `json:"curves"`
}

// Pace is the step time of a role's logs in one run.
type Pace struct {
	// Logs is how many logs (ranks) have at least 3 progress lines.
	Logs int `json:"logs"`
	// MedianStep is the median of their seconds per progress line; StepsPerSecond its inverse.
	MedianStep     float64 `json:"medianStepSeconds"`
	StepsPerSecond float64 `json:"stepsPerSecond"`
	// Spread is the slowest log's step time over the median; Slowest its pod.
	Spread  float64 `json:"spread"`
	Slowest string  `json:"slowest"`
}

// CurvePair is one metric of a role in both runs, aligned: by step when both runs' lines name
// one, else by the order of the lines.
type CurvePair struct {
	Metric string `json:"metric"`
	// ByStep says the points' x is the step the lines name; false: the line's order (1, 2, ...).
	ByStep bool    `json:"byStep"`
	Good   *Series `json:"good"`
	Bad    *Series `json:"bad"`
}

// Series is the curve of one process (the lowest rank of the role that printed the metric).
type Series struct {
	Pod  string `json:"pod"`
	Path string `json:"path"`
	Rank int    `json:"rank"`
	// Lines is how many lines gave a value; NonFinite how many said nan or inf, and
	// FirstNonFinite the x of the first (null: none).
	Lines          int    `json:"lines"`
	NonFinite      int    `json:"nonFinite"`
	FirstNonFinite *int64 `json:"firstNonFinite"`
	// Min, Max and Last are of the finite values.
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Last float64 `json:"last"`
	// X and Y are at most 128 evenly spaced points; a non-finite value is null.
	X []int64    `json:"x,omitempty"`
	Y []*float64 `json:"y,omitempty"`
}

// procRef is a process's curves with where they come from.
type procRef struct {
	pod, path string
	rank      int
	c         *procCurves
}

// roleCurves are a run's processes with curves, by role, each sorted by rank then path.
func roleCurves(r *Run) map[string][]procRef {
	out := map[string][]procRef{}
	if r == nil || r.Curves == nil || r.Model == nil {
		return out
	}
	rankOf := map[string]int{}
	if r.Index != nil {
		for _, s := range r.Index.Streams() {
			rankOf[s.Path] = s.Rank
		}
	}
	for i, ls := range r.Model.Logs {
		lc := r.Curves.log(i)
		if lc == nil {
			continue
		}
		role := ""
		if r.Model.Job != nil {
			if p := r.Model.Pod(ls.Namespace, ls.Pod); p != nil {
				role = r.Model.Job.RoleOf(p)
			}
		}
		who := ls.Pod
		if who == "" {
			who = ls.Path
		}
		for _, pc := range lc.procs {
			rank := pc.rank
			if rank < 0 {
				if sr, ok := rankOf[ls.Path]; ok {
					rank = sr
				}
			}
			out[role] = append(out[role], procRef{pod: who, path: ls.Path, rank: rank, c: pc})
		}
	}
	for _, ps := range out {
		sort.SliceStable(ps, func(i, j int) bool {
			a, b := ps[i], ps[j]
			if (a.rank < 0) != (b.rank < 0) {
				return a.rank >= 0
			}
			if a.rank != b.rank {
				return a.rank < b.rank
			}
			return a.path < b.path
		})
	}
	return out
}

// first is the first process of a role with a curve of the metric.
func first(ps []procRef, metric string) (procRef, *curve) {
	for _, p := range ps {
		if c := p.c.curves[metric]; c != nil && c.count > 0 {
			return p, c
		}
	}
	return procRef{}, nil
}

// seriesOf is a curve as the report shows it, its x by step or by order.
func seriesOf(p procRef, c *curve, byStep bool) *Series {
	if c == nil {
		return nil
	}
	s := &Series{Pod: p.pod, Path: p.path, Rank: p.rank, Lines: c.count, NonFinite: c.nonFinite,
		Min: round3(c.min), Max: round3(c.max), Last: round3(c.last), X: []int64{}, Y: []*float64{}}
	if c.firstBad != nil {
		x := xOf(*c.firstBad, byStep)
		s.FirstNonFinite = &x
	}
	for _, pt := range c.points {
		if byStep && pt.Step < 0 {
			continue
		}
		s.X = append(s.X, xOf(pt, byStep))
		var y *float64
		if finite(pt.Value) {
			v := pt.Value
			y = &v
		}
		s.Y = append(s.Y, y)
	}
	return s
}

func xOf(p Point, byStep bool) int64 {
	if byStep {
		return p.Step
	}
	return int64(p.N) + 1
}

// paceSummary is the pace of a role's logs.
func paceSummary(r *roleLogs) *Pace {
	if r == nil {
		return nil
	}
	ps, secs := measured(r)
	if len(secs) == 0 {
		return nil
	}
	med := median(secs)
	if med <= 0 {
		return nil
	}
	p := &Pace{Logs: len(secs), MedianStep: round3(med), StepsPerSecond: round3(1 / med), Spread: spread(secs, med)}
	slowest := 0
	for i, s := range secs {
		if s > secs[slowest] || (s == secs[slowest] && ps[i].pod < ps[slowest].pod) {
			slowest = i
		}
	}
	p.Slowest = ps[slowest].pod
	return p
}

// progressSummary is each role's pace and curves in both runs, and the changes of the curves:
// a metric that turned nan or inf in BAD only, a loss or grad norm that ends far from GOOD's,
// a throughput that fell or rose.
func progressSummary(good, bad *Run, gl, bl *runLogs) ([]*RoleProgress, []*Change) {
	gc, bc := roleCurves(good), roleCurves(bad)
	roles := map[string]bool{}
	for _, m := range []map[string][]procRef{gc, bc} {
		for r := range m {
			roles[r] = true
		}
	}
	for _, m := range []*runLogs{gl, bl} {
		for r, rl := range m.roles {
			if ps, _ := measured(rl); len(ps) > 0 {
				roles[r] = true
			}
		}
	}
	var out []*RoleProgress
	var changes []*Change
	for _, role := range sortedKeys(roles) {
		rp := &RoleProgress{Role: role, Good: paceSummary(gl.roles[role]), Bad: paceSummary(bl.roles[role]), Curves: []*CurvePair{}}
		label := role
		if label == "" {
			label = "logs"
		}
		for _, m := range metrics {
			gp, g := first(gc[role], m)
			bp, b := first(bc[role], m)
			if g == nil && b == nil {
				continue
			}
			byStep := (g == nil || g.stepped) && (b == nil || b.stepped)
			pair := &CurvePair{Metric: m, ByStep: byStep, Good: seriesOf(gp, g, byStep), Bad: seriesOf(bp, b, byStep)}
			rp.Curves = append(rp.Curves, pair)
			if c := nonFiniteChange(label, role, m, gc[role], bc[role], byStep); c != nil {
				changes = append(changes, c)
			} else if c := curveChange(label, role, pair); c != nil {
				changes = append(changes, c)
			}
		}
		out = append(out, rp)
	}
	return out, changes
}

// nonFiniteChange: BAD's metric turned nan or inf (on its earliest process) while no process
// of GOOD's role ever printed one.
func nonFiniteChange(label, role, metric string, good, bad []procRef, byStep bool) *Change {
	for _, p := range good {
		if c := p.c.curves[metric]; c != nil && c.nonFinite > 0 {
			return nil
		}
	}
	var at *procRef
	var pt Point
	for i, p := range bad {
		c := p.c.curves[metric]
		if c == nil || c.firstBad == nil {
			continue
		}
		if at == nil || xOf(*c.firstBad, byStep) < xOf(pt, byStep) {
			at, pt = &bad[i], *c.firstBad
		}
	}
	if at == nil {
		return nil
	}
	where := "its value " + strconv.Itoa(pt.N+1)
	if byStep {
		where = "step " + strconv.FormatInt(pt.Step, 10)
	}
	val := "nan"
	switch {
	case math.IsInf(pt.Value, 1):
		val = "inf"
	case math.IsInf(pt.Value, -1):
		val = "-inf"
	}
	score := 390
	if metric == MetricLoss {
		score = 400 // the loss is what a reader watches; its grad norm says why
	}
	return &Change{Section: SectionProgress, Kind: "nonfinite", Score: score, Role: role, Path: at.pod,
		Title: fmt.Sprintf("%s: %s is %s from %s in BAD (%s; GOOD's is finite throughout)", label, metric, val, where, at.pod),
		Good:  "finite", Bad: val + " from " + where,
		Progress: &ProgressChange{Pod: at.pod, Metric: metric, Step: xOf(pt, byStep)}}
}

// curveChange: the end of BAD's curve is far from GOOD's (the median of the last quarter of
// the steps both reached).
func curveChange(label, role string, pair *CurvePair) *Change {
	if pair.Good == nil || pair.Bad == nil {
		return nil
	}
	g, b := pair.Good, pair.Bad
	if len(g.X) < minSteps || len(b.X) < minSteps {
		return nil
	}
	end := min(g.X[len(g.X)-1], b.X[len(b.X)-1])
	start := max(g.X[0], b.X[0])
	if end <= start {
		return nil
	}
	from := start + (end-start)*3/4
	gm, bm := tailMedian(g, from, end), tailMedian(b, from, end)
	if gm <= 0 || bm <= 0 || math.IsNaN(gm) || math.IsNaN(bm) {
		return nil
	}
	ratio := bm / gm
	factor, kind, score := curveFactor, "curve", 250
	if pair.Metric == MetricThroughput {
		factor, kind, score = throughputFactor, "throughput", 280
	}
	if ratio < factor && ratio > 1/factor {
		return nil
	}
	word := "higher"
	if ratio < 1 {
		word = "lower"
	}
	return &Change{Section: SectionProgress, Kind: kind, Score: score, Role: role, Path: pair.Metric,
		Title: fmt.Sprintf("%s: %s ends %.2fx %s in BAD (%s → %s, median of steps %d-%d)", label, pair.Metric, math.Max(ratio, 1/ratio), word,
			num(gm), num(bm), from, end),
		Good: num(gm), Bad: num(bm),
		Progress: &ProgressChange{Ratio: round3(ratio), Metric: pair.Metric, Pod: pair.Bad.Pod}}
}

// tailMedian is the median of the finite values with x in [from, to].
func tailMedian(s *Series, from, to int64) float64 {
	var vs []float64
	for i, x := range s.X {
		if x >= from && x <= to && s.Y[i] != nil {
			vs = append(vs, *s.Y[i])
		}
	}
	if len(vs) == 0 {
		return math.NaN()
	}
	return median(vs)
}

// num shows a metric's value in four significant digits.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
