package report

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// Group is the findings that are one failure: one rule with one title and severity, on one
// pod or many, following from the same cause. Reports show a group as one card or one line,
// and fold the groups that follow from it (its symptoms) under it.
type Group struct {
	// Findings are in id order, except that a root cause's group starts with the root cause.
	Findings []*Finding
	// Pods are the pods the findings are about, in order of first appearance.
	Pods []string
	// Count sums the findings' counts.
	Count int
	// First and Last are the earliest and latest times of its findings (nil: none dated).
	First, Last *time.Time
	// Root is true for the group of the root cause.
	Root bool
	// Follows is the lead id of the group this one follows from ("" for a primary group).
	Follows string
	// Symptoms are the groups that follow from this one, by time.
	Symptoms []*Group
	podSet   map[string]bool
}

// Lead is the finding that names the group: the root cause, or the first of its findings.
func (g *Group) Lead() *Finding { return g.Findings[0] }

// ID is the lead finding's id, which summaries print and [follows fN] refers to.
func (g *Group) ID() string { return g.Lead().ID }

// SymptomCount counts the findings of its symptom groups (a folded finding as the findings
// it stands for).
func (g *Group) SymptomCount() int {
	n := 0
	for _, s := range g.Symptoms {
		for _, f := range s.Findings {
			n += max(1, f.Folded)
		}
	}
	return n
}

// Primary reports whether the group follows from nothing.
func (g *Group) Primary() bool { return g.Follows == "" }

func (g *Group) add(f *Finding) {
	g.Findings = append(g.Findings, f)
	g.Count += f.Count
	for _, p := range f.PodNames() {
		if g.podSet == nil {
			g.podSet = map[string]bool{}
		}
		if !g.podSet[p] {
			g.podSet[p] = true
			g.Pods = append(g.Pods, p)
		}
	}
	for _, t := range []*time.Time{f.Time, f.LastTime} {
		if t == nil {
			continue
		}
		if g.First == nil || t.Before(*g.First) {
			g.First = t
		}
		if g.Last == nil || t.After(*g.Last) {
			g.Last = t
		}
	}
}

// Folded is the group's folded finding (FoldOver), nil when none of its findings is one.
func (g *Group) Folded() *Finding {
	for _, f := range g.Findings {
		if f.Folded > 0 {
			return f
		}
	}
	return nil
}

// Groups folds the report's findings into groups: the primary groups (the root cause's
// first, then by severity and time), each with the groups of its symptoms. A symptom whose
// cause is missing or circular counts as primary.
func (r *Report) Groups() []*Group {
	byID := map[string]*Finding{}
	for _, f := range r.Findings {
		byID[f.ID] = f
	}
	rootID := ""
	if r.RootCause != nil {
		rootID = r.RootCause.ID
	}
	// cause follows SecondaryOf to the primary finding a symptom comes from.
	cause := func(f *Finding) *Finding {
		seen := map[string]bool{}
		for f.SecondaryOf != "" && !seen[f.ID] {
			seen[f.ID] = true
			next, ok := byID[f.SecondaryOf]
			if !ok {
				return f
			}
			f = next
		}
		return f
	}
	key := func(f *Finding) string {
		return f.RuleID + "\x00" + f.Title + "\x00" + f.Severity.String()
	}
	var primaries []*Group
	primaryOf := map[string]*Group{} // finding id -> its primary group
	pkeys := map[string]*Group{}
	ordered := append([]*Finding{}, r.Findings...)
	// The root cause leads its group even when a finding of the same rule has a lower id.
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].ID == rootID && ordered[j].ID != rootID })
	for _, f := range ordered {
		if cause(f) != f {
			continue
		}
		k := key(f)
		g, ok := pkeys[k]
		if !ok {
			g = &Group{}
			pkeys[k] = g
			primaries = append(primaries, g)
		}
		g.add(f)
		if f.ID == rootID {
			g.Root = true
		}
		primaryOf[f.ID] = g
	}
	skeys := map[string]*Group{}
	for _, f := range r.Findings {
		c := cause(f)
		if c == f {
			continue
		}
		pg := primaryOf[c.ID]
		if pg == nil {
			continue
		}
		k := key(f) + "\x00" + pg.ID()
		g, ok := skeys[k]
		if !ok {
			g = &Group{Follows: pg.ID()}
			skeys[k] = g
			pg.Symptoms = append(pg.Symptoms, g)
		}
		g.add(f)
	}
	sort.SliceStable(primaries, func(i, j int) bool {
		a, b := primaries[i], primaries[j]
		if a.Root != b.Root {
			return a.Root
		}
		if a.Lead().Severity != b.Lead().Severity {
			return a.Lead().Severity > b.Lead().Severity
		}
		return timeLess(a.First, b.First)
	})
	for _, g := range primaries {
		sort.SliceStable(g.Symptoms, func(i, j int) bool {
			a, b := g.Symptoms[i], g.Symptoms[j]
			if !sameTime(a.First, b.First) {
				return timeLess(a.First, b.First)
			}
			return a.Lead().Severity > b.Lead().Severity
		})
	}
	return primaries
}

