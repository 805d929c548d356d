package analyze

import (
	"fmt"
	"sort"
	"strings"

	"github.com/coroner-dev/coroner/rules"
)

// Resolve joins rule lists, each a directory's (the built-in rules first, then each --rules
// directory in order), as Falco joins rule files. An entry whose id is new adds a rule; a
// full rule with the id of an earlier list's replaces it whole; an override entry changes
// the fields it names of the rule of that id loaded before it; an entry of only id and
// enabled turns that rule off or on. Within one list an id appears once. The result is
// sorted by id and holds disabled rules (NewRuleSet leaves them out).
func Resolve(lists ...[]*Rule) ([]*Rule, error) {
	byID := map[string]*Rule{}
	for _, list := range lists {
		seen := map[string]string{}
		for _, r := range list {
			if prev, ok := seen[r.ID]; ok {
				return nil, fmt.Errorf("%s: rule id %q is also defined in %s", r.Source, r.ID, prev)
			}
			seen[r.ID] = r.Source
			if r.patch == nil {
				byID[r.ID] = r
				continue
			}
			base, ok := byID[r.ID]
			if !ok {
				return nil, fmt.Errorf("%s: rule %q: no rule of that id is read before this file to change (the built-in rules, then each earlier directory)", r.Source, r.ID)
			}
			merged, err := r.patch(base)
			if err != nil {
				return nil, fmt.Errorf("%s: rule %q: %w", r.Source, r.ID, err)
			}
			merged.Source = r.Source
			byID[r.ID] = merged
		}
	}
	out := make([]*Rule, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// toggle is an entry that turns the rule (or progress or fact entry) of its id on or off.
func toggle(id string, enabled bool) *Rule {
	return &Rule{ID: id, patch: func(base *Rule) (*Rule, error) {
		r := *base
		r.Disabled = !enabled
		if r.spec != nil {
			on := enabled
			spec := *r.spec
			spec.Enabled = &on
			r.spec = &spec
		}
		return &r, nil
	}}
}

// override is an entry that changes some fields of the rule of its id (rules.Spec.Apply);
// the result is checked as a rule of its own.
func override(spec *rules.Spec) *Rule {
	return &Rule{ID: spec.ID, patch: func(base *Rule) (*Rule, error) {
		if base.spec == nil {
			return nil, fmt.Errorf("override: %q is a %s entry, not a rule", base.ID, base.Kind())
		}
		merged, err := spec.Apply(base.spec)
		if err != nil {
			return nil, err
		}
		return newRule(merged)
	}}
}

// joinWords lists words: "a, b, c".
func joinWords[T ~string](words []T) string {
	s := make([]string, len(words))
	for i, w := range words {
		s[i] = string(w)
	}
	return strings.Join(s, ", ")
}
