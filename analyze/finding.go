package analyze

import (
	"strconv"
	"time"
)

// Finding is one thing that went wrong (or looks wrong), with the evidence that shows it.
// Its JSON names are part of the report contract.
type Finding struct {
	ID          string     `json:"id"`
	RuleID      string     `json:"ruleId"`
	Category    string     `json:"category"`
	Severity    Severity   `json:"severity"`
	Layer       Layer      `json:"layer"`
	Title       string     `json:"title"`
	Fault       string     `json:"fault"`
	Retry       string     `json:"retry"`
	Pod         string     `json:"pod,omitempty"`
	Container   string     `json:"container,omitempty"`
	Time        *time.Time `json:"time,omitempty"`
	Count       int        `json:"count"`
	Evidence    []Evidence `json:"evidence"`
	SecondaryOf string     `json:"secondaryOf,omitempty"`
	Explanation string     `json:"explanation,omitempty"`
	Remediation string     `json:"remediation,omitempty"`

	// symptom: the rule says this message usually follows another failure.
	symptom bool
	// weak: a generic fact (a non-zero exit, a Failed condition, a restart count) that a more
	// specific finding of the same pod or container explains.
	weak bool
	// generic: a fallback rule's catch-all (any Python exception); on another pod after a
	// failure it is most likely a consequence.
	generic bool
	// order keeps findings of one stream in line order when times are equal or missing.
	order int
}

// Evidence points into the bundle.
type Evidence struct {
	// Source is log, event, pod, job, node or spec.
	Source string `json:"source"`
	// File is the bundle path (for log evidence, the log; otherwise the resource file).
	File string     `json:"file,omitempty"`
	Line int        `json:"line,omitempty"`
	Time *time.Time `json:"time,omitempty"`
	// Object names the Kubernetes object for non-log evidence ("Pod ml/train-job-worker-0").
	Object string        `json:"object,omitempty"`
	Text   string        `json:"text"`
	Before []ContextLine `json:"before,omitempty"`
	After  []ContextLine `json:"after,omitempty"`
	// LastLine and LastTime say where a repeated match was last seen.
	LastLine int        `json:"lastLine,omitempty"`
	LastTime *time.Time `json:"lastTime,omitempty"`
}

// ContextLine is a log line around an evidence line.
type ContextLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Location is "file:line" for log evidence, the object otherwise.
func (e *Evidence) Location() string {
	if e.File != "" && e.Line > 0 {
		return e.File + ":" + strconv.Itoa(e.Line)
	}
	if e.Object != "" {
		return e.Object
	}
	return e.File
}

func newFinding(r *Rule, g map[string]string) *Finding {
	return &Finding{
		RuleID: r.ID, Category: r.Category, Severity: r.Severity, Layer: r.Layer, Title: r.TitleFor(g),
		Fault: r.Fault, Retry: r.Retry, Count: 1, Explanation: r.Explanation, Remediation: r.Remediation,
		symptom: r.Secondary, generic: r.Fallback,
	}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
