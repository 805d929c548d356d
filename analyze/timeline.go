package analyze

import (
	"fmt"
	"sort"
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

var kindOrder = map[string]int{"job": 0, "pod": 1, "container": 2, "event": 3, "finding": 4}

func (a *analyzer) timeline() {
	var tl []TimelineEntry
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
	for _, p := range a.jobPods() {
		add(p.CreationTimestamp.Time, "pod", p.Name, "", "pod created")
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				add(c.LastTransitionTime.Time, "pod", p.Name, "", "scheduled on "+p.Spec.NodeName)
			}
		}
		all := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		for _, cs := range all {
			for i, st := range []corev1.ContainerState{cs.LastTerminationState, cs.State} {
				prefix := ""
				if i == 0 {
					prefix = "previous "
				}
				if st.Running != nil {
					add(st.Running.StartedAt.Time, "container", p.Name, cs.Name, prefix+"container started")
				}
				if te := st.Terminated; te != nil {
					add(te.StartedAt.Time, "container", p.Name, cs.Name, prefix+"container started")
					add(te.FinishedAt.Time, "container", p.Name, cs.Name, fmt.Sprintf("%scontainer terminated: %s, exit code %d", prefix, te.Reason, te.ExitCode))
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
	sort.SliceStable(tl, func(i, j int) bool {
		a, b := tl[i], tl[j]
		if !a.Time.Equal(b.Time) {
			return a.Time.Before(b.Time)
		}
		if kindOrder[a.Kind] != kindOrder[b.Kind] {
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return a.Text < b.Text
	})
	a.res.Timeline = tl
}
