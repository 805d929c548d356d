package narrate

import (
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
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/parse"
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
	b, err := bundle.Open(filepath.Join("..", "samples", name), bundle.DefaultLimits())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	m, err := parse.Load(b)
	require.NoError(t, err)
	rules, err := analyze.DefaultRules()
	require.NoError(t, err)
	rs, err := analyze.NewRuleSet(rules)
	require.NoError(t, err)
	res, err := analyze.Run(m, analyze.Options{Rules: rs, Workers: 1})
	require.NoError(t, err)
	t.Cleanup(func() { res.Index.Close() })
	return report.Build(m, res, "test"), res.Index
}

// maskRedactor stands in for bundle/redact: it masks one known secret.
type maskRedactor struct{ secret string }

func (r maskRedactor) Line(s string) string { return strings.ReplaceAll(s, r.secret, "[REDACTED]") }

func narrator(t *testing.T, ix *index.Index, l LLM) *Narrator {
	t.Helper()
	ts, err := LoadTemplates("")
	require.NoError(t, err)
	return &Narrator{LLM: l, Templates: ts, Redactor: maskRedactor{"no-such-secret"},
		Windows: IndexWindows{Index: ix},
		Options: Options{Model: "m", NumCtx: DefaultNumCtx, NumPredict: DefaultNumPredict, Timeout: time.Minute}}
}

func TestNarrateParsesTheAnswer(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	fake := answering(goodAnswer)
	n := narrator(t, m, fake)
	out, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
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
	require.Equal(t, "1", out.Prompt.Version)
	require.Equal(t, BuiltIn, out.Prompt.Source)
	require.Equal(t, "finding", out.Prompt.Included[0].Kind)
	require.Equal(t, "f1", out.Prompt.Included[0].Ref, "the root cause goes in first")
	require.Equal(t, "log", out.Prompt.Included[1].Kind)
	require.Contains(t, out.Prompt.Included[1].Ref, "logs/ml/train-job-master-0/pytorch.log:", "then the end of the OOM-killed container's log")
	require.Len(t, out.Roles, 2)
	require.Equal(t, "findings", out.Roles[0].Source)
}

// TestPromptIsBoundedByRelevance: a small context keeps the root cause and its log window and
// drops the least relevant parts, never exceeding the budget.
func TestPromptIsBoundedByRelevance(t *testing.T) {
	rep, m := sample(t, "pytorchjob-cuda-oom-rank")
	n := narrator(t, m, nil)
	full, err := n.Prompts(rep)
	require.NoError(t, err)
	require.Zero(t, full[0].Omitted)

	n.NumCtx, n.NumPredict = 3000, 500
	small, err := n.Prompts(rep)
	require.NoError(t, err)
	p := small[0]
	require.LessOrEqual(t, p.Tokens, 3000-500)
	require.Positive(t, p.Omitted)
	require.Less(t, len(p.Included), len(full[0].Included))
	require.Equal(t, "f1", p.Included[0].Ref)
	require.Equal(t, "log", p.Included[1].Kind)
	require.Contains(t, p.Messages[1].Content, "torch.OutOfMemoryError: CUDA out of memory")
	require.Contains(t, p.Messages[1].Content, fmt.Sprintf("(%d more findings, events or log windows were left out", p.Omitted))
	// What went in is a prefix of the full prompt's choice, in its order, minus what did not fit.
	j := 0
	for _, it := range p.Included {
		for j < len(full[0].Included) && full[0].Included[j].Ref != it.Ref {
			j++
		}
		require.Less(t, j, len(full[0].Included), "%s was chosen out of relevance order", it.Ref)
	}
}

func TestContextTooSmallFailsBeforeAnyCall(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	fake := answering(goodAnswer)
	n := narrator(t, m, fake)
	n.NumCtx, n.NumPredict = 600, 500
	out, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.Zero(t, fake.calls())
	require.Contains(t, out.Failure, "context too small")
	require.Contains(t, out.Failure, "raise --num-ctx")
	require.Nil(t, out.Healthy)
}

func TestEverythingSentIsRedacted(t *testing.T) {
	rep, m := sample(t, "pytorchjob-cuda-oom-rank")
	fake := answering(goodAnswer)
	n := narrator(t, m, fake)
	// A word of the root cause's evidence line and of its log window stands for a secret.
	n.Redactor = maskRedactor{"OutOfMemoryError"}
	_, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.Equal(t, 1, fake.calls())
	for _, msg := range fake.requests[0].Messages {
		require.NotContains(t, msg.Content, "OutOfMemoryError")
	}
	require.Contains(t, fake.requests[0].Messages[1].Content, "torch.[REDACTED]: CUDA out of memory")
}

