package narrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	// PerRole says when to ask the model for each role's diagnosis first (map), then for the
	// job (reduce).
	PerRole PerRoleMode

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

// PerRoleMode says when the roles' diagnoses are asked for first.
type PerRoleMode int

const (
	// PerRoleAuto asks each role first when the job has more than one role with pods and its
	// prompt cannot hold all its findings and log windows whole (a large job, a small
	// context): each role's prompt then carries that role's evidence, and the job's prompt
	// the roles' diagnoses.
	PerRoleAuto PerRoleMode = iota
	// PerRoleNever asks only for the job.
	PerRoleNever
	// PerRoleAlways asks each role first.
	PerRoleAlways
)

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
	// Tokens is the estimate (EstimateTokens, with the chat template's share).
	Tokens int
	Bytes  int
	// NumCtx and NumPredict are the context and the answer's budget it was made for.
	NumCtx, NumPredict int
	// Included are the parts in the prompt, most relevant first; Omitted counts those left
	// out, Left by kind.
	Included []report.PromptPart
	Omitted  int
	Left     Left
}

// Info is the prompt as the report describes it.
func (p *Prompt) Info() report.PromptInfo {
	inc := p.Included
	if inc == nil {
		inc = []report.PromptPart{}
	}
	return report.PromptInfo{Template: p.Template.Name, Version: p.Template.Version, Source: p.Template.Source,
		Hash: p.Hash, Tokens: p.Tokens, NumCtx: p.NumCtx, NumPredict: p.NumPredict, Bytes: p.Bytes,
		Included: inc, Omitted: p.Omitted, LeftOut: p.Left.counts()}
}

