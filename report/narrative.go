package report

import "fmt"

// Narrative is the optional narrative of a local model (coroner analyze --llm), the report's
// "llm" object; null when no LLM step ran. When there is no narrative, Failure says why and
// the rest of the report stands.
type Narrative struct {
	Model string `json:"model"`
	// PerRole is true when each role's diagnosis was asked first (map), then the job's
	// (reduce): asked for, or chosen because the job's findings and log windows did not fit.
	PerRole bool `json:"perRole"`
	// ModelDigest identifies the model's weights, as the server lists them.
	ModelDigest string     `json:"modelDigest"`
	Prompt      PromptInfo `json:"prompt"`
	// Roles are the per-role diagnoses the prompt carried (the seed's MasterDiagnosis,
	// WorkerDiagnosis...): from the findings, or from the model with --llm-per-role.
	Roles []RoleDiagnosis `json:"roles"`
	// Healthy, Error, Analysis and Solution are the seed document's answer fields, parsed
	// from the model's answer; Healthy is null when the answer did not say.
	Healthy  *bool    `json:"healthy"`
	Error    string   `json:"error"`
	Analysis string   `json:"analysis"`
	Solution []string `json:"solution"`
	// Raw is the model's answer as it came.
	Raw string `json:"raw"`
	// AnswerFormat is how the answer was parsed: "json" (the schema asked for), "text" (the
	// "Healthy: / Error: / Analysis: / Solution:" form), or "" when neither parsed.
	AnswerFormat string `json:"answerFormat"`
	// DoneReason is the server's reason to stop: "stop", or "length" when cut at the limit.
	DoneReason string `json:"doneReason,omitempty"`
	// Cached is true when the answer came from the answer cache or a replay file, not a call.
	Cached  bool   `json:"cached"`
	Failure string `json:"failure,omitempty"`
}

// PromptInfo says what was sent: the template, the prompt's hash and size, and which parts of
// the bundle it carried.
type PromptInfo struct {
	Template string `json:"template"`
	Version  string `json:"version"`
	// Source is "built-in" or the override file.
	Source string `json:"source"`
	// Hash is the sha256 of the messages sent (after redaction).
	Hash string `json:"hash"`
	// Tokens is coroner's estimate of the prompt's tokens (the chat template's included),
	// made before the call; ActualTokens is the model's own count (Ollama's
	// prompt_eval_count), 0 until a model has answered this prompt.
	Tokens       int `json:"tokens"`
	ActualTokens int `json:"actualTokens,omitempty"`
	NumCtx       int `json:"numCtx"`
	// NumPredict is the answer's budget: the prompt may have NumCtx-NumPredict tokens.
	NumPredict int `json:"numPredict"`
	Bytes      int `json:"bytes"`
	// Included lists the bundle's parts in the prompt, most relevant first (the order they
	// were chosen in); Omitted counts the candidates left out to fit the context, and
	// LeftOut counts them by kind.
	Included []PromptPart `json:"included"`
	Omitted  int          `json:"omitted"`
	LeftOut  []PartCount  `json:"leftOut,omitempty"`
}

// Cut reports whether parts were shortened or left out to fit the context.
func (p PromptInfo) Cut() bool {
	if p.Omitted > 0 {
		return true
	}
	for _, in := range p.Included {
		if in.Shortened {
			return true
		}
	}
	return false
}

// PartCount is how many parts of a kind.
type PartCount struct {
	Kind  PartKind `json:"kind"`
	Count int      `json:"count"`
}

// PromptPart is one part of the bundle in the prompt.
type PromptPart struct {
	Kind PartKind `json:"kind"`
	// Ref names it: finding ids, "file:from-to" for log lines, the event's object and reason,
	// the timeline entry's time and place.
	Ref   string `json:"ref"`
	Bytes int    `json:"bytes"`
	// Shortened is true when the part went in cut to fit: a finding with one evidence line,
	// a log window narrowed around its evidence line, a shorter message.
	Shortened bool `json:"shortened,omitempty"`
}

// PartKind is what a part of the prompt is. Its JSON is the kind's name.
type PartKind int

