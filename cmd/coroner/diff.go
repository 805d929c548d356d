package main

import (
	"context"
	"fmt"
	goio "io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/compare"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/report"
)

// DiffOptions hold everything a diff needs; tests build them directly.
type DiffOptions struct {
	Good, Bad string
	FailOn    string
	ReportOptions
	NoRedact   bool
	StuckAfter time.Duration
	// RedactRules is a file of the user's redaction rules.
	RedactRules string
}

// NewCmdDiff builds `coroner diff`. runF replaces the run function in tests.
func NewCmdDiff(io *IOStreams, runF func(*DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{ReportOptions: ReportOptions{Limits: bundle.DefaultLimits()}, StuckAfter: analyze.DefaultStuckAfter}
	cmd := &cobra.Command{
		Use:   "diff GOOD BAD",
		Short: "Show what changed between a run that worked and a run that failed",
		Long: `Compare two runs of a job: GOOD, one that worked, and BAD, one that failed. Each is a bundle
(a directory or a .tar.gz made by 'coroner collect') or one plain log file, read as 'coroner
analyze' reads it, with the same limits; each is diagnosed and indexed (or its index taken
from the cache) and the two are compared, never their logs line by line.

The report shows, in this order:
  diagnoses   each run's verdict and root cause, the finding categories one has and the other not
  spec        images, commands and args, environment (secret values redacted), resources and
              GPUs, replicas, run policy, scheduling fields, the GPU and driver labels of the nodes
              used, by role; the run's own names (job, pods, uid, nodes) are not differences
  logs        line templates only BAD has (with counts, pods and the first line), that vanished,
              and whose rate per rank (per rank and step, for lines that repeat with training)
              shifted beyond chance: a G-test with Holm's correction over every template
  progress    seconds per progress line by role, and a straggler rank only BAD has
Within a section, what more often explains a failure comes first (a new image before a new
node label). Without -o, a summary is printed; with -o, the report is written in the format its
extension names (.html, .md, .json, .txt) or --format. The JSON contract is docs/diff.md's.
`,
		Example: `  coroner diff yesterday.tar.gz today.tar.gz
  coroner diff good/ bad/ -o diff.html
  coroner diff good.log bad.log --format json
  coroner diff good.tar.gz bad.tar.gz --fail-on error`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Good, opts.Bad = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return runDiff(cmd.Context(), opts, io)
		},
	}
	addReportFlags(cmd, &opts.ReportOptions)
	f := cmd.Flags()
	f.StringVar(&opts.FailOn, "fail-on", "", "exit 3 when BAD has a finding of this `SEVERITY` or higher in a category GOOD has none of (info, warning, error, critical), or on any difference (any)")
	f.BoolVar(&opts.NoRedact, "no-redact", false, "show secrets in the report (for local use)")
	f.StringVar(&opts.RedactRules, "redact-rules", "", "add the redaction rules of `FILE`")
	f.DurationVar(&opts.StuckAfter, "stuck-after", opts.StuckAfter, "a job not yet failed whose pods have waited `DURATION` to start is unhealthy (as analyze)")
	return cmd
}

func runDiff(ctx context.Context, opts *DiffOptions, io *IOStreams) error {
	if slices.Contains(compare.Formats, opts.Output) {
		return flagErrorf("-o %s would write a file named %q: -o names the report's file; the format is --format %s", opts.Output, opts.Output, opts.Output)
	}
	format := opts.Format
	if format == "" && opts.Output != "" {
		if format = report.FormatFromPath(opts.Output); format == "" {
			return flagErrorf("cannot tell the format of %q from its extension: use --format %s", opts.Output, strings.Join(compare.Formats, "|"))
		}
	}
	if format == "" {
		format = "text"
	}
	if !slices.Contains(compare.Formats, format) {
		return flagErrorf("unknown --format %q (use %s)", format, strings.Join(compare.Formats, ", "))
	}
	var failOn analyze.Severity
	failAny := opts.FailOn == "any"
	if opts.FailOn != "" && !failAny {
		s, err := analyze.ParseSeverity(opts.FailOn)
		if err != nil {
			return flagErrorf("--fail-on: %v (or any)", err)
		}
		failOn = s
	}
	if opts.Good == "-" || opts.Bad == "-" {
		return flagErrorf("diff reads two files or bundles; standard input cannot be one of them")
	}
	if err := checkOutput("-o", opts.Output, opts.Good, opts.Bad); err != nil {
		return err
	}
	cache, err := opts.Cache.cache()
	if err != nil {
		return err
	}
	var redactRules []redact.Rule
	if opts.RedactRules != "" {
		if redactRules, err = redact.LoadRules(opts.RedactRules); err != nil {
			return fmt.Errorf("--redact-rules %w", err)
		}
	}
	stuckAfter := opts.StuckAfter
	if stuckAfter <= 0 {
		stuckAfter = -1
	}
	rules, err := loadRuleSet(opts.RuleDirs, "all")
	if err != nil {
		return err
	}
	var ds [2]*compare.Run
	defer func() {
		for _, d := range ds {
			if d != nil {
				d.Close()
			}
		}
	}()
	for i, in := range []string{opts.Good, opts.Bad} {
		d, err := compare.Diagnose(ctx, diagnose.Input{Paths: []string{in}}, diagnose.Options{
			Rules: rules, Limits: opts.Limits, Workers: opts.Workers, Cache: cache, Version: version, StuckAfter: stuckAfter,
			Log: logTo(io, opts.Quiet), KeepSecrets: opts.NoRedact, RedactRules: redactRules, RedactHint: "--no-redact shows them",
		})
		if err != nil {
			return inputError(err)
		}
		ds[i] = d
	}
	rep, err := compare.Compare(ctx, ds[0], ds[1], version, compare.Options{KeepSecrets: opts.NoRedact, RedactRules: redactRules})
	if err != nil {
		return err
	}
	err = emitReport(ctx, io, opts.Output, format, opts.Quiet,
		func(w goio.Writer) error { return compare.Render(w, rep, format) },
		func(w goio.Writer) error { return compare.RenderText(w, rep) })
	if err != nil {
		return err
	}
	if (failAny && !rep.Empty()) || (failOn != 0 && compare.NewFindings(ds[0].Report, ds[1].Report) >= failOn) {
		return errFailOn
	}
	return nil
}

// emitReport writes a report: to the -o file (complete or not at all) with the summary on
// stdout unless quiet, or to stdout. render writes the report in its format, summary the
// terminal summary.
func emitReport(ctx context.Context, io *IOStreams, output, format string, quiet bool, render, summary func(goio.Writer) error) error {
	buf := &spool{}
	defer buf.Close()
	if err := render(buf); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // interrupted: nothing is written
	}
	if output == "" {
		if !quiet || format != "text" {
			_, err := buf.WriteTo(io.Out)
			return err
		}
		return nil
	}
	if err := buf.writeFile(output); err != nil {
		return err
	}
	if quiet {
		return nil
	}
	if err := summary(io.Out); err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "Report:      %s (%s)\n", output, format)
	return nil
}
