package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
	// PerRole is --llm-per-role: auto (unset), always (set) or never (=false).
	PerRole   narrate.PerRoleMode
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
	cacheDir := ""
	if d, err := os.UserCacheDir(); err == nil {
		cacheDir = filepath.Join(d, "coroner", "llm")
	}
	addModelFlags(cmd, o, cacheDir, "answer cache `DIR`")
	f := cmd.Flags()
	f.StringVar(&o.RedactRules, "redact-rules", "", "also mask what the rules of `FILE` find in prompts and in the report's text (the format of 'coroner redact --rules')")
	f.BoolVar(&o.DryRun, "dry-run-prompt", false, "print the prompt that --llm would send, and its token estimate; send nothing")
	f.StringVar(&o.Replay, "llm-replay", "", "answer from the recorded answers in `FILE` instead of calling a model (implies --llm)")
	f.StringVar(&o.Record, "llm-record", "", "record the answers in `FILE`, for --llm-replay (implies --llm)")
}

// addModelFlags adds the flags of the LLM step that analyze and watch share: the server, the
// model, its budgets, the prompts and the answer cache (in cacheDir unless set).
func addModelFlags(cmd *cobra.Command, o *LLMOptions, cacheDir, cacheUsage string) {
	model := os.Getenv("CORONER_LLM_MODEL")
	if model == "" {
		model = narrate.DefaultModel
	}
	f := cmd.Flags()
	f.BoolVar(&o.Enabled, "llm", false, "add a narrative from a local Ollama model (the report is complete without it)")
	f.StringVar(&o.Host, "ollama-host", os.Getenv("OLLAMA_HOST"), "Ollama server `URL` (default $OLLAMA_HOST, else "+ollama.DefaultHost+")")
	f.StringVar(&o.Model, "model", model, "Ollama `MODEL` for --llm (default $CORONER_LLM_MODEL, else "+narrate.DefaultModel+")")
	f.IntVar(&o.NumCtx, "num-ctx", narrate.DefaultNumCtx, "context window in `TOKENS`: the prompt plus the answer must fit")
	f.IntVar(&o.MaxTokens, "llm-max-tokens", narrate.DefaultNumPredict, "longest answer in `TOKENS` (kept free in --num-ctx)")
	f.DurationVar(&o.Timeout, "llm-timeout", narrate.DefaultTimeout, "longest wait for one complete answer")
	f.Var(perRoleFlag{&o.PerRole}, "llm-per-role", "ask the model for each role's diagnosis first, then for the job: true, false, or auto (when the job's findings and log windows do not fit --num-ctx)")
	f.Lookup("llm-per-role").NoOptDefVal = "true"
	f.StringVar(&o.PromptDir, "prompt-dir", "", "override the prompt templates with the *.tmpl files in `DIR` (see 'coroner prompts')")
	f.StringVar(&o.CacheDir, "llm-cache-dir", cacheDir, cacheUsage)
	f.BoolVar(&o.NoCache, "llm-no-cache", false, "neither read nor write the answer cache")
}

// perRoleFlag is --llm-per-role: a bool flag whose unset value is "auto".
type perRoleFlag struct{ mode *narrate.PerRoleMode }

func (f perRoleFlag) String() string {
	if f.mode == nil {
		return "auto"
	}
	return map[narrate.PerRoleMode]string{narrate.PerRoleAuto: "auto", narrate.PerRoleAlways: "true", narrate.PerRoleNever: "false"}[*f.mode]
}

func (f perRoleFlag) Set(s string) error {
	if s == "auto" {
		*f.mode = narrate.PerRoleAuto
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true, false or auto")
	}
	*f.mode = narrate.PerRoleNever
	if b {
		*f.mode = narrate.PerRoleAlways
	}
	return nil
}

func (f perRoleFlag) Type() string { return "bool" }

