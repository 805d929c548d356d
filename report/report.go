// Package report defines the Report, coroner's documented data contract, and renders it as
// JSON (its encoding), Markdown, self-contained HTML and a terminal summary. It owns every
// type of the contract and its JSON names (Finding, Evidence, RootCause, TimelineEntry,
// LogSummary...): Build converts the typed analysis of package analyze into them.
package report

import (
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/parse"
)

// FormatVersion is the version of the JSON contract. Names are added, never renamed. Version
// 2 added folded findings (FoldOver); a reader of version 1 reports sees none. Version 3 added
// folded pods (Replica.Groups, Report.LogGroups, a timeline entry's group, count and
// lastTime); a reader of version 2 reports sees every pod, log and entry one by one. A report
// with no folded pods says version 2, which it is, so a small job's report is unchanged.
const FormatVersion = 3

// formatVersionUnfoldedPods is the version a report without pod groups says: 2.
const formatVersionUnfoldedPods = 2

// maxEvents bounds the events table.
const maxEvents = 1000

// Report is the outcome of `coroner analyze`, the JSON contract of docs/design.md.
type Report struct {
	FormatVersion  int             `json:"formatVersion"`
	CoronerVersion string          `json:"coronerVersion"`
	Bundle         BundleInfo      `json:"bundle"`
	Job            Job             `json:"job"`
	Verdict        analyze.Verdict `json:"verdict"`
	VerdictReason  string          `json:"verdictReason"`
	// VerdictAt is the place the reason names (the root cause's), null when it names none.
	VerdictAt *Place `json:"verdictAt"`
	// RootCause is null when the job is healthy or nothing explains its failure.
	RootCause *RootCause      `json:"rootCause"`
	Findings  []*Finding      `json:"findings"`
	Timeline  []TimelineEntry `json:"timeline"`
	Events    []Event         `json:"events"`
	Logs      []LogSummary    `json:"logs"`
	// LogGroups sums the logs of each pod group (Replica.Groups), which Logs then leaves out.
	LogGroups []LogGroup `json:"logGroups,omitempty"`
	Warnings  []string   `json:"warnings"`
	// FlightRecorder is what the NCCL Flight Recorder dumps show; absent without dumps.
	FlightRecorder *FlightRecorder `json:"flightRecorder,omitempty"`
	// NodeEvidence is what the bundle shows of the job's GPU nodes' health; absent without them.
	NodeEvidence *NodeEvidence `json:"nodeEvidence,omitempty"`
	// LLM is the optional narrative; null when no LLM step ran.
	LLM *Narrative `json:"llm"`
}

// BundleInfo says what was analyzed.
type BundleInfo struct {
	// Name is the base name of the bundle path (the full path would make reports of the same
	// bundle differ by where it was stored).
	Name          string       `json:"name"`
	Plain         bool         `json:"plain,omitempty"`
	CollectedAt   *time.Time   `json:"collectedAt,omitempty"`
	ServerVersion string       `json:"serverVersion,omitempty"`
	CollectedBy   string       `json:"collectedBy,omitempty"`
	Gaps          []bundle.Gap `json:"gaps"`
	// Layout names the layout of another tool that was read ("troubleshoot support bundle").
	Layout string `json:"layout,omitempty"`
	// Analyzers are the results of that tool's own analyzers, shown beside coroner's.
	Analyzers []bundle.AnalyzerResult `json:"analyzers,omitempty"`
	Redaction *bundle.RedactionInfo   `json:"redaction,omitempty"`
	Files     int                     `json:"files"`
	LogBytes  int64                   `json:"logBytes"`
	// LogLines counts the log lines read.
	LogLines int `json:"logLines"`
}

// Job summarises the job.
type Job struct {
	APIVersion string      `json:"apiVersion,omitempty"`
	Kind       string      `json:"kind"`
	Namespace  string      `json:"namespace,omitempty"`
	Name       string      `json:"name"`
	UID        string      `json:"uid,omitempty"`
	Status     string      `json:"status"`
	Created    *time.Time  `json:"created,omitempty"`
	Conditions []Condition `json:"conditions"`
	Replicas   []Replica   `json:"replicas"`
}

// Condition is a job condition.
type Condition struct {
	Type    string     `json:"type"`
	Status  string     `json:"status"`
	Reason  string     `json:"reason,omitempty"`
	Message string     `json:"message,omitempty"`
	Time    *time.Time `json:"time,omitempty"`
}

