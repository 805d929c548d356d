package narrate

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/report"
)

// Data is what a prompt template sees. docs/llm.md documents every field.
type Data struct {
	// Metadata holds the seed document's variables: JobName, JobStatus, LauncherStatus,
	// MasterExpected, MasterCreatedCount, WorkerExpected, WorkerCreatedCount,
	// MasterDiagnosis, WorkerDiagnosis. A role the job does not have reads "N/A".
	Metadata map[string]string
	// ErrorInfo is the extracted errors, one block per finding (or group of the same symptom).
	ErrorInfo string
	// EventInfo is the warning events, one per line.
	EventInfo string
	// LogInfo is the key log windows, each headed by its file, lines and why it was chosen.
	LogInfo string

	Job           Job
	Verdict       string
	VerdictReason string
	// RootCause is the root cause finding, nil when healthy (or when it did not fit).
	RootCause *Finding
	Findings  []Finding
	Events    []Event
	Logs      []LogWindow
	Timeline  []TimelineEntry
	Replicas  []Replica
	// Roles are the per-role diagnoses (Metadata's MasterDiagnosis... for every role).
	Roles []Role
	// Role is the role role.tmpl is asked about; "" for job templates.
	Role string
	// Omitted counts the candidate parts left out to fit the context, Left by kind. The text
	// blocks (ErrorInfo, EventInfo, LogInfo) end with a line saying how many of theirs.
	Omitted int
	Left    Left

	// rep is the report the data comes from; roleParts is true when the roles' diagnoses are
	// parts of this prompt (the job's), so that a role left out reads so in Metadata.
	rep       *report.Report
	roleParts bool
}

// Left counts the parts of each kind left out to fit the context.
type Left struct {
	Findings, Logs, Events, Timeline, Roles int
}

func (l *Left) add(k report.PartKind, n int) {
	switch k {
	case report.PartFinding:
		l.Findings += n
	case report.PartLog:
		l.Logs += n
	case report.PartEvent:
		l.Events += n
	case report.PartTimeline:
		l.Timeline += n
	case report.PartRole:
		l.Roles += n
	}
}

func (l Left) total() int { return l.Findings + l.Logs + l.Events + l.Timeline + l.Roles }

// counts lists the kinds with parts left out, in the summary order.
func (l Left) counts() []report.PartCount {
	var out []report.PartCount
	for _, k := range report.PartKinds() {
		var n int
		switch k {
		case report.PartFinding:
			n = l.Findings
		case report.PartLog:
			n = l.Logs
		case report.PartEvent:
			n = l.Events
		case report.PartTimeline:
			n = l.Timeline
		case report.PartRole:
			n = l.Roles
		}
		if n > 0 {
			out = append(out, report.PartCount{Kind: k, Count: n})
		}
	}
	return out
}

// Job is the job's identity and status.
type Job struct {
	Kind, Namespace, Name, Status string
	// Conditions read "Failed=True (PyTorchJobFailed): message".
	Conditions []string
}

// Finding is one finding with its evidence lines.
type Finding struct {
	ID, Category, Severity, Title string
	Pod, Container, Time          string
	Fault, Retry                  string
	// SecondaryOf is the finding this one follows from; RootCause marks the root cause.
	SecondaryOf string
	RootCause   bool
	Count       int
	// Evidence reads "logs/ml/x/pytorch.log:56 (2026-03-14 10:02:11.496Z): the line".
	Evidence    []string
	Remediation string

	// evidence is each evidence's location and text, to say "same text as" once told.
	evidence [][2]string
}

// Event is a Kubernetes event.
type Event struct {
	Time, Type, Reason, Object, Message string
	Count                               int
}

// LogWindow is consecutive lines of one log. Lines read "  56 | text", with ">" marking the
// lines that are evidence.
type LogWindow struct {
	File     string
	From, To int
	Why      string
	Lines    []string
}

// TimelineEntry is a lifecycle moment of the job or its pods.
type TimelineEntry struct {
	Time, Kind, Where, Text string
}

// Replica is one role of the job: counts and pods.
type Replica struct {
	Role, Expected                               string
	Created, Pending, Running, Succeeded, Failed int
	// Pods read "train-job-worker-0 Failed (Error, exit 1) on node-3, 2 restarts".
	Pods []string
}

// Role is one role's diagnosis.
type Role struct {
	Name, Diagnosis string
	// Source is "findings" or "model".
	Source string
}

