package compare

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/report"
)

// diagnosisChanges are the verdicts and root causes that differ, and the categories of
// primary findings one run has and the other has not: a root cause's category first, then by
// severity.
func diagnosisChanges(good, bad *report.Report) []*Change {
	var out []*Change
	if good.Verdict != bad.Verdict {
		out = append(out, &Change{Section: SectionDiagnosis, Kind: "verdict", Score: 1000,
			Title: fmt.Sprintf("verdict %s in GOOD, %s in BAD", good.Verdict, bad.Verdict),
			Good:  good.VerdictReason, Bad: bad.VerdictReason})
	}
	if gc, bc := rootCategory(good), rootCategory(bad); gc != bc {
		c := &Change{Section: SectionDiagnosis, Kind: "root-cause", Score: 900, Good: rootText(good), Bad: rootText(bad)}
		switch {
		case gc == "":
			c.Title = "BAD's root cause: " + bad.RootCause.Title
		case bc == "":
			c.Title = "GOOD had a root cause BAD has not: " + good.RootCause.Title
		default:
			c.Title = fmt.Sprintf("root cause %s in GOOD, %s in BAD", gc, bc)
		}
		out = append(out, c)
	}
	gf, bf := byCategory(good), byCategory(bad)
	for _, cat := range sortedKeys(bf) {
		if _, ok := gf[cat]; ok {
			continue
		}
		f := bf[cat]
		out = append(out, &Change{Section: SectionDiagnosis, Kind: "finding-new", Score: 500 + 10*int(f.Severity),
			Path: cat, Title: fmt.Sprintf("%s %s only in BAD: %s", f.Severity, cat, f.Title), Bad: whereOf(f)})
	}
	for _, cat := range sortedKeys(gf) {
		if _, ok := bf[cat]; ok {
			continue
		}
		f := gf[cat]
		out = append(out, &Change{Section: SectionDiagnosis, Kind: "finding-gone", Score: 400 + 10*int(f.Severity),
			Path: cat, Title: fmt.Sprintf("%s %s only in GOOD: %s", f.Severity, cat, f.Title), Good: whereOf(f)})
	}
	out = append(out, podChanges(good, bad)...)
	return append(out, spreadChanges(good, bad)...)
}

// spreadChanges are the classes of findings both runs have, folded in one of them (on more
// than report.FoldOver processes), seen on other ranks or another number of processes: the
// same NCCL timeout on 12 ranks in GOOD and on 16,383 in BAD. A folded finding compares by its
// class and its ranks, whichever format version wrote the other side.
func spreadChanges(good, bad *report.Report) []*Change {
	gs, bs := spreads(good), spreads(bad)
	var out []*Change
	for _, k := range sortedKeys(bs) {
		b := bs[k]
		g, ok := gs[k]
		if !ok || !(g.folded || b.folded) || (g.procs == b.procs && g.ranks() == b.ranks()) {
			continue
		}
		out = append(out, &Change{Section: SectionDiagnosis, Kind: "finding-spread", Score: 300 + 10*int(b.f.Severity),
			Path: string(b.f.Category), Title: fmt.Sprintf("%s %s on %s in GOOD, on %s in BAD: %s", b.f.Severity, b.f.Category,
				g.text(), b.text(), b.f.Title), Good: g.ranks(), Bad: b.ranks()})
	}
	return out
}

// classSpread is where the findings of one class (rule and title) were seen in one run.
type classSpread struct {
	f      *report.Finding
	procs  int
	nums   []int
	folded bool
	ranges []string
}

func (s *classSpread) ranks() string {
	all := append([]int{}, s.nums...)
	for _, r := range s.ranges {
		all = append(all, expandRanks(r)...)
	}
	return report.Ranges(all, 0)
}

func (s *classSpread) text() string {
	if r := s.ranks(); r != "" {
		return fmt.Sprintf("%s processes (ranks %s)", report.Commas(s.procs), report.Ranges(expandRanks(r), 6))
	}
	return report.Commas(s.procs) + " processes"
}

func spreads(r *report.Report) map[string]*classSpread {
	out := map[string]*classSpread{}
	for _, f := range r.Findings {
		k := f.RuleID + "\x00" + f.Title
		s := out[k]
		if s == nil {
			s = &classSpread{f: f}
			out[k] = s
		}
		switch {
		case f.Folded > 0:
			s.procs += f.Processes
			s.folded = true
			if f.Ranks != "" {
				s.ranges = append(s.ranges, f.Ranks)
			}
		default:
			s.procs++
			if f.Rank != nil {
				s.nums = append(s.nums, *f.Rank)
			}
		}
	}
	return out
}

// expandRanks lists the ranks of a range list ("0-1,3-5"); what is not one gives none.
func expandRanks(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil
		}
		b := a
		if ok {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<20 {
				return nil
			}
		}
		for n := a; n <= b; n++ {
			out = append(out, n)
		}
	}
	return out
}

func rootCategory(r *report.Report) string {
	if r.RootCause == nil {
		return ""
	}
	return string(r.RootCause.Category)
}

func rootText(r *report.Report) string {
	if r.RootCause == nil {
		return ""
	}
	return r.RootCause.Title + where(&r.RootCause.Finding)
}

// where says the pod of a finding, when it has one, or the ranks of a folded one.
func where(f *report.Finding) string {
	if w := whereOf(f); w != "" {
		return " (" + w + ")"
	}
	return ""
}

// whereOf is a finding's pod, or "on 16,383 ranks: 0-1,3-16383" for a folded finding.
func whereOf(f *report.Finding) string {
	if f.Folded > 0 {
		return "on " + report.FoldedWhere(f)
	}
	return f.Pod
}

// byCategory keeps, for each category of the primary findings, the most severe and then the
// earliest finding (findings come sorted by time).
func byCategory(r *report.Report) map[string]*report.Finding {
	out := map[string]*report.Finding{}
	for _, f := range r.Findings {
		if f.SecondaryOf != "" || f.Category == analyze.Category("") {
			continue
		}
		if had, ok := out[string(f.Category)]; !ok || f.Severity > had.Severity {
			out[string(f.Category)] = f
		}
	}
	return out
}

// sortedUnion lists the keys of a and b, each once, sorted.
func sortedUnion[A, B any](a map[string]A, b map[string]B) []string {
	keys := make(map[string]bool, len(a)+len(b))
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return sortedKeys(keys)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