// llmStep is the LLM step, set up (flags checked, templates parsed, answer files read)
// before the bundle is read.
type llmStep struct {
	o         *LLMOptions
	templates *narrate.Templates
	replay    *narrate.Answers
	record    *narrate.Answers
	// reload reads the templates of --prompt-dir again for each narrative (coroner watch,
	// where a mounted ConfigMap changes under a running process); a template that does not
	// load or render is then the narrative's failure, not an error.
	reload bool
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
		if o.PromptDir != "" {
			return nil, fmt.Errorf("--prompt-dir: %w", err)
		}
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

// options are narrate's options for one run, log windows read from ix (nil: none).
func (s *llmStep) options(ix *index.Index) narrate.Options {
	o := s.o
	nopts := narrate.Options{
		Model: o.Model, NumCtx: o.NumCtx, NumPredict: o.MaxTokens, Timeout: o.Timeout, PerRole: o.PerRole,
		Templates:   s.templates,
		RedactRules: s.redactRules,
	}
	if ix != nil {
		nopts.Windows = narrate.IndexWindows{Index: ix}
	}
	return nopts
}

// run adds the narrative and its warnings to the report, or with --dry-run-prompt prints the
// prompts and reports done. Only a prompt template that does not render, an interrupted run,
// or answers that cannot be recorded, are errors: every other problem goes in the narrative's
// failure.
func (s *llmStep) run(ctx context.Context, opts *AnalyzeOptions, io *IOStreams, m *parse.Model, ix *index.Index, rep *report.Report) (done bool, err error) {
	if s.o.DryRun {
		prompts, err := narrate.Prompts(ctx, rep, s.options(ix))
		if err != nil {
			return false, s.describe(err)
		}
		var b strings.Builder
		for _, p := range prompts {
			b.WriteString(p.Listing("--num-ctx"))
			if info := p.Info(); info.Cut() {
				s.warn(io, opts, cutWarning(p.Role, &info))
			}
		}
		_, err = fmt.Fprint(io.Out, b.String())
		return true, err
	}
	warnings, err := s.narrate(ctx, rep, ix)
	if err != nil {
		return false, err
	}
	for _, w := range warnings {
		s.warn(io, opts, w)
	}
	if f := rep.LLM.Failure; f != "" && !opts.Quiet {
		fmt.Fprintf(io.ErrOut, "coroner: no LLM narrative: %s\n", f)
	}
	return false, nil
}

// narrate asks the model about rep, reading log windows from ix (nil: none), and puts the
// narrative in rep.LLM and the warnings it survived in rep.Warnings; it returns those
// warnings for the caller to say. Only a prompt template that does not render (unless
// s.reload), an interrupted run, or answers that cannot be recorded, are errors: every other
// problem goes in the narrative's failure. With s.reload the templates are read again first,
// so that a changed --prompt-dir (a mounted ConfigMap) is used without a restart.
func (s *llmStep) narrate(ctx context.Context, rep *report.Report, ix *index.Index) ([]string, error) {
	o := s.o
	nopts := s.options(ix)
	var err error
	// failed keeps the report standing with a narrative that says why it is missing.
	failed := func(err error) ([]string, error) {
		rep.LLM = &report.Narrative{Model: o.Model, Roles: []report.RoleDiagnosis{}, Solution: []string{}, Failure: err.Error()}
		return nil, nil
	}
	if s.reload && o.PromptDir != "" {
		if nopts.Templates, err = narrate.LoadTemplates(ctx, o.PromptDir); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return failed(fmt.Errorf("--prompt-dir: %w", err))
		}
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
			return nil, flagErrorf("--ollama-host: %v", err)
		}
	}
	if !o.NoCache && o.CacheDir != "" && s.replay == nil {
		nopts.Cache = &narrate.Cache{Dir: o.CacheDir}
	}
	nopts.Record = s.record
	res, err := narrate.Narrate(ctx, rep, nopts)
	if err != nil {
		var te *narrate.TemplateError
		if s.reload && errors.As(err, &te) && ctx.Err() == nil {
			return failed(s.describe(err))
		}
		return nil, s.describe(err)
	}
	narrative := res.Narrative
	if res.Failure != nil {
		narrative.Failure = s.describe(res.Failure).Error()
	}
	rep.LLM = &narrative
	var warnings []string
	for _, r := range narrative.Roles {
		if r.Prompt != nil && r.Prompt.Cut() {
			warnings = append(warnings, cutWarning(r.Role, r.Prompt))
		}
	}
	if narrative.Prompt.Cut() {
		warnings = append(warnings, cutWarning("", &narrative.Prompt))
	}
	if narrative.PerRole && o.PerRole == narrate.PerRoleAuto {
		warnings = append(warnings, fmt.Sprintf("the job's findings and log windows do not fit --num-ctx %d: each role's diagnosis was asked first (--llm-per-role; =false turns it off)", o.NumCtx))
	}
	for _, w := range res.Warnings {
		warnings = append(warnings, string(w))
	}
	rep.Warnings = append(rep.Warnings, warnings...)
	if s.record != nil {
		if err := s.record.Save(ctx); err != nil {
			return nil, fmt.Errorf("--llm-record: %w", err)
		}
	}
	return warnings, nil
}