// Replica is one role of the job. Expected is null when the spec does not say.
type Replica struct {
	Role       string `json:"role"`
	Expected   *int   `json:"expected"`
	Created    int    `json:"created"`
	Pending    int    `json:"pending"`
	Running    int    `json:"running"`
	Succeeded  int    `json:"succeeded"`
	Failed     int    `json:"failed"`
	FromStatus bool   `json:"fromStatus,omitempty"`
	Pods       []Pod  `json:"pods"`
	// Groups are its pods that look alike, folded (see PodGroup); Pods leaves them out.
	Groups []*PodGroup `json:"groups,omitempty"`
}

// Pod is one pod of a replica.
type Pod struct {
	Name     string `json:"name"`
	Phase    string `json:"phase"`
	Node     string `json:"node,omitempty"`
	Restarts int    `json:"restarts"`
	// Ended says how its main container ended ("OOMKilled, exit 137"), when it did.
	Ended string `json:"ended,omitempty"`
	// Rank is the first torchrun rank its logs show ("[rank5]:"), when they show one.
	Rank *int `json:"rank,omitempty"`
	// Created, Started and Finished date its life: created, its first container's first
	// start that the status still shows, and when it ended (nil while it runs or waits).
	Created  *time.Time `json:"created,omitempty"`
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
	// ExitCode is its first container's exit code, when it ended.
	ExitCode *int `json:"exitCode,omitempty"`
	// LastRestart is when the previous container ended, for a pod that restarted.
	LastRestart *time.Time `json:"lastRestart,omitempty"`
}

// Event is one Kubernetes event of the job, its pods or their nodes.
type Event struct {
	Time     *time.Time `json:"time,omitempty"`
	LastTime *time.Time `json:"lastTime,omitempty"`
	Type     string     `json:"type"`
	Reason   string     `json:"reason"`
	Object   string     `json:"object"`
	// ObjectRef is Object's parts.
	ObjectRef ObjectRef `json:"objectRef"`
	Message   string    `json:"message"`
	Count     int       `json:"count"`
}

// ObjectRef names a Kubernetes object; Namespace is empty for cluster-scoped kinds.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func refOf(r analyze.ObjectRef) ObjectRef { return ObjectRef{r.Kind, r.Namespace, r.Name} }

// String is "Kind namespace/name", or "Kind name" when cluster-scoped.
func (r ObjectRef) String() string {
	return analyze.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}.String()
}

// Place is where the verdict points: File is the plain log's own name (then Pod and
// Container are the names coroner gave it), Job the job when no pod is named.
type Place struct {
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	File      string `json:"fileName,omitempty"`
	Job       string `json:"job,omitempty"`
	Rank      *int   `json:"rank,omitempty"`
	Node      string `json:"node,omitempty"`
}

// Build assembles the report from a loaded bundle and its analysis.
func Build(m *parse.Model, res *analyze.Result, version string) *Report {
	r := &Report{
		FormatVersion: formatVersionUnfoldedPods, CoronerVersion: version,
		Verdict: res.Verdict, VerdictReason: res.VerdictReason, VerdictAt: placeOf(res.VerdictAt),
	}
	b := m.Bundle
	r.Bundle = BundleInfo{Name: filepath.Base(b.Source), Plain: b.Plain, Files: len(b.Files), Gaps: []bundle.Gap{}}
	if b.Plain {
		r.Bundle.Name = strings.Join(baseNames(strings.Fields(b.Source)), " ")
	}
	for _, l := range res.Logs {
		r.Bundle.LogBytes += l.Bytes
		r.Bundle.LogLines += l.Lines
	}
	if mf := b.Manifest; mf != nil {
		r.Bundle.CollectedAt, r.Bundle.ServerVersion, r.Bundle.CollectedBy = mf.CollectedAt, mf.ServerVersion, mf.CoronerVersion
		if mf.Errors != nil {
			r.Bundle.Gaps = mf.Errors
		}
		red := mf.Redaction
		r.Bundle.Redaction = &red
	} else if b.Gaps != nil {
		r.Bundle.Gaps = append([]bundle.Gap{}, b.Gaps...) // redaction edits the report's copy
	}
	r.Bundle.Layout = b.Layout
	r.Bundle.Analyzers = append([]bundle.AnalyzerResult(nil), b.Analysis...)
	r.Warnings = append(append(append([]string{}, b.Warnings...), m.Warnings...), res.Warnings...)
	r.FlightRecorder = flightRecorderOf(res.FlightRecorder)
	r.NodeEvidence = nodeEvidenceOf(res.NodeEvidence, res)
	r.Job = buildJob(m.Job, ranksOf(res))
	if f := res.RootCause; f != nil {
		rc := &RootCause{Finding: *findingOf(f), Confidence: res.Confidence, Basis: res.ConfidenceBasis}
		for _, g := range res.Findings {
			if g.SecondaryOf == f.ID {
				rc.Symptoms++
			}
		}
		r.RootCause = rc
	}
	ff := r.foldAnalysis(res)
	// The timeline and the logs table are folded as they are made, never an entry per pod
	// of a large job first.
	pg := r.groupPods()
	if pg != nil {
		r.FormatVersion = FormatVersion
	}
	tf := timelineFolder{findings: ff, pods: pg}
	for e := range res.Timeline.All() {
		tf.add(timelineEntryOf(&e))
	}
	r.Timeline = tf.entries()
	lf := logFolder{pods: pg}
	for i := range res.Logs {
		lf.add(logOf(&res.Logs[i]))
	}
	r.Logs, r.LogGroups = lf.logs(), lf.groups
	if b.Plain {
		r.namePlainLogs(b)
	}
	r.Events = buildEvents(m)
	if len(r.Events) > maxEvents {
		r.Warnings = append(r.Warnings, "the events table shows the first "+itoa(maxEvents)+" of "+itoa(len(r.Events))+" events")
		r.Events = r.Events[:maxEvents]
	}
	return r
}