// Limits of what the data may hold.
const (
	maxPromptLine   = 400
	maxPodsPerRole  = 16
	maxRoleFindings = 4
)

func convertFinding(f *report.Finding, rootID string) Finding {
	out := Finding{ID: f.ID, Category: string(f.Category), Severity: f.Severity.String(), Title: flat(f.Title),
		Pod: flat(f.Pod), Container: flat(f.Container), Time: fmtTime(f.Time), Fault: string(f.Fault), Retry: string(f.Retry),
		SecondaryOf: f.SecondaryOf, RootCause: f.ID == rootID, Count: f.Count, Remediation: strings.TrimSpace(f.Remediation)}
	for _, e := range f.Evidence {
		s := flat(e.Location())
		if e.Time != nil {
			s += " (" + fmtTime(e.Time) + ")"
		}
		out.Evidence = append(out.Evidence, s+": "+cut(e.Text))
		out.evidence = append(out.evidence, [2]string{s, e.Text})
	}
	return out
}

// base is the part of the data every prompt has: job, verdict, replicas, and the metadata
// without the roles' diagnoses (compose adds those it holds).
func base(rep *report.Report, roleParts bool) *Data {
	d := &Data{Verdict: string(rep.Verdict), VerdictReason: rep.VerdictReason, rep: rep, roleParts: roleParts}
	j := rep.Job
	d.Job = Job{Kind: j.Kind, Namespace: j.Namespace, Name: j.Name, Status: j.Status}
	if rep.Bundle.Plain {
		// Plain logs have no job object, so no kind.
		d.Job.Kind, d.Job.Name = "", "plain logs "+rep.Bundle.Name
	}
	for _, c := range j.Conditions {
		s := c.Type + "=" + c.Status
		if c.Reason != "" {
			s += " (" + c.Reason + ")"
		}
		if c.Message != "" {
			s += ": " + cut(c.Message)
		}
		d.Job.Conditions = append(d.Job.Conditions, s)
	}
	for _, r := range j.Replicas {
		rp := Replica{Role: r.Role, Expected: expected(r.Expected), Created: r.Created, Pending: r.Pending,
			Running: r.Running, Succeeded: r.Succeeded, Failed: r.Failed}
		for i, p := range r.Pods {
			if i == maxPodsPerRole {
				rp.Pods = append(rp.Pods, fmt.Sprintf("... and %d more pods", len(r.Pods)-i))
				break
			}
			rp.Pods = append(rp.Pods, podLine(p))
		}
		for _, g := range r.Groups {
			rp.Pods = append(rp.Pods, groupLine(g))
		}
		d.Replicas = append(d.Replicas, rp)
	}
	d.Metadata = metadata(rep, nil, roleParts)
	return d
}

// groupLine reads "995 pods alike (group Worker/1, ranks 0-36,38-999, on 125 nodes): Failed
// (Error, exit 1)".
func groupLine(g *report.PodGroup) string {
	s := report.Commas(g.Count) + " pods alike (group " + g.ID
	if g.Ranks != "" {
		s += ", ranks " + g.Ranks
	}
	if g.Nodes > 0 {
		s += ", on " + report.Commas(g.Nodes) + " nodes"
	}
	s += "): " + g.Phase
	if g.Ended != "" {
		s += " (" + flat(g.Ended) + ")"
	}
	if g.Restarts > 0 {
		s += fmt.Sprintf(", %d restarts", g.Restarts)
	}
	return s
}

func podLine(p report.Pod) string {
	s := p.Name + " " + p.Phase
	if p.Ended != "" {
		s += " (" + p.Ended + ")"
	}
	if p.Node != "" {
		s += " on " + p.Node
	}
	if p.Restarts > 0 {
		s += fmt.Sprintf(", %d restarts", p.Restarts)
	}
	return s
}

// leftOutDiagnosis is a role's diagnosis in Metadata when it did not fit the context.
const leftOutDiagnosis = "(left out to fit the context)"

