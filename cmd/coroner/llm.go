package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/narrate"
	"github.com/coroner-dev/coroner/narrate/ollama"
	"github.com/coroner-dev/coroner/parse"
	"github.com/coroner-dev/coroner/report"
)

// LLMOptions are the flags of the optional LLM step of `coroner analyze`.
type LLMOptions struct {
	Enabled bool
	// Host is the Ollama server, written as OLLAMA_HOST is.
	Host      string
	Model     string
	NumCtx    int
	MaxTokens int
	Timeout   time.Duration
	PerRole   bool
	PromptDir string
	// RedactRules adds the user's redaction rules (a `coroner redact --rules` file) to what
	// every prompt goes through.
	RedactRules string
	DryRun      bool
	Replay      string
	Record      string
	// CacheDir holds the answer cache; "" or NoCache turns it off.
	CacheDir string
	NoCache  bool
	// NewLLM makes the client of the server at host; nil means Ollama's.
	NewLLM func(host string) (narrate.LLM, error)
}

func addLLMFlags(cmd *cobra.Command, o *LLMOptions) {
	model := os.Getenv("CORONER_LLM_MODEL")
	if model == "" {
		model = narrate.DefaultModel
	}
	cacheDir := ""
	if d, err := os.UserCacheDir(); err == nil {
		cacheDir = filepath.Join(d, "coroner", "llm")
	}
	f := cmd.Flags()
	f.BoolVar(&o.Enabled, "llm", false, "add a narrative from a local Ollama model (the report is complete without it)")
	f.StringVar(&o.Host, "ollama-host", os.Getenv("OLLAMA_HOST"), "Ollama server `URL` (default $OLLAMA_HOST, else "+ollama.DefaultHost+")")
	f.StringVar(&o.Model, "model", model, "Ollama `MODEL` for --llm (default $CORONER_LLM_MODEL, else "+narrate.DefaultModel+")")
	f.IntVar(&o.NumCtx, "num-ctx", narrate.DefaultNumCtx, "context window in `TOKENS`: the prompt plus the answer must fit")
	f.IntVar(&o.MaxTokens, "llm-max-tokens", narrate.DefaultNumPredict, "longest answer in `TOKENS` (kept free in --num-ctx)")
	f.DurationVar(&o.Timeout, "llm-timeout", narrate.DefaultTimeout, "longest wait for one complete answer")
	f.BoolVar(&o.PerRole, "llm-per-role", false, "ask the model for each role's diagnosis first, then for the job")
	f.StringVar(&o.PromptDir, "prompt-dir", "", "override the prompt templates with the *.tmpl files in `DIR` (see 'coroner prompts')")
	f.StringVar(&o.RedactRules, "redact-rules", "", "also mask what the rules of `FILE` find in prompts (the format of 'coroner redact --rules')")
	f.BoolVar(&o.DryRun, "dry-run-prompt", false, "print the prompt that --llm would send, and its token estimate; send nothing")
	f.StringVar(&o.Replay, "llm-replay", "", "answer from the recorded answers in `FILE` instead of calling a model (implies --llm)")
	f.StringVar(&o.Record, "llm-record", "", "record the answers in `FILE`, for --llm-replay (implies --llm)")
	f.StringVar(&o.CacheDir, "llm-cache-dir", cacheDir, "answer cache `DIR`")
	f.BoolVar(&o.NoCache, "llm-no-cache", false, "neither read nor write the answer cache")
}

// llmStep is the LLM step, set up (flags checked, templates parsed, answer files read)
// before the bundle is read.
type llmStep struct {
	o         *LLMOptions
	templates *narrate.Templates
	replay    *narrate.Answers
	record    *narrate.Answers
	// redactRules are the user's extra rules (--redact-rules), loaded before any work.
	redactRules []redact.Rule
}

