package rules

import (
	"errors"
	"strings"

	"sigs.k8s.io/yaml"
)

// File is one rule file: `rules:` and a list of rules.
type File struct {
	Rules []*Spec `json:"rules"`
}

// Spec is one rule as its file writes it. The words of category, severity, layer, fault and
// retry are checked by analyze.LoadRules, which turns a Spec into a typed analyze.Rule.
type Spec struct {
	// ID is stable: reports, --rules overrides and the corpus name rules by it.
	ID       string `json:"id"`
	Category string `json:"category"`
	Severity string `json:"severity"`
	Layer    string `json:"layer"`
	// Title may hold {name} placeholders filled from the pattern's named groups.
	Title string `json:"title"`
	Fault string `json:"fault"`
	Retry string `json:"retry"`
	// Secondary marks messages that are usually symptoms of another rank's failure.
	Secondary bool `json:"secondary,omitempty"`
	// Fallback rules report a line only when no other rule matched it.
	Fallback    bool     `json:"fallback,omitempty"`
	Match       Match    `json:"match"`
	Explanation string   `json:"explanation"`
	Remediation string   `json:"remediation"`
	Examples    Examples `json:"examples,omitempty"`
}

// Match says what a rule matches.
type Match struct {
	// Patterns are RE2 expressions matched against log lines and against the messages of
	// events, pod conditions, pod status and container states.
	Patterns []string `json:"patterns,omitempty"`
	// EventReasons restrict the rule, for events, to these reasons; with no patterns the
	// reason alone matches.
	EventReasons []string `json:"eventReasons,omitempty"`
	// Builtin names a check written in Go (exit codes, replica counts, spec checks); the
	// rule then supplies its metadata.
	Builtin string `json:"builtin,omitempty"`
}

// Examples are lines a rule must and must not match; `coroner rules lint` runs them.
type Examples struct {
	Match    []string `json:"match,omitempty"`
	NotMatch []string `json:"notMatch,omitempty"`
}

// Decode reads a rule file strictly: an unknown field or a value of the wrong type is an
// error (its first line, without the decoder's noise).
func Decode(data []byte) (*File, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return nil, errors.New(msg)
	}
	return &f, nil
}
