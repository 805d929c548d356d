package narrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/report"
)

// fakeLLM is an LLM whose answers come from a function; it counts and keeps the requests.
type fakeLLM struct {
	mu       sync.Mutex
	requests []*Request
	chat     func(ctx context.Context, req *Request) (*Reply, error)
	digest   func(ctx context.Context, model string) (string, error)
}

func (f *fakeLLM) Chat(ctx context.Context, req *Request) (*Reply, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	return f.chat(ctx, req)
}

func (f *fakeLLM) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// fakeServer adds a Digester to fakeLLM, as Ollama has.
type fakeServer struct{ *fakeLLM }

func (f fakeServer) Digest(ctx context.Context, model string) (string, error) {
	return f.digest(ctx, model)
}

func answering(text string) *fakeLLM {
	return &fakeLLM{chat: func(ctx context.Context, req *Request) (*Reply, error) {
		return &Reply{Text: text, DoneReason: "stop"}, nil
	}}
}

const goodAnswer = `{"healthy":"No","error":"The master was OOM-killed.","analysis":"It hit its memory limit.","solution":["Raise the limit"]}`

// sample analyzes a sample bundle as coroner analyze does; the index serves the log windows.
func sample(t *testing.T, name string) (*report.Report, *index.Index) {
	t.Helper()
	return analyzed(t, filepath.Join("..", "samples", name))
}

// analyzed analyzes a bundle as coroner analyze does.
func analyzed(t *testing.T, dir string) (*report.Report, *index.Index) {
	t.Helper()
	rs, err := analyze.BuiltinRuleSet()
	require.NoError(t, err)
	d, err := diagnose.Run(t.Context(), diagnose.Input{Paths: []string{dir}}, diagnose.Options{Rules: rs, Workers: 2,
		Limits: bundle.DefaultLimits(), Version: "test", KeepSecrets: true})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d.Report, d.Index
}

// options are the LLM step's options as coroner analyze sets them, with the built-in
// templates.
func options(ix *index.Index, l LLM) Options {
	return Options{Model: "m", NumCtx: DefaultNumCtx, NumPredict: DefaultNumPredict, Timeout: time.Minute,
		LLM: l, Windows: IndexWindows{Index: ix}}
}

// mustNarrate runs Narrate, which must neither fail nor warn.
func mustNarrate(t *testing.T, rep *report.Report, o Options) report.Narrative {
	t.Helper()
	res, err := Narrate(t.Context(), rep, o)
	require.NoError(t, err)
	require.Empty(t, res.Warnings)
	require.Equal(t, res.Failure == nil, res.Narrative.Failure == "")
	return res.Narrative
}

func TestNarrateParsesTheAnswer(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	fake := answering(goodAnswer)
	n := options(m, fake)
	out := mustNarrate(t, rep, n)
	require.Empty(t, out.Failure)
	require.Equal(t, 1, fake.calls())
	req := fake.requests[0]
	require.Equal(t, "m", req.Model)
	require.JSONEq(t, string(AnswerSchema), string(req.Format), "the seed's fields are asked for with a schema")
	require.Equal(t, GenOptions{NumCtx: DefaultNumCtx, NumPredict: DefaultNumPredict, Temperature: 0, Seed: Seed}, req.Options)
	require.Equal(t, "system", req.Messages[0].Role)
	require.Contains(t, req.Messages[1].Content, "Job Name: train-job")

	no := false
	require.Equal(t, &no, out.Healthy)
	require.Equal(t, "The master was OOM-killed.", out.Error)
	require.Equal(t, []string{"Raise the limit"}, out.Solution)
	require.Equal(t, goodAnswer, out.Raw)
	require.Equal(t, "json", out.AnswerFormat)
	require.False(t, out.Cached)
	require.Equal(t, "pytorchjob", out.Prompt.Template)
	require.Equal(t, "2", out.Prompt.Version)
	require.Equal(t, BuiltIn, out.Prompt.Source)
	require.Equal(t, report.PartFinding, out.Prompt.Included[0].Kind)
	require.Equal(t, "f1", out.Prompt.Included[0].Ref, "the root cause goes in first")
	require.Equal(t, report.PartLog, out.Prompt.Included[1].Kind)
	require.Contains(t, out.Prompt.Included[1].Ref, "logs/ml/train-job-master-0/pytorch.log:", "then the end of the OOM-killed container's log")
	require.Len(t, out.Roles, 2)
	require.Equal(t, "findings", out.Roles[0].Source)
}

