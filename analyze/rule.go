package analyze

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	builtinRules "github.com/coroner-dev/coroner/rules"
)

// Layer is where a rule looks: the job's spec, the Kubernetes control plane's view (job and
// pod status, events), or the containers' logs.
type Layer string

// The three layers of DESIGN.md.
const (
	LayerSpec      Layer = "spec"
	LayerControl   Layer = "control"
	LayerExecution Layer = "execution"
)

// Categories are the stable category ids of the JSON contract.
var Categories = []string{
	"cuda-oom", "host-oom", "nan-loss", "module-not-found", "collective-timeout", "collective-error",
	"rendezvous-failure", "shm-bus-error", "cuda-error", "gpu-hardware", "scheduling", "image-pull",
	"disk-full", "file-not-found", "permission-denied", "hub-offline", "config-error", "crash-signal",
	"preempted-evicted", "user-code-error", "hang", "storage-error", "data-error", "unknown",
}

// Fault values say who is most likely at fault.
var Faults = []string{"user", "platform", "hardware"}

// Retry values say whether a plain retry can help.
var Retries = []string{"transient", "permanent"}

// Rule is one known failure pattern. Rules are data: YAML files embedded in the binary
// (rules/) and the user's own directories.
type Rule struct {
	ID       string   `json:"id"`
	Category string   `json:"category"`
	Severity Severity `json:"severity"`
	Layer    Layer    `json:"layer"`
	Title    string   `json:"title"`
	Fault    string   `json:"fault"`
	Retry    string   `json:"retry"`
	// Secondary marks messages that are usually symptoms of another rank's failure.
	Secondary bool `json:"secondary,omitempty"`
	// Fallback rules report a line only when no other rule matched it.
	Fallback    bool     `json:"fallback,omitempty"`
	Match       Match    `json:"match"`
	Explanation string   `json:"explanation"`
	Remediation string   `json:"remediation"`
	Examples    Examples `json:"examples,omitempty"`

	// Source is the file the rule came from.
	Source string `json:"-"`
	res    []*regexp.Regexp
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

type ruleFile struct {
	Rules []*Rule `json:"rules"`
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
		var rf ruleFile
		if err := yaml.UnmarshalStrict(data, &rf); err != nil {
			return nil, fmt.Errorf("%s: %v", p, firstLine(err.Error()))
		}
		for i, r := range rf.Rules {
			if r == nil {
				return nil, fmt.Errorf("%s: rule %d is empty", p, i+1)
			}
			r.Source = p
			if err := r.compile(); err != nil {
				return nil, fmt.Errorf("%s: rule %q: %w", p, r.ID, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func (r *Rule) compile() error {
	var problems []string
	if r.ID == "" {
		problems = append(problems, "id is empty")
	}
	if !contains(Categories, r.Category) {
		problems = append(problems, fmt.Sprintf("category %q is not one of %s", r.Category, strings.Join(Categories, ", ")))
	}
	if r.Severity == 0 {
		problems = append(problems, "severity is missing (info, warning, error, critical)")
	}
	switch r.Layer {
	case LayerSpec, LayerControl, LayerExecution:
	default:
		problems = append(problems, fmt.Sprintf("layer %q is not spec, control or execution", r.Layer))
	}
	if !contains(Faults, r.Fault) {
		problems = append(problems, fmt.Sprintf("fault %q is not user, platform or hardware", r.Fault))
	}
	if !contains(Retries, r.Retry) {
		problems = append(problems, fmt.Sprintf("retry %q is not transient or permanent", r.Retry))
	}
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
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
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

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// DefaultRules loads the embedded rule set.
func DefaultRules() ([]*Rule, error) {
	return LoadRules(builtinRules.FS, ".")
}
