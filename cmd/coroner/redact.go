package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/redact"
)

// RedactOptions hold everything `coroner redact` needs; tests build them directly.
type RedactOptions struct {
	IO        *IOStreams
	Input     string
	Output    string
	RulesFile string
	Report    bool
	Quiet     bool
	Limits    bundle.Limits
	// Key is the HMAC key of the tokens; nil means a random one (tests fix it).
	Key []byte
}

const redactExit = "EXIT STATUS\n  0  the redacted bundle was written\n  1  error (unreadable bundle, bad rules file...); nothing is written\n  2  bad usage\n"

// NewCmdRedact builds `coroner redact`. runF replaces the run function in tests.
func NewCmdRedact(io *IOStreams, runF func(*RedactOptions) error) *cobra.Command {
	opts := &RedactOptions{IO: io, Limits: bundle.DefaultLimits()}
	cmd := &cobra.Command{
		Use:   "redact BUNDLE -o OUT.tar.gz",
		Short: "Mask the secrets of a bundle before it is handed over",
		Long: `Redact a bundle (a directory or a .tar.gz/.tgz) into a new bundle tarball: every secret in logs,
resources and annotations becomes a token such as [REDACTED:hf-token:1a2b3c4d]. The same
secret gives the same token within one run, so a reader can still tell two values apart;
the key of these tokens is random and never stored.

Built-in rules cover secret-looking environment variables, cloud keys (AWS, GCP, Azure),
Hugging Face, GitHub, GitLab, Slack, OpenAI, wandb and comet tokens, JWTs, Authorization
headers, private keys, credentials in URLs and database connection strings, and the values
of Secret objects. --rules adds a YAML file of rules:

  rules:
  - id: acme-token                       # a regexp; its group "secret" is masked
    pattern: 'acme_(?P<secret>[a-z0-9]{32})'
  - id: acme-passwords                   # literal values, one a line
    literalsFile: passwords.txt
  - id: acme-env                         # env vars whose names match
    envNames: '^ACME_'

The manifest of the new bundle records each rule id and how often it fired, never a value;
--report also prints where (file:line, or file and field), never a value.
`,
		Example: `  coroner redact bundle.tar.gz -o bundle-redacted.tar.gz
  coroner redact samples/pytorchjob-cuda-oom-rank -o oom.tar.gz --rules my-secrets.yaml --report`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Input = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runRedact(opts)
		},
	}
	cmd.Long += "\n" + redactExit
	f := cmd.Flags()
	f.StringVarP(&opts.Output, "output", "o", "", "write the redacted bundle to `FILE` (.tar.gz)")
	f.StringVar(&opts.RulesFile, "rules", "", "add the redaction rules of this YAML `FILE`")
	f.BoolVar(&opts.Report, "report", false, "list where each secret was masked (file:line and rule, never the value)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but errors and the --report list")
	addLimitFlags(cmd, &opts.Limits)
	return cmd
}

