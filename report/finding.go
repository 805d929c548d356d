package report

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/coroner-dev/coroner/analyze"
)

// Finding is one thing that went wrong (or looks wrong), with the evidence that shows it: an
// entry of the contract's findings, made from an analyze.Finding.
type Finding struct {
	// ID is f1, f2... in the order of the findings: by time, findings without one last.
	ID       string           `json:"id"`
	RuleID   string           `json:"ruleId"`
	Category analyze.Category `json:"category"`
	Severity analyze.Severity `json:"severity"`
	Layer    analyze.Layer    `json:"layer"`
	Title    string           `json:"title"`
	Fault    analyze.Fault    `json:"fault"`
	Retry    analyze.Retry    `json:"retry"`
	// Pod and Container say where, when the finding is about one.
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	// Rank is the global rank of the process it is about, when something says (a launcher
	// prefix such as "[rank5]:", the pod's RANK).
	Rank *int `json:"rank,omitempty"`
	// Node is the node it is about, when it is about one (a GPU fault of the pod's node).
	Node string     `json:"node,omitempty"`
	Time *time.Time `json:"time,omitempty"`
	// Count is how many times it was seen (log lines, event repeats).
	Count    int        `json:"count"`
	Evidence []Evidence `json:"evidence"`
	// SecondaryOf names the finding this one follows from.
	SecondaryOf string `json:"secondaryOf,omitempty"`
	Explanation string `json:"explanation,omitempty"`
	Remediation string `json:"remediation,omitempty"`

	// The fields below are set on a folded finding only (format version 2): the findings of
	// one class on more than FoldOver processes, as one. Pod and Rank are then empty, Time is
	// FirstTime, Count the exact total, and Evidence that of at most MaxSamples of them.

	// Folded is how many findings it stands for.
	Folded int `json:"folded,omitempty"`
	// Processes is how many processes (pod, container, rank) they were on.
	Processes int `json:"processes,omitempty"`
	// Ranks are their ranks as sorted ranges ("0-1,3-16383"), when the logs say.
	Ranks string `json:"ranks,omitempty"`
	// Pods are their first MaxFoldPods pods, in order of their ids; PodCount how many in all.
	Pods     []string `json:"pods,omitempty"`
	PodCount int      `json:"podCount,omitempty"`
	// FirstTime and LastTime are the earliest and latest times they were seen.
	FirstTime *time.Time `json:"firstTime,omitempty"`
	LastTime  *time.Time `json:"lastTime,omitempty"`
	// Spots are where and when each folded finding was seen, for the picture of the ranks;
	// not part of the contract (a report read back from JSON has none).
	Spots []Spot `json:"-"`
}

// Evidence points into the bundle.
type Evidence struct {
	// Source is log, event, pod, job, node or spec.
	Source analyze.Source `json:"source"`
	// File is the bundle path (for log evidence, the log; otherwise the resource file).
	File string `json:"file,omitempty"`
	// FileName is the log's own name ("train.log") when it came as a plain file.
	FileName string     `json:"fileName,omitempty"`
	Line     int        `json:"line,omitempty"`
	Time     *time.Time `json:"time,omitempty"`
	// Object names the Kubernetes object for non-log evidence ("Pod ml/train-job-worker-0").
	Object string `json:"object,omitempty"`
	// ObjectRef is Object's parts.
	ObjectRef *ObjectRef    `json:"objectRef,omitempty"`
	Text      string        `json:"text"`
	Before    []ContextLine `json:"before,omitempty"`
	After     []ContextLine `json:"after,omitempty"`
	// LastLine and LastTime say where a repeated match was last seen.
	LastLine int        `json:"lastLine,omitempty"`
	LastTime *time.Time `json:"lastTime,omitempty"`
}

