package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// APIVersion is the version of the rule file schema, which every rule file states
// (`apiVersion: coroner.dev/rules/v1`). rules.schema.json is its JSON Schema.
const APIVersion = "coroner.dev/rules/v1"

// File is one rule file: its version, the defaults of its rules, `rules:`, a list of rules,
// `progress:`, the lines that show a training process advancing (which the streak and
// silence match kinds and the verdict of a job that succeeded read), and `facts:`.
type File struct {
	APIVersion string      `json:"apiVersion"`
	Defaults   *Defaults   `json:"defaults,omitempty"`
	Rules      []*Spec     `json:"rules,omitempty"`
	Progress   []*Progress `json:"progress,omitempty"`
	Facts      []*TextFact `json:"facts,omitempty"`
}

// Defaults are the values of the file's rules that do not set them. They apply to the
// rules the file defines, not to its overrides of rules loaded before it.
type Defaults struct {
	Severity string            `json:"severity,omitempty"`
	Layer    string            `json:"layer,omitempty"`
	Fault    string            `json:"fault,omitempty"`
	Retry    string            `json:"retry,omitempty"`
	Role     string            `json:"role,omitempty"`
	Enabled  *bool             `json:"enabled,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
}

// TextFact reads an object fact from a log line: a controller's or kubectl's rendering of a
// container's state ("Pod: ns.train-worker-0 exited with code 1", "back-off 40s restarting
// failed container=pytorch pod=..."), so that a pasted operator log is judged by the same
// object rules as the pod status itself. The pattern's named groups are the fact's fields,
// with group pod (and container) naming the pod; Set gives fields a fixed value. Facts of one
// pod are read together: a container's last exit code and its waiting reason meet.
type TextFact struct {
	ID string `json:"id"`
	// Enabled false leaves the entry out; an entry of only id and enabled turns the entry
	// of that id loaded before it off or on.
	Enabled  *bool             `json:"enabled,omitempty"`
	Kind     string            `json:"kind,omitempty"`
	Patterns []string          `json:"patterns,omitempty"`
	Set      map[string]string `json:"set,omitempty"`
	Examples Examples          `json:"examples,omitempty"`

	keys []string
}

// Spec is one rule as its file writes it, the file's defaults applied. The words of
// category, severity, layer, fault, retry and role are checked by analyze.LoadRules, which
// turns a Spec into a typed analyze.Rule.
type Spec struct {
	// ID is stable: reports, --rules overrides and the corpus name rules by it. Its prefix
	// up to the first "/" is the rule's category unless Category says otherwise.
	ID string `json:"id"`
	// Category is needed only when the id's prefix is not the category (site/quota: disk-full).
	Category string `json:"category,omitempty"`
	Severity string `json:"severity,omitempty"`
	Layer    string `json:"layer,omitempty"`
	// Title may hold {name} placeholders filled from the pattern's named groups (or the
	// fields of the object, or what a streak, sequence or silence found).
	Title string `json:"title,omitempty"`
	Fault string `json:"fault,omitempty"`
	Retry string `json:"retry,omitempty"`
	// Role says how a finding takes part in choosing the root cause: primary (the default),
	// secondary (a symptom of another failure), generic (that a process failed, not why),
	// fallback (a catch-all that yields to every other rule matching the same message), and
	// secondary-fallback and generic-fallback, which also yield.
	Role string `json:"role,omitempty"`
	// NamesNoCause marks a symptom (role secondary or secondary-fallback) whose words name
	// no cause of its own: a peer gone, a collective shut down, a launcher's abort summary.
	// As the root cause of a log that does not show the cause it is said with medium
	// confidence, not high (docs/rules.md).
	NamesNoCause bool `json:"namesNoCause,omitempty"`
	// Enabled false leaves the rule out of the rule set (it is still checked).
	Enabled *bool `json:"enabled,omitempty"`
	// Labels are free-form metadata: shown, never interpreted.
	Labels map[string]string `json:"labels,omitempty"`
	// Override makes the entry a change to the rule of the same id loaded before it (a
	// built-in rule, or one of an earlier directory): each field named is replaced or
	// appended to (see Apply), the others are kept.
	Override map[string]string `json:"override,omitempty"`
	// RootOnlyIf states when the failure has visible consequences: the finding is a root
	// cause only while the pod it is about meets these conditions (fields of the pod
	// object kind: scheduled, imagesPulled, started...). When the pod shows otherwise (it was
	// scheduled later, its container ran), the finding is lowered to a warning marked
	// "resolved later".
	RootOnlyIf Where `json:"rootOnlyIf,omitempty"`
	// ExplainsOnNode lists the categories of failures that a finding of this rule about a
	// node (its conditions, events, GPUs, or the log of a pod on it) explains in the pods
	// that ran there: a GPU fault explains the CUDA and NCCL errors of its pods. Such a
	// finding, seen before the failure (or up to ten minutes after), becomes the root cause.
	ExplainsOnNode []string `json:"explainsOnNode,omitempty"`
	Match          Match    `json:"match,omitempty"`
	Explanation    string   `json:"explanation,omitempty"`
	Remediation    string   `json:"remediation,omitempty"`
	Examples       Examples `json:"examples,omitempty"`

	// keys are the fields the file wrote, sorted: what an override entry sets.
	keys []string
}

// Match says what a rule matches. A rule has one kind of match: patterns (with
// eventReasons), object, streak, sequence or silence.
type Match struct {
	// Patterns are RE2 expressions matched against log lines (without their launcher
	// prefixes) and against the messages of events, pod conditions, pod status and container
	// states.
	Patterns []string `json:"patterns,omitempty"`
	// Unless, with patterns, are RE2 expressions of lines the rule does not name although a
	// pattern matches them: the forms another, more specific rule names (a build tool's
	// missing executable, not a missing file). A line one of them matches is no finding of
	// the rule; they run only on lines a pattern matched.
	Unless []string `json:"unless,omitempty"`
	// EventReasons restrict the rule, for events, to these reasons; with no patterns the
	// reason alone matches.
	EventReasons []string `json:"eventReasons,omitempty"`
	// Restate, with patterns, is a line to classify as well, built from the match's groups:
	// a message that names its cause by a code (an Xid 45 "caused by previous Xid 149") is
	// also a finding of whatever rule that code's own line would match ("NVRM: Xid
	// (PCI:{pci}): {cause}"). Used only when every placeholder has a value.
	Restate string `json:"restate,omitempty"`
	// Object matches a fact coroner reads from the Kubernetes objects (a container's end, a
	// waiting reason, a condition of a pod, job or node, a spec check).
	Object *Object `json:"object,omitempty"`
	// Streak matches the same condition on consecutive lines of one process.
	Streak *Streak `json:"streak,omitempty"`
	// Sequence compares the collectives each rank reports, to name the rank that is behind.
	Sequence *Sequence `json:"sequence,omitempty"`
	// Silence matches progress that stops without an error.
	Silence *Silence `json:"silence,omitempty"`
}

// Object matches one fact of a kind (container-terminated, container-waiting, pod, ...;
// docs/rules.md lists them with their fields) whose fields meet every condition of Where.
type Object struct {
	Kind  string `json:"kind"`
	Where Where  `json:"where,omitempty"`
}

// Where maps a field to its condition.
type Where map[string]Cond

// Cond is a condition on one field: a value ("OOMKilled", 137, true), alternatives
// ("ErrImagePull|ImagePullBackOff"), a negation ("!OOMKilled", "!0"), a range of numbers
// ("129-159") or a comparison (">=3", "<=8", ">0", "<1").
type Cond string

// UnmarshalJSON takes a string, a number or a boolean.
func (c *Cond) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Cond(s)
		return nil
	}
	s := string(b)
	if s == "true" || s == "false" {
		*c = Cond(s)
		return nil
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return fmt.Errorf("condition %s is not a string, a number or a boolean", s)
	}
	*c = Cond(s)
	return nil
}

// Streak matches the same condition on consecutive lines of one process: `min` lines that
// match `patterns` with no line matching `recover` between them (other lines do not count).
// A single fp16 overflow skip is not a streak.
type Streak struct {
	// Patterns: a line that shows the condition ("grad_norm: nan", "Attempted loss scale: 4,
	// reducing to 2").
	Patterns []string `json:"patterns"`
	// Recover: a line that ends a streak (a finite grad_norm, the loss scale growing).
	Recover []string `json:"recover,omitempty"`
	// Min is how many condition lines in a row make the finding.
	Min int `json:"min"`
	// Last: conditions on the named groups of the streak's last line (scale: "<=8").
	Last Where `json:"last,omitempty"`
	// Falling names a group whose value must not rise from one condition line to the next:
	// a rise is a recovery (a loss scale that grew again between two overflows).
	Falling string `json:"falling,omitempty"`
	// ToEnd: the streak lasts to the end of the log (no recovering line after it).
	ToEnd bool `json:"toEnd,omitempty"`
	// Progress: only progress lines (see File.Progress) count, so that an error message
	// that repeats the words ("loss nan at step 3120") is not a step.
	Progress bool `json:"progress,omitempty"`
}

// Sequence compares, across ranks, the collectives they report: lines matching Patterns
// carry the collective's sequence number (group seq) and operation (group op), and the rank
// when the line names it (group rank; else the launcher prefix or the pod's rank). The rank
// that is behind the others, or that never reported while the others did, is the culprit.
// Lines matching Culprit name it directly (group rank, or ranks: a list such as "3, 7").
type Sequence struct {
	Patterns []string `json:"patterns"`
	Culprit  []string `json:"culprit,omitempty"`
}

// Silence matches progress (the file's progress lines) that stops without an error.
type Silence struct {
	// Scope "rank": a process's progress stops while another goes on for at least
	// `periods` more progress lines, to a later step, over at least `periods` step periods
	// and `atLeast` when the lines have times. Scope "job": every process's last progress
	// line is older than `periods` progress periods (and at least `atLeast`) when the bundle
	// was collected, while the job was still running.
	Scope   string `json:"scope"`
	Periods int    `json:"periods"`
	// AtLeast is a duration ("15m"): the shortest stall either scope reports.
	AtLeast string `json:"atLeast,omitempty"`
}

// Progress is a kind of line that shows a training process advancing: a step counter, a
// progress bar, a loss line. Group step, when the pattern has it, is the step number.
type Progress struct {
	ID string `json:"id"`
	// Enabled false leaves the entry out; an entry of only id and enabled turns the entry
	// of that id loaded before it off or on.
	Enabled  *bool    `json:"enabled,omitempty"`
	Patterns []string `json:"patterns,omitempty"`
	Examples Examples `json:"examples,omitempty"`

	keys []string
}

// Examples are what a rule must and must not match; `coroner rules lint` runs them.
type Examples struct {
	Match    []Example `json:"match,omitempty"`
	NotMatch []Example `json:"notMatch,omitempty"`
}

// Example is one example. Written as a string it is a line (pattern rules) or a log, one
// line each, launcher prefixes and timestamps allowed (streak, sequence, silence). Written
// as an object it may also give, for silence, when the bundle was collected and the job's
// phase then, and for object rules the fact's fields.
type Example struct {
	Text        string `json:"log,omitempty"`
	CollectedAt string `json:"collectedAt,omitempty"`
	JobPhase    string `json:"jobPhase,omitempty"`
	Object      Where  `json:"object,omitempty"`
}

// UnmarshalJSON takes a string or an object.
func (e *Example) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &e.Text)
	}
	type plain Example
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("example: %w", err)
	}
	*e = Example(p)
	return nil
}

// MarshalJSON writes a plain example as a string.
func (e Example) MarshalJSON() ([]byte, error) {
	if e.CollectedAt == "" && e.JobPhase == "" && e.Object == nil {
		return json.Marshal(e.Text)
	}
	type plain Example
	return json.Marshal(plain(e))
}
