package main

import (
	"context"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/internal/outfile"
	"github.com/coroner-dev/coroner/report"
)

// RedactOptions hold everything `coroner redact` needs; tests build them directly.
type RedactOptions struct {
	Input     string
	Output    string
	RulesFile string
	Report    bool
	Quiet     bool
	// KeepBinary copies the files redaction cannot read as text as they are (--keep-unredacted-binaries).
	KeepBinary bool
	Limits     bundle.Limits
	// Key is the HMAC key of the tokens; nil means a random one (tests fix it).
	Key []byte
}

// NewCmdRedact builds `coroner redact`. runF replaces the run function in tests.
func NewCmdRedact(io *IOStreams, runF func(*RedactOptions) error) *cobra.Command {
	opts := &RedactOptions{Limits: bundle.DefaultLimits()}
	cmd := &cobra.Command{
		Use:   "redact (BUNDLE -o OUT.tar.gz | LOG | -) [-o OUT]",
		Short: "Mask the secrets of a bundle or a log before it is handed over",
		Long: `Redact a bundle (a directory or a .tar.gz/.tgz) into a new bundle tarball: every secret in logs,
resources and annotations becomes a token such as [REDACTED:hf-token:1a2b3c4d]. The same
secret gives the same token within one run, so a reader can still tell two values apart;
the key of these tokens is random and never stored.

Built-in rules cover secret-looking environment variables, cloud keys (AWS, GCP, Azure),
Hugging Face, GitHub, GitLab, Slack, OpenAI, Stripe, Telegram, wandb and comet tokens, JWTs,
Authorization headers, private keys, credentials in URLs and database connection strings,
passwords given to docker login -p, sshpass -p and curl -u, a password echoed after its
prompt, and the values of Secret objects. --rules adds a YAML file of rules:

  rules:
  - id: acme-token                       # a regexp; its group "secret" is masked
    pattern: 'acme_(?P<secret>[a-z0-9]{32})'
  - id: acme-passwords                   # literal values, one a line
    literalsFile: passwords.txt
  - id: acme-env                         # env vars whose names match
    envNames: '^ACME_'

A gzip'd file (a rotated log.gz) is decompressed, redacted and compressed again, within the
same size and expansion limits as the bundle; UTF-16 text is decoded, redacted and written as
UTF-8. Any other file that is not text (a zip, a nested tarball, an image, a gzip of one of
them) cannot be looked into: it is left out of the new bundle, with one line on stderr and an
entry in the manifest's redaction.files. --keep-unredacted-binaries copies such files as they
are, secrets and all.

A plain log, or - for standard input, is redacted as text to -o, or to standard output (the
summary then goes to standard error): kubectl logs POD | coroner redact - > POD.log.

The manifest of the new bundle records each rule id and how often it fired, never a value;
--report also prints where (file:line, or file and field), never a value.
`,
		Example: `  coroner redact bundle.tar.gz -o bundle-redacted.tar.gz
  coroner redact samples/pytorchjob-cuda-oom-rank -o oom.tar.gz --rules my-secrets.yaml --report
  kubectl logs train-worker-0 | coroner redact - > train-worker-0.log`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Input = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runRedact(cmd.Context(), opts, io)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Output, "output", "o", "", "write the redacted bundle to `FILE` (.tar.gz)")
	f.StringVar(&opts.RulesFile, "rules", "", "add the redaction rules of this YAML `FILE`")
	f.BoolVar(&opts.Report, "report", false, "list where each secret was masked (file:line and rule, never the value)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but errors and the --report list")
	f.BoolVar(&opts.KeepBinary, "keep-unredacted-binaries", false, "copy files that are not text (zip, nested tarballs, images) as they are, unredacted, instead of leaving them out")
	addLimitFlags(cmd, &opts.Limits)
	return cmd
}

