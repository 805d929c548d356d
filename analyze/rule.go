package analyze

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/coroner-dev/coroner/rules"
)

// Rule is one known failure pattern, its words checked and typed. Rules are data: YAML files
// (see package rules for their schema) embedded in the binary and in the user's directories.
// A rule file's progress entries are Rules too (Progress reports whether), so that they can
// be overridden by id like any rule.
type Rule struct {
	ID       string
	Category Category
	Severity Severity
	Layer    Layer
	Title    string
	Fault    Fault
	Retry    Retry
	// Role says how the rule's findings take part in choosing the root cause.
	Role Role
	// NamesNoCause: the rule is a symptom whose words name no cause of its own (a peer gone,
	// a launcher's abort summary); as a root cause it is sure only where the cause is shown
	// absent (namesCause).
	NamesNoCause bool
	// Disabled rules (enabled: false) are checked and linted but left out of a RuleSet.
	Disabled bool
	// Labels are the rule's free-form metadata.
	Labels     map[string]string
	Match      rules.Match
	RootOnlyIf rules.Where
	// ExplainsOnNode lists the categories of failures a finding of the rule about a node
	// explains in the pods that ran there.
	ExplainsOnNode []Category
	Explanation    string
	Remediation    string
	Examples       rules.Examples

	// Source is the file the rule came from.
	Source string

	// spec is the rule as its file wrote it, defaults applied: what an override changes.
	spec *rules.Spec
	// patch, for an entry that changes the rule of its id loaded before it (an override or
	// a toggle), says how; Resolve applies it.
	patch func(base *Rule) (*Rule, error)

	progress bool
	// factKind and factSet: a text fact entry (rules.TextFact) reads facts of this kind.
	factKind string
	factSet  map[string]string
	res      []compiledPattern
	// unless are the expressions of lines the rule does not name though a pattern matches.
	unless     []*regexp.Regexp
	where      where // object rules: the conditions on the fact
	rootOnlyIf where // conditions on the finding's pod
	last       where // streak: conditions on the last line's groups
	atLeast    time.Duration
	// recoveryOnly: a streak rule kept for the second tier alone only to say which failures
	// the process got past (WithoutSpecific); a finding of it that did not recover is dropped.
	recoveryOnly bool
}

// compiledPattern is one of a rule's regular expressions and what its match means.
type compiledPattern struct {
	re   *regexp.Regexp
	kind patKind
}

// Progress reports whether the rule is a progress entry (a kind of line that shows training
// advancing) rather than a failure.
func (r *Rule) Progress() bool { return r.progress }

// Kind names the rule's match kind: patterns, eventReasons, object, streak, sequence,
// silence, or progress and fact for the entries that are not failures.
func (r *Rule) Kind() string {
	m := r.Match
	switch {
	case r.progress:
		return "progress"
	case r.factKind != "":
		return "fact"
	case m.Object != nil:
		return "object"
	case m.Streak != nil:
		return "streak"
	case m.Sequence != nil:
		return "sequence"
	case m.Silence != nil:
		return "silence"
	case len(m.Patterns) == 0 && len(m.EventReasons) > 0:
		return "eventReasons"
	}
	return "patterns"
}

// yamlFile is one *.yaml (or *.yml) file of a rule or vocabulary directory.
type yamlFile struct {
	path string
	data []byte
}

// readYAMLDir reads the *.yaml and *.yml files of dir in fsys, sorted, not recursive.
func readYAMLDir(fsys fs.FS, dir string) ([]yamlFile, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var files []yamlFile
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			continue
		}
		p := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		files = append(files, yamlFile{p, data})
	}
	return files, nil
}