// crowded reports whether the prompt had to shorten or leave out findings or log windows: the
// job's evidence does not fit.
func (p *Prompt) crowded() bool {
	if p.Left.Findings+p.Left.Logs > 0 {
		return true
	}
	for _, in := range p.Included {
		if in.Shortened && (in.Kind == report.PartFinding || in.Kind == report.PartLog) {
			return true
		}
	}
	return false
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

// Prompts renders what Narrate would send, without calling: in the per-role mode the role
// prompts first, then the job's prompt (carrying the findings' role diagnoses, which the
// model's replace in a real run). It reads log windows, so it stops when ctx ends.
func Prompts(ctx context.Context, rep *report.Report, opts Options) ([]*Prompt, error) {
	n, err := newNarrator(ctx, opts)
	if err != nil {
		return nil, err
	}
	ps, _, err := n.prompts(ctx, rep)
	return ps, err
}

// prompts renders the job's prompt and, in the per-role mode (asked for, or chosen because
// the job's prompt is crowded), the roles' before it; perRole says which.
func (n *narrator) prompts(ctx context.Context, rep *report.Report) (ps []*Prompt, perRole bool, err error) {
	roles := FindingsDiagnoses(rep)
	job, err := n.build(ctx, rep, "", roles, n.PerRole == PerRoleAlways)
	if err != nil {
		return nil, false, err
	}
	asked := askedRoles(rep)
	switch n.PerRole {
	case PerRoleAlways:
		perRole = true
	case PerRoleAuto:
		perRole = len(asked) > 1 && job.crowded()
	}
	if !perRole {
		return []*Prompt{job}, false, nil
	}
	if n.PerRole == PerRoleAuto {
		// The job's prompt of the per-role mode, with the roles' diagnoses first.
		if job, err = n.build(ctx, rep, "", roles, true); err != nil {
			return nil, false, err
		}
	}
	for _, r := range asked {
		p, err := n.build(ctx, rep, r, nil, false)
		if err != nil {
			return nil, false, err
		}
		ps = append(ps, p)
	}
	return append(ps, job), true, nil
}

// askedRoles are the roles the per-role mode asks about: those with pods.
func askedRoles(rep *report.Report) []string {
	var out []string
	for _, r := range rep.Job.Replicas {
		if len(r.Pods) > 0 {
			out = append(out, r.Role)
		}
	}
	return out
}

// requestOverhead is what a chat template adds once per request: the begin-of-text token, the
// header of the answer, a date line some templates put in the system message (Llama 3.2).
const requestOverhead = 24

// build renders one prompt: the job's (role "", with the roles' diagnoses among its parts),
// or one role's. Its parts go in by relevance (candidates' order), each whole or shortened to
// fit, until one does not fit even at its shortest: it and every less relevant part are left
// out. The floor, the root cause in its shortest form (or the job's summary alone when the
// root cause is not in this prompt's scope), must fit, else the context is too small.
func (n *narrator) build(ctx context.Context, rep *report.Report, role string, roles []Role, perRole bool) (*Prompt, error) {
	t := n.Templates.For(rep.Job.Kind)
	var sc scope
	if role != "" {
		rt, ok := n.Templates.Get(RoleTemplate)
		if !ok {
			return nil, &TemplateError{fmt.Errorf("no %s.tmpl prompt template for the per-role prompts", RoleTemplate)}
		}
		t = rt
		sc = roleScope(rep, role)
	}
	var win Windows
	if n.Windows != nil {
		win = redactedWindows{n.Windows, n.redactor}
	}
	parts := candidates(ctx, rep, win, sc, roles, perRole)
	var err error
	if ctx.Err() != nil {
		return nil, interrupted(ctx)
	}
	b := base(rep, len(roles) > 0)
	b.Role = role
	budget := n.NumCtx - n.NumPredict
	render := func(chosen []part, left Left) ([]Message, int, error) {
		system, user, err := t.Render(compose(b, chosen, left))
		if err != nil {
			return nil, 0, &TemplateError{err}
		}
		var msgs []Message
		if system != "" {
			msgs = append(msgs, Message{Role: "system", Content: n.redact(system)})
		}
		msgs = append(msgs, Message{Role: "user", Content: n.redact(user)})
		return msgs, messagesTokens(msgs), nil
	}
	if parts, err = shown(parts, render); err != nil {
		return nil, err
	}
	// suffix[i] counts, by kind, the parts from i on: what is left out when the prompt stops
	// before part i. Candidates past maxCandidates are never tried.
	var capped Left
	for _, p := range parts[min(len(parts), maxCandidates):] {
		capped.add(p.kind, 1)
	}
	parts = parts[:min(len(parts), maxCandidates)]
	suffix := make([]Left, len(parts)+1)
	suffix[len(parts)] = capped
	for i := len(parts) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1]
		suffix[i].add(parts[i].kind, 1)
	}

	// The floor.
	var floor []part
	what := "the job's summary"
	switch {
	case len(parts) > 0 && parts[0].kind == report.PartFinding && parts[0].entry.findings[0].RootCause:
		floor, what = []part{parts[0].shorten(parts[0].forms() - 1)}, "the root cause"
	case rep.Verdict == "healthy":
		what = "the verdict and its reason"
	}
	left := suffix[len(floor)]
	msgs, tok, err := render(floor, left)
	if err != nil {
		return nil, err
	}
	if tok > budget {
		return nil, &ContextTooSmallError{What: what, Need: tok, Min: tok + n.NumPredict}
	}

	p := &Prompt{Template: t, Role: role, NumCtx: n.NumCtx, NumPredict: n.NumPredict}
	var chosen []part
	stop := len(parts)
	for i := range parts {
		if ctx.Err() != nil {
			return nil, interrupted(ctx)
		}
		// try renders the prompt with part i in form f, if it fits.
		try := func(f int) ([]Message, bool, error) {
			m, tok, err := render(append(chosen, parts[i].shorten(f)), suffix[i+1])
			return m, tok <= budget, err
		}
		next, ok, err := try(0)
		if err != nil {
			return nil, err
		}
		form := 0
		if !ok {
			// The least shortened form that fits: forms shrink as they go.
			last := parts[i].forms() - 1
			if last == 0 {
				stop = i
				break
			}
			if next, ok, err = try(last); err != nil {
				return nil, err
			}
			if !ok {
				stop = i
				break
			}
			form = last
			for lo, hi := 1, last-1; lo <= hi; {
				mid := (lo + hi) / 2
				m, ok, err := try(mid)
				if err != nil {
					return nil, err
				}
				if ok {
					next, form, hi = m, mid, mid-1
				} else {
					lo = mid + 1
				}
			}
		}
		// What the part adds: the prompt without it, the same parts left out.
		without, _, err := render(chosen, suffix[i+1])
		if err != nil {
			return nil, err
		}
		in := parts[i].shorten(form)
		chosen = append(chosen, in)
		p.Included = append(p.Included, in.info(msgBytes(next)-msgBytes(without)))
	}
	p.Left = suffix[stop]
	if msgs, p.Tokens, err = render(chosen, p.Left); err != nil {
		return nil, err
	}
	p.Messages, p.Omitted = msgs, p.Left.total()
	p.Bytes = msgBytes(msgs)
	data, _ := json.Marshal(msgs)
	sum := sha256.Sum256(data)
	p.Hash = "sha256:" + hex.EncodeToString(sum[:])
	return p, nil
}

