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

// Options configure the LLM step.
type Options struct {
	Model string
	// NumCtx is the context window asked for; the prompt plus NumPredict must fit in it.
	NumCtx int
	// NumPredict is the most tokens an answer may have.
	NumPredict int
	Timeout    time.Duration
	// PerRole asks the model for each role's diagnosis first (map), then for the job (reduce).
	PerRole bool
}

// Narrator runs the LLM step.
type Narrator struct {
	// LLM answers questions; it may be nil when Replay answers them all.
	LLM       LLM
	Templates *Templates
	// Redactor masks every line of every prompt.
	Redactor Redactor
	// Windows reads log context for the prompt; nil leaves log windows out.
	Windows Windows
	// Cache, when set, answers questions asked before and keeps new answers.
	Cache *Cache
	// Replay, when set, is the only source of answers: no call is made.
	Replay *Answers
	// Record, when set, receives every answer (the caller saves it).
	Record *Answers
	Options
}

// Prompt is one rendered prompt and what it carries.
type Prompt struct {
	Template *Template
	// Role is the role asked about, "" for the job's prompt.
	Role     string
	Messages []Message
	Hash     string
	Tokens   int
	Bytes    int
	Included []report.LLMItem
	Omitted  int
}

// Info is the prompt as the report describes it.
func (p *Prompt) Info(numCtx int) report.LLMPrompt {
	inc := p.Included
	if inc == nil {
		inc = []report.LLMItem{}
	}
	return report.LLMPrompt{Template: p.Template.Name, Version: p.Template.Version, Source: p.Template.Source,
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

func (n *Narrator) genOptions() GenOptions {
	return GenOptions{NumCtx: n.NumCtx, NumPredict: n.NumPredict, Temperature: 0, Seed: Seed}
}

// Prompts renders what Narrate would send, without calling: with PerRole the role prompts
// first, then the job's prompt (carrying the findings' role diagnoses, which the model's
// replace in a real run).
func (n *Narrator) Prompts(rep *report.Report) ([]*Prompt, error) {
	roles := FindingsDiagnoses(rep)
	var out []*Prompt
	if n.PerRole {
		for _, r := range askedRoles(rep) {
			p, err := n.build(rep, r, roles)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	p, err := n.build(rep, "", roles)
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

// TemplateError is a prompt template that does not render: the user's to fix, found before
// any call.
type TemplateError struct{ Err error }

func (e *TemplateError) Error() string { return e.Err.Error() }
func (e *TemplateError) Unwrap() error { return e.Err }

// build renders one prompt, choosing what goes in by relevance until the context is full.
func (n *Narrator) build(rep *report.Report, role string, roles []Role) (*Prompt, error) {
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
	pieces := candidates(rep, n.Windows, sc)
	b := base(rep, roles)
	b.Role = role
	budget := n.NumCtx - n.NumPredict - slack
	included := make([]bool, len(pieces))

	render := func(omitted int) ([]Message, error) {
		d := compose(b, pieces, included)
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
	for i := range pieces {
		if i >= maxCandidates {
			omitted += len(pieces) - i
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
			p.Included = append(p.Included, report.LLMItem{Kind: pieces[i].kind, Ref: pieces[i].ref, Bytes: grown})
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
func (n *Narrator) redact(s string) string {
	if n.Redactor == nil {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = n.Redactor.Line(l)
	}
	return strings.Join(lines, "\n")
}

// Narrate runs the LLM step for a report and returns the narrative. The error is only for a
// prompt template that does not render, found before any call; every other problem is the
// narrative's Failure, and the report stands without it.
func (n *Narrator) Narrate(ctx context.Context, rep *report.Report) (*report.LLM, error) {
	roles := FindingsDiagnoses(rep)
	out := &report.LLM{Model: n.Model, Roles: reportRoles(roles), Solution: []string{}}
	// Render everything once before asking anything: template errors surface now.
	prompts, err := n.Prompts(rep)
	var te *TemplateError
	if errors.As(err, &te) {
		return nil, err
	}
	if err != nil {
		out.Failure = err.Error()
		return out, nil
	}
	job := prompts[len(prompts)-1]
	out.Prompt = job.Info(n.NumCtx)

	q := &questioner{n: n}
	if n.Replay == nil {
		if err := q.resolveDigest(ctx); err != nil {
			out.Failure = err.Error()
			return out, nil
		}
		out.ModelDigest = q.digest
	}
	if n.PerRole {
		for i, p := range prompts[:len(prompts)-1] {
			ans, err := q.ask(ctx, p, nil)
			if err != nil {
				out.Failure = fmt.Sprintf("asking for the %s diagnosis: %v", p.Role, err)
				return out, nil
			}
			for k := range roles {
				if roles[k].Name == prompts[i].Role {
					roles[k] = Role{Name: p.Role, Diagnosis: cutAnswer(ans.Text), Source: "model"}
				}
			}
			out.Roles = reportRoles(roles)
			for k := range out.Roles {
				if out.Roles[k].Role == p.Role {
					out.Roles[k].Cached = ans.cached
				}
			}
		}
		// The reduce step: the job's prompt now carries the model's role diagnoses.
		job, err = n.build(rep, "", roles)
		if err != nil {
			if errors.As(err, &te) {
				return nil, err
			}
			out.Failure = err.Error()
			return out, nil
		}
		out.Prompt = job.Info(n.NumCtx)
	}
	ans, err := q.ask(ctx, job, AnswerSchema)
	if err != nil {
		out.Failure = err.Error()
		return out, nil
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
	rep.Warnings = append(rep.Warnings, q.warnings...)
	return out, nil
}

func reportRoles(roles []Role) []report.LLMRole {
	out := make([]report.LLMRole, len(roles))
	for i, r := range roles {
		out[i] = report.LLMRole{Role: r.Name, Diagnosis: r.Diagnosis, Source: r.Source}
	}
	return out
}

func cutAnswer(s string) string { return truncate(oneLine(s), maxRoleAnswer) }

// questioner asks questions of the cache, the replay file or the model, in that order.
type questioner struct {
	n      *Narrator
	digest string
	// offline: the server could not be reached to name the digest; only stored answers can
	// be had.
	offline  error
	warnings []string
}

type answer struct {
	*Entry
	cached bool
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
		e, err := n.Cache.Get(key)
		if err != nil {
			q.warnings = append(q.warnings, "answer cache: "+err.Error())
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
		if err := n.Cache.Put(e); err != nil {
			q.warnings = append(q.warnings, "answer cache: "+err.Error())
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
	switch {
	case errors.Is(err, context.Canceled):
		return errors.New("interrupted before the answer was complete")
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no answer within --llm-timeout %s", q.n.Timeout)
	}
	return err
}
