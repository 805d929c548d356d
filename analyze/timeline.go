package analyze

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/parse"
)

// maxTimelineEvents bounds how many events the timeline shows; the events table has them all.
const maxTimelineEvents = 200

// TimelineEntry is one moment of the job's life: a lifecycle change, an event or a finding.
type TimelineEntry struct {
	Time time.Time
	// Kind is job, pod, container, event or finding.
	Kind           string
	Pod, Container string
	Text           string
	// Severity and FindingID are set for a finding.
	Severity  Severity
	FindingID string
}

// timelineKinds are the kinds of the timeline's entries, in the order of the entries of one
// moment: the job, pods, containers, events, findings.
var timelineKinds = [...]string{"job", "pod", "container", "event", "finding"}

// Kinds of a timelineItem: indexes of timelineKinds.
const (
	kindJob uint8 = iota
	kindPod
	kindContainer
	kindEvent
	kindFinding
)

// Timeline is the job's life in time order (by time, kind, pod and text): the job's, the
// pods' and the containers' lifecycle changes, events and findings. It is kept compact and
// All makes each entry whole as it is read: a timeline of 200,000 containers has 650,000
// entries, most of them a pod's or a container's, which are a time and three numbers here
// (a fifth of a TimelineEntry's size).
type Timeline struct {
	items []timelineItem
	// pods are the pods the items of pods and containers name; texts the texts of those
	// items, each once; others the job's and the events' entries; findings the findings.
	pods     []*corev1.Pod
	texts    []string
	others   []TimelineEntry
	findings []*Finding
}

// timelineItem is an entry of a Timeline: its time (its instant: a finding's own time is
// read from the finding) and kind; of a pod's or container's entry, the pod (Timeline.pods),
// the container's status (its index in the pod's container statuses, or -2-i in the init
// containers', -1 for none) and the text (Timeline.texts); of another entry, ref is its index
// in others or findings.
type timelineItem struct {
	sec            int64
	nsec           int32
	kind           uint8
	ref, container int32
	text           int32
}

// Len is how many entries the timeline has (none in a nil one).
func (t *Timeline) Len() int {
	if t == nil {
		return 0
	}
	return len(t.items)
}

// All yields the timeline's entries in order (none of a nil one).
func (t *Timeline) All() iter.Seq[TimelineEntry] {
	return func(yield func(TimelineEntry) bool) {
		for i := range t.Len() {
			if !yield(t.entry(&t.items[i])) {
				return
			}
		}
	}
}

func (t *Timeline) entry(it *timelineItem) TimelineEntry {
	switch it.kind {
	case kindPod, kindContainer:
		return TimelineEntry{Time: time.Unix(it.sec, int64(it.nsec)).UTC(), Kind: timelineKinds[it.kind],
			Pod: t.pods[it.ref].Name, Container: t.container(it), Text: t.texts[it.text]}
	case kindFinding:
		f := t.findings[it.ref]
		return TimelineEntry{Time: *f.Time, Kind: "finding", Pod: f.Pod, Container: f.Container, Text: f.Title,
			Severity: f.Severity, FindingID: f.ID}
	}
	return t.others[it.ref]
}

func (t *Timeline) container(it *timelineItem) string {
	st := &t.pods[it.ref].Status
	switch c := it.container; {
	case c >= 0:
		return st.ContainerStatuses[c].Name
	case c <= -2:
		return st.InitContainerStatuses[-2-c].Name
	}
	return ""
}

// pod and text are an item's pod and text as the entry has them, for ordering.
func (t *Timeline) pod(it *timelineItem) string {
	switch it.kind {
	case kindPod, kindContainer:
		return t.pods[it.ref].Name
	case kindFinding:
		return t.findings[it.ref].Pod
	}
	return t.others[it.ref].Pod
}

func (t *Timeline) text(it *timelineItem) string {
	switch it.kind {
	case kindPod, kindContainer:
		return t.texts[it.text]
	case kindFinding:
		return t.findings[it.ref].Title
	}
	return t.others[it.ref].Text
}

// cmp orders the timeline: by time, kind, pod and text. It is called some twenty times per
// entry on a timeline of 650,000 entries (200,000 containers): each key is compared only
// when the ones before it are equal.
func (t *Timeline) cmp(a, b timelineItem) int {
	if c := cmp.Compare(a.sec, b.sec); c != 0 {
		return c
	}
	if c := cmp.Compare(a.nsec, b.nsec); c != 0 {
		return c
	}
	if c := cmp.Compare(a.kind, b.kind); c != 0 {
		return c
	}
	if c := strings.Compare(t.pod(&a), t.pod(&b)); c != 0 {
		return c
	}
	return strings.Compare(t.text(&a), t.text(&b))
}

func itemAt(tm time.Time, kind uint8, ref int) timelineItem {
	return timelineItem{sec: tm.Unix(), nsec: int32(tm.Nanosecond()), kind: kind, ref: int32(ref), container: -1}
}

