package analyze

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/coroner-dev/coroner/rules"
)

// Rule is one known failure pattern, its words checked and typed. Rules are data: YAML files
// (see package rules for their schema) embedded in the binary and in the user's directories.
type Rule struct {
	ID       string
	Category Category
	Severity Severity
	Layer    Layer
	Title    string
	Fault    Fault
	Retry    Retry
	// Secondary marks messages that are usually symptoms of another rank's failure.
	Secondary bool
	// Fallback rules report a line only when no other rule matched it.
	Fallback    bool
	Match       rules.Match
	Explanation string
	Remediation string
	Examples    rules.Examples

	// Source is the file the rule came from.
	Source string
	res    []*regexp.Regexp
}

// LoadRules reads every *.yaml file of fsys (sorted, not recursive), strictly: an unknown
// field, a bad category or a pattern that does not compile is an error naming the file.
func LoadRules(fsys fs.FS, dir string) ([]*Rule, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []*Rule
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			continue
		}
		p := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		rf, err := rules.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p, err)
		}
		for i, spec := range rf.Rules {
			if spec == nil {
				return nil, fmt.Errorf("%s: rule %d is empty", p, i+1)
			}
			r, err := newRule(spec)
			if err != nil {
				return nil, fmt.Errorf("%s: rule %q: %w", p, spec.ID, err)
			}
			r.Source = p
			out = append(out, r)
		}
	}
	return out, nil
}

// newRule checks a rule's words and compiles its patterns; every problem is reported.
func newRule(spec *rules.Spec) (*Rule, error) {
	r := &Rule{ID: spec.ID, Title: spec.Title, Secondary: spec.Secondary, Fallback: spec.Fallback, Match: spec.Match,
		Explanation: spec.Explanation, Remediation: spec.Remediation, Examples: spec.Examples}
	var problems []string
	problem := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if r.ID == "" {
		problems = append(problems, "id is empty")
	}
	var err error
	r.Category, err = oneOf("category", spec.Category, Categories)
	problem(err)
	if spec.Severity == "" {
		problems = append(problems, "severity is missing (info, warning, error, critical)")
	} else {
		r.Severity, err = ParseSeverity(spec.Severity)
		problem(err)
	}
	r.Layer, err = oneOf("layer", spec.Layer, Layers)
	problem(err)
	r.Fault, err = oneOf("fault", spec.Fault, Faults)
	problem(err)
	r.Retry, err = oneOf("retry", spec.Retry, Retries)
	problem(err)
	if r.Title == "" {
		problems = append(problems, "title is empty")
	}
	if len(r.Match.Patterns) == 0 && len(r.Match.EventReasons) == 0 && r.Match.Builtin == "" {
		problems = append(problems, "match has no patterns, eventReasons or builtin")
	}
	r.res = nil
	for _, p := range r.Match.Patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			problems = append(problems, fmt.Sprintf("pattern %q: %v", p, err))
			continue
		}
		r.res = append(r.res, re)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return r, nil
}

// Lint runs a rule's examples and reports what is wrong, one problem a string.
func (r *Rule) Lint() []string {
	var problems []string
	if len(r.Match.Patterns) > 0 {
		if len(r.Examples.Match) == 0 {
			problems = append(problems, "no examples.match: every pattern rule needs real lines it must match")
		}
		if len(r.Examples.NotMatch) == 0 {
			problems = append(problems, "no examples.notMatch: every pattern rule needs lines it must not match")
		}
	}
	for _, ex := range r.Examples.Match {
		if _, ok := r.matchText(ex); !ok {
			problems = append(problems, fmt.Sprintf("does not match its example %q", ex))
		}
	}
	for _, ex := range r.Examples.NotMatch {
		if _, ok := r.matchText(ex); ok {
			problems = append(problems, fmt.Sprintf("matches its counter-example %q", ex))
		}
	}
	for _, p := range r.Match.Patterns {
		if requiredLiterals(p) == nil {
			problems = append(problems, fmt.Sprintf("pattern %q has no literal of %d+ characters: it runs on every line (slow)", p, minLiteral))
		}
	}
	return problems
}

// matchText runs the rule's patterns on one message; it returns the named groups of the
// first pattern that matches.
func (r *Rule) matchText(text string) (map[string]string, bool) {
	for _, re := range r.res {
		if m := re.FindStringSubmatch(text); m != nil {
			return groups(re, m), true
		}
	}
	return nil, false
}

func groups(re *regexp.Regexp, m []string) map[string]string {
	var g map[string]string
	for i, name := range re.SubexpNames() {
		if name != "" && i < len(m) && m[i] != "" {
			if g == nil {
				g = map[string]string{}
			}
			g[name] = m[i]
		}
	}
	return g
}

// TitleFor fills the rule's {name} placeholders from a match's named groups. A placeholder
// with no value is dropped, with the parentheses around it when it stands in some
// ("failed (exit code {code})" becomes "failed").
func (r *Rule) TitleFor(g map[string]string) string {
	var out strings.Builder
	t := r.Title
	for {
		i := strings.IndexByte(t, '{')
		j := strings.IndexByte(t, '}')
		if i < 0 || j < i {
			out.WriteString(t)
			break
		}
		if v, ok := g[t[i+1:j]]; ok {
			out.WriteString(t[:i])
			out.WriteString(v) // values are written, never expanded again
			t = t[j+1:]
			continue
		}
		head, tail := t[:i], t[j+1:]
		if open := strings.LastIndexByte(head, '('); open >= 0 && !strings.ContainsRune(head[open:], ')') {
			if closing := strings.IndexByte(tail, ')'); closing >= 0 {
				head, tail = head[:open], tail[closing+1:]
			}
		}
		out.WriteString(strings.TrimRight(head, " "))
		if tail != "" && !strings.HasPrefix(tail, " ") && out.Len() > 0 {
			out.WriteByte(' ')
		}
		t = tail
	}
	return strings.TrimSpace(out.String())
}

// DefaultRules loads the embedded rule set.
func DefaultRules() ([]*Rule, error) {
	return LoadRules(rules.FS, ".")
}