func runRedact(opts *RedactOptions) error {
	if opts.Output == "" {
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
	r, err := redact.New(redact.Options{Key: opts.Key, Extra: extra})
	if err != nil {
		return err
	}
	if !bundle.IsBundlePath(opts.Input) {
		return fmt.Errorf("%s: not a bundle (a directory or a .tar.gz)", opts.Input)
	}
	b, err := bundle.Open(opts.Input, opts.Limits)
	if err != nil {
		return err
	}
	defer b.Close()
	if !opts.Quiet {
		for _, w := range b.Warnings {
			fmt.Fprintf(opts.IO.ErrOut, "warning: %s\n", w)
		}
	}
	w, err := bundle.NewWriter(opts.Output)
	if err != nil {
		return err
	}
	defer w.Abort()
	for _, f := range b.Files {
		if f.Path == bundle.ManifestName {
			continue
		}
		if err := redactFile(w, r, b, f); err != nil {
			return fmt.Errorf("%s: %s: %w", opts.Input, f.Path, err)
		}
	}
	if b.Manifest != nil {
		// Collection errors quote API messages, which may hold a URL with credentials.
		for i := range b.Manifest.Errors {
			b.Manifest.Errors[i].Message = r.LineAt(bundle.ManifestName, fmt.Sprintf("errors[%d].message", i), b.Manifest.Errors[i].Message)
		}
	}
	m := redactedManifest(b.Manifest, r.Summary())
	if err := w.Close(m); err != nil {
		return err
	}
	if opts.Report {
		locs, more := r.Locations()
		for _, l := range locs {
			if l.Line > 0 {
				fmt.Fprintf(opts.IO.Out, "%s:%d\t%s\n", l.File, l.Line, l.Rule)
			} else {
				fmt.Fprintf(opts.IO.Out, "%s\t%s\t%s\n", l.File, l.Field, l.Rule)
			}
		}
		if more > 0 {
			fmt.Fprintf(opts.IO.Out, "... and %d more\n", more)
		}
	}
	if !opts.Quiet {
		total := 0
		for _, s := range r.Summary() {
			total += s.Count
		}
		fmt.Fprintf(opts.IO.Out, "Redacted %d secret(s) in %d file(s) into %s\n", total, len(m.Files), opts.Output)
		for _, s := range r.Summary() {
			fmt.Fprintf(opts.IO.Out, "  %-28s %d\n", s.ID, s.Count)
		}
	}
	return nil
}

// redactFile copies one file into the new bundle, redacted: a resource as an object (so env
// values, Secret data and annotations are found by their place), anything else line by line.
func redactFile(w *bundle.Writer, r *redact.Redactor, b *bundle.Bundle, f bundle.File) error {
	if strings.HasPrefix(f.Path, "resources/") && f.Size <= b.Limits.MaxResourceBytes {
		data, err := fs.ReadFile(b.FS, f.Path)
		if err != nil {
			return err
		}
		if out, ok := redactResource(r, f.Path, data); ok {
			return w.WriteFile(f.Path, out)
		}
	}
	// Logs, and resources that do not decode as an object: as text, which still masks every
	// secret that has a shape or a name.
	in, err := b.FS.Open(f.Path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := w.Create(f.Path)
	if err != nil {
		return err
	}
	if _, err := r.Copy(out, in, f.Path); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// docSep separates the documents of a YAML stream.
var docSep = regexp.MustCompile(`(?m)^---[ \t]*\r?$\n?`)

// redactResource redacts a YAML or JSON object, or each object of a YAML stream. It keeps
// the original bytes when nothing was masked, and reports false when the data is not made of
// objects (the caller then redacts it as text).
func redactResource(r *redact.Redactor, name string, data []byte) ([]byte, bool) {
	if path.Ext(name) != ".json" {
		if seps := docSep.FindAllIndex(data, -1); len(seps) > 0 && !(len(seps) == 1 && seps[0][0] == 0) {
			var out []byte
			start := 0
			for i := 0; i <= len(seps); i++ {
				end := len(data)
				if i < len(seps) {
					end = seps[i][0]
				}
				doc := data[start:end]
				if len(bytes.TrimSpace(doc)) > 0 {
					red, ok := redactDocument(r, name, doc)
					if !ok {
						return nil, false
					}
					out = append(out, red...)
				}
				if i < len(seps) {
					out = append(out, "---\n"...)
					start = seps[i][1]
				}
			}
			return out, true
		}
	}
	return redactDocument(r, name, data)
}

// redactDocument redacts one YAML or JSON object.
func redactDocument(r *redact.Redactor, name string, data []byte) ([]byte, bool) {
	js := data
	isJSON := path.Ext(name) == ".json"
	if !isJSON {
		var err error
		if js, err = yaml.YAMLToJSON(data); err != nil {
			return nil, false
		}
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // resourceVersion-like integers stay exact
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return nil, false
	}
	before := total(r.Summary())
	r.ObjectAt(name, obj)
	if total(r.Summary()) == before {
		return data, true
	}
	out, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return nil, false
	}
	if isJSON {
		return append(out, '\n'), true
	}
	y, err := yaml.JSONToYAML(out)
	if err != nil {
		return nil, false
	}
	return y, true
}

func total(s []bundle.RedactionRule) int {
	n := 0
	for _, r := range s {
		n += r.Count
	}
	return n
}

// redactedManifest is the input's manifest with redaction on and the counts of this run added
// to those of an earlier redaction (its tokens were left as they were).
func redactedManifest(in *bundle.Manifest, summary []bundle.RedactionRule) *bundle.Manifest {
	m := &bundle.Manifest{FormatVersion: bundle.FormatVersion}
	if in != nil {
		*m = *in
		m.Files = append([]bundle.FileEntry(nil), in.Files...)
	}
	counts := map[string]int{}
	if m.Redaction.Enabled || m.Options.Redact {
		for _, r := range m.Redaction.Rules {
			counts[r.ID] += r.Count
		}
	}
	for _, r := range summary {
		counts[r.ID] += r.Count
	}
	m.Redaction = bundle.RedactionInfo{Enabled: true, Rules: []bundle.RedactionRule{}}
	for id, n := range counts {
		m.Redaction.Rules = append(m.Redaction.Rules, bundle.RedactionRule{ID: id, Count: n})
	}
	sort.Slice(m.Redaction.Rules, func(i, j int) bool { return m.Redaction.Rules[i].ID < m.Redaction.Rules[j].ID })
	m.Options.Redact = true
	return m
}
