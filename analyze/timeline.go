package analyze

import (
	"cmp"
	"fmt"
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

// kindOrder orders entries of one moment: the job, pods, containers, events, findings.
func kindOrder(kind string) int {
	switch kind {
	case "pod":
		return 1
	case "container":
		return 2
	case "event":
		return 3
	case "finding":
		return 4
	}
	return 0
}

// timelineCmp orders the timeline: by time, kind, pod and text. It is called some twenty
// times per entry on a timeline of 600,000 entries (200,000 containers): each key is
// compared only when the ones before it are equal.
func timelineCmp(a, b TimelineEntry) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	if c := cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)); c != 0 {
		return c
	}
	if c := strings.Compare(a.Pod, b.Pod); c != 0 {
		return c
	}
	return strings.Compare(a.Text, b.Text)
}

func (a *analyzer) timeline() {
	pods := a.jobPods()
	n := timelineSize(pods, a.findings) + maxTimelineEvents
	if j := a.m.Job; j != nil && j.Object != nil {
		n += 1 + len(j.Conditions)
	}
	tl := make([]TimelineEntry, 0, n)
	add := func(t time.Time, kind, pod, container, text string) {
		if !t.IsZero() {
			tl = append(tl, TimelineEntry{Time: t.UTC(), Kind: kind, Pod: pod, Container: container, Text: text})
		}
	}
	if j := a.m.Job; j != nil && j.Object != nil {
		add(j.Created, "job", "", "", j.Kind+" created")
		for _, c := range j.Conditions {
			text := fmt.Sprintf("condition %s=%s", c.Type, c.Status)
			if c.Reason != "" {
				text += " (" + c.Reason + ")"
			}
			if c.Message != "" {
				text += ": " + truncateText(c.Message)
			}
			add(c.Time, "job", "", "", text)
		}
	}
	// The texts of thousands of pods are mostly alike: one string each.
	scheduled := map[string]string{}
	type ending struct {
		previous bool
		reason   string
		code     int32
	}
	terminated := map[ending]string{}
	for _, p := range pods {
		add(p.CreationTimestamp.Time, "pod", p.Name, "", "pod created")
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				text, ok := scheduled[p.Spec.NodeName]
				if !ok {
					text = "scheduled on " + p.Spec.NodeName
					scheduled[p.Spec.NodeName] = text
				}
				add(c.LastTransitionTime.Time, "pod", p.Name, "", text)
			}
		}
		for _, all := range [2][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for ci := range all {
				cs := &all[ci]
				for i, st := range [2]*corev1.ContainerState{&cs.LastTerminationState, &cs.State} {
					prefix := ""
					if i == 0 {
						prefix = "previous "
					}
					if st.Running != nil {
						add(st.Running.StartedAt.Time, "container", p.Name, cs.Name, prefix+"container started")
					}
					if te := st.Terminated; te != nil {
						add(te.StartedAt.Time, "container", p.Name, cs.Name, prefix+"container started")
						k := ending{i == 0, te.Reason, te.ExitCode}
						text, ok := terminated[k]
						if !ok {
							text = fmt.Sprintf("%scontainer terminated: %s, exit code %d", prefix, te.Reason, te.ExitCode)
							terminated[k] = text
						}
						add(te.FinishedAt.Time, "container", p.Name, cs.Name, text)
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
		add(parse.EventFirstTime(e), "event", pod, "", text)
	}
	if events > maxTimelineEvents {
		a.warnf("the timeline shows the first %d of %d events; the events table has them all", maxTimelineEvents, events)
	}
	for _, f := range a.findings {
		if f.Time == nil {
			continue
		}
		tl = append(tl, TimelineEntry{Time: *f.Time, Kind: "finding", Pod: f.Pod, Container: f.Container,
			Text: f.Title, Severity: f.Severity, FindingID: f.ID})
	}
	slices.SortStableFunc(tl, timelineCmp)
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
