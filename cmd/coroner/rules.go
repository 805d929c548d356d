package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/rules"
)

// NewCmdRules builds `coroner rules list|show|lint`.
func NewCmdRules(io *IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "rules", Short: "List, show and check the rule set"}
	cmd.AddCommand(NewCmdRulesList(io, nil), NewCmdRulesShow(io, nil), NewCmdRulesLint(io, nil))
	return cmd
}

// RulesShowOptions hold what `coroner rules show` needs.
type RulesShowOptions struct {
	IDs      []string
	RuleDirs []string
}

// NewCmdRulesShow builds `coroner rules show`. runF replaces the run function in tests.
func NewCmdRulesShow(io *IOStreams, runF func(*RulesShowOptions) error) *cobra.Command {
	opts := &RulesShowOptions{}
	cmd := &cobra.Command{
		Use:   "show ID...",
		Short: "Show rules: what they match, why it happens, what to do, and their examples",
		Long: `Show each rule named: its category, severity, layer, who is at fault and whether a retry helps,
the patterns (or event reasons, or built-in check) it matches, its explanation and remediation,
and the lines it must and must not match. The ids are those of 'coroner rules list' and of the
findings' ruleId; a rule of --rules DIR replaces the built-in rule of the same id.`,
		Example: `  coroner rules show cuda-oom/torch-alloc
  coroner rules show collective-timeout/nccl-watchdog --rules ./site-rules`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.IDs = args
			if runF != nil {
				return runF(opts)
			}
			return runRulesShow(c.Context(), opts, io)
		},
	}
	cmd.Flags().StringArrayVar(&opts.RuleDirs, "rules", nil, "add the rules in `DIR`")
	return cmd
}

func runRulesShow(_ context.Context, opts *RulesShowOptions, io *IOStreams) error {
	rs, err := loadRuleSet(opts.RuleDirs, "all")
	if err != nil {
		return err
	}
	var b strings.Builder
	for i, id := range opts.IDs {
		r := rs.Rule(id)
		if r == nil {
			var near []string
			for _, o := range rs.Rules() {
				if strings.Contains(o.ID, id) || strings.HasPrefix(o.ID, string(o.Category)) && strings.HasPrefix(id, string(o.Category)+"/") {
					near = append(near, o.ID)
				}
			}
			msg := fmt.Sprintf("no rule %q", id)
			if len(near) > 0 {
				msg += " (did you mean " + diagnose.ListSome(near, 4) + "?)"
			} else {
				msg += " ('coroner rules list' lists the ids)"
			}
			return errors.New(msg)
		}
		if i > 0 {
			b.WriteString("\n")
		}
		writeRule(&b, r)
	}
	_, err = io.Out.Write([]byte(b.String()))
	return err
}

// writeRule writes a rule for a person, field by field.
func writeRule(b *strings.Builder, r *analyze.Rule) {
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(b, "%-13s%s\n", k+":", v)
		}
	}
	kv("Rule", r.ID)
	kv("Title", r.Title)
	if k := r.Kind(); k == "progress" || k == "fact" {
		kv("Entry", k+": not a failure; "+map[string]string{"progress": "a line that shows training advancing", "fact": "a fact read from a line, for object rules"}[k])
	} else {
		kv("Category", string(r.Category))
		kv("Severity", r.Severity.String())
		kv("Layer", string(r.Layer))
		kv("Fault", string(r.Fault))
		kv("Retry", string(r.Retry))
	}
	var kind []string
	if r.Role.Generic() {
		kind = append(kind, "generic: says a process failed, not why; a specific finding of the same process explains it")
	}
	if r.Role.Secondary() {
		kind = append(kind, "secondary: usually a symptom of another rank's failure")
	}
	if r.Role.Fallback() {
		kind = append(kind, "fallback: reported only when no other rule matched the line")
	}
	kv("Kind", strings.Join(kind, "; "))
	kv("Source", r.Source)
	var labels []string
	for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
		labels = append(labels, k+"="+r.Labels[k])
	}
	kv("Labels", strings.Join(labels, ", "))
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(b, "%s\n", title)
		for _, it := range items {
			fmt.Fprintf(b, "  %s\n", it)
		}
	}
	list("Patterns:", r.Match.Patterns)
	list("Event reasons:", r.Match.EventReasons)
	kv("Restates", r.Match.Restate)
	if len(r.RootOnlyIf) > 0 {
		if y, err := yaml.Marshal(r.RootOnlyIf); err == nil {
			list("Root cause only if (the pod):", strings.Split(strings.TrimRight(string(y), "\n"), "\n"))
		}
	}
	if len(r.ExplainsOnNode) > 0 {
		var cats []string
		for _, c := range r.ExplainsOnNode {
			cats = append(cats, string(c))
		}
		kv("Explains", strings.Join(cats, ", ")+" failures of the pods on the node")
	}
	// The other kinds of match, as the rule file writes them.
	for _, m := range []struct {
		title string
		v     any
		set   bool
	}{{"Object:", r.Match.Object, r.Match.Object != nil}, {"Streak:", r.Match.Streak, r.Match.Streak != nil},
		{"Sequence:", r.Match.Sequence, r.Match.Sequence != nil}, {"Silence:", r.Match.Silence, r.Match.Silence != nil}} {
		if !m.set {
			continue
		}
		if y, err := yaml.Marshal(m.v); err == nil {
			list(m.title, strings.Split(strings.TrimRight(string(y), "\n"), "\n"))
		}
	}
	para := func(title, text string) {
		if text = strings.TrimSpace(text); text != "" {
			fmt.Fprintf(b, "%s\n", title)
			for _, l := range wrapText(text, 96) {
				fmt.Fprintf(b, "  %s\n", l)
			}
		}
	}
	para("Explanation:", r.Explanation)
	para("Remediation:", r.Remediation)
	list("Matches:", exampleLines(r.Examples.Match))
	list("Does not match:", exampleLines(r.Examples.NotMatch))
}