// LoadRules reads every *.yaml file of fsys (sorted, not recursive), strictly: a file of
// another apiVersion, an unknown field, a bad category or a pattern that does not compile is
// an error naming the file. The entries that change a rule loaded before them (overrides and
// toggles) are applied by Resolve (and NewRuleSet).
func LoadRules(fsys fs.FS, dir string) ([]*Rule, error) {
	files, err := readYAMLDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []*Rule
	for _, f := range files {
		rf, err := rules.Decode(f.data)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f.path, err)
		}
		if out, err = appendRules(out, rules.Named{Path: f.path, File: rf}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendRules appends the rules of a decoded rule file to out.
func appendRules(out []*Rule, f rules.Named) ([]*Rule, error) {
	p, rf := f.Path, f.File
	var err error
	for _, spec := range rf.Rules {
		var r *Rule
		switch {
		case spec.IsToggle():
			r = toggle(spec.ID, *spec.Enabled)
		case spec.IsPatch():
			r = override(spec)
		default:
			if r, err = newRule(spec); err != nil {
				return nil, fmt.Errorf("%s: rule %q: %w", p, spec.ID, err)
			}
		}
		r.Source = p
		out = append(out, r)
	}
	for _, pr := range rf.Progress {
		r := toggle(pr.ID, pr.Enabled == nil || *pr.Enabled)
		if !pr.IsToggle() {
			if r, err = newProgress(pr); err != nil {
				return nil, fmt.Errorf("%s: progress %q: %w", p, pr.ID, err)
			}
		}
		r.Source = p
		out = append(out, r)
	}
	for _, tf := range rf.Facts {
		r := toggle(tf.ID, tf.Enabled == nil || *tf.Enabled)
		if !tf.IsToggle() {
			if r, err = newTextFact(tf); err != nil {
				return nil, fmt.Errorf("%s: fact %q: %w", p, tf.ID, err)
			}
		}
		r.Source = p
		out = append(out, r)
	}
	return out, nil
}

// newTextFact checks a text fact entry: its kind, and that its groups and fixed fields are
// fields of the kind (or pod and container, which say whose fact it is).
func newTextFact(tf *rules.TextFact) (*Rule, error) {
	r := &Rule{ID: tf.ID, Match: rules.Match{Patterns: tf.Patterns}, Examples: tf.Examples, factKind: tf.Kind, factSet: tf.Set,
		Disabled: tf.Enabled != nil && !*tf.Enabled}
	var problems []string
	if r.ID == "" {
		problems = append(problems, "id is empty")
	}
	fields, ok := factKinds[tf.Kind]
	if !ok {
		problems = append(problems, fmt.Sprintf("kind %q is not an object kind", tf.Kind))
	}
	if len(tf.Patterns) == 0 {
		problems = append(problems, "patterns is empty")
	}
	problems = append(problems, r.compile(tf.Patterns, kindFact)...)
	known := func(f string) bool { return f == "pod" || f == "container" || slices.Contains(fields, f) }
	// A pattern without a (?P<pod>...) group reads a fact of the paste's own pod: a kubectl
	// describe block or the pod's YAML names it on another line.
	for _, cp := range r.res {
		for _, n := range cp.re.SubexpNames() {
			if n != "" && ok && !known(n) {
				problems = append(problems, fmt.Sprintf("group %q is not a field of %s", n, tf.Kind))
			}
		}
	}
	for f := range tf.Set {
		if ok && !known(f) {
			problems = append(problems, fmt.Sprintf("set %q is not a field of %s", f, tf.Kind))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return r, nil
}

// newProgress checks a progress entry and compiles its patterns.
func newProgress(pr *rules.Progress) (*Rule, error) {
	r := &Rule{ID: pr.ID, Match: rules.Match{Patterns: pr.Patterns}, Examples: pr.Examples, progress: true,
		Disabled: pr.Enabled != nil && !*pr.Enabled}
	var problems []string
	if r.ID == "" {
		problems = append(problems, "id is empty")
	}
	if len(pr.Patterns) == 0 {
		problems = append(problems, "patterns is empty")
	}
	problems = append(problems, r.compile(pr.Patterns, kindProgress)...)
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return r, nil
}

// newRule checks a rule's words and compiles its patterns; every problem is reported.
func newRule(spec *rules.Spec) (*Rule, error) {
	r := &Rule{ID: spec.ID, Title: spec.Title, Match: spec.Match, Labels: spec.Labels, Disabled: spec.Enabled != nil && !*spec.Enabled,
		RootOnlyIf: spec.RootOnlyIf, Explanation: spec.Explanation, Remediation: spec.Remediation, Examples: spec.Examples, spec: spec}
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
	if spec.Category != "" {
		r.Category, err = oneOf("category", spec.Category, Categories)
		problem(err)
	} else if prefix, _, ok := strings.Cut(spec.ID, "/"); ok && slices.Contains(Categories, Category(prefix)) {
		r.Category = Category(prefix)
	} else if r.ID != "" {
		problems = append(problems, fmt.Sprintf("category is missing and the id's prefix %q is not a category: name one with category (one of %s)",
			prefix, joinWords(Categories)))
	}
	r.Role = RolePrimary
	if spec.Role != "" {
		r.Role, err = oneOf("role", spec.Role, Roles)
		problem(err)
	}
	r.NamesNoCause = spec.NamesNoCause
	if r.NamesNoCause && !r.Role.Secondary() {
		problems = append(problems, "namesNoCause is for a symptom: set role secondary or secondary-fallback")
	}
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
	for _, c := range spec.ExplainsOnNode {
		cat, err := oneOf("explainsOnNode category", c, Categories)
		problem(err)
		r.ExplainsOnNode = append(r.ExplainsOnNode, cat)
	}
	if len(spec.RootOnlyIf) > 0 {
		r.rootOnlyIf, err = compileWhere("pod", spec.RootOnlyIf)
		if err != nil {
			problems = append(problems, "rootOnlyIf: "+err.Error())
		}
	}
	problems = append(problems, r.compileMatch()...)
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return r, nil
}

// compileMatch checks that the rule has one match kind and compiles it.
func (r *Rule) compileMatch() []string {
	m := r.Match
	kinds := 0
	for _, set := range []bool{len(m.Patterns) > 0 || len(m.EventReasons) > 0, m.Object != nil, m.Streak != nil, m.Sequence != nil, m.Silence != nil} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		return []string{"match has no patterns, eventReasons, object, streak, sequence or silence"}
	case kinds > 1:
		return []string{"match has more than one kind (patterns/eventReasons, object, streak, sequence, silence): write one rule for each"}
	}
	var problems []string
	switch {
	case m.Object != nil:
		w, err := compileWhere(m.Object.Kind, m.Object.Where)
		if err != nil {
			problems = append(problems, err.Error())
		}
		r.where = w
	case m.Streak != nil:
		s := m.Streak
		if len(s.Patterns) == 0 {
			problems = append(problems, "streak has no patterns")
		}
		if s.Min < 2 && (s.Min < 1 || len(s.Recover) == 0 && len(s.Last) == 0) {
			problems = append(problems, "streak min must be at least 2 (one line is not a streak), or 1 with recover patterns (a condition that lasts until they match) or last conditions (a line that counts for itself)")
		}
		problems = append(problems, r.compile(s.Patterns, kindStreak)...)
		problems = append(problems, r.compile(s.Recover, kindRecover)...)
		groups := map[string]bool{}
		for _, cp := range r.res {
			if cp.kind == kindStreak {
				for _, name := range cp.re.SubexpNames() {
					groups[name] = name != ""
				}
			}
		}
		for g, c := range s.Last {
			cc, err := compileCond(c)
			if err != nil {
				problems = append(problems, fmt.Sprintf("streak last %s: %v", g, err))
				continue
			}
			// A group no pattern has would never hold: a typo, not a condition.
			for _, name := range append([]string{g}, cc.refs()...) {
				if !groups[name] {
					problems = append(problems, fmt.Sprintf("streak last %s: no streak pattern has a group (?P<%s>...)", g, name))
				}
			}
			r.last = append(r.last, fieldCond{g, cc})
		}
		slices.SortFunc(r.last, func(a, b fieldCond) int { return strings.Compare(a.field, b.field) })
	case m.Sequence != nil:
		if len(m.Sequence.Patterns) == 0 {
			problems = append(problems, "sequence has no patterns")
		}
		problems = append(problems, r.compile(m.Sequence.Patterns, kindSequence)...)
		problems = append(problems, r.compile(m.Sequence.Culprit, kindCulprit)...)
		for _, cp := range r.res {
			names := strings.Join(cp.re.SubexpNames(), " ")
			if cp.kind == kindSequence && !strings.Contains(names, "seq") {
				problems = append(problems, fmt.Sprintf("sequence pattern %q has no (?P<seq>...) group", cp.re))
			}
			if cp.kind == kindCulprit && !strings.Contains(names, "rank") {
				problems = append(problems, fmt.Sprintf("culprit pattern %q has no (?P<rank>...) or (?P<ranks>...) group", cp.re))
			}
		}
	case m.Silence != nil:
		s := m.Silence
		if s.Scope != "rank" && s.Scope != "job" {
			problems = append(problems, fmt.Sprintf("silence scope %q is not rank or job", s.Scope))
		}
		if s.Periods < 2 || s.Periods > maxPeriods {
			problems = append(problems, fmt.Sprintf("silence periods must be between 2 and %d", maxPeriods))
		}
		if s.AtLeast != "" {
			d, err := time.ParseDuration(s.AtLeast)
			if err != nil || d <= 0 {
				problems = append(problems, fmt.Sprintf("silence atLeast %q is not a duration such as 15m", s.AtLeast))
			}
			r.atLeast = d
		}
	default:
		problems = append(problems, r.compile(m.Patterns, kindLine)...)
		for _, p := range m.Unless {
			re, err := regexp.Compile(p)
			if err != nil {
				problems = append(problems, fmt.Sprintf("unless pattern %q: %v", p, err))
				continue
			}
			r.unless = append(r.unless, re)
		}
		if m.Restate != "" {
			names := map[string]bool{}
			for _, cp := range r.res {
				for _, n := range cp.re.SubexpNames() {
					names[n] = true
				}
			}
			for _, ph := range placeholders(m.Restate) {
				if !names[ph] {
					problems = append(problems, fmt.Sprintf("restate names {%s}, which no pattern captures", ph))
				}
			}
		}
	}
	if m.Restate != "" && len(m.Patterns) == 0 {
		problems = append(problems, "restate needs patterns")
	}
	if len(m.Unless) > 0 && len(m.Patterns) == 0 {
		problems = append(problems, "unless needs patterns: it only excludes lines they match")
	}
	return problems
}

func (r *Rule) compile(patterns []string, kind patKind) []string {
	var problems []string
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			problems = append(problems, fmt.Sprintf("pattern %q: %v", p, err))
			continue
		}
		r.res = append(r.res, compiledPattern{re: re, kind: kind})
	}
	return problems
}