// TestPromptIsBoundedByRelevance: a small context keeps the root cause and its log window,
// shortened to fit, and leaves out the least relevant parts, never exceeding the budget.
func TestPromptIsBoundedByRelevance(t *testing.T) {
	rep, m := sample(t, "pytorchjob-cuda-oom-rank")
	n := options(m, nil)
	n.PerRole = PerRoleNever
	n.NumCtx = 16384 // room for every part
	full, err := Prompts(t.Context(), rep, n)
	require.NoError(t, err)
	require.Zero(t, full[0].Omitted)
	require.False(t, full[0].Info().Cut())

	n.NumCtx, n.NumPredict = 2000, 500
	small, err := Prompts(t.Context(), rep, n)
	require.NoError(t, err)
	p := small[0]
	require.LessOrEqual(t, p.Tokens, 2000-500)
	require.Positive(t, p.Omitted)
	require.Equal(t, p.Omitted, p.Left.total())
	require.True(t, p.Info().Cut())
	require.Equal(t, "f1", p.Included[0].Ref)
	require.Equal(t, report.PartLog, p.Included[1].Kind)
	require.Contains(t, p.Messages[1].Content, "torch.OutOfMemoryError: CUDA out of memory")
	require.Contains(t, p.Messages[1].Content, fmt.Sprintf("(timeline entries left out to fit the context: %d)", p.Left.Timeline))
	requireStrictPriority(t, rep, n, p, false)
}

// requireStrictPriority checks that a prompt holds a prefix of its candidates, most relevant
// first: no part is in while a more relevant one is out. Parts go in whole, or shortened to
// fit (a log window narrowed around its evidence line); the root cause, when in the prompt's
// scope, is always in with its evidence line.
func requireStrictPriority(t *testing.T, rep *report.Report, o Options, p *Prompt, perRole bool) {
	t.Helper()
	var sc scope
	var roles []Role
	if p.Role != "" {
		sc = roleScope(rep, p.Role)
	} else {
		roles = FindingsDiagnoses(rep)
	}
	cands := candidates(t.Context(), rep, o.Windows, sc, roles, perRole)
	// The kinds the template does not show are no candidates (role.tmpl has no timeline).
	shown := map[report.PartKind]bool{}
	for _, in := range p.Included {
		shown[in.Kind] = true
	}
	for _, c := range p.Left.counts() {
		shown[c.Kind] = true
	}
	var kept []part
	for _, c := range cands {
		if shown[c.kind] {
			kept = append(kept, c)
		}
	}
	require.Equal(t, len(kept), len(p.Included)+p.Omitted, "every candidate is in or counted out")
	for i, in := range p.Included {
		c := kept[i]
		require.Equal(t, c.kind, in.Kind, "part %d", i)
		if in.Shortened && in.Kind == report.PartLog {
			var file string
			var from, to int
			_, err := fmt.Sscanf(strings.Replace(in.Ref, ":", " ", 1), "%s %d-%d", &file, &from, &to)
			require.NoError(t, err)
			require.Equal(t, c.window.File, file)
			require.True(t, from >= c.window.From && to <= c.window.To, "%s narrows %s", in.Ref, c.ref)
			if len(c.hits) > 0 {
				require.True(t, from <= c.hits[0] && c.hits[0] <= to, "%s keeps its evidence line %d", in.Ref, c.hits[0])
			}
			continue
		}
		require.Equal(t, c.ref, in.Ref, "part %d", i)
	}
	if rc := rep.RootCause; rc != nil && len(kept) > 0 && kept[0].kind == report.PartFinding && kept[0].entry.findings[0].RootCause {
		require.NotEmpty(t, p.Included, "the root cause is always in")
		require.Equal(t, rc.ID, p.Included[0].Ref)
		f := kept[0].entry.findings[0]
		if len(f.evidence) > 0 {
			ev := f.evidence[0]
			text := p.Text()
			require.Contains(t, text, "evidence: "+ev[0]+": "+truncate(cut(ev[1]), compactEvidence)[:min(len(cut(ev[1])), 80)], "with its evidence line")
		}
	}
	require.LessOrEqual(t, p.Tokens, p.NumCtx-p.NumPredict)
}