// exampleLines shows a rule's examples one line each: a line, a log's lines, or an object
// fact's fields.
func exampleLines(examples []rules.Example) []string {
	var out []string
	for i, e := range examples {
		if i > 0 && (strings.Contains(e.Text, "\n") || strings.Contains(examples[i-1].Text, "\n")) {
			out = append(out, "--")
		}
		if e.Text != "" {
			out = append(out, strings.Split(strings.TrimRight(e.Text, "\n"), "\n")...)
			continue
		}
		keys := make([]string, 0, len(e.Object))
		for k := range e.Object {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var fields []string
		for _, k := range keys {
			fields = append(fields, k+"="+string(e.Object[k]))
		}
		out = append(out, strings.Join(fields, " "))
	}
	return out
}

// wrapText breaks a paragraph at spaces into lines of at most width bytes.
func wrapText(s string, width int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// RulesListOptions hold what `coroner rules list` needs.
type RulesListOptions struct {
	RuleDirs []string
	Patterns bool
}

// NewCmdRulesList builds `coroner rules list`. runF replaces the run function in tests.
func NewCmdRulesList(io *IOStreams, runF func(*RulesListOptions) error) *cobra.Command {
	opts := &RulesListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the rules: id, category, severity, layer, who is at fault, whether a retry helps",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runRulesList(c.Context(), opts, io)
		},
	}
	cmd.Flags().StringArrayVar(&opts.RuleDirs, "rules", nil, "add the rules in `DIR`")
	cmd.Flags().BoolVar(&opts.Patterns, "patterns", false, "print only the regular expressions, one a line (for grep -E/rg comparisons)")
	return cmd
}

func runRulesList(_ context.Context, opts *RulesListOptions, io *IOStreams) error {
	rs, err := loadRuleSet(opts.RuleDirs, "all")
	if err != nil {
		return err
	}
	if opts.Patterns {
		for _, r := range rs.Rules() {
			for _, p := range r.Match.Patterns {
				fmt.Fprintln(io.Out, p)
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCATEGORY\tSEVERITY\tLAYER\tFAULT\tRETRY\tTITLE")
	for _, r := range rs.Rules() {
		if k := r.Kind(); k == "progress" || k == "fact" {
			// Not a failure: a line that shows progress, or a fact read from a line.
			fmt.Fprintf(tw, "%s\t-\t(%s)\t-\t-\t-\t%s\n", r.ID, k, r.Title)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Category, r.Severity, r.Layer, r.Fault, r.Retry, r.Title)
	}
	return tw.Flush()
}

// RulesLintOptions hold what `coroner rules lint` needs.
type RulesLintOptions struct {
	// Dir holds the rules to check; "" checks the built-in rules.
	Dir string
}

// NewCmdRulesLint builds `coroner rules lint`. runF replaces the run function in tests.
func NewCmdRulesLint(io *IOStreams, runF func(*RulesLintOptions) error) *cobra.Command {
	opts := &RulesLintOptions{}
	cmd := &cobra.Command{
		Use:   "lint [DIR]",
		Short: "Check rule files: schema, patterns, and every rule's must-match and must-not-match examples",
		Long: `Check the rules in DIR (default: the built-in rules). Each rule's examples.match lines must match
it and its examples.notMatch lines must not; a pattern without a literal prefilter is reported.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return runRulesLint(c.Context(), opts, io)
		},
	}
	return cmd
}

func runRulesLint(_ context.Context, opts *RulesLintOptions, io *IOStreams) error {
	rules, err := analyze.DefaultRules()
	if err != nil {
		return fmt.Errorf("built-in rules: %w", err)
	}
	src := "built-in rules"
	if opts.Dir != "" {
		// The directory's entries as analyze --rules DIR sees them: its overrides and
		// toggles applied to the built-in rules they change.
		src = opts.Dir
		if err := checkDir(opts.Dir); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		own, err := analyze.LoadRules(os.DirFS(opts.Dir), ".")
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		all, err := analyze.Resolve(rules, own)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		ids := map[string]bool{}
		for _, r := range own {
			ids[r.ID] = true
		}
		rules = rules[:0:0]
		for _, r := range all {
			if ids[r.ID] {
				rules = append(rules, r)
			}
		}
	}
	if _, err := analyze.NewRuleSet(rules); err != nil {
		return err
	}
	problems, examples := 0, 0
	for _, r := range rules {
		examples += len(r.Examples.Match) + len(r.Examples.NotMatch)
		var found []string
		if opts.Dir != "" {
			found = r.LintAmong(rules)
		} else {
			found = r.Lint()
		}
		for _, p := range found {
			fmt.Fprintf(io.Out, "%s: %s: %s\n", r.Source, r.ID, p)
			problems++
		}
	}
	vocab := ""
	if opts.Dir == "" {
		// The second tier's vocabulary is built in; its examples are run with the rules'.
		v, err := analyze.DefaultVocabulary()
		if err != nil {
			return fmt.Errorf("built-in vocabulary: %w", err)
		}
		for _, p := range v.Lint() {
			fmt.Fprintln(io.Out, p)
			problems++
		}
		vocab = fmt.Sprintf("; the vocabulary: %d categories, %d examples", len(v.Categories()), v.Examples())
	}
	if problems > 0 {
		return fmt.Errorf("%s: %d problem(s) in %d rules%s", src, problems, len(rules), vocab)
	}
	fmt.Fprintf(io.Out, "%s: %d rules, %d examples%s: ok\n", src, len(rules), examples, vocab)
	return nil
}