func (a *analyzer) timeline() {
	pods := a.jobPods()
	n := timelineSize(pods, a.findings) + maxTimelineEvents
	if j := a.m.Job; j != nil && j.Object != nil {
		n += 1 + len(j.Conditions)
	}
	tl := &Timeline{items: make([]timelineItem, 0, n), pods: pods, findings: a.findings}
	other := func(t time.Time, kind uint8, pod, text string) {
		if !t.IsZero() {
			tl.items = append(tl.items, itemAt(t, kind, len(tl.others)))
			tl.others = append(tl.others, TimelineEntry{Time: t.UTC(), Kind: timelineKinds[kind], Pod: pod, Text: text})
		}
	}
	// The texts of thousands of pods are mostly alike: each is numbered once.
	textOf := map[string]int32{}
	add := func(t time.Time, kind uint8, pod, container int, text string) {
		if t.IsZero() {
			return
		}
		k, ok := textOf[text]
		if !ok {
			k = int32(len(tl.texts))
			textOf[text] = k
			tl.texts = append(tl.texts, text)
		}
		it := itemAt(t, kind, pod)
		it.container, it.text = int32(container), k
		tl.items = append(tl.items, it)
	}
	if j := a.m.Job; j != nil && j.Object != nil {
		other(j.Created, kindJob, "", j.Kind+" created")
		for _, c := range j.Conditions {
			text := fmt.Sprintf("condition %s=%s", c.Type, c.Status)
			if c.Reason != "" {
				text += " (" + c.Reason + ")"
			}
			if c.Message != "" {
				text += ": " + truncateText(c.Message)
			}
			other(c.Time, kindJob, "", text)
		}
	}
	scheduled := map[string]string{}
	type ending struct {
		previous bool
		reason   string
		code     int32
	}
	terminated := map[ending]string{}
	for pi, p := range pods {
		add(p.CreationTimestamp.Time, kindPod, pi, -1, "pod created")
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				text, ok := scheduled[p.Spec.NodeName]
				if !ok {
					text = "scheduled on " + p.Spec.NodeName
					scheduled[p.Spec.NodeName] = text
				}
				add(c.LastTransitionTime.Time, kindPod, pi, -1, text)
			}
		}
		for si, all := range [2][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for ci := range all {
				cs := &all[ci]
				at := ci
				if si == 0 {
					at = -2 - ci
				}
				for i, st := range [2]*corev1.ContainerState{&cs.LastTerminationState, &cs.State} {
					prefix := ""
					if i == 0 {
						prefix = "previous "
					}
					if st.Running != nil {
						add(st.Running.StartedAt.Time, kindContainer, pi, at, prefix+"container started")
					}
					if te := st.Terminated; te != nil {
						add(te.StartedAt.Time, kindContainer, pi, at, prefix+"container started")
						k := ending{i == 0, te.Reason, te.ExitCode}
						text, ok := terminated[k]
						if !ok {
							text = fmt.Sprintf("%scontainer terminated: %s, exit code %d", prefix, te.Reason, te.ExitCode)
							terminated[k] = text
						}
						add(te.FinishedAt.Time, kindContainer, pi, at, text)
					}
				}
			}
		}
	}
	events := 0
	for i := range a.m.Events {
		e := &a.m.Events[i]
		if !a.eventOfJob(e) {
			continue
		}
		events++
		if events > maxTimelineEvents {
			continue
		}
		text := fmt.Sprintf("%s %s: %s", e.Type, e.Reason, truncateText(e.Message))
		if e.Count > 1 {
			text += fmt.Sprintf(" (x%d, last %s)", e.Count, parse.EventTime(e).UTC().Format(time.RFC3339))
		}
		pod := ""
		if e.InvolvedObject.Kind == "Pod" {
			pod = e.InvolvedObject.Name
		}
		other(parse.EventFirstTime(e), kindEvent, pod, text)
	}
	if events > maxTimelineEvents {
		a.warnf("the timeline shows the first %d of %d events; the events table has them all", maxTimelineEvents, events)
	}
	for i, f := range a.findings {
		if f.Time != nil {
			tl.items = append(tl.items, itemAt(*f.Time, kindFinding, i))
		}
	}
	slices.SortStableFunc(tl.items, tl.cmp)
	a.res.Timeline = tl
}

// timelineSize counts the timeline's entries of the pods and the findings, so that the
// timeline of thousands of pods is made in one allocation (the job's and the events' entries,
// a few hundred at most, are bounded apart: growing it once would copy it all).
func timelineSize(pods []*corev1.Pod, findings []*Finding) int {
	n := 0
	dated := func(t time.Time) {
		if !t.IsZero() {
			n++
		}
	}
	for _, p := range pods {
		dated(p.CreationTimestamp.Time)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				dated(c.LastTransitionTime.Time)
			}
		}
		for _, all := range [2][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for ci := range all {
				cs := &all[ci]
				for _, st := range [2]*corev1.ContainerState{&cs.LastTerminationState, &cs.State} {
					if st.Running != nil {
						dated(st.Running.StartedAt.Time)
					}
					if te := st.Terminated; te != nil {
						dated(te.StartedAt.Time)
						dated(te.FinishedAt.Time)
					}
				}
			}
		}
	}
	for _, f := range findings {
		if f.Time != nil {
			n++
		}
	}
	return n
}
