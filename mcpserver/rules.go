package mcpserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/diagnose"
)

// RulesIn names a rule, or filters the list.
type RulesIn struct {
	ID       string `json:"id,omitempty" jsonschema:"a rule id (a finding's ruleId): the rule whole"`
	Category string `json:"category,omitempty" jsonschema:"only rules of this category"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous page"`
}

// RuleSummary is a rule in the list.
type RuleSummary struct {
	ID       string `json:"id"`
	Kind     string `json:"kind" jsonschema:"what the rule matches: pattern, event, object, streak, sequence, silence; progress and fact entries are not failures"`
	Category string `json:"category,omitempty"`
	Severity string `json:"severity,omitempty"`
	Title    string `json:"title"`
}

// Rule is one rule whole.
type Rule struct {
	RuleSummary
	Layer        string            `json:"layer,omitempty"`
	Fault        string            `json:"fault,omitempty"`
	Retry        string            `json:"retry,omitempty"`
	Role         string            `json:"role,omitempty" jsonschema:"primary, secondary (usually a symptom of another rank's failure), generic (says a process failed, not why), fallback"`
	Source       string            `json:"source,omitempty" jsonschema:"the file the rule came from"`
	Labels       map[string]string `json:"labels,omitempty"`
	Patterns     []string          `json:"patterns,omitempty"`
	EventReasons []string          `json:"eventReasons,omitempty"`
	// Matches holds the rule's other kinds of match (object, streak, sequence, silence) as
	// the rule file writes them, in JSON.
	Matches     []string `json:"matches,omitempty"`
	Explanation string   `json:"explanation,omitempty"`
	Remediation string   `json:"remediation,omitempty"`
	Examples    []string `json:"examples,omitempty" jsonschema:"lines (or facts) it must match"`
	NotExamples []string `json:"notExamples,omitempty" jsonschema:"lines it must not match"`
}

// RulesOut is a page of the rule list, or one rule.
type RulesOut struct {
	Rules []RuleSummary `json:"rules"`
	Rule  *Rule         `json:"rule,omitempty"`
	Page
}

func ruleSummary(r *analyze.Rule) RuleSummary {
	rs := RuleSummary{ID: r.ID, Kind: r.Kind(), Title: r.Title}
	if rs.Kind != "progress" && rs.Kind != "fact" {
		rs.Category, rs.Severity = string(r.Category), r.Severity.String()
	}
	return rs
}

func (s *Server) rules(in RulesIn) (RulesOut, error) {
	set := s.opts.Diagnose.Rules
	if in.ID != "" {
		r := set.Rule(in.ID)
		if r == nil {
			var near []string
			for _, o := range set.Rules() {
				if strings.Contains(o.ID, in.ID) || strings.HasPrefix(in.ID, string(o.Category)+"/") {
					near = append(near, o.ID)
				}
			}
			if len(near) > 0 {
				return RulesOut{}, fmt.Errorf("no rule %q (did you mean %s?)", in.ID, diagnose.ListSome(near, 6))
			}
			return RulesOut{}, fmt.Errorf("no rule %q: rules without an id lists them", in.ID)
		}
		return RulesOut{Rules: []RuleSummary{}, Rule: ruleWhole(r)}, nil
	}
	var all []RuleSummary
	for _, r := range set.Rules() {
		if in.Category == "" || string(r.Category) == in.Category {
			all = append(all, ruleSummary(r))
		}
	}
	slices.SortFunc(all, func(a, b RuleSummary) int { return strings.Compare(a.ID, b.ID) })
	items, pg, err := page(all, cursor{"rules", RulesIn{Category: in.Category}}, in.Cursor, 500, s.opts.MaxBytes, "rules")
	return RulesOut{Rules: items, Page: pg}, err
}

func ruleWhole(r *analyze.Rule) *Rule {
	out := &Rule{RuleSummary: ruleSummary(r), Source: r.Source, Patterns: r.Match.Patterns, EventReasons: r.Match.EventReasons,
		Explanation: strings.TrimSpace(r.Explanation), Remediation: strings.TrimSpace(r.Remediation), Role: string(r.Role)}
	if out.Category != "" {
		out.Layer, out.Fault, out.Retry = string(r.Layer), string(r.Fault), string(r.Retry)
	}
	if len(r.Labels) > 0 {
		out.Labels = maps.Clone(r.Labels)
	}
	for _, m := range []struct {
		name string
		v    any
		set  bool
	}{{"object", r.Match.Object, r.Match.Object != nil}, {"streak", r.Match.Streak, r.Match.Streak != nil},
		{"sequence", r.Match.Sequence, r.Match.Sequence != nil}, {"silence", r.Match.Silence, r.Match.Silence != nil}} {
		if b, err := json.Marshal(m.v); err == nil && m.set {
			out.Matches = append(out.Matches, m.name+": "+string(b))
		}
	}
	for _, e := range r.Examples.Match {
		out.Examples = append(out.Examples, example(e))
	}
	for _, e := range r.Examples.NotMatch {
		out.NotExamples = append(out.NotExamples, example(e))
	}
	return out
}

func example(e interface{ MarshalJSON() ([]byte, error) }) string {
	b, err := e.MarshalJSON()
	if err != nil {
		return ""
	}
	var text string
	if json.Unmarshal(b, &text) == nil {
		return text
	}
	return string(b)
}
