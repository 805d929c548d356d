package report

import (
	"sort"
	"time"
)

// timeScale maps times to positions (pixels or text columns). A long stretch in which
// nothing happens (six hours of healthy training before a failure) is cut to a narrow gap
// labelled with its length, so the minutes that matter get the room.
type timeScale struct {
	pieces []piece
}

// piece is a linear stretch of the scale, or a gap cut out of it.
type piece struct {
	t0, t1 time.Time
	x0, x1 float64
	gap    bool
}

const (
	// A stretch is cut when it is at least minGap long and more than half of the time
	// that remains; at most maxGaps are cut.
	minGap  = time.Hour
	maxGaps = 2
)

// newScale maps the span of instants onto [x0, x1]; a cut gap takes gapW. cuttable, when
// set, says whether a stretch may be cut (not when a pod waits through it: the wait is the
// story).
func newScale(instants []time.Time, x0, x1, gapW float64, cuttable func(t0, t1 time.Time) bool) *timeScale {
	ts := append([]time.Time{}, instants...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	if len(ts) == 0 {
		return &timeScale{}
	}
	first, last := ts[0], ts[len(ts)-1]
	if !last.After(first) {
		first, last = first.Add(-30*time.Second), last.Add(30*time.Second)
		ts = []time.Time{first, last}
	}
	remaining := last.Sub(first)
	cut := map[int]bool{}
	for n := 0; n < maxGaps; n++ {
		best, bestD := -1, time.Duration(0)
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); !cut[i] && d > bestD && (cuttable == nil || cuttable(ts[i-1], ts[i])) {
				best, bestD = i, d
			}
		}
		if best < 0 || bestD < minGap || bestD*2 <= remaining {
			break
		}
		cut[best] = true
		remaining -= bestD
	}
	// The linear pieces between cuts, and the cuts.
	var ps []piece
	start := first
	for i := 1; i < len(ts); i++ {
		if cut[i] {
			ps = append(ps, piece{t0: start, t1: ts[i-1]}, piece{t0: ts[i-1], t1: ts[i], gap: true})
			start = ts[i]
		}
	}
	ps = append(ps, piece{t0: start, t1: last})
	// Widths: gaps gapW each; linear pieces in proportion to their length, each padded so
	// that an instant between two cuts still has room.
	gaps := len(cut)
	avail := x1 - x0 - float64(gaps)*gapW
	pad := remaining / 25
	if pad <= 0 {
		pad = time.Second
	}
	var sum time.Duration
	for _, p := range ps {
		if !p.gap {
			sum += p.t1.Sub(p.t0) + pad
		}
	}
	x := x0
	for i := range ps {
		p := &ps[i]
		w := gapW
		if !p.gap {
			w = avail * float64(p.t1.Sub(p.t0)+pad) / float64(sum)
		}
		p.x0, p.x1 = x, x+w
		x += w
	}
	// Pad the linear pieces on both sides by half their padding.
	for i := range ps {
		p := &ps[i]
		if !p.gap {
			half := pad / 2
			p.t0, p.t1 = p.t0.Add(-half), p.t1.Add(half)
		}
	}
	return &timeScale{pieces: ps}
}

// X is the position of t (clamped to the scale).
func (s *timeScale) X(t time.Time) float64 {
	if len(s.pieces) == 0 {
		return 0
	}
	if t.Before(s.pieces[0].t0) {
		return s.pieces[0].x0
	}
	for _, p := range s.pieces {
		switch {
		case p.gap && t.After(p.t0) && t.Before(p.t1):
			return (p.x0 + p.x1) / 2
		case !p.gap && !t.Before(p.t0) && !t.After(p.t1):
			return p.x0 + (p.x1-p.x0)*float64(t.Sub(p.t0))/float64(p.t1.Sub(p.t0))
		}
	}
	return s.pieces[len(s.pieces)-1].x1
}

// Gaps are the cut stretches.
func (s *timeScale) Gaps() []piece {
	var out []piece
	for _, p := range s.pieces {
		if p.gap {
			out = append(out, p)
		}
	}
	return out
}

// tickSteps are the steps an axis may use.
var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// tick is a labelled time on the axis.
type tick struct {
	X     float64
	Label string
}

// Ticks places round times at least minSpacing apart on each linear piece.
func (s *timeScale) Ticks(minSpacing float64) []tick {
	var out []tick
	last := -1e9
	for _, p := range s.pieces {
		if p.gap {
			continue
		}
		d := p.t1.Sub(p.t0)
		n := (p.x1 - p.x0) / minSpacing
		if n < 1 {
			n = 1
		}
		step := tickSteps[len(tickSteps)-1]
		for _, st := range tickSteps {
			if float64(d)/float64(st) <= n {
				step = st
				break
			}
		}
		layout := "15:04"
		if step < time.Minute {
			layout = "15:04:05"
		}
		for t := p.t0.Truncate(step); !t.After(p.t1); t = t.Add(step) {
			if t.Before(p.t0) {
				continue
			}
			x := s.X(t)
			if x-last < minSpacing {
				continue
			}
			out = append(out, tick{X: x, Label: t.UTC().Format(layout)})
			last = x
		}
	}
	return out
}
