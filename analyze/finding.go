package analyze

import (
	"slices"
	"strconv"
	"time"
)

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
	// Rank is the global rank of the process the finding is about, or -1 when nothing says
	// (a launcher prefix, the pod's RANK).
	Rank int
	// Node is the node the finding is about, when it is about one (a node condition or
	// event, a GPU fault of the node a pod ran on).
	Node string
	// Time is when it was first seen; nil when nothing dates it.
	Time *time.Time
	// Count is how many times it was seen (log lines, event repeats).
	Count    int
	Evidence []Evidence
	// SecondaryOf names the finding this one follows from.
	SecondaryOf string
	Explanation string
	Remediation string

	// The flags come together: a Finding is made for every container at 200,000 containers,
	// and bools between pointers each take a word (416 -> 384 bytes a Finding).

	// symptom: the rule says this message usually follows another failure.
	symptom bool
	// generic: the finding says that something failed, not why (an abort, a launcher's
	// summary, a non-zero exit, a Failed condition): a specific finding of the same process
	// explains it, wherever it was printed.
	generic bool
	// fallback: a catch-all (any Python exception): a specific finding of the same process
	// explains it, and on another pod after a failure it is most likely a consequence.
	fallback bool
	// derived: the finding names a process from what others reported (the rank a collective
	// waited for): a failure that process shows itself explains it.
	derived bool
	// fromDumps: the finding comes from the flight recorder dumps, which see every rank's
	// collectives: it explains a finding derived from the logs about the same process.
	fromDumps bool
	// noProgressAfter: in a job that succeeded, its process showed training progress before
	// it and none after (it was not recovered from).
	noProgressAfter bool
	// restarted: the progress that recovered from the finding came after a restart;
	// groupRestart: a restart of the worker group that an elastic agent logged (recovery.go).
	restarted, groupRestart bool
	// retried: the finding's last line, or one of the few lines after it, says that what failed
	// is tried again (recovery.go, announcesRetry); retriedPast: training went on after that.
	retried, retriedPast bool
	// rankNamed: the line itself names the rank it is about (a launcher's "process rank 3
	// ... exited on signal 11"), not only the log it is in.
	rankNamed bool
	// nodeEvidence: the finding is a node's own (a node condition or event, a line of a GPU
	// agent's log on the node), not a pod's; context: such a finding of a GPU fault that does
	// not line up in time with the failures on its node (nodeContext).
	nodeEvidence, context bool
	// startedLater: a log line after the finding's last says its pod's container was created
	// (a pasted event): the start-up wait it is about ended (recovered.go).
	startedLater bool
	// leftover: the finding is of Evicted rows of a pasted kubectl listing in which other
	// workloads' pods run: evicted pods stay listed until collected (recovered.go).
	leftover bool
	// runsLater: the finding is of a pasted listing's rows of a pod that failed to run (Error,
	// CrashLoopBackOff) which a later row of the same listing or watch lists Running with
	// every container ready: its restart got past it (recovered.go).
	runsLater bool
	// trainedPast: the finding is of rows of a pasted listing of nodes or of a batch queue, or
	// a scheduling refusal, with training progress after them in its log (recovered.go).
	trainedPast bool
	// scheduledPast: the finding is a scheduling refusal and a later line of its log, a
	// kubectl describe or YAML status field, says the pod or its pod group runs (recovered.go).
	scheduledPast bool
	// skipped: the finding's out-of-memory error was caught, its batch skipped, and nothing
	// failed in its log after that (recovered.go).
	skipped bool
	// recovered, for a streak's finding, is the line where its process showed a good value
	// again (a finite loss after the NaNs, a loss scale that grew); nil while nothing after the
	// streak's last bad line did. For another finding, the first progress its process (or its
	// container after a restart) made past it, when training went on (see recoveredByRestart).
	recovered *mark
	// rule is the rule that made the finding.
	rule *Rule
	// waitPrinted is the longest wait (kubectl's ages, "(x25 over 116s)") that the lines of a
	// finding about waiting to start print, also those after its first, which only count it.
	waitPrinted time.Duration
	// order keeps findings of one stream in line order when times are equal or missing.
	order int
	// log is the log file of a log finding and stream the process within it that printed
	// the first line (a launcher prefix: "rank 3", "pid 123"), "" when the log is one
	// process or the line had no prefix; streams lists every process that printed one.
	log, stream string
	streams     []string
	// at orders findings in time: the finding's time, or for a log line without one the
	// first time its log showed later; never earlier than a line before it in the same log.
	at *time.Time
	// step is the last training step its stream had reached when the finding's line was
	// printed, or -1: logs without times are ordered by how far each rank got.
	step int64
}