// newLLMStep checks the LLM flags; nil when no LLM flag asks for the step.
func newLLMStep(ctx context.Context, o *LLMOptions) (*llmStep, error) {
	if !o.Enabled && !o.DryRun && o.Replay == "" && o.Record == "" {
		return nil, nil
	}
	switch {
	case o.MaxTokens <= 0:
		return nil, flagErrorf("--llm-max-tokens must be positive")
	case o.NumCtx <= o.MaxTokens:
		return nil, flagErrorf("--num-ctx %d leaves no room for a prompt beside --llm-max-tokens %d", o.NumCtx, o.MaxTokens)
	case o.Timeout <= 0:
		return nil, flagErrorf("--llm-timeout must be positive")
	case o.Replay != "" && o.Record != "":
		return nil, flagErrorf("--llm-replay and --llm-record exclude each other")
	case o.Model == "":
		return nil, flagErrorf("--model is empty")
	}
	s := &llmStep{o: o}
	var err error
	if s.templates, err = narrate.LoadTemplates(ctx, o.PromptDir); err != nil {
		return nil, err
	}
	if o.RedactRules != "" {
		if s.redactRules, err = redact.LoadRules(o.RedactRules); err != nil {
			return nil, err
		}
	}
	if o.Replay != "" {
		if s.replay, err = narrate.LoadAnswers(ctx, o.Replay, true); err != nil {
			return nil, fmt.Errorf("--llm-replay: %w", err)
		}
	}
	if o.Record != "" {
		if s.record, err = narrate.LoadAnswers(ctx, o.Record, false); err != nil {
			return nil, fmt.Errorf("--llm-record: %w", err)
		}
	}
	return s, nil
}

// run adds the narrative and its warnings to the report, or with --dry-run-prompt prints the
// prompts and reports done. Only a prompt template that does not render, an interrupted run,
// or answers that cannot be recorded, are errors: every other problem goes in the narrative's
// failure.
func (s *llmStep) run(ctx context.Context, opts *AnalyzeOptions, io *IOStreams, m *parse.Model, ix *index.Index, rep *report.Report) (done bool, err error) {
	o := s.o
	nopts := narrate.Options{
		Model: o.Model, NumCtx: o.NumCtx, NumPredict: o.MaxTokens, Timeout: o.Timeout, PerRole: o.PerRole,
		Templates:   s.templates,
		RedactRules: s.redactRules,
		Windows:     narrate.IndexWindows{Index: ix},
	}
	if o.DryRun {
		prompts, err := narrate.Prompts(ctx, rep, nopts)
		if err != nil {
			return false, err
		}
		var b strings.Builder
		for _, p := range prompts {
			writePrompt(&b, p, o)
		}
		_, err = fmt.Fprint(io.Out, b.String())
		return true, err
	}
	switch {
	case s.replay != nil:
		nopts.Replay = s.replay
	default:
		newLLM := o.NewLLM
		if newLLM == nil {
			newLLM = func(host string) (narrate.LLM, error) { return ollama.New(host, nil) }
		}
		if nopts.LLM, err = newLLM(o.Host); err != nil {
			return false, flagErrorf("--ollama-host: %v", err)
		}
	}
	if !o.NoCache && o.CacheDir != "" && s.replay == nil {
		nopts.Cache = &narrate.Cache{Dir: o.CacheDir}
	}
	nopts.Record = s.record
	narrative, warnings, err := narrate.Narrate(ctx, rep, nopts)
	if err != nil {
		return false, err
	}
	rep.LLM = &narrative
	for _, w := range warnings {
		rep.Warnings = append(rep.Warnings, string(w))
	}
	if s.record != nil {
		if err := s.record.Save(ctx); err != nil {
			return false, fmt.Errorf("--llm-record: %w", err)
		}
	}
	if narrative.Failure != "" && !opts.Quiet {
		fmt.Fprintf(io.ErrOut, "coroner: no LLM narrative: %s\n", narrative.Failure)
	}
	return false, nil
}

// writePrompt prints one prompt as --dry-run-prompt shows it: a header of "#" lines (what, how
// big, what it carries), then the messages.
func writePrompt(b *strings.Builder, p *narrate.Prompt, o *LLMOptions) {
	what := "job"
	if p.Role != "" {
		what = "role " + p.Role
	}
	t := p.Template
	version := t.Version
	if version == "" {
		version = "none"
	}
	fmt.Fprintf(b, "# prompt for the %s: template %s, version %s (%s)\n", what, t.Name, version, t.Source)
	fmt.Fprintf(b, "# about %d tokens (estimated) of --num-ctx %d, %d kept for the answer; %d bytes; %s\n",
		p.Tokens, o.NumCtx, o.MaxTokens, p.Bytes, p.Hash)
	var inc []string
	for _, s := range report.SummarizeParts(p.Included) {
		inc = append(inc, s.String())
	}
	if len(inc) == 0 {
		inc = []string{"nothing from the bundle beyond the job summary"}
	}
	fmt.Fprintf(b, "# included: %s; %d left out to fit\n", strings.Join(inc, "; "), p.Omitted)
	b.WriteString(p.Text())
}
