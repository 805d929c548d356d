package analyze

import "time"

// Finding is one thing that went wrong (or looks wrong), with the evidence that shows it.
// report.Finding is its form in the JSON contract.
type Finding struct {
	// ID is f1, f2... in the order of the findings (see Result.Findings).
	ID       string
	RuleID   string
	Category Category
	Severity Severity
	Layer    Layer
	Title    string
	Fault    Fault
	Retry    Retry
	// Pod and Container say where, when the finding is about one ("" for the job).
	Pod, Container string
	// Time is when it was first seen; nil when nothing dates it.
	Time *time.Time
	// Count is how many times it was seen (log lines, event repeats).
	Count    int
	Evidence []Evidence
	// SecondaryOf names the finding this one follows from.
	SecondaryOf string
	Explanation string
	Remediation string

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
	Source string
	// File is the bundle path (for log evidence, the log; otherwise the resource file).
	File string
	Line int
	Time *time.Time
	// Object names the Kubernetes object for non-log evidence ("Pod ml/train-job-worker-0").
	Object string
	Text   string
	// Before and After are the log lines around Line.
	Before, After []ContextLine
	// LastLine and LastTime say where a repeated match was last seen.
	LastLine int
	LastTime *time.Time
}

// ContextLine is a log line around an evidence line.
type ContextLine struct {
	Line int
	Text string
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
