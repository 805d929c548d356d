package compare

import (
	"fmt"
	"sort"
	"strings"

	"github.com/coroner-dev/coroner/report"
)

// podChanges are the roles whose pods ended differently in the two runs (how many pods of a
// role are in each phase and how they ended: "7 Succeeded" against "6 Succeeded, 1 Failed
// (OOMKilled, exit 137)") and the roles whose pods restarted a different number of times. A
// report's pods are listed one by one or folded into groups of alike pods; both count the same
// way, so a 4,096-pod run compares with a 16-pod one. A role with no pod in the report (its pods
// were not collected) counts from the job status's replica counters.
func podChanges(good, bad *report.Report) []*Change {
	gs, bs := roleStates(good), roleStates(bad)
	var out []*Change
	for _, role := range sortedUnion(gs, bs) {
		g, b := gs[role], bs[role]
		if gt, bt := g.text(), b.text(); gt != bt {
			out = append(out, &Change{Section: SectionDiagnosis, Kind: "pods", Score: 360, Role: role,
				Title: fmt.Sprintf("%s pods: %s in GOOD, %s in BAD", role, orNone(gt), orNone(bt)), Good: gt, Bad: bt})
		}
		if g.restarts() != b.restarts() {
			gt, bt := g.restartText(), b.restartText()
			out = append(out, &Change{Section: SectionDiagnosis, Kind: "restarts", Score: 350, Role: role,
				Title: fmt.Sprintf("%s restarts: %s in GOOD, %s in BAD", role, gt, bt), Good: gt, Bad: bt})
		}
	}
	return out
}

// podStates counts a role's pods by how they are ("Failed (OOMKilled, exit 137)") and sums
// their restarts.
type podStates struct {
	count      map[string]int
	restartSum int
	restarted  int
}

func (s *podStates) add(state string, n, restarts int) {
	if s.count == nil {
		s.count = map[string]int{}
	}
	s.count[state] += n
	s.restartSum += restarts
	if restarts > 0 {
		s.restarted += n
	}
}

// text lists the states, the most pods first, then by name: "6 Succeeded, 1 Failed (Error,
// exit 1)"; "" for a role the run has no pod of.
func (s *podStates) text() string {
	if s == nil || len(s.count) == 0 {
		return ""
	}
	states := sortedKeys(s.count)
	sort.SliceStable(states, func(i, j int) bool { return s.count[states[i]] > s.count[states[j]] })
	parts := make([]string, len(states))
	for i, st := range states {
		parts[i] = report.Commas(s.count[st]) + " " + st
	}
	return strings.Join(parts, ", ")
}

func (s *podStates) restarts() int {
	if s == nil {
		return 0
	}
	return s.restartSum
}

func (s *podStates) restartText() string {
	n := s.restarts()
	if n == 0 {
		return "none"
	}
	return fmt.Sprintf("%s on %s", report.Commas(n), plural(s.restarted, "pod"))
}

func orNone(s string) string {
	if s == "" {
		return "no pod"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return report.Commas(n) + " " + what + "s"
}

// roleStates reads each role's pods, listed or folded, from a report.
func roleStates(r *report.Report) map[string]*podStates {
	out := map[string]*podStates{}
	for _, rp := range r.Job.Replicas {
		s := out[rp.Role]
		if s == nil {
			s = &podStates{}
			out[rp.Role] = s
		}
		for _, p := range rp.Pods {
			s.add(stateOf(p.Phase, p.Ended), 1, p.Restarts)
		}
		for _, g := range rp.Groups {
			// A group's restarts are its pods' restarts each (alike pods restarted alike).
			s.add(stateOf(g.Phase, g.Ended), g.Count, g.Restarts*g.Count)
		}
		if len(rp.Pods) == 0 && len(rp.Groups) == 0 {
			for _, c := range []struct {
				phase string
				n     int
			}{{"Pending", rp.Pending}, {"Running", rp.Running}, {"Succeeded", rp.Succeeded}, {"Failed", rp.Failed}} {
				if c.n > 0 {
					s.add(c.phase, c.n, 0)
				}
			}
		}
		if len(s.count) == 0 {
			delete(out, rp.Role)
		}
	}
	return out
}

func stateOf(phase, ended string) string {
	if phase == "" {
		phase = "Unknown"
	}
	if ended == "" {
		return phase
	}
	return phase + " (" + ended + ")"
}