// foldAnalysis makes the report's findings, folded as foldFindings folds them: the analysis's
// findings are folded first, so that a folded finding's members (200,000 exit codes at
// 200,000 containers) never become findings of the report, and evidence is converted for the
// findings kept and the samples of folded ones only.
func (r *Report) foldAnalysis(res *analyze.Result) *findingFold {
	rootID := ""
	if res.RootCause != nil {
		rootID = res.RootCause.ID
	}
	kept, folds, target := foldRounds(slices.Clone(res.Findings), rootID, analysisView)
	r.Findings = make([]*Finding, len(kept))
	foldOf := make(map[*Finding]*fold[*analyze.Finding], len(folds))
	for i, f := range kept {
		r.Findings[i] = findingLater(f)
		if acc := folds[f]; acc != nil {
			foldOf[r.Findings[i]] = acc
		} else {
			r.Findings[i].Evidence = evidenceOf(f.Evidence)
		}
	}
	if len(folds) == 0 {
		return nil
	}
	return applyFolds(r, target, func(f *Finding) *fold[*analyze.Finding] { return foldOf[f] }, analysisView,
		func(f *analyze.Finding) []Evidence { return evidenceOf(f.Evidence) })
}

// namePlainLogs gives plain logs their own names in the logs table and in evidence (the
// verdict's reason has them from analyze), and says which were empty.
func (r *Report) namePlainLogs(b *bundle.Bundle) {
	for i := range r.Logs {
		l := &r.Logs[i]
		l.FileName = b.PlainName(l.Path)
		if l.FileName != "" {
			if l.Lines == 0 {
				r.Warnings = append(r.Warnings, l.FileName+": 0 lines read")
			}
		}
	}
	name := func(evs []Evidence) {
		for i := range evs {
			if evs[i].Source == analyze.SourceLog {
				evs[i].FileName = b.PlainName(evs[i].File)
			}
		}
	}
	for _, f := range r.Findings {
		name(f.Evidence)
	}
	if r.RootCause != nil {
		name(r.RootCause.Evidence)
	}
}

func placeOf(p *analyze.Place) *Place {
	if p == nil {
		return nil
	}
	out := &Place{Pod: p.Pod, Container: p.Container, File: p.File, Job: p.Job, Node: p.Node}
	if p.Rank >= 0 {
		rank := p.Rank
		out.Rank = &rank
	}
	return out
}

// where names a place: "pod/container", the pod, "—"; for plain logs, the file.
func (r *Report) where(pod, container string) string {
	if r.Bundle.Plain && pod != "" {
		for _, l := range r.Logs {
			if l.Pod == pod && l.FileName != "" {
				return l.FileName
			}
		}
	}
	return where(pod, container)
}

func baseNames(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = filepath.Base(p)
	}
	return out
}

// ranksOf maps each pod to the first torchrun rank its logs show. The map grows with the
// pods that show one: made at the count of logs, it was 6.7 MB at 200,000 logs of 25,000 pods
// and none of them with a rank.
func ranksOf(res *analyze.Result) map[string]int {
	out := map[string]int{}
	for _, l := range res.Logs {
		if _, ok := out[l.Pod]; !ok && l.Rank >= 0 {
			out[l.Pod] = l.Rank
		}
	}
	return out
}