// placeholders lists the {name} placeholders of a template.
func placeholders(t string) []string {
	var out []string
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, t[i+1:i+j])
		t = t[i+j+1:]
	}
}

// restated fills the rule's restate template from a match's groups; ok is false when the
// rule has none or a placeholder has no value.
func (r *Rule) restated(g map[string]string) (string, bool) {
	t := r.Match.Restate
	if t == "" {
		return "", false
	}
	for _, ph := range placeholders(t) {
		v := g[ph]
		if v == "" {
			return "", false
		}
		t = strings.Replace(t, "{"+ph+"}", v, 1)
	}
	return t, true
}

// patterns lists the sources of every regular expression of the rule.
func (r *Rule) patterns() []string {
	out := make([]string, len(r.res))
	for i, cp := range r.res {
		out[i] = cp.re.String()
	}
	return out
}

// Patterns lists every regular expression of the rule, whatever its match kind.
func (r *Rule) Patterns() []string { return r.patterns() }

// Lint runs a rule's examples and reports what is wrong, one problem a string. Streak,
// sequence and silence examples run among the built-in rules (their progress lines).
func (r *Rule) Lint() []string { return r.LintAmong(nil) }

// LintAmong lints a rule of a user's directory: its streak, sequence and silence examples run
// among the built-in rules and the directory's own (its progress entries, the rules it
// replaces), as analyze --rules DIR would run them.
func (r *Rule) LintAmong(site []*Rule) []string {
	var problems []string
	kind := r.Kind()
	if kind != "eventReasons" {
		if len(r.Examples.Match) == 0 {
			problems = append(problems, fmt.Sprintf("no examples.match: every %s rule needs real examples it must match", kind))
		}
		if len(r.Examples.NotMatch) == 0 && kind != "silence" {
			problems = append(problems, fmt.Sprintf("no examples.notMatch: every %s rule needs examples it must not match", kind))
		}
	}
	check := func(ex rules.Example, want bool) {
		got, err := r.matchExample(ex, site)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("example %s: %v", exampleName(ex), err))
		case got && !want:
			problems = append(problems, fmt.Sprintf("matches its counter-example %s", exampleName(ex)))
		case !got && want:
			problems = append(problems, fmt.Sprintf("does not match its example %s", exampleName(ex)))
		}
	}
	for _, ex := range r.Examples.Match {
		check(ex, true)
	}
	for _, ex := range r.Examples.NotMatch {
		check(ex, false)
	}
	for _, p := range r.patterns() {
		if requiredLiterals(p) == nil {
			problems = append(problems, fmt.Sprintf("pattern %q has no literal of %d+ characters: it runs on every line (slow)", p, minLiteral))
		}
	}
	if r.spec != nil && r.spec.Category != "" && strings.HasPrefix(r.ID, r.spec.Category+"/") {
		problems = append(problems, fmt.Sprintf("category %s is the id's prefix: leave it out", r.spec.Category))
	}
	return problems
}