func TestContextTooSmallFailsBeforeAnyCall(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	fake := answering(goodAnswer)
	n := options(m, fake)
	n.NumCtx, n.NumPredict = 600, 500
	res, err := Narrate(t.Context(), rep, n)
	require.NoError(t, err)
	require.Zero(t, fake.calls())
	var small *ContextTooSmallError
	require.ErrorAs(t, res.Failure, &small)
	require.Equal(t, "the root cause", small.What)
	require.Greater(t, small.Need, 100)
	require.Equal(t, small.Need+500, small.Min)
	require.Equal(t, fmt.Sprintf("context too small: the root cause alone needs %d tokens, and with the answer's budget a context of at least %d", small.Need, small.Min), res.Narrative.Failure)
	require.NotContains(t, res.Narrative.Failure, "--", "the library names no flag")
	require.Nil(t, res.Narrative.Healthy)

	// At the minimum it names, the job's prompt is the root cause alone.
	n.NumCtx = small.Min
	ps, err := Prompts(t.Context(), rep, n)
	require.NoError(t, err)
	job := ps[len(ps)-1]
	require.Equal(t, []report.PromptPart{{Kind: report.PartFinding, Ref: "f1", Bytes: job.Included[0].Bytes, Shortened: true}}, job.Included)
	require.LessOrEqual(t, job.Tokens, small.Need)
}

func TestEverythingSentIsRedacted(t *testing.T) {
	rep, m := sample(t, "pytorchjob-cuda-oom-rank")
	fake := answering(goodAnswer)
	n := options(m, fake)
	// A word of the root cause's evidence line and of its log window stands for a secret.
	n.RedactRules = []redact.Rule{{ID: "test-secret", Literals: []string{"OutOfMemoryError"}}}
	mustNarrate(t, rep, n)
	require.Equal(t, 1, fake.calls())
	for _, msg := range fake.requests[0].Messages {
		require.NotContains(t, msg.Content, "OutOfMemoryError")
	}
	require.Regexp(t, `torch\.\[REDACTED:test-secret:\w+\]: CUDA out of memory`, fake.requests[0].Messages[1].Content)
}

func TestAnswerCache(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	digest := "sha256:aaa"
	fake := answering(goodAnswer)
	fake.digest = func(ctx context.Context, model string) (string, error) { return digest, nil }
	n := options(m, fakeServer{fake})
	n.Cache = &Cache{Dir: t.TempDir()}

	first := mustNarrate(t, rep, n)
	require.Equal(t, 1, fake.calls())
	require.False(t, first.Cached)
	require.Equal(t, digest, first.ModelDigest)

	second := mustNarrate(t, rep, n)
	require.Equal(t, 1, fake.calls(), "a re-run answers from the cache")
	require.True(t, second.Cached)
	second.Cached = false
	require.Equal(t, first, second)

	// The server cannot be reached: the cached answer still serves.
	fake.digest = func(ctx context.Context, model string) (string, error) {
		return "", fmt.Errorf("%w at x (dial tcp: connection refused)", ErrUnreachable)
	}
	offline := mustNarrate(t, rep, n)
	require.True(t, offline.Cached)
	require.Equal(t, digest, offline.ModelDigest)
	require.Equal(t, 1, fake.calls())

	// A re-pulled model (another digest) is asked again.
	digest = "sha256:bbb"
	fake.digest = func(ctx context.Context, model string) (string, error) { return digest, nil }
	third := mustNarrate(t, rep, n)
	require.Equal(t, 2, fake.calls())
	require.False(t, third.Cached)
	require.Equal(t, digest, third.ModelDigest)

	// Other options are another question.
	n.NumPredict = 512
	mustNarrate(t, rep, n)
	require.Equal(t, 3, fake.calls())
}

func TestUnreachableWithoutCacheIsAFailure(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	fake := answering(goodAnswer)
	fake.digest = func(ctx context.Context, model string) (string, error) {
		return "", &ConnectError{Host: "http://127.0.0.1:1", Reason: "connect: connection refused"}
	}
	n := options(m, fakeServer{fake})
	out := mustNarrate(t, rep, n)
	require.Zero(t, fake.calls())
	require.Equal(t, "could not connect to http://127.0.0.1:1: connect: connection refused", out.Failure)
	require.Equal(t, "pytorchjob", out.Prompt.Template, "the report still says what would have been sent")
}

