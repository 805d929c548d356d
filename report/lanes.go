package report

import (
	"sort"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/analyze"
)

// The swimlane picture of a job: one lane per pod, grouped by role, its life as bars
// (pending, running, ended) and its findings as marks, the job's conditions on a lane of
// their own, on one time axis. The HTML draws it as SVG, the terminal and Markdown as a few
// lines of text. Identical lanes fold into one ("1,016 ranks") when there are many.

// markKind says how a finding is drawn.
type markKind int

const (
	markSymptom markKind = iota
	markInfo
	markWarning
	markError
	markRoot
)

func (k markKind) class() string {
	return [...]string{"sym", "info", "warn", "err", "root"}[k]
}

// mark is one finding group's occurrences on a lane: at From, or From to To on a folded lane.
type mark struct {
	From, To time.Time
	Kind     markKind
	ID       string // the group's lead id, for links
	Title    string
	Category analyze.Category
	Count    int
}

// lane is one pod, or several identical pods folded.
type lane struct {
	Pods  []string
	Ranks []int
	// Created is the earliest creation, Started the earliest start; Ended..EndedTo the span
	// of their ends (zero while running or pending).
	Created, Started, Ended, EndedTo time.Time
	Phase                            string
	// How is how it ended ("Error, exit 1"), or its waiting reason.
	How      string
	Restarts int
	// LastRestart is when the previous container ended (a restart), for one pod.
	LastRestart time.Time
	Marks       []mark
	Root        bool
	// Stalled is when the lane's process stopped making progress, when the root cause is
	// that it stalled (zero otherwise): from then to its end it is drawn stalled, not running.
	Stalled time.Time
	// stallToEnd: a log lane whose log ends when it stalled is drawn stalled to the end.
	stallToEnd bool
	sig        string
	// extra is how many pods a pod group's lane stands for beyond the Pods it names (a group
	// read back from JSON names at most MaxFoldPods); rankText its ranks then.
	extra    int
	rankText string
	// group is the pod group's id for its lane: it never folds with the pods kept apart.
	group string
}

// Folded reports whether the lane stands for more than one pod.
func (l *lane) Folded() bool { return l.count() > 1 }

// count is how many pods the lane stands for.
func (l *lane) count() int { return len(l.Pods) + l.extra }

// roleLanes is the lanes of one role.
type roleLanes struct {
	Role  string
	Pods  int
	Lanes []*lane
}

// jobMark is a job condition or a finding about the job as a whole.
type jobMark struct {
	Time  time.Time
	Label string
	Kind  markKind
	// Cond is true for a condition ("Failed"), false for a finding.
	Cond bool
	ID   string
}

// swimlanes is the whole picture.
type swimlanes struct {
	From, To time.Time
	Roles    []*roleLanes
	Job      []jobMark
	// JobCreated is when the job was created (zero: unknown).
	JobCreated time.Time
	// Root is the root cause's time (zero when it has none), RootTitle what it was.
	Root      time.Time
	RootTitle string
	RootWhere string
	// Collected is when the bundle was collected (zero: unknown).
	Collected time.Time
	// Pending is true when a pod never started (its bar runs to the collection).
	Pending bool
	// Lanes and Shown count the pods and the lanes drawn.
	PodCount, Shown int
	// prefix is the job's name and "-", left out of lane labels.
	prefix string
	// Story is the report's Story, capitalised: the job lane's text.
	Story string
}

// foldPolicy says when identical lanes fold.
type foldPolicy struct {
	// minPods: fold only when there are more pods than this.
	minPods int
	// maxLanes bounds the lanes of a role after folding; the rest fold into "N other pods".
	maxLanes int
}