func exampleName(ex rules.Example) string {
	if ex.Object != nil {
		return fmt.Sprintf("%v", map[string]rules.Cond(ex.Object))
	}
	if i := strings.IndexByte(ex.Text, '\n'); i >= 0 && i < len(ex.Text)-1 {
		return fmt.Sprintf("%q (a log of %d lines)", ex.Text[:i], strings.Count(strings.TrimSuffix(ex.Text, "\n"), "\n")+1)
	}
	return fmt.Sprintf("%q", ex.Text)
}

// matchExample says whether the rule, alone, matches an example (site: see LintAmong).
func (r *Rule) matchExample(ex rules.Example, site []*Rule) (bool, error) {
	switch r.Kind() {
	case "object":
		if ex.Object == nil {
			return false, errors.New("an object rule's example is an object: {object: {field: value}}")
		}
		fields := map[string]string{}
		for k, v := range ex.Object {
			fields[k] = string(v)
		}
		for k := range ex.Object {
			if !slices.Contains(factKinds[r.Match.Object.Kind], k) {
				return false, fmt.Errorf("object kind %s has no field %q", r.Match.Object.Kind, k)
			}
		}
		return r.where.holds(fields), nil
	case "streak", "sequence", "silence":
		return r.matchLog(ex, site)
	case "progress", "fact":
		for _, cp := range r.res {
			if cp.re.MatchString(ex.Text) {
				return true, nil
			}
		}
		return false, nil
	}
	_, ok := r.matchText(ex.Text)
	return ok, nil
}

