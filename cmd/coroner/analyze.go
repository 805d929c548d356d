package main

import (
	"context"
	"errors"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/report"
	"github.com/coroner-dev/coroner/search"
)

// AnalyzeOptions hold everything an analysis needs; tests build them directly.
type AnalyzeOptions struct {
	Inputs []string
	FailOn string
	ReportOptions
	// NoRedact shows the report's text as the bundle has it, secrets included (local use).
	NoRedact bool
	// Full lists everything in a Markdown or HTML report (by default long lists are cut).
	Full bool
	// Color is auto, always or never: colour in the summary.
	Color string
	// StuckAfter is how long a job that has not failed may wait to start before the wait is
	// its failure (see analyze.Options.StuckAfter; 0 here means at once).
	StuckAfter time.Duration
	// Tiers is "all" (the default) or "fallback": the specific rules off, so that only the
	// second tier names causes (to measure it alone).
	Tiers string

	// The LLM step (see llm.go).
	LLM LLMOptions
	// Store keeps the diagnosis in the fleet store (store.go).
	Store StoreOptions
}

// NewCmdAnalyze builds `coroner analyze`. runF replaces the run function in tests.
func NewCmdAnalyze(io *IOStreams, runF func(*AnalyzeOptions) error) *cobra.Command {
	opts := &AnalyzeOptions{ReportOptions: ReportOptions{Limits: bundle.DefaultLimits()}, StuckAfter: analyze.DefaultStuckAfter}
	cmd := &cobra.Command{
		Use:   "analyze (BUNDLE | LOG... | -)",
		Short: "Explain a job's failure from a bundle or from plain logs",
		Long: `Analyze a bundle (a directory or a .tar.gz/.tgz made by 'coroner collect') with no cluster access:
match every log line, event and status against the rule set, correlate them on one timeline,
and name the root cause with its evidence.

Plain log files (or - for standard input) are analyzed as the logs of an unnamed job.

The same single pass over the logs indexes them for 'coroner search' and for the context lines
of the evidence; the index is kept in the cache ($XDG_CACHE_HOME/coroner/index, --cache-dir),
keyed by the logs' content, so a search that follows is immediate. --no-cache keeps nothing.

Without -o, a summary is printed. With -o, the report is written in the format its extension
names (.html, .md, .json, .txt) or --format, and the summary is printed too (unless --quiet).

The report's text (evidence lines and their context, event and condition messages, the
timeline) is redacted as 'coroner redact' redacts a bundle, so a report of an unredacted bundle
can go into a ticket: a warning says how many secrets were masked. --no-redact shows them, for
local use.

The Markdown and HTML reports group findings, fold what follows from the root cause under
it and stop long lists after a few dozen rows, so that a report of 1,024 ranks fits a ticket
comment; --full lists everything.

The summary is coloured on a terminal (--color auto) unless NO_COLOR is set, and its lines fit
the terminal's width; piped, it is plain and whole.

Anything that is neither a bundle nor log lines is an error: an empty directory, a directory
of bundles, a bundle's logs/ folder, an empty file or standard input ("0 lines read").
`,
		Example: `  coroner analyze samples/pytorchjob-cuda-oom-rank
  coroner analyze bundle.tar.gz -o report.html
  coroner analyze train.log worker-1.log
  kubectl logs train-job-master-0 | coroner analyze -
  coroner analyze bundle.tar.gz --format json --fail-on error
  coroner analyze bundle.tar.gz --llm --model qwen2.5:7b-instruct --num-ctx 8192 -o report.html
  coroner analyze bundle.tar.gz --llm --dry-run-prompt`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Inputs = args
			if runF != nil {
				return runF(opts)
			}
			return runAnalyze(cmd.Context(), opts, io)
		},
	}
	addReportFlags(cmd, &opts.ReportOptions)
	f := cmd.Flags()
	f.StringVar(&opts.FailOn, "fail-on", "", "exit 3 when a finding of this `SEVERITY` or higher exists: info, warning, error, critical")
	f.BoolVar(&opts.NoRedact, "no-redact", false, "show secrets in the report's text (for local use; prompts are redacted all the same)")
	f.DurationVar(&opts.StuckAfter, "stuck-after", opts.StuckAfter, "a job not yet failed whose pods have waited `DURATION` to start (image pull, scheduling, crash loop, missing runtime) is unhealthy; before, unknown (0: at once)")
	f.BoolVar(&opts.Full, "full", false, "list everything in a Markdown or HTML report: every finding's evidence, row, event, pod and log")
	f.StringVar(&opts.Tiers, "tiers", "all", "which tiers name causes: all, or fallback (the specific rules off: measures the second tier alone)")
	_ = f.MarkHidden("tiers")
	addColorFlag(cmd, &opts.Color)
	addLLMFlags(cmd, &opts.LLM)
	addStoreFlags(cmd, &opts.Store, false)
	return cmd
}