func TestAnswerCache(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	digest := "sha256:aaa"
	fake := answering(goodAnswer)
	fake.digest = func(ctx context.Context, model string) (string, error) { return digest, nil }
	n := narrator(t, m, fakeServer{fake})
	n.Cache = &Cache{Dir: t.TempDir()}

	first, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.Equal(t, 1, fake.calls())
	require.False(t, first.Cached)
	require.Equal(t, digest, first.ModelDigest)

	second, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.Equal(t, 1, fake.calls(), "a re-run answers from the cache")
	require.True(t, second.Cached)
	second.Cached = false
	require.Equal(t, first, second)

	// The server cannot be reached: the cached answer still serves.
	fake.digest = func(ctx context.Context, model string) (string, error) {
		return "", fmt.Errorf("%w at x (dial tcp: connection refused)", ErrUnreachable)
	}
	offline, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.True(t, offline.Cached)
	require.Equal(t, digest, offline.ModelDigest)
	require.Equal(t, 1, fake.calls())

	// A re-pulled model (another digest) is asked again.
	digest = "sha256:bbb"
	fake.digest = func(ctx context.Context, model string) (string, error) { return digest, nil }
	third, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.Equal(t, 2, fake.calls())
	require.False(t, third.Cached)
	require.Equal(t, digest, third.ModelDigest)

	// Other options are another question.
	n.NumPredict = 512
	_, err = n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.Equal(t, 3, fake.calls())
}

func TestUnreachableWithoutCacheIsAFailure(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	fake := answering(goodAnswer)
	fake.digest = func(ctx context.Context, model string) (string, error) {
		return "", fmt.Errorf("%w at http://127.0.0.1:1 (dial tcp: connection refused): start it with `ollama serve`, or set OLLAMA_HOST", ErrUnreachable)
	}
	n := narrator(t, m, fakeServer{fake})
	out, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.Zero(t, fake.calls())
	require.Contains(t, out.Failure, "cannot be reached")
	require.Contains(t, out.Failure, "ollama serve")
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
		}, "no complete answer within --llm-timeout 50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := narrator(t, m, &fakeLLM{chat: tt.chat})
			n.Timeout = 50 * time.Millisecond
			out, err := n.Narrate(t.Context(), rep)
			require.NoError(t, err)
			require.Contains(t, out.Failure, tt.want)
			require.Empty(t, out.Raw)
		})
	}
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		n := narrator(t, m, &fakeLLM{chat: func(c context.Context, req *Request) (*Reply, error) {
			cancel()
			<-c.Done()
			return nil, c.Err()
		}})
		out, err := n.Narrate(ctx, rep)
		require.NoError(t, err)
		require.Equal(t, "interrupted before the answer was complete", out.Failure)
	})
}

func TestRecordThenReplay(t *testing.T) {
	rep, m := sample(t, "pytorchjob-master-oomkilled")
	file := filepath.Join(t.TempDir(), "answers.json")
	rec, err := LoadAnswers(file, false)
	require.NoError(t, err)
	fake := answering(goodAnswer)
	n := narrator(t, m, fake)
	n.Record = rec
	live, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.NoError(t, rec.Save())

	replay, err := LoadAnswers(file, true)
	require.NoError(t, err)
	n = narrator(t, m, nil)
	n.Replay = replay
	replayed, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.True(t, replayed.Cached)
	replayed.Cached = false
	require.Equal(t, live, replayed)

	// Another prompt has no recorded answer.
	rep2, _ := sample(t, "pytorchjob-no-gpu")
	missing, err := n.Narrate(t.Context(), rep2)
	require.NoError(t, err)
	require.Contains(t, missing.Failure, file+" holds no answer")

	_, err = LoadAnswers(filepath.Join(t.TempDir(), "none.json"), true)
	require.ErrorIs(t, err, os.ErrNotExist)
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
	n := narrator(t, m, fake)
	n.PerRole = true
	out, err := n.Narrate(t.Context(), rep)
	require.NoError(t, err)
	require.Empty(t, out.Failure)
	require.Equal(t, 3, fake.calls(), "Master, Worker, then the job")
	require.Contains(t, fake.requests[0].Messages[1].Content, "Role: Master")
	require.Contains(t, fake.requests[0].Messages[1].Content, "OOMKilled")
	require.NotContains(t, fake.requests[0].Messages[1].Content, "train-job-worker-0 Failed", "a role's prompt holds its own pods")
	require.Contains(t, fake.requests[1].Messages[1].Content, "Role: Worker")
	job := fake.requests[2].Messages[1].Content
	require.Contains(t, job, "Master diagnosis: The Master pods <summary>.")
	require.Contains(t, job, "Worker diagnosis: The Worker pods <summary>.")
	require.Equal(t, []report.LLMRole{
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
			ts, err := LoadTemplates(dir)
			require.NoError(t, err)
			fake := answering(goodAnswer)
			n := narrator(t, m, fake)
			n.Templates = ts
			_, err = n.Narrate(t.Context(), rep)
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
	ts, err := LoadTemplates(dir)
	require.NoError(t, err)
	n := narrator(t, m, nil)
	n.Templates = ts
	ps, err := n.Prompts(rep)
	require.NoError(t, err)
	parts := strings.Split(ps[0].Messages[0].Content, "|")
	require.Equal(t, "f1 cuda-oom train-job-worker-4", parts[0])
	require.Equal(t, fmt.Sprint(len(rep.Findings)), parts[1], "every finding fits the default context")
	require.True(t, strings.HasPrefix(parts[2], "logs/ml/train-job-worker-4/pytorch.log:36-66 "), parts[2])
	require.Equal(t, "Master=1 Worker=7 ", parts[3])
	require.Equal(t, "Master:findings Worker:findings ", parts[4])
	require.Equal(t, "unhealthy", parts[5])
}
