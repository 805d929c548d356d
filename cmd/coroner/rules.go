package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/analyze"
)

// NewCmdRules builds `coroner rules list|lint`.
func NewCmdRules(io *IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "rules", Short: "List and check the rule set"}
	cmd.AddCommand(NewCmdRulesList(io, nil), NewCmdRulesLint(io, nil))
	return cmd
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
	rs, err := loadRuleSet(opts.RuleDirs)
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
	var rules []*analyze.Rule
	var err error
	src := "built-in rules"
	if opts.Dir != "" {
		src = opts.Dir
		rules, err = analyze.LoadRules(os.DirFS(opts.Dir), ".")
	} else {
		rules, err = analyze.DefaultRules()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if _, err := analyze.NewRuleSet(rules); err != nil {
		return err
	}
	problems, examples := 0, 0
	for _, r := range rules {
		examples += len(r.Examples.Match) + len(r.Examples.NotMatch)
		for _, p := range r.Lint() {
			fmt.Fprintf(io.Out, "%s: %s: %s\n", r.Source, r.ID, p)
			problems++
		}
	}
	if problems > 0 {
		return fmt.Errorf("%s: %d problem(s) in %d rules", src, problems, len(rules))
	}
	fmt.Fprintf(io.Out, "%s: %d rules, %d examples: ok\n", src, len(rules), examples)
	return nil
}