// ReportOptions are what analyze and diff share: where the report goes and in which format,
// the user's rules, and how the inputs are read (workers, cache, limits).
type ReportOptions struct {
	Output   string
	Format   string
	RuleDirs []string
	Quiet    bool
	Workers  int
	Cache    CacheOptions
	Limits   bundle.Limits
}

// addReportFlags adds the flags of ReportOptions, the same in every command that writes a report.
func addReportFlags(cmd *cobra.Command, o *ReportOptions) {
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "", "write the report to `FILE` (format from its extension or --format)")
	f.StringVar(&o.Format, "format", "", "report format: text, json, md or html (default: from -o, else text)")
	f.StringArrayVar(&o.RuleDirs, "rules", nil, "add the rules of the YAML files in `DIR` (repeatable; same id replaces a built-in rule)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "print nothing but errors (the report still goes to -o or stdout)")
	f.IntVar(&o.Workers, "workers", 0, "logs scanned at once (default: one per CPU)")
	addCacheFlags(cmd, &o.Cache)
	addLimitFlags(cmd, &o.Limits)
}

// addLimitFlags adds the bundle's limits.
func addLimitFlags(cmd *cobra.Command, l *bundle.Limits) {
	f := cmd.Flags()
	addSizeFlag(cmd, &l.MaxFileBytes, "max-file-bytes", "largest file read from a bundle, uncompressed")
	addSizeFlag(cmd, &l.MaxTotalBytes, "max-total-bytes", "largest bundle, uncompressed")
	f.IntVar(&l.MaxEntries, "max-entries", l.MaxEntries, "most files and directories in a bundle")
	addSizeFlag(cmd, &l.MaxLineBytes, "max-line-bytes", "longest log line matched (longer lines are cut, with a warning)")
	addSizeFlag(cmd, &l.MaxResourceBytes, "max-resource-bytes", "largest resource YAML or manifest")
	f.IntVar(&l.MaxExpansion, "max-expansion", l.MaxExpansion, "most times a tarball may expand over its compressed size (past 128 MiB; 0: no bound)")
}

func runAnalyze(ctx context.Context, opts *AnalyzeOptions, io *IOStreams) error {
	format := opts.Format
	if slices.Contains(report.Formats, opts.Output) {
		return flagErrorf("-o %s would write a file named %q: -o names the report's file; the format is --format %s", opts.Output, opts.Output, opts.Output)
	}
	if format == "" && opts.Output != "" {
		format = report.FormatFromPath(opts.Output)
		if format == "" {
			return flagErrorf("cannot tell the format of %q from its extension: use --format %s", opts.Output, strings.Join(report.Formats, "|"))
		}
	}
	color, err := io.Color(opts.Color)
	if err != nil {
		return err
	}
	if format == "" {
		format = "text"
	}
	if !slices.Contains(report.Formats, format) {
		return flagErrorf("unknown --format %q (use %s)", format, strings.Join(report.Formats, ", "))
	}
	if !slices.Contains([]string{"", "all", "fallback"}, opts.Tiers) {
		return flagErrorf("unknown --tiers %q (use all or fallback)", opts.Tiers)
	}
	var failOn analyze.Severity
	if opts.FailOn != "" {
		s, err := analyze.ParseSeverity(opts.FailOn)
		if err != nil {
			return flagErrorf("--fail-on: %v", err)
		}
		failOn = s
	}
	if err := checkOutput("-o", opts.Output, opts.Inputs...); err != nil {
		return err
	}
	if err := checkOutput("--llm-record", opts.LLM.Record, opts.Inputs...); err != nil {
		return err
	}
	cache, err := opts.Cache.cache()
	if err != nil {
		return err
	}
	step, err := newLLMStep(ctx, &opts.LLM)
	if err != nil {
		return err
	}
	var redactRules []redact.Rule
	if opts.LLM.RedactRules != "" {
		if redactRules, err = redact.LoadRules(opts.LLM.RedactRules); err != nil {
			return fmt.Errorf("--redact-rules %w", err)
		}
	}
	progress := func(done, total int, n int64) {}
	if io.IsTerminal && !opts.Quiet {
		progress = func(done, total int, n int64) {
			fmt.Fprintf(io.ErrOut, "\rscanning logs: %d/%d (%s)", done, total, humanBytes(n))
			if done == total {
				fmt.Fprint(io.ErrOut, "\r\033[K")
			}
		}
	}
	stuckAfter := opts.StuckAfter
	if stuckAfter <= 0 {
		stuckAfter = -1 // analyze reads 0 as its default; here 0 means no wait at all
	}
	inputs, fetched, err := fetchInputs(ctx, opts.Inputs, opts.Limits) // s3:// bundles
	if err != nil {
		return err
	}
	defer fetched()
	// A directory bundle analyzed into the cache keeps, for the search that follows, its walk's
	// listing and the index of its events and objects (see search.IndexObjects).
	keepForSearch := cache != nil && len(inputs) == 1 && inputs[0] == opts.Inputs[0] && isDir(inputs[0])
	if keepForSearch {
		ctx = bundle.WithTreeMemo(ctx, nil) // the walk's listing is kept; none is taken
	}
	var rules *analyze.RuleSet // the rule set, for the store's rules version
	d, err := diagnose.Run(ctx, diagnose.Input{Paths: inputs, Stdin: io.In}, diagnose.Options{
		LoadRules: func() (rs *analyze.RuleSet, err error) {
			rules, err = loadRuleSet(opts.RuleDirs, opts.Tiers)
			return rules, err
		},
		Limits: opts.Limits, Workers: opts.Workers, Cache: cache, Version: version, StuckAfter: stuckAfter,
		Progress: progress, Log: logTo(io, opts.Quiet),
		KeepSecrets: opts.NoRedact, RedactRules: redactRules, RedactHint: "--no-redact shows them",
	})
	if err != nil {
		return inputError(err)
	}
	defer d.Close()
	rep := d.Report
	if step != nil {
		done, err := step.run(ctx, opts, io, d.Model, d.Index, rep)
		if err != nil || done {
			return err
		}
	}

	summary := report.Options{Color: color, Width: io.Width}
	ropts := report.Options{Full: opts.Full}
	if opts.Output == "" && format == "text" {
		ropts = summary
	}
	err = emitReport(ctx, io, opts.Output, format, opts.Quiet,
		func(w goio.Writer) error { return report.RenderWith(w, rep, format, ropts) },
		func(w goio.Writer) error { return report.RenderTextWith(w, rep, summary) })
	if err != nil {
		return err
	}
	if opts.Store.URL != "" {
		input := "" // a bundle's own place; plain logs from several files have none
		if len(opts.Inputs) == 1 {
			input = opts.Inputs[0]
		}
		if err := opts.Store.record(ctx, d, rules, input); err != nil {
			return err
		}
	}
	failed := failOn != 0 && rep.Severity() >= failOn
	if keepForSearch {
		keepForTheSearch(ctx, d, cache, opts.Workers)
	}
	if failed {
		return errFailOn
	}
	return nil
}

