package report

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/analyze"
)

// FoldOver is how many processes one class of finding may be on before the report folds its
// findings into one: above it (a 16,384-rank job where every rank logs the same NCCL timeout),
// the report carries one finding with the exact count, the processes, the ranks as ranges, the
// pods (at most MaxFoldPods of them, and how many), the first and last time and at most
// MaxSamples findings' evidence, instead of a card per rank. At or below it, findings are
// reported one by one as they always were.
const FoldOver = 8

// MaxSamples bounds the findings whose evidence a folded finding keeps: the first in time, the
// one on the root cause's pod, the last in time.
const MaxSamples = 3

// MaxFoldPods bounds the pods a folded finding names; PodCount says how many there are.
const MaxFoldPods = 16

// Fold is what a folded finding stands for (the contract's finding fields processes, ranks,
// pods, podCount, firstTime, lastTime and folded, from format version 2), over findings of
// type F: the report's, or the analysis's when Build folds them before making the report's.
type fold[F comparable] struct {
	members []F
	// processes is how many processes the members are on; ranks and pods, theirs in the
	// order each was first seen (fold.count).
	processes int
	ranks     []int
	pods      []string
}

// foldView is what folding reads of a finding of either type.
type foldView struct {
	id, secondaryOf string
	class           foldClass
	proc            process
	ranked          bool // proc.rank is a rank the finding names
	pod             string
	time            *time.Time
	count           int
}

// foldClass is the class of a finding but the finding it follows from: everything it says but
// where and when. Findings of one class, following from one finding, on more than FoldOver
// processes are one fact seen many times; anything else that differs (the container, the
// node, the words of its explanation) keeps them apart. A struct of the finding's own
// strings, it costs no copy of them.
type foldClass struct {
	rule        string
	category    analyze.Category
	severity    analyze.Severity
	layer       analyze.Layer
	title       string
	fault       analyze.Fault
	retry       analyze.Retry
	container   string
	node        string
	explanation string
	remediation string
}

// process is the process a finding is about: its pod, container and rank (-1: none said).
type process struct {
	pod, container string
	rank           int
}

// viewOf is what folding reads of a report's finding.
func viewOf(f *Finding) foldView {
	v := foldView{id: f.ID, secondaryOf: f.SecondaryOf, pod: f.Pod, time: f.Time, count: f.Count,
		class: foldClass{f.RuleID, f.Category, f.Severity, f.Layer, f.Title, f.Fault, f.Retry, f.Container, f.Node,
			f.Explanation, f.Remediation},
		proc: process{pod: f.Pod, container: f.Container, rank: -1}}
	if f.Rank != nil {
		v.proc.rank, v.ranked = *f.Rank, true
	}
	return v
}

// analysisView is viewOf the report's finding findingLater makes of f.
func analysisView(f *analyze.Finding) foldView {
	v := foldView{id: f.ID, secondaryOf: f.SecondaryOf, pod: f.Pod, time: f.Time, count: f.Count,
		class: foldClass{f.RuleID, f.Category, f.Severity, f.Layer, f.Title, f.Fault, f.Retry, f.Container, f.Node,
			f.Explanation, f.Remediation},
		proc: process{pod: f.Pod, container: f.Container, rank: -1}}
	if f.Rank >= 0 {
		v.proc.rank, v.ranked = f.Rank, true
	}
	return v
}

// findingFold is what folding the findings did, for the entries of the timeline made after:
// the finding each folded finding's id now names, and the folded findings by id.
type findingFold struct {
	target func(id string) string
	byID   map[string]*Finding
}

// foldFindings folds the findings of each class seen on more than FoldOver processes into one
// (see FoldOver), and the timeline's entries of them. The root cause is never folded: it keeps
// its own finding and evidence. A finding that follows from a folded one follows from the
// folded finding, so the symptoms of symptoms fold too; the timeline keeps one entry for a
// folded finding and the Flight Recorder's problems name it. Evidence of the findings left
// out is dropped here, before the report is masked, so it is never read back nor redacted
// (Build folds the analysis's findings before it makes the report's, and converts evidence
// only for the findings kept). It returns what it folded, nil when nothing was, for the
// timeline entries still to come.
func (r *Report) foldFindings() *findingFold {
	rootID := ""
	if r.RootCause != nil {
		rootID = r.RootCause.ID
	}
	kept, folds, target := foldRounds(r.Findings, rootID, viewOf)
	clear(r.Findings[len(kept):]) // the folded findings are garbage from here
	r.Findings = kept
	if len(folds) == 0 {
		return nil
	}
	return applyFolds(r, target, func(f *Finding) *fold[*Finding] { return folds[f] }, viewOf,
		func(f *Finding) []Evidence { return f.Evidence })
}