// shown keeps the candidates of the kinds the template shows (role.tmpl has no timeline, a
// user's template may show only the findings): a part it does not show is neither sent nor
// left out.
func shown(parts []part, render func([]part, Left) ([]Message, int, error)) ([]part, error) {
	empty, _, err := render(nil, Left{})
	if err != nil {
		return nil, err
	}
	seen := map[report.PartKind]bool{}
	for _, p := range parts {
		if _, ok := seen[p.kind]; ok {
			continue
		}
		with, _, err := render([]part{p}, Left{})
		if err != nil {
			return nil, err
		}
		seen[p.kind] = !slices.Equal(with, empty)
	}
	out := parts[:0:0]
	for _, p := range parts {
		if seen[p.kind] {
			out = append(out, p)
		}
	}
	return out, nil
}

func msgBytes(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	return n
}

// redact passes the whole prompt through the redactor, as one text: a secret that spans
// lines is masked as it is in a bundle. Log windows were redacted as they were read (see
// redactedWindows), before the template put line numbers in front of their lines.
func (n *narrator) redact(s string) string {
	return n.redactor.Text(s)
}

// Result is what the LLM step made of a report.
type Result struct {
	// Narrative is the report's narrative; when it is missing, its Failure says why.
	Narrative report.Narrative
	// Failure is why the narrative is missing, nil when there is one. Narrative.Failure is
	// its text; a caller may say it in its own terms (the typed errors of this package).
	Failure error
	// Warnings are problems the narrative survived, for the caller to add to the report.
	Warnings []Warning
}

// Narrate runs the LLM step for a report; it does not change the report. The error is for a
// prompt template that does not render (found before any call) and for ctx ending (the
// narrative would say only that it was interrupted: the caller should not write the report).
// Every other problem is the result's Failure, and the report stands without a narrative.
func Narrate(ctx context.Context, rep *report.Report, opts Options) (*Result, error) {
	n, err := newNarrator(ctx, opts)
	if err != nil {
		return nil, err
	}
	q := &questioner{n: n}
	res := &Result{}
	err = n.narrate(ctx, rep, q, res)
	if err == nil && ctx.Err() != nil {
		err = interrupted(ctx)
	}
	res.Warnings = q.warnings
	if err != nil {
		return nil, err
	}
	return res, nil
}