// ContextLine is a log line around an evidence line.
type ContextLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Location is "file:line" for log evidence (the plain file's own name when it has one),
// the object otherwise.
func (e *Evidence) Location() string {
	file := e.File
	if e.FileName != "" {
		file = e.FileName
	}
	if file != "" && e.Line > 0 {
		return file + ":" + strconv.Itoa(e.Line)
	}
	if e.Object != "" {
		return e.Object
	}
	return file
}

// RootCause is the finding that explains the failure, repeated at the top of the report.
type RootCause struct {
	Finding
	// Symptoms counts the findings that follow from the root cause.
	Symptoms int
	// Confidence is high for a specific rule on unambiguous evidence, medium for the second
	// tier's finding, low when only an exit code or a generic exception says it failed.
	Confidence analyze.Confidence
	// Basis says why the confidence is lower than the root's kind of finding usually gives
	// (analyze.Result.ConfidenceBasis); it is not part of the JSON contract.
	Basis analyze.Basis
}

// rootCauseJSON is the contract's rootCause: the fields of its finding that version 1 of the
// contract named, in its order, findingId for the finding's id, and symptoms.
type rootCauseJSON struct {
	FindingID   string           `json:"findingId"`
	Category    analyze.Category `json:"category"`
	RuleID      string           `json:"ruleId"`
	Title       string           `json:"title"`
	Severity    analyze.Severity `json:"severity"`
	Fault       analyze.Fault    `json:"fault"`
	Retry       analyze.Retry    `json:"retry"`
	Pod         string           `json:"pod,omitempty"`
	Container   string           `json:"container,omitempty"`
	Rank        *int             `json:"rank,omitempty"`
	Node        string           `json:"node,omitempty"`
	Time        *time.Time       `json:"time,omitempty"`
	Evidence    []Evidence       `json:"evidence"`
	Explanation string           `json:"explanation,omitempty"`
	Remediation string           `json:"remediation,omitempty"`
	Symptoms    int              `json:"symptoms"`
	Confidence  string           `json:"confidence"`
}

// MarshalJSON writes the contract's rootCause object. HTML characters are left as they are:
// an encoder that escapes them (json.Marshal) does so as it copies the result.
func (rc RootCause) MarshalJSON() ([]byte, error) {
	f := &rc.Finding
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(rootCauseJSON{FindingID: f.ID, Category: f.Category, RuleID: f.RuleID, Title: f.Title,
		Severity: f.Severity, Fault: f.Fault, Retry: f.Retry, Pod: f.Pod, Container: f.Container, Rank: f.Rank, Node: f.Node,
		Time: f.Time, Evidence: f.Evidence, Explanation: f.Explanation, Remediation: f.Remediation, Symptoms: rc.Symptoms,
		Confidence: string(rc.Confidence)})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// UnmarshalJSON reads the contract's rootCause object. The finding's layer and count are not
// part of it: they are those of the finding FindingID names.
func (rc *RootCause) UnmarshalJSON(data []byte) error {
	var v rootCauseJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*rc = RootCause{Finding: Finding{ID: v.FindingID, Category: v.Category, RuleID: v.RuleID, Title: v.Title,
		Severity: v.Severity, Fault: v.Fault, Retry: v.Retry, Pod: v.Pod, Container: v.Container, Rank: v.Rank, Node: v.Node,
		Time: v.Time, Evidence: v.Evidence, Explanation: v.Explanation, Remediation: v.Remediation}, Symptoms: v.Symptoms,
		Confidence: analyze.Confidence(v.Confidence)}
	return nil
}

// TimelineEntry is one moment of the job's life: a lifecycle change, an event or a finding.
type TimelineEntry struct {
	Time time.Time `json:"time"`
	// Kind is job, pod, container, event or finding.
	Kind      string `json:"kind"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	Text      string `json:"text"`
	// Severity and FindingID are set for a finding.
	Severity  string `json:"severity,omitempty"`
	FindingID string `json:"findingId,omitempty"`
	// Group is the pod group (PodGroup.ID) whose Count pods each had this entry, the first
	// at Time and the last at LastTime; Pod is then empty.
	Group    string     `json:"group,omitempty"`
	Count    int        `json:"count,omitempty"`
	LastTime *time.Time `json:"lastTime,omitempty"`
}

// LogSummary describes one scanned log.
type LogSummary struct {
	Path string `json:"path"`
	// FileName is the log's own name ("train.log") when it came as a plain file.
	FileName  string     `json:"fileName,omitempty"`
	Pod       string     `json:"pod"`
	Container string     `json:"container"`
	Previous  bool       `json:"previous,omitempty"`
	Bytes     int64      `json:"bytes"`
	Lines     int        `json:"lines"`
	First     *time.Time `json:"first,omitempty"`
	Last      *time.Time `json:"last,omitempty"`
	Truncated bool       `json:"truncated,omitempty"`
	Findings  int        `json:"findings"`
	// NodeAgent names the GPU agent (device-plugin, dcgm-exporter) whose log it is, on node
	// Node: evidence of that node, not a log of the job.
	NodeAgent string `json:"nodeAgent,omitempty"`
	Node      string `json:"node,omitempty"`
}

// findingOf is the contract's form of an analysis finding.
func findingOf(f *analyze.Finding) *Finding {
	out := findingLater(f)
	out.Evidence = evidenceOf(f.Evidence)
	return out
}

// findingLater is findingOf but its evidence, left to convert once the findings are folded: a
// folded finding keeps the evidence of MaxSamples of the findings it stands for.
func findingLater(f *analyze.Finding) *Finding {
	out := &Finding{ID: f.ID, RuleID: f.RuleID, Category: f.Category, Severity: f.Severity, Layer: f.Layer,
		Title: f.Title, Fault: f.Fault, Retry: f.Retry, Pod: f.Pod, Container: f.Container, Node: f.Node, Time: f.Time,
		Count: f.Count, SecondaryOf: f.SecondaryOf,
		Explanation: f.Explanation, Remediation: f.Remediation}
	if f.Rank >= 0 {
		rank := f.Rank
		out.Rank = &rank
	}
	return out
}

// evidenceOf converts evidence, keeping nil nil (the contract writes it as null).
func evidenceOf(evs []analyze.Evidence) []Evidence {
	if evs == nil {
		return nil
	}
	out := make([]Evidence, len(evs))
	for i, e := range evs {
		out[i] = Evidence{Source: e.Source, File: e.File, Line: e.Line, Time: e.Time, Text: e.Text,
			Before: contextOf(e.Before), After: contextOf(e.After), LastLine: e.LastLine, LastTime: e.LastTime}
		if e.Object != nil {
			ref := refOf(*e.Object)
			out[i].Object, out[i].ObjectRef = ref.String(), &ref
		}
	}
	return out
}

func contextOf(ls []analyze.ContextLine) []ContextLine {
	if ls == nil {
		return nil
	}
	out := make([]ContextLine, len(ls))
	for i, l := range ls {
		out[i] = ContextLine{Line: l.Line, Text: l.Text}
	}
	return out
}

func timelineEntryOf(e *analyze.TimelineEntry) TimelineEntry {
	out := TimelineEntry{Time: e.Time, Kind: e.Kind, Pod: e.Pod, Container: e.Container, Text: e.Text, FindingID: e.FindingID}
	if e.Severity != 0 {
		out.Severity = e.Severity.String()
	}
	return out
}

// Location is the log's name: its own for a plain file, else its bundle path.
func (l *LogSummary) Location() string {
	if l.FileName != "" {
		return l.FileName
	}
	return l.Path
}

func logOf(l *analyze.LogSummary) LogSummary {
	return LogSummary{Path: l.Path, Pod: l.Pod, Container: l.Container, Previous: l.Previous, Bytes: l.Bytes,
		Lines: l.Lines, First: l.First, Last: l.Last, Truncated: l.Truncated, Findings: l.Findings, NodeAgent: l.NodeAgent, Node: l.Node}
}