func TestCallFailures(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	tests := []struct {
		name string
		chat func(ctx context.Context, req *Request) (*Reply, error)
		want string
	}{
		{"model not pulled", func(ctx context.Context, req *Request) (*Reply, error) {
			return nil, fmt.Errorf("%w: the Ollama server at x does not have %q: run `ollama pull %s`", ErrModelNotFound, req.Model, req.Model)
		}, "run `ollama pull m`"},
		{"stream cut", func(ctx context.Context, req *Request) (*Reply, error) {
			return nil, fmt.Errorf("%w (120 bytes received)", ErrStreamCut)
		}, "ended before its final chunk"},
		{"timeout", func(ctx context.Context, req *Request) (*Reply, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, "no complete answer within the 50ms timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := options(m, &fakeLLM{chat: tt.chat})
			n.Timeout = 50 * time.Millisecond
			out := mustNarrate(t, rep, n)
			require.Contains(t, out.Failure, tt.want)
			require.Empty(t, out.Raw)
		})
	}
	// An interrupted run is an error, not a narrative: the caller writes no report.
	t.Run("interrupted while asking", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		n := options(m, &fakeLLM{chat: func(c context.Context, req *Request) (*Reply, error) {
			cancel()
			<-c.Done()
			return nil, c.Err()
		}})
		res, err := Narrate(ctx, rep, n)
		require.ErrorIs(t, err, context.Canceled)
		require.EqualError(t, err, "LLM step interrupted: context canceled")
		require.Nil(t, res)
	})
	t.Run("interrupted before asking", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		fake := answering(goodAnswer)
		_, err := Narrate(ctx, rep, options(m, fake))
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, fake.calls())
		_, err = Prompts(ctx, rep, options(m, nil))
		require.ErrorIs(t, err, context.Canceled, "reading the log windows stops")
	})
}

// TestNarrateLeavesTheReportAlone: problems the narrative survives come back as warnings for
// the caller; the report is not changed.
func TestNarrateLeavesTheReportAlone(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	var before bytes.Buffer
	require.NoError(t, report.RenderJSON(&before, rep))
	n := options(m, answering(goodAnswer))
	// The cache's directory is a file: the answer cannot be kept.
	notDir := filepath.Join(t.TempDir(), "cache")
	require.NoError(t, os.WriteFile(notDir, nil, 0o644))
	n.Cache = &Cache{Dir: notDir}
	res, err := Narrate(t.Context(), rep, n)
	require.NoError(t, err)
	out, warnings := res.Narrative, res.Warnings
	require.Empty(t, out.Failure)
	require.Equal(t, []Warning{
		Warning(fmt.Sprintf("answer cache: open %s/%s.json: not a directory", notDir, questionKey("m", out.Prompt.Hash, AnswerSchema, GenOptions{NumCtx: DefaultNumCtx, NumPredict: DefaultNumPredict, Seed: Seed}))),
		Warning(fmt.Sprintf("answer cache: mkdir %s: not a directory", notDir)),
	}, warnings, "the read and the write are told")
	var after bytes.Buffer
	require.NoError(t, report.RenderJSON(&after, rep))
	require.Equal(t, before.String(), after.String())
}

func TestRecordThenReplay(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	file := filepath.Join(t.TempDir(), "answers.json")
	rec, err := LoadAnswers(t.Context(), file, false)
	require.NoError(t, err)
	fake := answering(goodAnswer)
	n := options(m, fake)
	n.Record = rec
	live := mustNarrate(t, rep, n)
	require.NoError(t, rec.Save(t.Context()))

	replay, err := LoadAnswers(t.Context(), file, true)
	require.NoError(t, err)
	n = options(m, nil)
	n.Replay = replay
	replayed := mustNarrate(t, rep, n)
	require.True(t, replayed.Cached)
	replayed.Cached = false
	require.Equal(t, live, replayed)

	// Another prompt has no recorded answer.
	rep2, _ := sample(t, "pytorchjob-no-gpu")
	missing := mustNarrate(t, rep2, n)
	require.Contains(t, missing.Failure, file+" holds no answer")

	_, err = LoadAnswers(t.Context(), filepath.Join(t.TempDir(), "none.json"), true)
	require.ErrorIs(t, err, os.ErrNotExist)

	// An interrupted save leaves neither the file nor a temporary one; an interrupted load
	// reads nothing.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dir := t.TempDir()
	other, err := LoadAnswers(t.Context(), filepath.Join(dir, "answers.json"), false)
	require.NoError(t, err)
	other.Put(&Entry{Key: "k", Text: "t"})
	require.ErrorIs(t, other.Save(ctx), context.Canceled)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
	_, err = LoadAnswers(ctx, file, true)
	require.ErrorIs(t, err, context.Canceled)
}