// foldRounds folds fs, seen through view, in rounds until no class folds: the findings kept
// (fs's own array, in order), the folds by the finding each one's is (its first), and the
// id a folded finding's id now names.
func foldRounds[F comparable](fs []F, rootID string, view func(F) foldView) ([]F, map[F]*fold[F], func(string) string) {
	alias := newAliases(len(fs)) // folded finding id -> the id of the finding it was folded into
	n := len(fs)                 // the findings left: the bound of an alias chain
	target := func(id string) string {
		for i := 0; i < n && alias.of(id) != ""; i++ {
			id = alias.of(id)
		}
		return id
	}
	folds := map[F]*fold[F]{}
	// A finding's class is its foldClass, numbered once (they are few: a rule's title on a
	// container), and the finding it follows from, which folding changes, numbered each
	// round. Before the first fold nearly every finding may be a class of its own (each
	// container's exit code follows from its pod's first at 200,000 containers), so the map
	// of classes is keyed by the two numbers, not by a copy of the finding's strings nor by
	// the id it follows from (a third of the size, 175,002 keys at 200,000 containers).
	kinds := map[foldClass]int32{}
	type classKey struct{ kind, follows int32 }
	var keys []procKey // scratch of fold.count, one for every class
	for {
		// The findings by class, in the order of each class's first finding: a class's
		// members are one run of the one array (a class of one, the most, costs no slice).
		class := make([]int32, len(fs))
		index := map[classKey]int32{}
		follows := map[string]int32{}
		var counts []int32
		for i, f := range fs {
			v := view(f)
			if v.id == rootID {
				class[i] = -1
				continue
			}
			kind, ok := kinds[v.class]
			if !ok {
				kind = int32(len(kinds))
				kinds[v.class] = kind
			}
			to := target(v.secondaryOf)
			fo, ok := follows[to]
			if !ok {
				fo = int32(len(follows))
				follows[to] = fo
			}
			k := classKey{kind, fo}
			c, ok := index[k]
			if !ok {
				c = int32(len(counts))
				index[k] = c
				counts = append(counts, 0)
			}
			class[i] = c
			counts[c]++
		}
		start := make([]int, len(counts)+1)
		for c, n := range counts {
			start[c+1] = start[c] + int(n)
		}
		members, next := make([]F, start[len(counts)]), slices.Clone(start[:len(counts)])
		for i, f := range fs {
			if c := class[i]; c >= 0 {
				members[next[c]] = f
				next[c]++
			}
		}
		merged := false
		for c := range counts {
			ms := members[start[c]:start[c+1]]
			if len(ms) < 2 || foldedSize(ms, folds) <= FoldOver {
				// Its findings, with those folded into them, are on FoldOver processes at
				// most: the class does not fold, and makes no sets (at 200,000 containers,
				// 25,000 classes of a pod's other containers' exit codes, each round).
				continue
			}
			acc := &fold[F]{members: make([]F, 0, foldedSize(ms, folds))}
			for _, f := range ms {
				acc.add(f, folds[f])
			}
			if keys = acc.count(view, keys); acc.processes <= FoldOver {
				continue
			}
			lead := ms[0]
			leadID := view(lead).id
			for _, f := range ms[1:] {
				alias.set(view(f).id, leadID)
			}
			folds[lead] = acc
			merged = true
		}
		if !merged {
			break
		}
		kept := fs[:0]
		for _, f := range fs {
			if alias.of(view(f).id) == "" {
				kept = append(kept, f)
			}
		}
		var zero F
		for i := len(kept); i < len(fs); i++ {
			fs[i] = zero
		}
		fs = kept
		n = len(fs)
	}
	return fs, folds, target
}

// aliases maps a folded finding's id to the id of the finding it was folded into. An id the
// analysis gave ("f" and the finding's number, from 1) up to the number of findings is a
// place in a slice; another id, a key of a map. Nearly every finding is folded at 200,000
// containers: a map of their ids was 10.6 MB, the slice is 3.2.
type aliases struct {
	byNum []string
	other map[string]string
}

func newAliases(n int) *aliases {
	return &aliases{byNum: make([]string, n+1), other: map[string]string{}}
}