// timeLess orders times, nil last.
func timeLess(a, b *time.Time) bool {
	switch {
	case a == nil:
		return false
	case b == nil:
		return true
	}
	return a.Before(*b)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// NameList writes names for a sentence, folding numbered names into Slurm-style host lists
// ("big-train-worker-[0-35,37-1022]") and keeping at most max items ("… and 9 more").
func NameList(names []string, max int) string {
	type series struct {
		prefix string
		nums   []int
		width  int // the numbers' zero-padded width, or 0
		other  string
	}
	var out []*series
	byKey := map[string]*series{}
	for _, n := range names {
		i := len(n)
		for i > 0 && n[i-1] >= '0' && n[i-1] <= '9' {
			i--
		}
		prefix, digits := n[:i], n[i:]
		num, err := strconv.Atoi(digits)
		if digits == "" || err != nil || len(digits) > 9 || prefix == "" {
			out = append(out, &series{other: n})
			continue
		}
		width := 0
		if len(digits) > 1 && digits[0] == '0' {
			width = len(digits)
		}
		key := prefix + "\x00" + strconv.Itoa(width)
		s, ok := byKey[key]
		if !ok {
			s = &series{prefix: prefix, width: width}
			byKey[key] = s
			out = append(out, s)
		}
		s.nums = append(s.nums, num)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].prefix+out[i].other < out[j].prefix+out[j].other
	})
	var items []string
	for _, s := range out {
		if s.other != "" {
			items = append(items, s.other)
			continue
		}
		if len(s.nums) <= 2 {
			for _, n := range s.nums {
				items = append(items, s.prefix+pad(n, s.width))
			}
			continue
		}
		items = append(items, s.prefix+"["+ranges(s.nums, 6, s.width)+"]")
	}
	if max > 0 && len(items) > max {
		return strings.Join(items[:max], ", ") + " and " + Commas(len(items)-max) + " more"
	}
	return strings.Join(items, ", ")
}

func pad(n, width int) string {
	s := strconv.Itoa(n)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

// Ranges writes numbers as sorted ranges, "0-35,37-1022", keeping at most max ranges
// ("0-3,5,…").
func Ranges(nums []int, max int) string { return ranges(nums, max, 0) }

func ranges(nums []int, max, width int) string {
	ns := append([]int{}, nums...)
	sort.Ints(ns)
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] <= ns[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, pad(ns[i], width)+"-"+pad(ns[j], width))
		} else {
			parts = append(parts, pad(ns[i], width))
		}
		i = j + 1
	}
	if max > 0 && len(parts) > max {
		return strings.Join(parts[:max], ",") + ",…"
	}
	return strings.Join(parts, ",")
}

// Pods names a group's pods for a card or a line: all of a few, else how many and the list
// folded ("7 pods: train-job-master-0, train-job-worker-[0-3,5,6]").
func PodsText(pods []string, max int) string {
	if len(pods) <= 3 {
		return strings.Join(pods, ", ")
	}
	return Commas(len(pods)) + " pods: " + NameList(pods, max)
}