func TestPerRoleAsksEachRoleThenTheJob(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	fake := &fakeLLM{chat: func(ctx context.Context, req *Request) (*Reply, error) {
		if req.Format == nil {
			role := strings.TrimPrefix(strings.Split(req.Messages[1].Content, "\n")[1], "Role: ")
			return &Reply{Text: "The " + role + " pods <summary>.", DoneReason: "stop"}, nil
		}
		return &Reply{Text: goodAnswer, DoneReason: "stop"}, nil
	}}
	n := options(m, fake)
	n.PerRole = PerRoleAlways
	out := mustNarrate(t, rep, n)
	require.Empty(t, out.Failure)
	require.Equal(t, 3, fake.calls(), "Master, Worker, then the job")
	require.Contains(t, fake.requests[0].Messages[1].Content, "Role: Master")
	require.Contains(t, fake.requests[0].Messages[1].Content, "OOMKilled")
	require.NotContains(t, fake.requests[0].Messages[1].Content, "train-job-worker-0 Failed", "a role's prompt holds its own pods")
	require.Contains(t, fake.requests[1].Messages[1].Content, "Role: Worker")
	job := fake.requests[2].Messages[1].Content
	require.Contains(t, job, "Master diagnosis: The Master pods <summary>.")
	require.Contains(t, job, "Worker diagnosis: The Worker pods <summary>.")
	require.True(t, out.PerRole)
	for k, r := range out.Roles {
		require.Equal(t, "role", r.Prompt.Template, "each role's prompt is in the report")
		require.Equal(t, report.PartFinding, r.Prompt.Included[0].Kind)
		out.Roles[k].Prompt = nil
	}
	require.Equal(t, []report.RoleDiagnosis{
		{Role: "Master", Diagnosis: "The Master pods <summary>.", Source: "model"},
		{Role: "Worker", Diagnosis: "The Worker pods <summary>.", Source: "model"},
	}, out.Roles)
}

func TestBrokenTemplateIsAnErrorBeforeAnyCall(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	for name, text := range map[string]string{
		"missing field":        `Job {{ .Metadata.JobName }} on {{ .Cluster }}`,
		"missing metadata key": `Job {{ index .Metadata "JobNmae" }}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "pytorchjob.tmpl"), []byte(text), 0o644))
			ts, err := LoadTemplates(t.Context(), dir)
			require.NoError(t, err)
			fake := answering(goodAnswer)
			n := options(m, fake)
			n.Templates = ts
			_, err = Narrate(t.Context(), rep, n)
			require.Error(t, err)
			require.Contains(t, err.Error(), filepath.Join(dir, "pytorchjob.tmpl"))
			require.Zero(t, fake.calls())
			var te *TemplateError
			require.True(t, errors.As(err, &te))
		})
	}
}

// TestStructuredData: a template can use coroner's own variables instead of the seed's text
// blocks, and gets the same parts.
func TestStructuredData(t *testing.T) {
	rep, m := sample(t, "pytorchjob-cuda-oom-rank")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pytorchjob.tmpl"), []byte(
		`{{ with .RootCause }}{{ .ID }} {{ .Category }} {{ .Pod }}{{ end }}|{{ len .Findings }}|{{ range .Logs }}{{ .File }}:{{ .From }}-{{ .To }} {{ end }}|{{ range .Replicas }}{{ .Role }}={{ .Failed }} {{ end }}|{{ range .Roles }}{{ .Name }}:{{ .Source }} {{ end }}|{{ .Verdict }}`), 0o644))
	ts, err := LoadTemplates(t.Context(), dir)
	require.NoError(t, err)
	n := options(m, nil)
	n.Templates = ts
	ps, err := Prompts(t.Context(), rep, n)
	require.NoError(t, err)
	parts := strings.Split(ps[0].Messages[0].Content, "|")
	require.Equal(t, "f1 cuda-oom train-job-worker-4", parts[0])
	require.Equal(t, fmt.Sprint(len(rep.Findings)), parts[1], "every finding fits the default context")
	require.True(t, strings.HasPrefix(parts[2], "logs/ml/train-job-worker-4/pytorch.log:36-66 "), parts[2])
	require.Equal(t, "Master=1 Worker=7 ", parts[3])
	require.Equal(t, "Master:findings Worker:findings ", parts[4])
	require.Equal(t, "unhealthy", parts[5])
}