func runRedact(ctx context.Context, opts *RedactOptions, io *IOStreams) error {
	if opts.Output == "" && opts.Input != "-" && bundle.IsBundlePath(opts.Input) {
		return flagErrorf("-o is required: name the redacted bundle to write")
	}
	var extra []redact.Rule
	if opts.RulesFile != "" {
		rules, err := redact.LoadRules(opts.RulesFile)
		if err != nil {
			return fmt.Errorf("--rules %w", err)
		}
		extra = rules
	}
	r, err := redact.New(redact.Options{Key: opts.Key, Extra: extra, KeepBinary: opts.KeepBinary})
	if err != nil {
		return err
	}
	if opts.Input == "-" || !bundle.IsBundlePath(opts.Input) {
		return redactLog(ctx, opts, r, io)
	}
	if err := checkOutput("-o", opts.Output, opts.Input); err != nil {
		return err
	}
	w, err := bundle.NewWriter(opts.Output)
	if err != nil {
		return err
	}
	defer w.Abort()
	b, m, err := r.Bundle(ctx, opts.Input, opts.Limits, w)
	if err != nil {
		return err
	}
	noted := map[string]bool{}
	for _, f := range r.Files() {
		noted[f.Path] = true
	}
	if !opts.Quiet {
		for _, w := range b.Warnings {
			if p, _, ok := strings.Cut(w, ": looks like binary data"); ok && noted[p] {
				continue // said below: withheld or kept, not "read as text"
			}
			fmt.Fprintf(io.ErrOut, "warning: %s\n", report.TerminalSafe(w))
		}
	}
	// Always said, --quiet or not: a file left out, or one that keeps its secrets.
	for _, f := range r.Files() {
		switch f.Action {
		case redact.ActionWithheld:
			fmt.Fprintf(io.ErrOut, "withheld: %s: %s cannot be redacted; left out of %s (--keep-unredacted-binaries keeps it as it is)\n",
				report.TerminalSafe(f.Path), f.Reason, opts.Output)
		case redact.ActionRewritten:
			// Redacted like any text; said only when not --quiet, as the counts are.
			if !opts.Quiet {
				fmt.Fprintf(io.ErrOut, "rewritten: %s: %s rewritten as JSON to be redacted\n", report.TerminalSafe(f.Path), f.Reason)
			}
		default:
			fmt.Fprintf(io.ErrOut, "warning: %s: %s copied unredacted (--keep-unredacted-binaries): it may hold secrets\n",
				report.TerminalSafe(f.Path), f.Reason)
		}
	}
	if opts.Report {
		printLocations(io.Out, r)
	}
	if !opts.Quiet {
		printSummary(io.Out, r, fmt.Sprintf("%d file(s)", len(m.Files)), opts.Output)
	}
	return nil
}

// redactLog redacts one plain log, or standard input, as text into -o (standard output
// without it, or with -o -): a log pasted into a ticket is masked as a bundle's logs are. The
// summary goes to standard error when the log goes to standard output.
func redactLog(ctx context.Context, opts *RedactOptions, r *redact.Redactor, ios *IOStreams) error {
	name := opts.Input
	var src goio.Reader = ios.In
	if opts.Input == "-" {
		name = "stdin"
	} else {
		f, err := os.Open(opts.Input)
		if err != nil {
			return err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return fmt.Errorf("%s: a directory that holds no bundle", opts.Input)
		}
		src = f
	}
	if ios.In == nil && opts.Input == "-" {
		src = strings.NewReader("")
	}
	if err := checkOutput("-o", opts.Output, opts.Input); err != nil {
		return err
	}
	if strings.HasSuffix(opts.Output, ".tar.gz") || strings.HasSuffix(opts.Output, ".tgz") {
		return fmt.Errorf("%s is not a bundle but a plain log, redacted as text: write it to a log file (-o %s), or to standard output without -o",
			name, strings.TrimSuffix(strings.TrimSuffix(filepath.Base(opts.Output), ".tgz"), ".tar.gz")+".log")
	}
	var dst goio.Writer = ios.Out
	summary := ios.Out
	var out *outfile.File
	if opts.Output != "" && opts.Output != "-" {
		var err error
		if out, err = outfile.Create(opts.Output); err != nil {
			return err
		}
		defer out.Abort()
		dst = out
	} else {
		summary = ios.ErrOut
	}
	// Capped as a log of a bundle is: the file size limit.
	if _, err := r.Copy(ctx, dst, goio.LimitReader(src, opts.Limits.MaxFileBytes), name); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if out != nil {
		if err := out.Commit(); err != nil {
			return err
		}
	}
	if opts.Report {
		printLocations(ios.ErrOut, r)
	}
	if !opts.Quiet {
		where := "standard output"
		if out != nil {
			where = opts.Output
		}
		printSummary(summary, r, name, where)
	}
	return nil
}

// printLocations lists where each secret was masked (file:line or file and field, and the
// rule), never a value.
func printLocations(w goio.Writer, r *redact.Redactor) {
	locs, more := r.Locations()
	for _, l := range locs {
		if l.Line > 0 {
			fmt.Fprintf(w, "%s:%d\t%s\n", l.File, l.Line, l.Rule)
		} else {
			fmt.Fprintf(w, "%s\t%s\t%s\n", l.File, l.Field, l.Rule)
		}
	}
	if more > 0 {
		fmt.Fprintf(w, "... and %d more\n", more)
	}
}

// printSummary says how many secrets were masked in what, into where, and by which rules.
func printSummary(w goio.Writer, r *redact.Redactor, what, where string) {
	total := 0
	for _, s := range r.Summary() {
		total += s.Count
	}
	fmt.Fprintf(w, "Redacted %d secret(s) in %s into %s\n", total, what, where)
	for _, s := range r.Summary() {
		fmt.Fprintf(w, "  %-28s %d\n", s.ID, s.Count)
	}
}