// narrate asks the questions; a failure that leaves the report standing is res.Failure.
func (n *narrator) narrate(ctx context.Context, rep *report.Report, q *questioner, res *Result) error {
	roles := FindingsDiagnoses(rep)
	out := &res.Narrative
	*out = report.Narrative{Model: n.Model, Roles: roleDiagnoses(roles), Solution: []string{}}
	var te *TemplateError
	// fail keeps the report standing with a narrative that says why it is missing, unless
	// the template is broken or the run was interrupted.
	fail := func(err error) error {
		if errors.As(err, &te) {
			return err
		}
		if ctx.Err() != nil {
			return interrupted(ctx)
		}
		res.Failure = err
		out.Failure = err.Error()
		return nil
	}
	// Render everything once before asking anything: template errors surface now.
	prompts, perRole, err := n.prompts(ctx, rep)
	if err != nil {
		return fail(err)
	}
	out.PerRole = perRole
	job := prompts[len(prompts)-1]
	out.Prompt = job.Info()

	if n.Replay == nil {
		if err := q.resolveDigest(ctx); err != nil {
			return fail(err)
		}
		out.ModelDigest = q.digest
	}
	if perRole {
		asked := map[string]report.RoleDiagnosis{}
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
			info := p.Info()
			info.ActualTokens = ans.PromptTokens
			asked[p.Role] = report.RoleDiagnosis{Cached: ans.cached, Prompt: &info}
			q.checkCount(p, ans)
			out.Roles = roleDiagnoses(roles)
			for k, r := range out.Roles {
				if a, ok := asked[r.Role]; ok {
					out.Roles[k].Cached, out.Roles[k].Prompt = a.Cached, a.Prompt
				}
			}
		}
		// The reduce step: the job's prompt now carries the model's role diagnoses.
		if job, err = n.build(ctx, rep, "", roles, true); err != nil {
			return fail(err)
		}
		out.Prompt = job.Info()
	}
	ans, err := q.ask(ctx, job, AnswerSchema)
	if err != nil {
		return fail(err)
	}
	if q.digest != "" {
		out.ModelDigest = q.digest
	}
	out.Prompt.ActualTokens = ans.PromptTokens
	q.checkCount(job, ans)
	out.Raw, out.DoneReason, out.Cached = ans.Text, ans.DoneReason, ans.cached
	a := ParseAnswer(ans.Text)
	out.Healthy, out.Error, out.Analysis, out.AnswerFormat = a.Healthy, a.Error, a.Analysis, a.Format
	if a.Solution != nil {
		out.Solution = a.Solution
	}
	return nil
}

// checkCount warns when the model's tokenizer counted more prompt tokens than the context
// leaves beside the answer's budget: the estimate was wrong for this model, and its answer
// had less room than it was given.
func (q *questioner) checkCount(p *Prompt, ans *answer) {
	if ans.PromptTokens == 0 || ans.PromptTokens <= p.NumCtx-p.NumPredict {
		return
	}
	what := "the job's prompt"
	if p.Role != "" {
		what = "the " + p.Role + " prompt"
	}
	q.warnings = append(q.warnings, Warning(fmt.Sprintf(
		"%s was estimated at %d tokens, but the model counted %d: more than the %d its %d-token context leaves beside the answer's %d, so the answer had less room",
		what, p.Tokens, ans.PromptTokens, p.NumCtx-p.NumPredict, p.NumCtx, p.NumPredict)))
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
			return nil, &NoRecordedAnswerError{File: n.Replay.Path(), Model: n.Model, Template: p.Template.Name, Hash: p.Hash, Options: opts}
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
			return nil, &TimeoutError{Limit: n.Timeout, Streaming: true}
		}
		return nil, q.callError(err)
	}
	e := &Entry{Key: key, Model: n.Model, Digest: q.digest, PromptHash: p.Hash, Options: opts, Text: reply.Text,
		DoneReason: reply.DoneReason, PromptTokens: reply.PromptTokens}
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
		return &TimeoutError{Limit: q.n.Timeout}
	}
	return err
}

// roleScope is the pods of one role, and its pod groups by id and by their pods.
func roleScope(rep *report.Report, role string) scope {
	sc := scope{}
	for _, r := range rep.Job.Replicas {
		if r.Role != role {
			continue
		}
		for _, p := range r.Pods {
			sc[p.Name] = true
		}
		for _, g := range r.Groups {
			sc[g.ID] = true
			for _, p := range g.Pods {
				sc[p] = true
			}
			for _, p := range g.Members() {
				sc[p.Name] = true
			}
		}
	}
	return sc
}
