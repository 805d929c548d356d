package report

import (
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

// foldPods folds each role's pods that look alike into groups (see PodGroup), then the
// timeline's entries and the logs of the grouped pods, and says whether it folded any. A job of
// FoldOver pods or fewer a role, or whose pods all differ, is left as it was.
func (r *Report) foldPods() bool {
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
	groupOf := map[string]*PodGroup{}
	nodeOf := map[string]string{}
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
				groupOf[rep.Pods[i].Name] = g
				nodeOf[rep.Pods[i].Name] = rep.Pods[i].Node
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
	if len(groupOf) == 0 {
		return false
	}
	r.foldPodTimeline(groupOf, nodeOf)
	r.foldPodLogs(groupOf)
	return true
}

// groupOfPods summarises the pods at idx, which share their state.
func groupOfPods(pods []Pod, idx []int) *PodGroup {
	p0 := pods[idx[0]]
	g := &PodGroup{Phase: p0.Phase, Ended: p0.Ended, ExitCode: p0.ExitCode, Restarts: p0.Restarts, Count: len(idx)}
	nodes := map[string]bool{}
	var ranks []int
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

// foldPodTimeline keeps one entry for what a group's pods each had on the timeline (created,
// scheduled, started, terminated): the first, with the count and the last time. A node's name
// in the text becomes how many nodes ("scheduled on 128 nodes").
func (r *Report) foldPodTimeline(groupOf map[string]*PodGroup, nodeOf map[string]string) {
	type acc struct {
		at    int
		nodes map[string]bool
		node  bool
	}
	byKey := map[string]*acc{}
	kept := r.Timeline[:0]
	for _, e := range r.Timeline {
		g := groupOf[e.Pod]
		if g == nil || (e.Kind != "pod" && e.Kind != "container") {
			kept = append(kept, e)
			continue
		}
		text, node := e.Text, nodeOf[e.Pod]
		if node != "" && strings.HasSuffix(text, " on "+node) {
			text = strings.TrimSuffix(text, node) + "\x00"
		}
		k := g.ID + "\x00" + e.Kind + "\x00" + e.Container + "\x00" + text
		a := byKey[k]
		if a == nil {
			a = &acc{at: len(kept), nodes: map[string]bool{}, node: strings.HasSuffix(text, "\x00")}
			byKey[k] = a
			e.Pod, e.Group, e.Count = "", g.ID, 0
			kept = append(kept, e)
		}
		if a.node {
			a.nodes[node] = true
		}
		ke := &kept[a.at]
		ke.Count++
		if ke.Count > 1 {
			t := e.Time
			ke.LastTime = &t
		}
		if a.node {
			ke.Text = strings.TrimSuffix(text, "\x00") + plural(len(a.nodes), "node", "nodes")
		}
	}
	r.Timeline = kept
}

// foldPodLogs sums the logs of each group's pods by container (and previous or current).
func (r *Report) foldPodLogs(groupOf map[string]*PodGroup) {
	byKey := map[string]int{}
	var groups []LogGroup
	kept := r.Logs[:0]
	for _, l := range r.Logs {
		g := groupOf[l.Pod]
		if g == nil || l.NodeAgent != "" {
			kept = append(kept, l)
			continue
		}
		k := g.ID + "\x00" + l.Container + "\x00" + strconv.FormatBool(l.Previous)
		i, ok := byKey[k]
		if !ok {
			i = len(groups)
			byKey[k] = i
			groups = append(groups, LogGroup{Group: g.ID, Container: l.Container, Previous: l.Previous})
		}
		lg := &groups[i]
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
	r.Logs = kept
	r.LogGroups = groups
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