// keepForTheSearch builds the index of the events and objects of d's bundle into the cache
// (see search.IndexObjects) once the report is out. The diagnosis but its bundle is let go
// and collected first: built on top of it, the index raised analyze's peak at 200,000 files
// (533 -> 582 MB). A cache that cannot be written was said so by the logs' index, which is
// then private (no key): the objects' would be too, built for nothing. The objects' index
// never evicts the logs' one: when the cache's bound cannot hold both, it is not kept.
func keepForTheSearch(ctx context.Context, d *diagnose.Diagnosis, cache *index.Cache, workers int) {
	var logs string // the logs' index, built first, which the objects' must not evict
	if d.Index != nil {
		logs = d.Index.Key()
		d.Index.Close()
		d.Index = nil
		if logs == "" {
			return
		}
	}
	d.Model, d.Result, d.Report = nil, nil, nil
	runtime.GC()
	_ = search.IndexObjects(ctx, d.Bundle, search.Options{Cache: cache, Version: version, Workers: workers, Keep: logs})
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// logTo is the index cache's voice on stderr, quiet with --quiet.
func logTo(io *IOStreams, quiet bool) func(format string, args ...any) {
	return func(format string, args ...any) {
		if !quiet {
			fmt.Fprintf(io.ErrOut, "coroner: %s\n", report.TerminalSafe(fmt.Sprintf(format, args...)))
		}
	}
}

// inputError makes a diagnose.UsageError a usage mistake (exit 2).
func inputError(err error) error {
	var ue *diagnose.UsageError
	if errors.As(err, &ue) {
		return &FlagError{ue}
	}
	return err
}

// loadRuleSet compiles the built-in rules with the rules of dirs; with tiers "fallback" only
// the rules that name no specific cause are kept (the second tier alone).
func loadRuleSet(dirs []string, tiers string) (*analyze.RuleSet, error) {
	if len(dirs) == 0 && tiers != "fallback" {
		return diagnose.BuiltinRules()
	}
	builtin, err := analyze.DefaultRules()
	if err != nil {
		return nil, fmt.Errorf("built-in rules: %w", err)
	}
	lists := [][]*analyze.Rule{builtin}
	for _, d := range dirs {
		if err := checkDir(d); err != nil {
			return nil, fmt.Errorf("--rules %s: %w", d, err)
		}
		rules, err := analyze.LoadRules(os.DirFS(d), ".")
		if err != nil {
			return nil, fmt.Errorf("--rules %s: %w", d, err)
		}
		for _, r := range rules {
			r.Source = filepath.Join(d, r.Source)
		}
		lists = append(lists, rules)
	}
	rs, err := analyze.NewRuleSet(lists...)
	if err != nil || tiers != "fallback" {
		return rs, err
	}
	return analyze.NewRuleSet(analyze.WithoutSpecific(rs.Rules()))
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
