package narrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/report"
)

// Defaults of the LLM step.
const (
	DefaultModel      = "qwen2.5:7b-instruct"
	DefaultNumCtx     = 8192
	DefaultNumPredict = 1024
	DefaultTimeout    = 5 * time.Minute
	// Seed is the fixed sampling seed: with temperature 0 the same prompt gets the same answer.
	Seed = 42
	// slack keeps room for the "N more were left out" line added after selection.
	slack = 32
	// maxRoleAnswer bounds a role's diagnosis carried into the job's prompt.
	maxRoleAnswer = 800
)

// Options configure the LLM step: how to ask, and whom.
type Options struct {
	Model string
	// NumCtx is the context window asked for; the prompt plus NumPredict must fit in it.
	NumCtx int
	// NumPredict is the most tokens an answer may have.
	NumPredict int
	// Timeout bounds each question, from the request to the answer's final chunk.
	Timeout time.Duration
	// PerRole asks the model for each role's diagnosis first (map), then for the job (reduce).
	PerRole bool

	// LLM answers questions; it may be nil when Replay answers them all.
	LLM LLM
	// Templates are the prompt templates; nil means the built-in ones.
	Templates *Templates
	// RedactRules are the user's redaction rules (the format of `coroner redact --rules`),
	// applied with the built-in ones to every line of every prompt.
	RedactRules []redact.Rule
	// Windows reads log context for the prompt; nil leaves log windows out.
	Windows Windows
	// Cache, when set, answers questions asked before and keeps new answers.
	Cache *Cache
	// Replay, when set, is the only source of answers: no call is made.
	Replay *Answers
	// Record, when set, receives every answer (the caller saves it).
	Record *Answers
}

// Warning is a problem the narrative survived, such as an answer cache that cannot be read
// or written. Narrate returns them; the caller adds them to the report's warnings.
type Warning string

// Prompt is one rendered prompt and what it carries.
type Prompt struct {
	Template *Template
	// Role is the role asked about, "" for the job's prompt.
	Role     string
	Messages []Message
	Hash     string
	Tokens   int
	Bytes    int
	Included []report.PromptPart
	Omitted  int
}

// Info is the prompt as the report describes it.
func (p *Prompt) Info(numCtx int) report.PromptInfo {
	inc := p.Included
	if inc == nil {
		inc = []report.PromptPart{}
	}
	return report.PromptInfo{Template: p.Template.Name, Version: p.Template.Version, Source: p.Template.Source,
		Hash: p.Hash, Tokens: p.Tokens, NumCtx: numCtx, Bytes: p.Bytes, Included: inc, Omitted: p.Omitted}
}

// Text is the prompt as --dry-run-prompt prints it.
func (p *Prompt) Text() string {
	var b strings.Builder
	for _, m := range p.Messages {
		fmt.Fprintf(&b, "=== %s ===\n%s\n", m.Role, m.Content)
	}
	return b.String()
}

// TemplateError is a prompt template that does not render: the user's to fix, found before
// any call.
type TemplateError struct{ Err error }

func (e *TemplateError) Error() string { return e.Err.Error() }
func (e *TemplateError) Unwrap() error { return e.Err }

// promptRedactionKey keys the redaction tokens of prompts. It is fixed so that the same bundle
// gives the same prompt, hence the same cache key and replayable answers; prompts stay on the
// machine (they go to the local model, never into the report).
var promptRedactionKey = sha256.Sum256([]byte("coroner llm prompt redaction v1"))

// narrator is one run of the LLM step.
type narrator struct {
	Options
	// redactor masks every line of every prompt: nothing reaches a model unredacted.
	redactor *redact.Redactor
}

func newNarrator(ctx context.Context, opts Options) (*narrator, error) {
	red, err := redact.New(redact.Options{Key: promptRedactionKey[:], Extra: opts.RedactRules})
	if err != nil {
		return nil, err
	}
	n := &narrator{Options: opts, redactor: red}
	if n.Templates == nil {
		ts, err := LoadTemplates(ctx, "")
		if err != nil {
			return nil, err
		}
		n.Templates = ts
	}
	return n, nil
}