// matchText runs the rule's line patterns on one message; it returns the named groups of
// the first pattern that matches.
func (r *Rule) matchText(text string) (map[string]string, bool) {
	for _, cp := range r.res {
		if cp.kind != kindLine {
			continue
		}
		if g, ok := trainingMatch(cp.re, []byte(text)); ok && !r.excluded([]byte(text)) {
			return g, true
		}
	}
	return nil, false
}

// excluded says whether one of the rule's unless expressions matches a line a pattern
// matched: the rule does not name it.
func (r *Rule) excluded(text []byte) bool {
	for _, re := range r.unless {
		if re.Match(text) {
			return true
		}
	}
	return false
}

// TitleFor fills the rule's {name} placeholders from a match's named groups. A placeholder
// with no value is dropped, with the parentheses around it when it stands in some
// ("failed (exit code {code})" becomes "failed").
func (r *Rule) TitleFor(g map[string]string) string {
	t := r.Title
	if strings.IndexByte(t, '{') < 0 {
		return strings.TrimSpace(t) // nothing to fill: no copy (a finding of each rank asks)
	}
	b := bytes.TrimSpace(r.appendTitle(make([]byte, 0, len(t)+32), g))
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
}

// appendTitle appends the title TitleFor makes to b, empty, but for its spaces at the ends.
func (r *Rule) appendTitle(b []byte, g map[string]string) []byte {
	t := r.Title
	for {
		i := strings.IndexByte(t, '{')
		j := strings.IndexByte(t, '}')
		if i < 0 || j < i {
			return append(b, t...)
		}
		if v, ok := g[t[i+1:j]]; ok && v != "" {
			b = append(append(b, t[:i]...), v...) // values are written, never expanded again
			t = t[j+1:]
			continue
		}
		head, tail := t[:i], t[j+1:]
		if open := strings.LastIndexByte(head, '('); open >= 0 && !strings.ContainsRune(head[open:], ')') {
			if closing := strings.IndexByte(tail, ')'); closing >= 0 {
				head, tail = head[:open], tail[closing+1:]
			}
		}
		b = append(b, strings.TrimRight(head, " ")...)
		if tail != "" && !strings.ContainsAny(tail[:1], " :,.;)") && len(b) > 0 {
			b = append(b, ' ')
		}
		t = tail
	}
}

// DefaultRules is the embedded rule set. It is decoded and checked once a process (a Rule is
// not changed after it is made: overrides and toggles make new ones), so a process that
// analyzes many bundles, a watcher or an MCP server, pays for it once; the slice is the
// caller's own.
func DefaultRules() ([]*Rule, error) {
	list, err := embedded()
	return slices.Clone(list), err
}

var embedded = sync.OnceValues(builtinRules)

// builtinRules makes the embedded rules from the values rules.Builtin decoded at build time,
// or, when the files changed since, by decoding them.
func builtinRules() ([]*Rule, error) {
	files, ok := rules.Builtin()
	if !ok {
		return LoadRules(rules.FS, ".")
	}
	var out []*Rule
	var err error
	for _, f := range files { // decoded at build time: the values Decode makes, no YAML read
		if out, err = appendRules(out, f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// BuiltinRuleSet is the embedded rules compiled, once a process. A RuleSet is safe for
// concurrent use by any number of analyses.
var BuiltinRuleSet = sync.OnceValues(func() (*RuleSet, error) {
	list, err := embedded()
	if err != nil {
		return nil, err
	}
	return NewRuleSet(list)
})