// metadata fills the seed document's variables with the diagnoses of roles; with roleParts,
// a role's diagnosis not among them was left out.
func metadata(rep *report.Report, roles []Role, roleParts bool) map[string]string {
	name := rep.Job.Name
	if rep.Bundle.Plain {
		name = "plain logs " + rep.Bundle.Name
	}
	status := rep.Job.Status
	if status == "" {
		status = "Unknown"
	}
	m := map[string]string{"JobName": name, "JobStatus": status, "LauncherStatus": "N/A"}
	for _, key := range []string{"Master", "Worker"} {
		m[key+"Expected"], m[key+"CreatedCount"], m[key+"Diagnosis"] = "N/A", "N/A", "N/A"
	}
	if r := seedRole(rep, "Launcher"); r != nil {
		m["LauncherStatus"] = roleStatus(r)
	}
	for _, key := range []string{"Master", "Worker"} {
		r := seedRole(rep, key)
		if r == nil {
			continue
		}
		m[key+"Expected"] = expected(r.Expected)
		m[key+"CreatedCount"] = strconv.Itoa(r.Created)
		if roleParts {
			m[key+"Diagnosis"] = leftOutDiagnosis
		}
		for _, ro := range roles {
			if ro.Name == r.Role {
				m[key+"Diagnosis"] = ro.Diagnosis
			}
		}
	}
	return m
}

// seedRole finds the replica the seed's names mean: Master is also TFJob's Chief; Worker is
// also a TrainJob's or JobSet's node.
func seedRole(rep *report.Report, key string) *report.Replica {
	names := map[string][]string{"Master": {"master", "chief"}, "Worker": {"worker", "node"}, "Launcher": {"launcher"}}[key]
	for _, n := range names {
		for i := range rep.Job.Replicas {
			if strings.EqualFold(rep.Job.Replicas[i].Role, n) {
				return &rep.Job.Replicas[i]
			}
		}
	}
	return nil
}

// roleStatus says in a word how a role's pods are, then the counts.
func roleStatus(r *report.Replica) string {
	word := "NotCreated"
	switch {
	case r.Failed > 0:
		word = "Failed"
	case r.Running > 0:
		word = "Running"
	case r.Pending > 0:
		word = "Pending"
	case r.Succeeded > 0:
		word = "Succeeded"
	}
	return fmt.Sprintf("%s (%d created of %s expected: %d pending, %d running, %d succeeded, %d failed)",
		word, r.Created, expected(r.Expected), r.Pending, r.Running, r.Succeeded, r.Failed)
}

// FindingsDiagnoses summarises each role from the findings, coroner's deterministic stand-in
// for the seed's MasterDiagnosis and WorkerDiagnosis.
func FindingsDiagnoses(rep *report.Report) []Role {
	var out []Role
	rootID := ""
	if rep.RootCause != nil {
		rootID = rep.RootCause.ID
	}
	for _, r := range rep.Job.Replicas {
		pods := map[string]bool{}
		var parts []string
		parts = append(parts, roleStatus(&r)+".")
		var bad []string
		for _, p := range r.Pods {
			pods[p.Name] = true
			if p.Phase != "Succeeded" && p.Phase != "Running" || p.Ended != "" && !strings.HasPrefix(p.Ended, "Completed") || p.Restarts > 0 {
				bad = append(bad, podLine(p))
			}
		}
		if len(bad) > maxRoleFindings {
			bad = append(bad[:maxRoleFindings], fmt.Sprintf("%d more", len(bad)-maxRoleFindings))
		}
		if len(bad) > 0 {
			parts = append(parts, "Pods: "+strings.Join(bad, "; ")+".")
		}
		var fs []string
		n := 0
		for _, f := range rep.Findings {
			if !pods[f.Pod] || f.Severity < analyze.SeverityWarning {
				continue
			}
			n++
			if len(fs) == maxRoleFindings {
				continue
			}
			s := fmt.Sprintf("%s %s %q", f.ID, f.Category, f.Title)
			if f.ID == rootID {
				s += " [root cause]"
			} else if f.SecondaryOf != "" {
				s += " (follows " + f.SecondaryOf + ")"
			}
			fs = append(fs, s)
		}
		if n > len(fs) {
			fs = append(fs, fmt.Sprintf("%d more", n-len(fs)))
		}
		if len(fs) > 0 {
			parts = append(parts, "Findings: "+strings.Join(fs, "; ")+".")
		} else {
			parts = append(parts, "No failure found in its pods.")
		}
		out = append(out, Role{Name: r.Role, Diagnosis: strings.Join(parts, " "), Source: "findings"})
	}
	return out
}

// cut makes bundle text one line (flat) of at most maxPromptLine bytes.
func cut(s string) string {
	return truncate(flat(s), maxPromptLine)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func fmtTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "(no time)"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

func where(pod, container string) string {
	switch {
	case pod == "":
		return "the job"
	case container == "":
		return pod
	}
	return pod + "/" + container
}

func expected(n *int) string {
	if n == nil {
		return "unknown"
	}
	return strconv.Itoa(*n)
}