func (n *narrator) genOptions() GenOptions {
	return GenOptions{NumCtx: n.NumCtx, NumPredict: n.NumPredict, Temperature: 0, Seed: Seed}
}

// interrupted is the error of a run whose context ended: nothing it made should be kept.
func interrupted(ctx context.Context) error {
	return fmt.Errorf("LLM step interrupted: %w", context.Cause(ctx))
}

// Prompts renders what Narrate would send, without calling: with PerRole the role prompts
// first, then the job's prompt (carrying the findings' role diagnoses, which the model's
// replace in a real run). It reads log windows, so it stops when ctx ends.
func Prompts(ctx context.Context, rep *report.Report, opts Options) ([]*Prompt, error) {
	n, err := newNarrator(ctx, opts)
	if err != nil {
		return nil, err
	}
	return n.prompts(ctx, rep)
}

func (n *narrator) prompts(ctx context.Context, rep *report.Report) ([]*Prompt, error) {
	roles := FindingsDiagnoses(rep)
	var out []*Prompt
	if n.PerRole {
		for _, r := range askedRoles(rep) {
			p, err := n.build(ctx, rep, r, roles)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	p, err := n.build(ctx, rep, "", roles)
	if err != nil {
		return nil, err
	}
	return append(out, p), nil
}

// askedRoles are the roles --llm-per-role asks about: those with pods.
func askedRoles(rep *report.Report) []string {
	var out []string
	for _, r := range rep.Job.Replicas {
		if len(r.Pods) > 0 {
			out = append(out, r.Role)
		}
	}
	return out
}

// build renders one prompt, choosing what goes in by relevance until the context is full.
func (n *narrator) build(ctx context.Context, rep *report.Report, role string, roles []Role) (*Prompt, error) {
	t := n.Templates.For(rep.Job.Kind)
	var sc scope
	if role != "" {
		rt, ok := n.Templates.Get(RoleTemplate)
		if !ok {
			return nil, &TemplateError{fmt.Errorf("no %s.tmpl prompt template for --llm-per-role", RoleTemplate)}
		}
		t = rt
		sc = scope{}
		for _, r := range rep.Job.Replicas {
			if r.Role == role {
				for _, p := range r.Pods {
					sc[p.Name] = true
				}
			}
		}
	}
	parts := candidates(ctx, rep, n.Windows, sc)
	if ctx.Err() != nil {
		return nil, interrupted(ctx)
	}
	b := base(rep, roles)
	b.Role = role
	budget := n.NumCtx - n.NumPredict - slack
	included := make([]bool, len(parts))

	render := func(omitted int) ([]Message, error) {
		d := compose(b, parts, included)
		d.Omitted = omitted
		system, user, err := t.Render(d)
		if err != nil {
			return nil, &TemplateError{err}
		}
		var msgs []Message
		if system != "" {
			msgs = append(msgs, Message{Role: "system", Content: n.redact(system)})
		}
		return append(msgs, Message{Role: "user", Content: n.redact(user)}), nil
	}
	msgs, err := render(0)
	if err != nil {
		return nil, err
	}
	if tok := messagesTokens(msgs); tok > budget {
		return nil, fmt.Errorf("%w: the %s prompt needs about %d tokens before any evidence, and --num-ctx %d leaves %d once %d are kept for the answer: raise --num-ctx",
			ErrContextTooSmall, t.Name, tok, n.NumCtx, max(budget, 0), n.NumPredict)
	}
	p := &Prompt{Template: t, Role: role}
	size := msgBytes(msgs)
	omitted := 0
	// The parts come most relevant first: each goes in if the prompt still fits with it.
	for i := range parts {
		if ctx.Err() != nil {
			return nil, interrupted(ctx)
		}
		if i >= maxCandidates {
			omitted += len(parts) - i
			break
		}
		included[i] = true
		next, err := render(0)
		if err != nil {
			return nil, err
		}
		if messagesTokens(next) > budget {
			included[i] = false
			omitted++
			continue
		}
		if grown := msgBytes(next) - size; grown > 0 {
			p.Included = append(p.Included, parts[i].info(grown))
		}
		size = msgBytes(next)
	}
	if msgs, err = render(omitted); err != nil {
		return nil, err
	}
	p.Messages, p.Omitted = msgs, omitted
	p.Tokens, p.Bytes = messagesTokens(msgs), msgBytes(msgs)
	data, _ := json.Marshal(msgs)
	sum := sha256.Sum256(data)
	p.Hash = "sha256:" + hex.EncodeToString(sum[:])
	return p, nil
}

func msgBytes(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	return n
}

// redact passes every line through the redactor.
func (n *narrator) redact(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = n.redactor.Line(l)
	}
	return strings.Join(lines, "\n")
}

// Narrate runs the LLM step for a report and returns the narrative, and the warnings for the
// caller to add to the report; it does not change the report. The error is for a prompt
// template that does not render (found before any call) and for ctx ending (the narrative
// would say only that it was interrupted: the caller should not write the report). Every
// other problem is the narrative's Failure, and the report stands without it.
func Narrate(ctx context.Context, rep *report.Report, opts Options) (report.Narrative, []Warning, error) {
	n, err := newNarrator(ctx, opts)
	if err != nil {
		return report.Narrative{}, nil, err
	}
	q := &questioner{n: n}
	out, err := n.narrate(ctx, rep, q)
	if err == nil && ctx.Err() != nil {
		err = interrupted(ctx)
	}
	if err != nil {
		return report.Narrative{}, q.warnings, err
	}
	return out, q.warnings, nil
}

// narrate asks the questions; a failure that leaves the report standing is out.Failure.
func (n *narrator) narrate(ctx context.Context, rep *report.Report, q *questioner) (report.Narrative, error) {
	roles := FindingsDiagnoses(rep)
	out := report.Narrative{Model: n.Model, Roles: roleDiagnoses(roles), Solution: []string{}}
	var te *TemplateError
	// fail keeps the report standing with a narrative that says why it is missing, unless
	// the template is broken or the run was interrupted.
	fail := func(err error) (report.Narrative, error) {
		if errors.As(err, &te) {
			return report.Narrative{}, err
		}
		if ctx.Err() != nil {
			return report.Narrative{}, interrupted(ctx)
		}
		out.Failure = err.Error()
		return out, nil
	}
	// Render everything once before asking anything: template errors surface now.
	prompts, err := n.prompts(ctx, rep)
	if err != nil {
		return fail(err)
	}
	job := prompts[len(prompts)-1]
	out.Prompt = job.Info(n.NumCtx)

	if n.Replay == nil {
		if err := q.resolveDigest(ctx); err != nil {
			return fail(err)
		}
		out.ModelDigest = q.digest
	}
	if n.PerRole {
		for _, p := range prompts[:len(prompts)-1] {
			ans, err := q.ask(ctx, p, nil)
			if err != nil {
				return fail(fmt.Errorf("asking for the %s diagnosis: %w", p.Role, err))
			}
			for k := range roles {
				if roles[k].Name == p.Role {
					roles[k] = Role{Name: p.Role, Diagnosis: cutAnswer(ans.Text), Source: "model"}
				}
			}
			out.Roles = roleDiagnoses(roles)
			for k := range out.Roles {
				if out.Roles[k].Role == p.Role {
					out.Roles[k].Cached = ans.cached
				}
			}
		}
		// The reduce step: the job's prompt now carries the model's role diagnoses.
		if job, err = n.build(ctx, rep, "", roles); err != nil {
			return fail(err)
		}
		out.Prompt = job.Info(n.NumCtx)
	}
	ans, err := q.ask(ctx, job, AnswerSchema)
	if err != nil {
		return fail(err)
	}
	if q.digest != "" {
		out.ModelDigest = q.digest
	}
	out.Raw, out.DoneReason, out.Cached = ans.Text, ans.DoneReason, ans.cached
	a := ParseAnswer(ans.Text)
	out.Healthy, out.Error, out.Analysis, out.AnswerFormat = a.Healthy, a.Error, a.Analysis, a.Format
	if a.Solution != nil {
		out.Solution = a.Solution
	}
	return out, nil
}

func roleDiagnoses(roles []Role) []report.RoleDiagnosis {
	out := make([]report.RoleDiagnosis, len(roles))
	for i, r := range roles {
		out[i] = report.RoleDiagnosis{Role: r.Name, Diagnosis: r.Diagnosis, Source: r.Source}
	}
	return out
}

func cutAnswer(s string) string { return truncate(oneLine(s), maxRoleAnswer) }

// questioner asks questions of the cache, the replay file or the model, in that order.
type questioner struct {
	n      *narrator
	digest string
	// offline: the server could not be reached to name the digest; only stored answers can
	// be had.
	offline  error
	warnings []Warning
}

type answer struct {
	*Entry
	cached bool
}

func (q *questioner) warn(err error) {
	q.warnings = append(q.warnings, Warning("answer cache: "+err.Error()))
}

func (q *questioner) resolveDigest(ctx context.Context) error {
	d, ok := q.n.LLM.(Digester)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, q.n.Timeout)
	defer cancel()
	digest, err := d.Digest(ctx, q.n.Model)
	switch {
	case err == nil:
		q.digest = digest
	case errors.Is(err, ErrUnreachable):
		q.offline = err
	default:
		return q.callError(err)
	}
	return nil
}