func buildJob(j *parse.Job, ranks map[string]int) Job {
	out := Job{Conditions: []Condition{}, Replicas: []Replica{}}
	if j == nil {
		return out
	}
	out.APIVersion, out.Kind, out.Namespace, out.Name, out.UID = j.APIVersion, j.Kind, j.Namespace, j.Name, j.UID
	out.Status = string(j.Phase)
	if !j.Created.IsZero() {
		t := j.Created
		out.Created = &t
	}
	for _, c := range j.Conditions {
		cond := Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
		if !c.Time.IsZero() {
			t := c.Time
			cond.Time = &t
		}
		out.Conditions = append(out.Conditions, cond)
	}
	for _, rp := range j.Replicas {
		rep := Replica{Role: rp.Role, Created: rp.Created, Pending: rp.Pending, Running: rp.Running,
			Succeeded: rp.Succeeded, Failed: rp.Failed, FromStatus: rp.FromStatus, Pods: make([]Pod, 0, len(rp.Pods))}
		if rp.Expected >= 0 {
			n := rp.Expected
			rep.Expected = &n
		}
		for _, p := range rp.Pods {
			pod := buildPod(p)
			if n, ok := ranks[p.Name]; ok {
				pod.Rank = &n
			}
			rep.Pods = append(rep.Pods, pod)
		}
		out.Replicas = append(out.Replicas, rep)
	}
	return out
}

func buildPod(p *corev1.Pod) Pod {
	out := Pod{Name: p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName}
	for _, cs := range p.Status.ContainerStatuses {
		out.Restarts += int(cs.RestartCount)
		te := cs.State.Terminated
		if te == nil {
			te = cs.LastTerminationState.Terminated
		}
		if te != nil && out.Ended == "" {
			out.Ended = te.Reason + ", exit " + itoa(int(te.ExitCode))
		}
		if w := cs.State.Waiting; w != nil && w.Reason != "" && out.Ended == "" {
			out.Ended = w.Reason
		}
	}
	if p.Status.Reason != "" {
		out.Ended = p.Status.Reason
	}
	out.Created = timeOf(p.CreationTimestamp.Time)
	if cs := mainStatus(p); cs != nil {
		if prev := cs.LastTerminationState.Terminated; prev != nil {
			out.Started = timeOf(prev.StartedAt.Time)
			out.LastRestart = timeOf(prev.FinishedAt.Time)
		}
		st := cs.State
		switch {
		case st.Running != nil && out.Started == nil:
			out.Started = timeOf(st.Running.StartedAt.Time)
		case st.Terminated != nil:
			if out.Started == nil {
				out.Started = timeOf(st.Terminated.StartedAt.Time)
			}
			out.Finished = timeOf(st.Terminated.FinishedAt.Time)
			code := int(st.Terminated.ExitCode)
			out.ExitCode = &code
		}
	}
	if out.Finished == nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
		// Evicted or deleted pods keep no container state; their last event dates them.
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && !c.LastTransitionTime.IsZero() && (out.Started == nil || c.LastTransitionTime.After(*out.Started)) {
				out.Finished = timeOf(c.LastTransitionTime.Time)
			}
		}
	}
	return out
}

// mainStatus is the status of the pod's first container, the one that trains.
func mainStatus(p *corev1.Pod) *corev1.ContainerStatus {
	if len(p.Status.ContainerStatuses) == 0 {
		return nil
	}
	if len(p.Spec.Containers) > 0 {
		for i := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[i].Name == p.Spec.Containers[0].Name {
				return &p.Status.ContainerStatuses[i]
			}
		}
	}
	return &p.Status.ContainerStatuses[0]
}

func timeOf(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func buildEvents(m *parse.Model) []Event {
	inJob := map[string]bool{}
	if m.Job != nil {
		for _, p := range m.Job.Pods() {
			inJob[p.Name] = true
		}
	}
	out := []Event{}
	for i := range m.Events {
		e := &m.Events[i]
		io := e.InvolvedObject
		if io.Kind == "Pod" && len(inJob) > 0 && !inJob[io.Name] {
			continue
		}
		ref := ObjectRef{io.Kind, io.Namespace, io.Name}
		ev := Event{Type: e.Type, Reason: e.Reason, Object: ref.String(), ObjectRef: ref, Message: e.Message, Count: int(e.Count)}
		if ev.Count == 0 {
			ev.Count = 1
		}
		if t := parse.EventFirstTime(e); !t.IsZero() {
			t = t.UTC()
			ev.Time = &t
		}
		if t := parse.EventTime(e); !t.IsZero() && ev.Count > 1 {
			t = t.UTC()
			ev.LastTime = &t
		}
		out = append(out, ev)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Time == nil) != (b.Time == nil) {
			return a.Time != nil
		}
		if a.Time != nil && !a.Time.Equal(*b.Time) {
			return a.Time.Before(*b.Time)
		}
		return a.Object < b.Object
	})
	return out
}

// Severity returns the highest severity among the findings, or 0 when there are none.
func (r *Report) Severity() analyze.Severity {
	var s analyze.Severity
	for _, f := range r.Findings {
		if f.Severity > s {
			s = f.Severity
		}
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }
