package compare

import (
	"fmt"
	"math"
	"sort"
)

const (
	// minSteps is the fewest progress lines of a log whose pace is measured.
	minSteps = 3
	// slower is the least ratio of step times that is a change, when the runs' own spread
	// across ranks is smaller.
	slower = 1.25
	// straggler is how much slower than its role's median a rank must be to be a straggler.
	straggler = 1.5
	// maxRanks bounds the ranks a progress change lists (the slowest).
	maxRanks = 64
)

// ProgressChange is a change in the pace of training: the seconds between progress lines
// (steps) of a role, or of one rank.
type ProgressChange struct {
	// GoodStep and BadStep are the median seconds per progress line of the role's logs; for a
	// straggler, BadStep is the rank's own.
	GoodStep float64 `json:"goodStepSeconds"`
	BadStep  float64 `json:"badStepSeconds"`
	// Ratio is BadStep / GoodStep (for a straggler: over BAD's median).
	Ratio float64 `json:"ratio"`
	// GoodSpread and BadSpread are the slowest rank's step time over the median, per run.
	GoodSpread float64 `json:"goodSpread"`
	BadSpread  float64 `json:"badSpread"`
	Pod        string  `json:"pod,omitempty"`
	// Progress is the template of the progress lines measured (of BAD).
	Progress string `json:"progress"`
	// Ranks are the step times of each log, slowest first (at most 64 per run).
	Ranks []RankPace `json:"ranks"`
	// Metric is the curve of a nonfinite, curve or throughput change (loss, grad_norm,
	// throughput); Step the x where BAD's turned nan or inf.
	Metric string `json:"metric,omitempty"`
	Step   int64  `json:"step,omitempty"`
}

// RankPace is the pace of one log.
type RankPace struct {
	Run   string  `json:"run"` // good or bad
	Pod   string  `json:"pod"`
	Rank  int     `json:"rank"`
	Steps int     `json:"steps"`
	Step  float64 `json:"stepSeconds"`
}

// measured are the logs of a role whose pace is known, with their step seconds.
func measured(r *roleLogs) ([]*pace, []float64) {
	var ps []*pace
	var secs []float64
	for _, p := range r.streams {
		if p.steps >= minSteps && p.first != 0 && p.last > p.first {
			ps = append(ps, p)
			secs = append(secs, float64(p.last-p.first)/1e9/float64(p.steps-1))
		}
	}
	return ps, secs
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func spread(xs []float64, med float64) float64 {
	if med <= 0 {
		return 0
	}
	mx := 0.0
	for _, x := range xs {
		mx = math.Max(mx, x)
	}
	return round3(mx / med)
}

// progressChanges compares the pace of each role: a step time that regressed beyond the runs'
// own spread, and a rank of BAD much slower than its peers when GOOD had no such rank.
func progressChanges(good, bad *runLogs) []*Change {
	var out []*Change
	for _, role := range sortedKeys(bad.roles) {
		gr := good.roles[role]
		if gr == nil {
			continue
		}
		gp, gs := measured(gr)
		bp, bs := measured(bad.roles[role])
		if len(gs) == 0 || len(bs) == 0 {
			continue
		}
		gm, bm := median(gs), median(bs)
		if gm <= 0 || bm <= 0 {
			continue
		}
		gspread, bspread := spread(gs, gm), spread(bs, bm)
		ranks := rankPaces(gp, gs, bp, bs)
		label := role
		if label == "" {
			label = "logs"
		}
		progress := bp[0].progress
		if tol := math.Max(slower, gspread); bm > gm*tol || gm > bm*tol {
			word := "slower"
			if gm > bm {
				word = "faster"
			}
			out = append(out, &Change{Section: SectionProgress, Kind: "step-time", Score: 300, Role: role,
				Title: fmt.Sprintf("%s: steps %.2fx %s in BAD (%s → %s per progress line)", label, math.Max(bm/gm, gm/bm), word, secs(gm), secs(bm)),
				Good:  secs(gm), Bad: secs(bm),
				Progress: &ProgressChange{GoodStep: round3(gm), BadStep: round3(bm), Ratio: round3(bm / gm), GoodSpread: gspread, BadSpread: bspread,
					Progress: progress, Ranks: ranks}})
		}
		if gspread >= straggler || len(bs) < 2 {
			continue // GOOD had a rank as slow: not a change
		}
		for i, s := range bs {
			peers := bm
			if len(bs) < 5 {
				peers = median(append(append([]float64(nil), bs[:i]...), bs[i+1:]...))
			}
			if s < peers*straggler || s < gm*straggler {
				continue
			}
			p := bp[i]
			out = append(out, &Change{Section: SectionProgress, Kind: "straggler", Score: 350, Role: role, Path: p.pod,
				Title: fmt.Sprintf("%s: %s is a straggler in BAD: %s per progress line, %.2fx the median of its peers (GOOD's slowest rank: %.2fx)",
					label, p.pod, secs(s), s/peers, gspread),
				Good: secs(gm), Bad: secs(s),
				Progress: &ProgressChange{GoodStep: round3(gm), BadStep: round3(s), Ratio: round3(s / peers), GoodSpread: gspread, BadSpread: bspread,
					Pod: p.pod, Progress: p.progress, Ranks: ranks}})
		}
	}
	return out
}

// rankPaces lists the step times of both runs, slowest first, at most maxRanks per run.
func rankPaces(gp []*pace, gs []float64, bp []*pace, bs []float64) []RankPace {
	var out []RankPace
	for _, run := range []struct {
		name string
		ps   []*pace
		ss   []float64
	}{{"good", gp, gs}, {"bad", bp, bs}} {
		var rs []RankPace
		for i, p := range run.ps {
			rs = append(rs, RankPace{Run: run.name, Pod: p.pod, Rank: p.rank, Steps: p.steps, Step: round3(run.ss[i])})
		}
		sort.SliceStable(rs, func(i, j int) bool {
			if rs[i].Step != rs[j].Step {
				return rs[i].Step > rs[j].Step
			}
			return rs[i].Pod < rs[j].Pod
		})
		if len(rs) > maxRanks {
			rs = rs[:maxRanks]
		}
		out = append(out, rs...)
	}
	return out
}

// secs shows seconds per step.
func secs(s float64) string {
	if s >= 10 {
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%.2f s", s)
}