func (q *questioner) ask(ctx context.Context, p *Prompt, format json.RawMessage) (*answer, error) {
	n := q.n
	opts := n.genOptions()
	key := questionKey(n.Model, p.Hash, format, opts)
	if n.Replay != nil {
		e := n.Replay.Get(key)
		if e == nil {
			return nil, fmt.Errorf("%s holds no answer of %s to the %s prompt %s (options %+v): record it with --llm-record",
				n.Replay.Path(), n.Model, p.Template.Name, p.Hash, opts)
		}
		q.digest = e.Digest
		return &answer{Entry: e, cached: true}, nil
	}
	if n.Cache != nil {
		e, err := n.Cache.Get(ctx, key)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			q.warn(err)
		}
		if e != nil && (q.digest == "" || e.Digest == q.digest) {
			if q.digest == "" {
				q.digest = e.Digest
			}
			q.record(e)
			return &answer{Entry: e, cached: true}, nil
		}
	}
	if q.offline != nil {
		return nil, q.offline
	}
	if n.LLM == nil {
		return nil, errors.New("no LLM to ask")
	}
	cctx, cancel := context.WithTimeout(ctx, n.Timeout)
	defer cancel()
	reply, err := n.LLM.Chat(cctx, &Request{Model: n.Model, Messages: p.Messages, Format: format, Options: opts})
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no complete answer within --llm-timeout %s", n.Timeout)
		}
		return nil, q.callError(err)
	}
	e := &Entry{Key: key, Model: n.Model, Digest: q.digest, PromptHash: p.Hash, Options: opts, Text: reply.Text, DoneReason: reply.DoneReason}
	if n.Cache != nil {
		if err := n.Cache.Put(ctx, e); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			q.warn(err)
		}
	}
	q.record(e)
	return &answer{Entry: e}, nil
}

func (q *questioner) record(e *Entry) {
	if q.n.Record != nil {
		q.n.Record.Put(e)
	}
}

func (q *questioner) callError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within --llm-timeout %s", q.n.Timeout)
	}
	return err
}