// buildLanes makes the picture, or nil when nothing in the report has a time.
func buildLanes(r *Report, groups []*Group, fp foldPolicy) *swimlanes {
	s := &swimlanes{Story: capitalize(r.Story())}
	if r.Bundle.CollectedAt != nil {
		s.Collected = *r.Bundle.CollectedAt
	}
	if r.Job.Name != "" {
		s.prefix = r.Job.Name + "-"
	}
	if r.Job.Created != nil {
		s.JobCreated = *r.Job.Created
	}
	// Each finding's mark kind and group.
	type fmark struct {
		g    *Group
		kind markKind
	}
	marks := map[string]fmark{}
	for _, g := range groups {
		kind := markKindOf(g.Lead(), g.Root)
		for _, f := range g.Findings {
			k := kind
			if g.Root && f.ID != g.ID() {
				k = markError
			}
			marks[f.ID] = fmark{g, k}
		}
		for _, sg := range g.Symptoms {
			for _, f := range sg.Findings {
				marks[f.ID] = fmark{sg, markSymptom}
			}
		}
	}
	if rc := r.RootCause; rc != nil && rc.Time != nil {
		s.Root, s.RootTitle, s.RootWhere = *rc.Time, rc.Title, rc.Pod
	}
	// The pods: those of the replicas, then pods that only have logs (plain logs).
	byPod := map[string]*lane{}
	for _, rep := range r.Job.Replicas {
		rl := &roleLanes{Role: rep.Role}
		for _, p := range rep.Pods {
			if byPod[p.Name] != nil {
				continue
			}
			l := podLane(p)
			byPod[p.Name] = l
			rl.Lanes = append(rl.Lanes, l)
		}
		for _, g := range rep.Groups {
			l := groupLane(g)
			for _, p := range l.Pods {
				byPod[p] = l
			}
			rl.Lanes = append(rl.Lanes, l)
		}
		if len(rl.Lanes) > 0 {
			s.Roles = append(s.Roles, rl)
		}
	}
	var logLanes *roleLanes
	for _, lg := range r.Logs {
		if byPod[lg.Pod] != nil || lg.First == nil || lg.NodeAgent != "" {
			continue
		}
		if logLanes == nil {
			logLanes = &roleLanes{Role: "Logs"}
			s.Roles = append(s.Roles, logLanes)
		}
		l := &lane{Pods: []string{lg.Pod}, Started: *lg.First, Phase: "log"}
		if lg.Last != nil {
			l.Ended = *lg.Last
		}
		byPod[lg.Pod] = l
		logLanes.Lanes = append(logLanes.Lanes, l)
	}
	if s.prefix == "" && logLanes != nil {
		s.prefix = commonPodPrefix(logLanes.Lanes)
	}
	// A pod that restarted shows only its last starts in its status: a log line or a Started
	// event proves an earlier one.
	for _, lg := range r.Logs {
		if l := byPod[lg.Pod]; l != nil && lg.First != nil && (l.Started.IsZero() || lg.First.Before(l.Started)) && l.Phase != "log" {
			l.Started = *lg.First
		}
	}
	for _, e := range r.Events {
		ref := e.ObjectRef
		if l := byPod[ref.Name]; ref.Kind == "Pod" && ref.Namespace == r.Job.Namespace && l != nil && e.Reason == "Started" && e.Time != nil && (l.Started.IsZero() || e.Time.Before(l.Started)) {
			l.Started = *e.Time
		}
	}
	for _, f := range unfolded(r.Findings) {
		fm, ok := marks[f.ID]
		if !ok {
			continue
		}
		at := f.Time
		if l := byPod[f.Pod]; at == nil && f.Pod != "" && l != nil && !l.Created.IsZero() && r.RootCause != nil && f.ID == r.RootCause.ID {
			// A root cause in the pod's spec has no time of its own: it is as old as the pod.
			at = &l.Created
		}
		if at == nil {
			continue
		}
		f := *f
		f.Time = at
		if l := byPod[f.Pod]; f.Pod != "" && l != nil {
			l.Marks = append(l.Marks, mark{From: *f.Time, To: *f.Time, Kind: fm.kind, ID: fm.g.ID(), Title: f.Title, Category: f.Category, Count: f.Count})
			if r.RootCause != nil && f.ID == r.RootCause.ID {
				l.Root = true
				if stalls(f.Category) {
					l.Stalled = *f.Time
					// A log alone does not say when its process ended: it was stalled, not
					// gone, while the others waited for it (to the picture's end).
					l.stallToEnd = l.Phase == "log" && !l.Ended.After(l.Stalled)
				}
			}
			continue
		}
		if f.Pod == "" {
			s.Job = append(s.Job, jobMark{Time: *f.Time, Label: f.Title, Kind: fm.kind, ID: fm.g.ID()})
		}
	}
	for _, c := range r.Job.Conditions {
		if c.Time != nil && c.Status == "True" {
			k := markInfo
			switch {
			case c.Type == "Failed":
				k = markError
			case isSucceeded(c.Type):
				k = markSymptom
			}
			s.Job = append(s.Job, jobMark{Time: *c.Time, Label: c.Type, Kind: k, Cond: true})
		}
	}
	sort.SliceStable(s.Job, func(i, j int) bool { return s.Job[i].Time.Before(s.Job[j].Time) })
	// The time range.
	var ts []time.Time
	add := func(t time.Time) {
		if !t.IsZero() {
			ts = append(ts, t)
		}
	}
	add(s.JobCreated)
	for _, m := range s.Job {
		add(m.Time)
	}
	running := false
	for _, rl := range s.Roles {
		for _, l := range rl.Lanes {
			rl.Pods += l.count()
		}
		s.PodCount += rl.Pods
		for _, l := range rl.Lanes {
			add(l.Created)
			add(l.Started)
			add(l.Ended)
			add(l.LastRestart)
			for _, m := range l.Marks {
				add(m.From)
			}
			if l.Ended.IsZero() && (!l.Created.IsZero() || !l.Started.IsZero()) {
				running = true
				if l.Started.IsZero() {
					s.Pending = true
				}
			}
		}
	}
	if len(ts) == 0 {
		return nil
	}
	if running {
		add(s.Collected)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	s.From, s.To = ts[0], ts[len(ts)-1]
	for _, rl := range s.Roles {
		for _, l := range rl.Lanes {
			if l.stallToEnd {
				l.Ended = s.To
			}
			if end := l.Ended; !l.Stalled.IsZero() && (l.Started.IsZero() || l.Stalled.Before(l.Started) || !end.IsZero() && !l.Stalled.Before(end)) {
				l.Stalled = time.Time{} // nothing left to draw stalled
			}
			sortMarks(l.Marks)
			l.sig = laneSig(l)
		}
		if s.PodCount > fp.minPods {
			rl.Lanes = foldLanes(rl.Lanes, fp.maxLanes)
		}
		s.Shown += len(rl.Lanes)
	}
	return s
}

// stalls says whether a root cause of the category means its process stopped making
// progress at the root's time while it still ran (a hang, the rank a collective waited
// for): its lane is drawn stalled from then.
func stalls(c analyze.Category) bool {
	return c == analyze.CategoryHang || c == analyze.CategoryCollectiveTimeout
}

// anyStalled says whether a lane is drawn stalled (the legend says so only then).
func (s *swimlanes) anyStalled() bool {
	for _, rl := range s.Roles {
		for _, l := range rl.Lanes {
			if !l.Stalled.IsZero() {
				return true
			}
		}
	}
	return false
}

func markKindOf(f *Finding, root bool) markKind {
	switch {
	case root:
		return markRoot
	case f.Severity >= analyze.SeverityError:
		return markError
	case f.Severity == analyze.SeverityWarning:
		return markWarning
	}
	return markInfo
}

func podLane(p Pod) *lane {
	l := &lane{Pods: []string{p.Name}, Phase: p.Phase, How: p.Ended, Restarts: p.Restarts}
	if p.Rank != nil {
		l.Ranks = []int{*p.Rank}
	}
	if p.Created != nil {
		l.Created = *p.Created
	}
	if p.Started != nil {
		l.Started = *p.Started
	}
	if p.Finished != nil {
		l.Ended, l.EndedTo = *p.Finished, *p.Finished
	}
	if p.LastRestart != nil {
		l.LastRestart = *p.LastRestart
	}
	return l
}

// groupLane is the lane of a pod group: its pods' lives from the first start to the span of
// their ends.
func groupLane(g *PodGroup) *lane {
	l := podLane(Pod{Phase: g.Phase, Ended: g.Ended, Restarts: g.Restarts, Created: g.FirstCreated, Started: g.FirstStarted, Finished: g.FirstFinished})
	l.Ranks = nil
	if g.names != nil {
		l.Pods, l.Ranks = g.names, g.ranks
	} else {
		l.Pods, l.extra, l.rankText = append([]string{}, g.Pods...), g.Count-len(g.Pods), g.Ranks
	}
	if g.LastFinished != nil {
		l.EndedTo = *g.LastFinished
	}
	l.group = g.ID
	return l
}

func sortMarks(ms []mark) {
	sort.SliceStable(ms, func(i, j int) bool {
		if !ms[i].From.Equal(ms[j].From) {
			return ms[i].From.Before(ms[j].From)
		}
		return ms[i].Kind < ms[j].Kind
	})
}

// laneSig is what identical lanes share: role-independent state, how they ended, and which
// findings they have (not when: folded lanes show the span of times).
func laneSig(l *lane) string {
	var b strings.Builder
	b.WriteString(l.Phase + "\x00" + l.How)
	if l.group != "" {
		b.WriteString("\x00group " + l.group)
	}
	if l.Restarts > 0 {
		b.WriteString("\x00restarted")
	}
	if l.Started.IsZero() {
		b.WriteString("\x00never started")
	}
	if l.Ended.IsZero() {
		b.WriteString("\x00not ended")
	}
	seen := map[string]bool{}
	var ids []string
	for _, m := range l.Marks {
		k := m.ID + "/" + m.Kind.class()
		if !seen[k] {
			seen[k] = true
			ids = append(ids, k)
		}
	}
	sort.Strings(ids)
	b.WriteString("\x00" + strings.Join(ids, ","))
	return b.String()
}

// foldLanes folds lanes of the same signature into one, at the place of the first; the root
// cause's lane stays alone. When more than max lanes remain, the last ones fold into one.
func foldLanes(ls []*lane, max int) []*lane {
	var out []*lane
	bySig := map[string]*lane{}
	for _, l := range ls {
		if l.Root {
			out = append(out, l)
			continue
		}
		f, ok := bySig[l.sig]
		if !ok {
			c := *l
			c.Pods = append([]string{}, l.Pods...)
			c.Ranks = append([]int{}, l.Ranks...)
			c.Marks = append([]mark{}, l.Marks...)
			bySig[l.sig] = &c
			out = append(out, &c)
			continue
		}
		mergeLane(f, l)
	}
	if max > 0 && len(out) > max {
		// Keep the root cause's lane and those with errors; fold the rest of the tail.
		keep := out[:max-1]
		rest := out[max-1:]
		sort.SliceStable(rest, func(i, j int) bool { return rest[i].Root && !rest[j].Root })
		if rest[0].Root {
			keep = append(keep, rest[0])
			rest = rest[1:]
		}
		other := *rest[0]
		other.Pods = append([]string{}, rest[0].Pods...)
		other.Ranks = append([]int{}, rest[0].Ranks...)
		other.Marks = append([]mark{}, rest[0].Marks...)
		other.sig = "\x00other"
		for _, l := range rest[1:] {
			mergeLane(&other, l)
		}
		out = append(keep, &other)
	}
	for _, l := range out {
		if l.Folded() {
			l.Marks = foldMarks(l.Marks)
		}
	}
	return out
}

// mergeLane adds lane l to the folded lane f.
func mergeLane(f, l *lane) {
	f.Pods = append(f.Pods, l.Pods...)
	f.extra += l.extra
	if f.rankText != "" || l.rankText != "" {
		f.rankText = strings.Trim(f.rankText+","+l.rankText, ",")
	}
	f.Ranks = append(f.Ranks, l.Ranks...)
	f.Created = earliest(f.Created, l.Created)
	f.Started = earliest(f.Started, l.Started)
	f.Ended = earliest(f.Ended, l.Ended)
	if l.EndedTo.After(f.EndedTo) {
		f.EndedTo = l.EndedTo
	}
	if l.Restarts > f.Restarts {
		f.Restarts = l.Restarts
	}
	if f.How != l.How {
		f.How = ""
	}
	f.Marks = append(f.Marks, l.Marks...)
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// foldMarks makes one mark per group from the marks of many pods: its time span and count.
func foldMarks(ms []mark) []mark {
	var out []mark
	idx := map[string]int{}
	for _, m := range ms {
		k := m.ID + "/" + m.Kind.class()
		i, ok := idx[k]
		if !ok {
			idx[k] = len(out)
			out = append(out, m)
			continue
		}
		o := &out[i]
		if m.From.Before(o.From) {
			o.From = m.From
		}
		if m.To.After(o.To) {
			o.To = m.To
		}
		o.Count += m.Count
	}
	sortMarks(out)
	return out
}

// label is the lane's name: the pod without the job's name, or "1,016 ranks".
func (s *swimlanes) label(l *lane) string {
	if l.Folded() {
		if len(l.Ranks) == len(l.Pods) && l.extra == 0 || l.rankText != "" {
			return Commas(l.count()) + " ranks"
		}
		return Commas(l.count()) + " pods"
	}
	return s.short(l.Pods[0])
}

// commonPodPrefix is what the pods of lanes made from logs alone share up to a dash
// ("llama-ft-" of llama-ft-master-0 and llama-ft-worker-1): the job's name, which plain logs
// do not say. "" for one lane.
func commonPodPrefix(ls []*lane) string {
	if len(ls) < 2 {
		return ""
	}
	prefix := ls[0].Pods[0]
	for _, l := range ls[1:] {
		p := l.Pods[0]
		n := 0
		for n < len(prefix) && n < len(p) && prefix[n] == p[n] {
			n++
		}
		prefix = prefix[:n]
	}
	if i := strings.LastIndexByte(prefix, '-'); i > 0 {
		return prefix[:i+1]
	}
	return ""
}

func (s *swimlanes) short(pod string) string {
	if s.prefix != "" && strings.HasPrefix(pod, s.prefix) && len(pod) > len(s.prefix) {
		return pod[len(s.prefix):]
	}
	return pod
}

// sublabel says which ranks or pods a lane holds: "rank 5", "ranks 0-4,6-7".
func (s *swimlanes) sublabel(l *lane) string {
	if !l.Folded() {
		if len(l.Ranks) == 1 {
			return "rank " + itoa(l.Ranks[0])
		}
		return ""
	}
	if l.rankText != "" {
		return "ranks " + l.rankText
	}
	if len(l.Ranks) == len(l.Pods) {
		return "ranks " + Ranges(l.Ranks, 4)
	}
	short := make([]string, len(l.Pods))
	for i, p := range l.Pods {
		short[i] = s.short(p)
	}
	return NameList(short, 2)
}

// telling is the mark that says what happened on a lane: the root cause, else the first
// specific error, else the first mark.
func telling(l *lane) *mark {
	var best *mark
	score := func(m *mark) int {
		switch {
		case m.Kind == markRoot:
			return 4
		case m.Category != analyze.CategoryUnknown && m.Category != analyze.CategoryUserCodeError && m.Kind >= markError:
			return 3
		case m.Category != analyze.CategoryUnknown && m.Kind == markSymptom:
			return 2
		}
		return 1
	}
	for i := range l.Marks {
		m := &l.Marks[i]
		if best == nil || score(m) > score(best) {
			best = m
		}
	}
	return best
}

// summary says in a few words what happened on a lane: "NCCL ALLREDUCE timed out at
// 10:12:11–10:12:13; Error, exit 1".
// The picture marks the root cause's lane itself; rootNote says it in words (the text chart).
func (s *swimlanes) summary(l *lane, rootNote bool) string {
	var parts []string
	if m := telling(l); m != nil {
		t := m.Title + " at " + span(m.From, m.To)
		if m.Kind == markRoot && rootNote {
			t = m.Title + " at " + clock(m.From) + " (root cause)"
			if strings.Contains(m.Title, clock(m.From)) {
				t = m.Title + " (root cause)" // the title says when already
			}
		}
		parts = append(parts, t)
	}
	switch {
	case l.Started.IsZero() && l.Ended.IsZero() && !l.Created.IsZero() && !s.Collected.IsZero():
		parts = append(parts, "pending for "+Duration(s.Collected.Sub(l.Created)))
	case l.How != "":
		parts = append(parts, l.How)
	case !l.Ended.IsZero() && l.Phase != "" && l.Phase != "log":
		parts = append(parts, l.Phase)
	}
	if l.Restarts > 0 {
		parts = append(parts, plural(l.Restarts, "restart", "restarts"))
	}
	if len(parts) == 0 && l.Phase != "" && l.Phase != "log" {
		parts = append(parts, l.Phase)
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return Commas(n) + " " + many
}

// instants are the times the picture shows, for the scale.
func (s *swimlanes) instants() []time.Time {
	var ts []time.Time
	add := func(t time.Time) {
		if !t.IsZero() && !t.Before(s.From) && !t.After(s.To) {
			ts = append(ts, t)
		}
	}
	add(s.From)
	add(s.To)
	add(s.JobCreated)
	for _, m := range s.Job {
		add(m.Time)
	}
	for _, rl := range s.Roles {
		for _, l := range rl.Lanes {
			add(l.Created)
			add(l.Started)
			add(l.Ended)
			add(l.EndedTo)
			add(l.LastRestart)
			for _, m := range l.Marks {
				add(m.From)
				add(m.To)
			}
		}
	}
	return ts
}

// cuttable says whether the stretch t0-t1 may be cut from the axis: not while a pod waits
// through it.
func (s *swimlanes) cuttable(t0, t1 time.Time) bool {
	for _, rl := range s.Roles {
		for _, l := range rl.Lanes {
			if !l.Created.IsZero() && !l.Created.After(t0) && (l.Started.IsZero() || !l.Started.Before(t1)) && (l.Ended.IsZero() || !l.Ended.Before(t1)) {
				return false
			}
		}
	}
	return true
}

// jobEnd is where the job's line ends: at its Failed or Succeeded condition, else at the end.
func (s *swimlanes) jobEnd(start time.Time) time.Time {
	for _, m := range s.Job {
		if m.Cond && (m.Label == "Failed" || isSucceeded(m.Label)) && m.Time.After(start) {
			return m.Time
		}
	}
	return s.To
}