func (s *llmStep) warn(io *IOStreams, opts *AnalyzeOptions, w string) {
	if !opts.Quiet {
		fmt.Fprintf(io.ErrOut, "coroner: warning: %s\n", report.TerminalSafe(w))
	}
}

// describe says an error of the LLM step in the command's terms, naming the flag to change.
func (s *llmStep) describe(err error) error {
	o := s.o
	var (
		small   *narrate.ContextTooSmallError
		timeout *narrate.TimeoutError
		connect *narrate.ConnectError
		replay  *narrate.NoRecordedAnswerError
	)
	switch {
	case errors.As(err, &small) && small.Server != "":
		return fmt.Errorf("context too small: the server says %q: the model's tokenizer counts more than coroner's estimate; raise --num-ctx", small.Server)
	case errors.As(err, &small):
		return fmt.Errorf("context too small: %s alone needs %d tokens; raise --num-ctx to at least %d (or lower --llm-max-tokens %d)", small.What, small.Need, small.Min, o.MaxTokens)
	case errors.As(err, &timeout) && timeout.Streaming:
		return fmt.Errorf("no complete answer within --llm-timeout %s", timeout.Limit)
	case errors.As(err, &timeout):
		return fmt.Errorf("no answer within --llm-timeout %s", timeout.Limit)
	case errors.As(err, &connect):
		return fmt.Errorf("%w: start it with `ollama serve`, or name the server with --ollama-host or OLLAMA_HOST", err)
	case errors.As(err, &replay):
		return fmt.Errorf("%w: record it with --llm-record", err)
	}
	return err
}

// cutWarning says what a prompt left out or shortened to fit the context; role is "" for the
// job's prompt.
func cutWarning(role string, p *report.PromptInfo) string {
	what := "the LLM prompt"
	if role != "" {
		what = "the LLM prompt for the " + role + " role"
	}
	var short, left []string
	for _, in := range p.Included {
		if in.Shortened {
			short = append(short, in.Kind.String()+" "+in.Ref)
		}
	}
	for _, c := range p.LeftOut {
		left = append(left, c.Kind.Plural(c.Count))
	}
	var clauses []string
	if len(short) > 0 {
		clauses = append(clauses, "shortened "+strings.Join(short, ", "))
	}
	if len(left) > 0 {
		clauses = append(clauses, "left out "+strings.Join(left, ", "))
	}
	return fmt.Sprintf("%s was cut to fit --num-ctx %d with %d tokens kept for the answer (--llm-max-tokens): %s",
		what, p.NumCtx, p.NumPredict, strings.Join(clauses, "; "))
}
