package report

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// PodGroup is the pods of one role that look alike, folded (format version 3): on a job of
// thousands of ranks most pods share their state, their logs' shape and their life on the
// timeline, and a row per pod only buries the few that differ. A role folds pods only when more
// than FoldOver of them share a state; the pods that differ stay in Replica.Pods one by one: the
// root cause's pod, the first to fail, the pods with findings of their own (not folded), and any
// pod whose state (phase, how it ended, restarts) FoldOver or fewer pods share, which is how a
// restarted pod, one still running among failed ones or one that stopped early shows.
type PodGroup struct {
	// ID names the group in the timeline and the logs' groups: "<role>/<n>", n from 1.
	ID       string `json:"id"`
	Phase    string `json:"phase"`
	Ended    string `json:"ended,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Restarts int    `json:"restarts"`
	// Count is the exact number of pods in the group.
	Count int `json:"count"`
	// Ranks are the pods' ranks as ranges ("1-36,38-1023"), when their logs show them.
	Ranks string `json:"ranks,omitempty"`
	// Pods names at most MaxFoldPods of them, the first in the role's order.
	Pods []string `json:"pods"`
	// Nodes is how many nodes they ran on.
	Nodes int `json:"nodes"`
	// The bounds of their lives: the first created, the first and last started and finished.
	FirstCreated  *time.Time `json:"firstCreated,omitempty"`
	FirstStarted  *time.Time `json:"firstStarted,omitempty"`
	LastStarted   *time.Time `json:"lastStarted,omitempty"`
	FirstFinished *time.Time `json:"firstFinished,omitempty"`
	LastFinished  *time.Time `json:"lastFinished,omitempty"`

	// names are all the group's pods and ranks their ranks (when every pod has one), for the
	// picture; members the pods themselves, for the fleet store. None is in the JSON.
	names   []string
	ranks   []int
	members []Pod
}

// Members are the group's pods one by one, as Build saw them; nil for a group read from JSON.
func (g *PodGroup) Members() []Pod { return g.members }

// LogGroup is the logs of one container of a pod group's pods (format version 3), summed.
type LogGroup struct {
	Group     string     `json:"group"`
	Container string     `json:"container"`
	Previous  bool       `json:"previous,omitempty"`
	Count     int        `json:"count"`
	Bytes     int64      `json:"bytes"`
	Lines     int        `json:"lines"`
	First     *time.Time `json:"first,omitempty"`
	Last      *time.Time `json:"last,omitempty"`
	Truncated int        `json:"truncated,omitempty"`
	Findings  int        `json:"findings"`
}

// podState is what pods of one group share.
func podState(p Pod) string {
	code := ""
	if p.ExitCode != nil {
		code = strconv.Itoa(*p.ExitCode)
	}
	return strings.Join([]string{p.Phase, p.Ended, code, strconv.Itoa(p.Restarts)}, "\x00")
}

// podGroups is which group each grouped pod is in, and the pod's node.
type podGroups struct {
	groupOf map[string]*PodGroup
	nodeOf  map[string]string
}

// foldPods folds each role's pods that look alike into groups (see PodGroup), then the
// timeline's entries and the logs of the grouped pods, and says whether it folded any. A job of
// FoldOver pods or fewer a role, or whose pods all differ, is left as it was.
func (r *Report) foldPods() bool {
	pg := r.groupPods()
	if pg == nil {
		return false
	}
	if len(r.Timeline) > 0 {
		tf := timelineFolder{pods: pg}
		for _, e := range r.Timeline {
			tf.add(e)
		}
		r.Timeline = tf.entries()
	}
	if len(r.Logs) > 0 {
		lf := logFolder{pods: pg}
		for _, l := range r.Logs {
			lf.add(l)
		}
		r.Logs, r.LogGroups = lf.logs(), lf.groups
	}
	return true
}

// groupPods folds each role's pods that look alike into groups (see PodGroup); nil when it
// folded none. The timeline's entries and the logs of the grouped pods are folded as they
// are made (timelineFolder, logFolder): the report never holds one of each for every pod.
func (r *Report) groupPods() *podGroups {
	keep := map[string]bool{}
	if r.RootCause != nil && r.RootCause.Pod != "" {
		keep[r.RootCause.Pod] = true
	}
	for _, f := range r.Findings {
		if f.Pod != "" && f.Folded == 0 {
			keep[f.Pod] = true
		}
	}
	var firstFailed *Pod
	for _, rep := range r.Job.Replicas {
		for i, p := range rep.Pods {
			if p.Phase == "Failed" && p.Finished != nil && (firstFailed == nil || p.Finished.Before(*firstFailed.Finished)) {
				firstFailed = &rep.Pods[i]
			}
		}
	}
	if firstFailed != nil {
		keep[firstFailed.Name] = true
	}
	pg := &podGroups{groupOf: map[string]*PodGroup{}, nodeOf: map[string]string{}}
	for ri := range r.Job.Replicas {
		rep := &r.Job.Replicas[ri]
		if len(rep.Pods) <= FoldOver {
			continue
		}
		byState := map[string][]int{}
		var states []string
		for i, p := range rep.Pods {
			if keep[p.Name] {
				continue
			}
			k := podState(p)
			if _, ok := byState[k]; !ok {
				states = append(states, k)
			}
			byState[k] = append(byState[k], i)
		}
		grouped, nGrouped := make([]bool, len(rep.Pods)), 0
		for _, k := range states {
			idx := byState[k]
			if len(idx) <= FoldOver {
				continue
			}
			g := groupOfPods(rep.Pods, idx)
			g.ID = rep.Role + "/" + strconv.Itoa(len(rep.Groups)+1)
			nGrouped += len(idx)
			for _, i := range idx {
				grouped[i] = true
				pg.groupOf[rep.Pods[i].Name] = g
				pg.nodeOf[rep.Pods[i].Name] = rep.Pods[i].Node
			}
			rep.Groups = append(rep.Groups, g)
		}
		if len(rep.Groups) == 0 {
			continue
		}
		kept := make([]Pod, 0, len(rep.Pods)-nGrouped)
		for i, p := range rep.Pods {
			if !grouped[i] {
				kept = append(kept, p)
			}
		}
		rep.Pods = kept
	}
	if len(pg.groupOf) == 0 {
		return nil
	}
	return pg
}

// groupOfPods summarises the pods at idx, which share their state.
func groupOfPods(pods []Pod, idx []int) *PodGroup {
	p0 := pods[idx[0]]
	g := &PodGroup{Phase: p0.Phase, Ended: p0.Ended, ExitCode: p0.ExitCode, Restarts: p0.Restarts, Count: len(idx),
		names: make([]string, 0, len(idx)), members: make([]Pod, 0, len(idx))}
	nodes := map[string]bool{}
	ranks := make([]int, 0, len(idx))
	for _, i := range idx {
		p := pods[i]
		g.names = append(g.names, p.Name)
		g.members = append(g.members, p)
		if p.Node != "" {
			nodes[p.Node] = true
		}
		if p.Rank != nil {
			ranks = append(ranks, *p.Rank)
		}
		g.FirstCreated = earlier(g.FirstCreated, p.Created)
		g.FirstStarted = earlier(g.FirstStarted, p.Started)
		g.LastStarted = later(g.LastStarted, p.Started)
		g.FirstFinished = earlier(g.FirstFinished, p.Finished)
		g.LastFinished = later(g.LastFinished, p.Finished)
	}
	g.Nodes = len(nodes)
	if len(ranks) == len(idx) {
		g.ranks = ranks
	}
	if len(ranks) > 0 {
		g.Ranks = Ranges(ranks, 0)
	}
	n := min(len(g.names), MaxFoldPods)
	g.Pods = g.names[:n:n]
	return g
}

func earlier(a, b *time.Time) *time.Time {
	if b != nil && (a == nil || b.Before(*a)) {
		return b
	}
	return a
}

func later(a, b *time.Time) *time.Time {
	if b != nil && (a == nil || b.After(*a)) {
		return b
	}
	return a
}

// timelineFolder folds the timeline's entries as they are made, so that the report never
// holds one for every pod or rank of a large job: with findings set, a folded finding keeps
// one entry, its first, about no one pod (see foldFindings); with pods set, what a group's
// pods each had (created, scheduled, started, terminated) is one entry, the first, with the
// count and the last time, and a node's name in its text becomes how many nodes ("scheduled
// on 128 nodes").
type timelineFolder struct {
	findings *findingFold
	pods     *podGroups

	seen  map[string]bool
	byKey map[podEntryKey]*podEntry
	named []*podEntry // the entries whose text names how many nodes
	out   []TimelineEntry
}

// podEntryKey is what a group's pods' entries share; text leaves out the node of an entry
// whose text ends with it (node set).
type podEntryKey struct {
	group                 *PodGroup
	kind, container, text string
	node                  bool
}

// podEntry is a group's entry being folded: its place in the timeline, and the nodes its
// pods were on when its text named one.
type podEntry struct {
	at    int
	nodes map[string]bool
	text  string
}

func (t *timelineFolder) add(e TimelineEntry) {
	if ff := t.findings; ff != nil && e.FindingID != "" {
		id := ff.target(e.FindingID)
		if f := ff.byID[id]; f != nil {
			if t.seen == nil {
				t.seen = map[string]bool{}
			}
			if t.seen[id] {
				return
			}
			t.seen[id] = true
			e.FindingID, e.Pod = id, ""
			e.Text += " (" + f.Spread() + ")"
		}
	}
	var g *PodGroup
	if t.pods != nil && (e.Kind == "pod" || e.Kind == "container") {
		g = t.pods.groupOf[e.Pod]
	}
	if g == nil {
		t.out = append(t.out, e)
		return
	}
	k := podEntryKey{group: g, kind: e.Kind, container: e.Container, text: e.Text}
	node := t.pods.nodeOf[e.Pod]
	if node != "" && strings.HasSuffix(e.Text, node) && strings.HasSuffix(e.Text[:len(e.Text)-len(node)], " on ") {
		k.text, k.node = e.Text[:len(e.Text)-len(node)], true
	}
	if t.byKey == nil {
		t.byKey = map[podEntryKey]*podEntry{}
	}
	a := t.byKey[k]
	if a == nil {
		a = &podEntry{at: len(t.out)}
		if k.node {
			a.nodes, a.text = map[string]bool{}, k.text
			t.named = append(t.named, a)
		}
		t.byKey[k] = a
		e.Pod, e.Group, e.Count = "", g.ID, 0
		t.out = append(t.out, e)
	}
	if k.node {
		a.nodes[node] = true
	}
	ke := &t.out[a.at]
	ke.Count++
	if ke.Count > 1 && (ke.LastTime == nil || *ke.LastTime != e.Time) {
		// A time of its own only when it changes: the containers of a group's pods mostly
		// end at one time (600,000 entries at 200,000 containers).
		at := e.Time
		ke.LastTime = &at
	}
}

// entries is the folded timeline, never nil.
func (t *timelineFolder) entries() []TimelineEntry {
	for _, a := range t.named {
		t.out[a.at].Text = a.text + plural(len(a.nodes), "node", "nodes")
	}
	if t.out == nil {
		return []TimelineEntry{}
	}
	return slices.Clip(t.out)
}

// logFolder sums the logs of each group's pods by container (and previous or current) as
// they are made; the others are listed one by one.
type logFolder struct {
	pods   *podGroups
	byKey  map[logGroupKey]int
	groups []LogGroup
	kept   []LogSummary
}

type logGroupKey struct {
	group     *PodGroup
	container string
	previous  bool
}

func (lf *logFolder) add(l LogSummary) {
	var g *PodGroup
	if lf.pods != nil && l.NodeAgent == "" {
		g = lf.pods.groupOf[l.Pod]
	}
	if g == nil {
		lf.kept = append(lf.kept, l)
		return
	}
	k := logGroupKey{g, l.Container, l.Previous}
	i, ok := lf.byKey[k]
	if !ok {
		if lf.byKey == nil {
			lf.byKey = map[logGroupKey]int{}
		}
		i = len(lf.groups)
		lf.byKey[k] = i
		lf.groups = append(lf.groups, LogGroup{Group: g.ID, Container: l.Container, Previous: l.Previous})
	}
	lg := &lf.groups[i]
	lg.Count++
	lg.Bytes += l.Bytes
	lg.Lines += l.Lines
	lg.First = earlier(lg.First, l.First)
	lg.Last = later(lg.Last, l.Last)
	lg.Findings += l.Findings
	if l.Truncated {
		lg.Truncated++
	}
}

// logs are the logs listed one by one, never nil.
func (lf *logFolder) logs() []LogSummary {
	if lf.kept == nil {
		return []LogSummary{}
	}
	return slices.Clip(lf.kept)
}

// Location names a log group in the logs table: "1,023 logs: group Worker/1, pytorch".
func (g *LogGroup) Location() string {
	s := plural(g.Count, "log", "logs") + ": group " + g.Group + ", " + g.Container
	if g.Previous {
		s += " (previous)"
	}
	return s
}

// LogCount is how many logs were read: those listed one by one and those of the log groups.
func (r *Report) LogCount() int {
	n := len(r.Logs)
	for _, g := range r.LogGroups {
		n += g.Count
	}
	return n
}