// Source says what a piece of evidence was read from.
type Source string

const (
	SourceLog   Source = "log"   // a container's log line
	SourceEvent Source = "event" // a Kubernetes Event
	SourcePod   Source = "pod"   // a pod's status
	SourceJob   Source = "job"   // the job's status
	SourceNode  Source = "node"  // a node's conditions
	SourceSpec  Source = "spec"  // a spec field (a pod's, a runtime's)
)

// ObjectRef names a Kubernetes object; Namespace is empty for cluster-scoped kinds.
type ObjectRef struct {
	Kind, Namespace, Name string
}

// String is "Kind namespace/name", or "Kind name" when cluster-scoped.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Place is where a finding happened, as a verdict names it.
type Place struct {
	// Pod and Container, or File alone: the name a plain log came with.
	Pod, Container, File string
	// Job is the job's reference when the finding has no pod.
	Job string
	// Rank is -1 when unknown; Node is "" when unknown.
	Rank int
	Node string
}

// String is the place as a verdict names it: "pod/container, rank 3, node n1" (the file
// for a plain log, the job without a pod).
func (p Place) String() string {
	where := p.Pod
	if p.Container != "" {
		where += "/" + p.Container
	}
	if p.File != "" {
		where = p.File
	}
	if where == "" {
		where = p.Job
	}
	if p.Rank >= 0 {
		where += ", rank " + strconv.Itoa(p.Rank)
	}
	if p.Node != "" {
		where += ", node " + p.Node
	}
	return where
}

// Evidence points into the bundle.
type Evidence struct {
	Source Source
	// File is the bundle path (for log evidence, the log; otherwise the resource file).
	File string
	Line int
	Time *time.Time
	// Object is the Kubernetes object of non-log evidence (nil for a log line).
	Object *ObjectRef
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
	return newTitled(r, r.TitleFor(g))
}

// newTitled is newFinding with its title made.
func newTitled(r *Rule, title string) *Finding {
	return &Finding{
		RuleID: r.ID, Category: r.Category, Severity: r.Severity, Layer: r.Layer, Title: title,
		Fault: r.Fault, Retry: r.Retry, Count: 1, Explanation: r.Explanation, Remediation: r.Remediation,
		symptom: r.Role.Secondary(), generic: r.Role.Generic(), fallback: r.Role.Fallback(), Rank: -1, step: -1, rule: r,
	}
}

// maxStreams bounds how many processes a finding remembers.
const maxStreams = 1024

// addStream records that a process printed one of the finding's lines.
func (f *Finding) addStream(s string) {
	if len(f.streams) < maxStreams && !slices.Contains(f.streams, s) {
		f.streams = append(f.streams, s)
	}
}

// shareStream says whether two findings of one log may be about the same process: a line
// without a prefix (stream "") may be any process's.
func shareStream(f, g *Finding) bool {
	if len(f.streams) == 0 || len(g.streams) == 0 {
		return true
	}
	for _, s := range f.streams {
		if s == "" || slices.Contains(g.streams, s) || slices.Contains(g.streams, "") {
			return true
		}
	}
	return false
}

// timePtrs is timePtr of two times, made in one allocation when both are set (a log's
// first and last time: 200,000 logs have as many), one pointer when they are the same (a
// log of one line; nothing writes through them).
func timePtrs(t, u time.Time) (*time.Time, *time.Time) {
	if t.IsZero() || u.IsZero() {
		return timePtr(t), timePtr(u)
	}
	if t == u {
		p := timePtr(t)
		return p, p
	}
	both := &[2]time.Time{t.UTC(), u.UTC()}
	return &both[0], &both[1]
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