// The kinds of prompt parts.
const (
	// PartFinding is a finding with its evidence lines (or the same failure on several pods).
	PartFinding PartKind = iota + 1
	// PartLog is a window of consecutive lines of one log.
	PartLog
	// PartEvent is a warning event.
	PartEvent
	// PartTimeline is a lifecycle moment of the job or a pod.
	PartTimeline
	// PartRole is one role's diagnosis (the seed's MasterDiagnosis, WorkerDiagnosis...).
	PartRole
)

// partKinds describes each kind, indexed by PartKind.
var partKinds = [...]struct {
	name string
	// counted kinds are many small parts: summaries count them instead of naming each.
	counted bool
}{
	PartFinding:  {name: "finding"},
	PartLog:      {name: "log"},
	PartEvent:    {name: "event", counted: true},
	PartTimeline: {name: "timeline", counted: true},
	PartRole:     {name: "role"},
}

// PartKinds lists the kinds in their summary order.
func PartKinds() []PartKind {
	return []PartKind{PartFinding, PartRole, PartLog, PartEvent, PartTimeline}
}

// Plural names n parts of the kind: "1 finding", "3 log windows", "12 timeline entries".
func (k PartKind) Plural(n int) string {
	name := map[PartKind][2]string{
		PartFinding: {"finding", "findings"}, PartLog: {"log window", "log windows"},
		PartEvent: {"warning event", "warning events"}, PartTimeline: {"timeline entry", "timeline entries"},
		PartRole: {"role diagnosis", "role diagnoses"},
	}[k]
	if name[0] == "" {
		return fmt.Sprintf("%d %s", n, k)
	}
	if n == 1 {
		return "1 " + name[0]
	}
	return fmt.Sprintf("%d %s", n, name[1])
}

func (k PartKind) valid() bool { return k > 0 && int(k) < len(partKinds) }

func (k PartKind) String() string {
	if !k.valid() {
		return fmt.Sprintf("PartKind(%d)", int(k))
	}
	return partKinds[k].name
}

// Counted reports whether summaries count parts of this kind rather than name each one.
func (k PartKind) Counted() bool { return k.valid() && partKinds[k].counted }

// MarshalText writes the kind's name.
func (k PartKind) MarshalText() ([]byte, error) {
	if !k.valid() {
		return nil, fmt.Errorf("no prompt part kind %d", int(k))
	}
	return []byte(partKinds[k].name), nil
}

// UnmarshalText reads a kind's name.
func (k *PartKind) UnmarshalText(b []byte) error {
	for _, c := range PartKinds() {
		if partKinds[c].name == string(b) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("unknown prompt part kind %q", b)
}

// PartSummary is one line of what a prompt carried: one part by name, or all the parts of a
// counted kind.
type PartSummary struct {
	Kind PartKind
	// Ref names the part; empty for a counted kind.
	Ref string
	// Count is how many parts the line stands for; Bytes how much they added to the prompt.
	Count, Bytes int
}

// String reads "finding f1", "log logs/ml/x/pytorch.log:36-66" or "3 warning events".
func (s PartSummary) String() string {
	if s.Kind.Counted() {
		return s.Kind.Plural(s.Count)
	}
	return s.Kind.String() + " " + s.Ref
}

// SummarizeParts says what a prompt carried, as --dry-run-prompt and the Markdown report show
// it: parts of named kinds one by one in the order they were chosen, then each counted kind
// (events, timeline entries) as one line.
func SummarizeParts(parts []PromptPart) []PartSummary {
	var out []PartSummary
	counted := map[PartKind]*PartSummary{}
	for _, p := range parts {
		if !p.Kind.Counted() {
			out = append(out, PartSummary{Kind: p.Kind, Ref: p.Ref, Count: 1, Bytes: p.Bytes})
			continue
		}
		c := counted[p.Kind]
		if c == nil {
			c = &PartSummary{Kind: p.Kind}
			counted[p.Kind] = c
		}
		c.Count++
		c.Bytes += p.Bytes
	}
	for _, k := range PartKinds() {
		if c := counted[k]; c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// RoleDiagnosis is one role's diagnosis.
type RoleDiagnosis struct {
	Role      string `json:"role"`
	Diagnosis string `json:"diagnosis"`
	// Source is "findings" (coroner's summary) or "model".
	Source string `json:"source"`
	Cached bool   `json:"cached,omitempty"`
	// Prompt is what the role's question sent, when the model was asked (per-role mode).
	Prompt *PromptInfo `json:"prompt,omitempty"`
}