// num is the number of an id "f<n>" with n from 1 to len(byNum)-1, or 0.
func (a *aliases) num(id string) int {
	if len(id) < 2 || len(id) > 10 || id[0] != 'f' || id[1] == '0' {
		return 0
	}
	n := 0
	for _, c := range []byte(id[1:]) {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	if n >= len(a.byNum) {
		return 0
	}
	return n
}

func (a *aliases) of(id string) string {
	if n := a.num(id); n > 0 {
		return a.byNum[n]
	}
	return a.other[id]
}

func (a *aliases) set(id, to string) {
	if n := a.num(id); n > 0 {
		a.byNum[n] = to
	} else {
		a.other[id] = to
	}
}

// foldedSize is how many findings ms stands for: each one, or the members of the fold it
// leads.
func foldedSize[F comparable](ms []F, folds map[F]*fold[F]) int {
	n := 0
	for _, f := range ms {
		if prev := folds[f]; prev != nil {
			n += len(prev.members)
		} else {
			n++
		}
	}
	return n
}

// applyFolds makes each kept finding that a fold is of (foldOf) the folded finding, points
// every kept finding at the finding its own now is, and folds the timeline's entries and
// names the folded findings in the Flight Recorder's problems. evidence is the evidence of
// a finding that becomes a folded one's sample.
func applyFolds[F comparable](r *Report, target func(string) string, foldOf func(*Finding) *fold[F], view func(F) foldView, evidence func(F) []Evidence) *findingFold {
	var rootPod string
	if r.RootCause != nil {
		rootPod = r.RootCause.Pod
	}
	ff := &findingFold{target: target, byID: map[string]*Finding{}}
	for _, f := range r.Findings {
		if f.SecondaryOf != "" {
			f.SecondaryOf = target(f.SecondaryOf)
		}
		if acc := foldOf(f); acc != nil {
			acc.apply(f, rootPod, view, evidence)
			ff.byID[f.ID] = f
		}
	}
	r.Findings = slices.Clip(r.Findings)
	if len(r.Timeline) > 0 {
		tf := timelineFolder{findings: ff}
		for _, e := range r.Timeline {
			tf.add(e)
		}
		r.Timeline = tf.entries()
	}
	if fr := r.FlightRecorder; fr != nil {
		for i := range fr.Problems {
			if id := fr.Problems[i].FindingID; id != "" {
				fr.Problems[i].FindingID = target(id)
			}
		}
	}
	return ff
}

// add adds f (itself a folded finding when prev is set) to the fold's members.
func (a *fold[F]) add(f F, prev *fold[F]) {
	if prev != nil {
		a.members = append(a.members, prev.members...)
		return
	}
	a.members = append(a.members, f)
}

// procKey is a member's process and its place among the members (fold.count).
type procKey struct {
	pod, container string
	rank           int
	at             int
}

const (
	firstProc = 1 << iota // the member is its process's first
	firstPod              // the member is its pod's first
)

// count sets the fold's processes, and its ranks and pods as each is first seen in the order
// of the members, by sorting the members' processes (keys is scratch, returned for the next
// fold): no set of every process and pod, which a fold of 200,000 containers' exit codes made
// again in every round.
func (a *fold[F]) count(view func(F) foldView, keys []procKey) []procKey {
	keys = keys[:0]
	for i, m := range a.members {
		v := view(m)
		keys = append(keys, procKey{v.proc.pod, v.proc.container, v.proc.rank, i})
	}
	slices.SortFunc(keys, func(x, y procKey) int {
		return cmp.Or(strings.Compare(x.pod, y.pod), strings.Compare(x.container, y.container), cmp.Compare(x.rank, y.rank), cmp.Compare(x.at, y.at))
	})
	// A process's keys are one run, its first member first; a pod's, one run of its
	// processes' runs, its first member the least place in it.
	byAt := make([]uint8, len(keys))
	podAt := 0 // the least place of the current pod's members
	for i := range keys {
		k := &keys[i]
		newPod := i == 0 || k.pod != keys[i-1].pod
		if newPod || k.container != keys[i-1].container || k.rank != keys[i-1].rank {
			byAt[k.at] |= firstProc
		}
		switch {
		case k.pod == "":
		case newPod:
			podAt = k.at
			byAt[podAt] |= firstPod
		case k.at < podAt:
			byAt[podAt] &^= firstPod
			podAt = k.at
			byAt[podAt] |= firstPod
		}
	}
	pods := 0
	for _, b := range byAt {
		if b&firstPod != 0 {
			pods++
		}
	}
	a.pods = make([]string, 0, pods)
	for i, m := range a.members {
		b := byAt[i]
		if b == 0 {
			continue
		}
		v := view(m)
		if b&firstProc != 0 {
			a.processes++
			if v.ranked {
				a.ranks = append(a.ranks, v.proc.rank)
			}
		}
		if b&firstPod != 0 {
			a.pods = append(a.pods, v.pod)
		}
	}
	return keys
}

// apply makes f, the report's finding of the first of the fold's members, the folded finding.
func (a *fold[F]) apply(f *Finding, rootPod string, view func(F) foldView, evidence func(F) []Evidence) {
	// f is one of the members: what it says of itself is read before it is overwritten.
	spots := make([]Spot, len(a.members))
	for i, m := range a.members {
		v := view(m)
		spots[i] = Spot{Pod: v.pod, Time: v.time, Count: v.count}
	}
	order := make([]int, len(spots))
	for i := range order {
		order[i] = i
	}
	// Dated members by time, then the undated; the order of ids breaks ties.
	sort.SliceStable(order, func(i, j int) bool { return timeLess(spots[order[i]].Time, spots[order[j]].Time) })
	samples := []int{order[0]}
	if rootPod != "" {
		for _, m := range order[1 : len(order)-1] {
			if spots[m].Pod == rootPod {
				samples = append(samples, m)
				break
			}
		}
	}
	if last := order[len(order)-1]; last != order[0] && len(samples) < MaxSamples {
		samples = append(samples, last)
	}
	count := 0
	for _, sp := range spots {
		count += sp.Count
	}
	var evs []Evidence
	for _, s := range samples {
		evs = append(evs, evidence(a.members[s])...)
	}
	f.Evidence = evs
	f.Count = count
	f.Folded = len(spots)
	f.Processes = a.processes
	f.PodCount = len(a.pods)
	f.Pods = slices.Clone(a.pods[:min(len(a.pods), MaxFoldPods)])
	if len(a.ranks) > 0 {
		f.Ranks = Ranges(a.ranks, 0)
	}
	f.Pod, f.Rank, f.Spots = "", nil, spots
	// In time order, the undated last: the first and the last dated are the bounds.
	var first, last *time.Time
	for _, i := range order {
		if t := spots[i].Time; t != nil {
			first = cmp.Or(first, t)
			last = t
		}
	}
	f.Time, f.FirstTime, f.LastTime = first, first, last
}

// Spot is where and when one finding of a folded one was seen: the picture of the ranks
// still marks each pod.
type Spot struct {
	Pod   string
	Time  *time.Time
	Count int
}

// unfolded lists the findings with each folded finding made one per pod it was seen on (its
// spots), for the picture of the ranks, which marks every pod.
func unfolded(fs []*Finding) []*Finding {
	out := make([]*Finding, 0, len(fs))
	for _, f := range fs {
		if len(f.Spots) == 0 {
			out = append(out, f)
			continue
		}
		for _, sp := range f.Spots {
			g := *f
			g.Pod, g.Time, g.Count, g.Spots = sp.Pod, sp.Time, sp.Count, nil
			out = append(out, &g)
		}
	}
	return out
}

// Spread says how many processes a folded finding is on: "16,383 ranks", "40 pods" or "12
// processes"; "" for a finding of one process.
func (f *Finding) Spread() string {
	switch {
	case f.Folded == 0:
		return ""
	case f.Ranks != "" && countRanks(f.Ranks) == f.Processes:
		return Commas(f.Processes) + " ranks"
	case f.PodCount == f.Processes:
		return Commas(f.Processes) + " pods"
	}
	return Commas(f.Processes) + " processes"
}

// countRanks counts the ranks of a range list ("0-1,3-16383": 16,383); -1 when it is not one.
func countRanks(s string) int {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return -1
		}
		b := a
		if ok {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return -1
			}
		}
		n += b - a + 1
	}
	return n
}

// FoldedWhere says where a folded finding is: "16,383 ranks: 0-1,3-16383", or its pods
// ("40 pods: train-worker-[0-39]", bounded, with how many more).
func FoldedWhere(f *Finding) string {
	s := f.Spread()
	if f.Ranks != "" && strings.HasSuffix(s, " ranks") {
		return s + ": " + f.Ranks
	}
	list := uniq(f.PodNames())
	pods := NameList(list, capNames)
	if more := f.PodCount - len(list); more > 0 {
		pods += " and " + Commas(more) + " more pods"
	}
	return s + " (" + pods + ")"
}

// PodNames are the pods a finding is about: its pod, or a folded finding's (all of them when
// it was folded in this process, else those the report names).
func (f *Finding) PodNames() []string {
	switch {
	case f.Pod != "":
		return []string{f.Pod}
	case len(f.Spots) > 0:
		var out []string
		for _, sp := range f.Spots {
			if sp.Pod != "" {
				out = append(out, sp.Pod)
			}
		}
		return out
	}
	return f.Pods
}

// uniq keeps the first of each name, in order.
func uniq(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// AddContext calls read on each evidence of the root cause and the findings, once the
// report's findings are folded (see FoldOver): the front end that reads the lines around
// evidence back reads only those of the evidence kept. An error is a warning naming the file.
func (r *Report) AddContext(read func(e *Evidence) error) {
	one := func(f *Finding) {
		for i := range f.Evidence {
			if err := read(&f.Evidence[i]); err != nil {
				r.Warnings = append(r.Warnings, f.Evidence[i].File+": context lines: "+err.Error())
			}
		}
	}
	if r.RootCause != nil {
		one(&r.RootCause.Finding)
	}
	for _, f := range r.Findings {
		one(f)
	}
}
