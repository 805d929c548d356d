package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/narrate"
	"github.com/coroner-dev/coroner/report"
)

// fakeLLM answers every question with text, counting the calls.
type fakeLLM struct {
	text  string
	err   error
	calls atomic.Int32
}

func (f *fakeLLM) Chat(ctx context.Context, req *narrate.Request) (*narrate.Reply, error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	return &narrate.Reply{Text: f.text, DoneReason: "stop"}, nil
}

// analyzeWithLLM runs `coroner analyze ARGS` the way Main does, with the LLM client replaced.
func analyzeWithLLM(t *testing.T, l narrate.LLM, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ios := &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	var opts *AnalyzeOptions
	cmd := NewCmdAnalyze(ios, func(o *AnalyzeOptions) error { opts = o; return nil })
	cmd.SetArgs(append(args, "--llm-cache-dir", t.TempDir()))
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	require.NoError(t, cmd.Execute())
	opts.LLM.NewLLM = func(host string) (narrate.LLM, error) { return l, nil }
	err := runAnalyze(t.Context(), opts, ios)
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case isUsage(err):
		return 2, out.String(), err.Error()
	}
	return 1, out.String(), err.Error()
}

func isUsage(err error) bool {
	_, ok := err.(*FlagError)
	return ok
}

const hostileAnswer = `{"healthy":"No","error":"The master was <script>alert(1)</script> OOM-killed.","analysis":"Its | table [link](x) broke.","solution":["Raise resources.limits.memory","Stream the dataset"]}`

func TestAnalyzeWithLLMNarrative(t *testing.T) {
	fake := &fakeLLM{text: hostileAnswer}
	sampleDir := filepath.Join(samplesDir, "pytorchjob-master-oomkilled")
	code, out, stderr := analyzeWithLLM(t, fake, sampleDir, "--llm", "--model", "tiny", "--format", "json")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, int32(1), fake.calls.Load())
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	l := r.LLM
	require.NotNil(t, l)
	require.Equal(t, "tiny", l.Model)
	require.NotNil(t, l.Healthy)
	require.False(t, *l.Healthy)
	require.Equal(t, "The master was <script>alert(1)</script> OOM-killed.", l.Error)
	require.Equal(t, []string{"Raise resources.limits.memory", "Stream the dataset"}, l.Solution)
	require.Equal(t, hostileAnswer, l.Raw)
	require.Equal(t, "pytorchjob", l.Prompt.Template)
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, l.Prompt.Hash)
	require.Positive(t, l.Prompt.Tokens)
	require.Equal(t, narrate.DefaultNumCtx, l.Prompt.NumCtx)
	require.NotEmpty(t, l.Prompt.Included)
	require.Empty(t, l.Failure)

	// Markdown and HTML show the same, with the model's text escaped.
	for _, format := range []string{"md", "html", "text"} {
		code, out, stderr := analyzeWithLLM(t, fake, sampleDir, "--llm", "--model", "tiny", "--format", format)
		require.Equal(t, 0, code, stderr)
		switch format {
		case "md":
			require.Contains(t, out, "## LLM narrative")
			require.Contains(t, out, `**Error:** The master was \<script\>alert\(1\)\</script\> OOM-killed.`)
			require.Contains(t, out, "**Healthy:** No")
			require.Contains(t, out, `Its \| table \[link\]\(x\) broke.`)
			require.Contains(t, out, "1. Raise resources.limits.memory")
			require.Contains(t, out, "finding f1 \\(")
		case "html":
			require.Contains(t, out, `<h2>LLM narrative</h2>`)
			require.NotContains(t, out, "<script>")
			require.Contains(t, out, "&lt;script&gt;alert(1)&lt;/script&gt;")
			require.Contains(t, out, "<li>Raise resources.limits.memory</li>")
			require.Contains(t, out, "<dt>Healthy</dt><dd>No</dd>")
		case "text":
			require.Contains(t, out, "LLM:         (tiny) healthy: No — The master was <script>")
		}
	}
}

func TestAnalyzeWithoutLLMHasNoNarrative(t *testing.T) {
	fake := &fakeLLM{text: hostileAnswer}
	code, out, _ := analyzeWithLLM(t, fake, filepath.Join(samplesDir, "pytorchjob-no-gpu"), "--format", "json", "--model", "x")
	require.Equal(t, 0, code)
	require.Contains(t, out, `"llm": null`)
	require.Zero(t, fake.calls.Load())
}

func TestLLMFailureKeepsTheReport(t *testing.T) {
	fake := &fakeLLM{err: narrate.ErrStreamCut}
	p := filepath.Join(t.TempDir(), "r.json")
	code, out, stderr := analyzeWithLLM(t, fake, filepath.Join(samplesDir, "pytorchjob-no-gpu"), "--llm", "-o", p)
	require.Equal(t, 0, code, "the analysis is done; the narrative is optional")
	require.Equal(t, "coroner: no LLM narrative: the answer stream ended before its final chunk\n", stderr)
	require.Contains(t, out, "LLM:         no narrative: the answer stream ended")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	var r report.Report
	require.NoError(t, json.Unmarshal(data, &r))
	require.Equal(t, analyze.VerdictUnhealthy, r.Verdict)
	require.Equal(t, "the answer stream ended before its final chunk", r.LLM.Failure)
	require.Nil(t, r.LLM.Healthy)
}

// TestInterruptedLLMStepWritesNoReport: a narrative cut short by Ctrl-C is not a narrative
// that failed: the run stops with the context's error and leaves nothing under -o.
func TestInterruptedLLMStepWritesNoReport(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	var opts *AnalyzeOptions
	ios := &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	cmd := NewCmdAnalyze(ios, func(o *AnalyzeOptions) error { opts = o; return nil })
	cmd.SetArgs([]string{filepath.Join(samplesDir, "pytorchjob-master-oomkilled"), "--llm", "--llm-cache-dir", t.TempDir(), "-o", filepath.Join(dir, "r.html")})
	require.NoError(t, cmd.Execute())
	ctx, cancel := context.WithCancel(t.Context())
	opts.LLM.NewLLM = func(host string) (narrate.LLM, error) {
		return chatFunc(func(c context.Context, req *narrate.Request) (*narrate.Reply, error) {
			cancel()
			<-c.Done()
			return nil, c.Err()
		}), nil
	}
	err := runAnalyze(ctx, opts, ios)
	require.ErrorIs(t, err, context.Canceled)
	require.EqualError(t, err, "LLM step interrupted: context canceled")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
	require.Empty(t, out.String())
}

// chatFunc is an LLM that is one function.
type chatFunc func(ctx context.Context, req *narrate.Request) (*narrate.Reply, error)

func (f chatFunc) Chat(ctx context.Context, req *narrate.Request) (*narrate.Reply, error) {
	return f(ctx, req)
}

func TestLLMUsageAndTemplateErrors(t *testing.T) {
	sampleDir := filepath.Join(samplesDir, "pytorchjob-master-oomkilled")
	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "pytorchjob.tmpl"), []byte("Job {{ index .Metadata \"JobNmae\" }}\n"), 0o644))
	unparsable := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(unparsable, "default.tmpl"), []byte("{{ if }}"), 0o644))
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"num-ctx below max tokens", []string{"--llm", "--num-ctx", "512", "--llm-max-tokens", "1024"}, 2, "--num-ctx 512 leaves no room"},
		{"replay and record", []string{"--llm-replay", "a.json", "--llm-record", "b.json"}, 2, "exclude each other"},
		{"missing replay file", []string{"--llm-replay", filepath.Join(bad, "none.json")}, 1, "--llm-replay"},
		{"missing key", []string{"--llm", "--prompt-dir", bad}, 1, filepath.Join(bad, "pytorchjob.tmpl") + `: template: pytorchjob:1:7: executing "pytorchjob" at <index .Metadata "JobNmae">: error calling index: no key "JobNmae"`},
		{"does not parse", []string{"--llm", "--prompt-dir", unparsable}, 1, filepath.Join(unparsable, "default.tmpl") + ": template: default:1: missing value for if"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeLLM{text: hostileAnswer}
			code, _, stderr := analyzeWithLLM(t, fake, append([]string{sampleDir}, tt.args...)...)
			require.Equal(t, tt.code, code, stderr)
			require.Contains(t, stderr, tt.stderr)
			require.NotContains(t, stderr, "\n")
			require.Zero(t, fake.calls.Load(), "nothing is asked")
		})
	}
}

func TestRecordAndReplayThroughTheCLI(t *testing.T) {
	sampleDir := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	file := filepath.Join(t.TempDir(), "answers.json")
	fake := &fakeLLM{text: "Healthy: No\nError: Rank 5 ran out of GPU memory.\nAnalysis: worker-4 first.\nSolution:\n1. Lower the batch size.\n"}
	code, live, stderr := analyzeWithLLM(t, fake, sampleDir, "--llm-record", file, "--format", "json")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, int32(1), fake.calls.Load())

	// The replay needs no model at all.
	code, replayed, stderr := analyzeWithLLM(t, nil, sampleDir, "--llm-replay", file, "--format", "json")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, strings.Replace(live, `"cached": false`, `"cached": true`, 1), replayed)
	require.Contains(t, replayed, `"answerFormat": "text"`)
	require.Contains(t, replayed, `"error": "Rank 5 ran out of GPU memory."`)
}

func TestPromptsCommand(t *testing.T) {
	code, out, _ := run(t, "prompts", "list")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^pytorchjob\s+2\s+built-in$`, out)
	require.Regexp(t, `(?m)^default\s+2\s+built-in$`, out)

	code, out, _ = run(t, "prompts", "show", "pytorchjob")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "{{/* coroner prompt for Kubeflow PyTorchJob, version: 2 */ -}}"), out)
	require.Contains(t, out, `{{ index .Metadata "MasterDiagnosis" }}`)

	// A template shown is a template that loads back as an override.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pytorchjob.tmpl"), []byte(strings.Replace(out, "version: 2", "version: 2-site", 1)), 0o644))
	code, out, _ = run(t, "prompts", "list", "--prompt-dir", dir)
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^pytorchjob\s+2-site\s+`+regexp.QuoteMeta(filepath.Join(dir, "pytorchjob.tmpl"))+`$`, out)

	code, _, stderr := run(t, "prompts", "show", "nope")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `no prompt template "nope"`)
}

func TestDryRunPromptIsBoundedByNumCtx(t *testing.T) {
	code, out, stderr := run(t, "analyze", filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "--dry-run-prompt", "--num-ctx", "3000", "--llm-max-tokens", "1000", "--llm-per-role=false")
	require.Equal(t, 0, code, stderr)
	m := regexp.MustCompile(`# about (\d+) tokens \(estimated\) of --num-ctx 3000, 1000 kept for the answer`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	n, _ := strconv.Atoi(m[1])
	require.LessOrEqual(t, n, 2000)
	require.Regexp(t, `; [1-9]\d* left out to fit\n`, out)
	require.Contains(t, out, "# included: finding f1; log logs/ml/train-job-worker-4/pytorch.log:")
	require.Regexp(t, `(?m)^# left out to fit: .*timeline entries$`, out)
	require.Regexp(t, `^coroner: warning: the LLM prompt was cut to fit --num-ctx 3000 with 1000 tokens kept for the answer \(--llm-max-tokens\): .*left out .*timeline entries\n$`, stderr)

	// Too small for the root cause alone: an error before any call, naming what it needs.
	code, _, stderr = run(t, "analyze", filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "--dry-run-prompt", "--num-ctx", "1100", "--llm-max-tokens", "1000")
	require.Equal(t, 1, code)
	m = regexp.MustCompile(`^coroner: context too small: the root cause alone needs (\d+) tokens; raise --num-ctx to at least (\d+) \(or lower --llm-max-tokens 1000\)\n$`).FindStringSubmatch(stderr)
	require.NotNil(t, m, stderr)
	need, _ := strconv.Atoi(m[1])
	least, _ := strconv.Atoi(m[2])
	require.Equal(t, need+1000, least)

	// At that size it fits, holding the root cause.
	code, out, stderr = run(t, "analyze", filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "--dry-run-prompt", "--num-ctx", m[2], "--llm-max-tokens", "1000")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "# included: finding f1;")
}

// TestPromptGoesThroughTheUsersRedactionRules: --redact-rules masks a site-specific secret
// in the prompt, beside the built-in rules; a bad rules file is an error before any work.
func TestPromptGoesThroughTheUsersRedactionRules(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(rules, []byte("rules:\n- id: acme-token\n  pattern: 'acme_(?P<secret>[a-z0-9]{8})'\n"), 0o644))
	log := filepath.Join(dir, "train.log")
	require.NoError(t, os.WriteFile(log, []byte("2026-03-14T10:00:00Z starting with acme_abcdef12 hf_abcdefghijklmnopqrstuvwxyz0123456789\n"+
		"2026-03-14T10:00:01Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (acme_abcdef12)\n"), 0o644))

	code, out, stderr := run(t, "analyze", log, "--dry-run-prompt")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "acme_abcdef12", "not a secret to the built-in rules")
	require.NotContains(t, out, "hf_abcdefghijklmnopqrstuvwxyz0123456789", "a Hugging Face token always is")

	code, out, stderr = run(t, "analyze", log, "--dry-run-prompt", "--redact-rules", rules)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, out, "acme_abcdef12")
	require.Contains(t, out, "[REDACTED:acme-token:")

	code, _, stderr = run(t, "analyze", log, "--dry-run-prompt", "--redact-rules", filepath.Join(dir, "missing.yaml"))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "missing.yaml")
}

// TestSmallContextWarnsAndAsksEachRole: at a small context the cut is said in the report and
// on stderr, and a job whose findings do not fit has each role asked first, unless
// --llm-per-role=false.
func TestSmallContextWarnsAndAsksEachRole(t *testing.T) {
	sampleDir := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	fake := &fakeLLM{text: hostileAnswer}
	code, out, stderr := analyzeWithLLM(t, fake, sampleDir, "--llm", "--num-ctx", "2048", "--format", "json")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, int32(3), fake.calls.Load(), "the Master, the Workers, then the job")
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.True(t, r.LLM.PerRole)
	require.True(t, r.LLM.Prompt.Cut())
	require.NotEmpty(t, r.LLM.Prompt.LeftOut)
	for _, role := range r.LLM.Roles {
		require.NotNil(t, role.Prompt, role.Role)
		require.Equal(t, "model", role.Source)
	}
	var llmWarnings []string
	for _, w := range r.Warnings {
		if strings.Contains(w, "--num-ctx 2048") {
			llmWarnings = append(llmWarnings, w)
			require.Contains(t, stderr, "coroner: warning: "+w+"\n", "the report's warning is on stderr too")
		}
	}
	require.Len(t, llmWarnings, 4, "each role's prompt, the job's, and the per-role mode: %q", llmWarnings)
	require.Contains(t, llmWarnings[2], "the LLM prompt was cut to fit --num-ctx 2048 with 1024 tokens kept for the answer (--llm-max-tokens): ")
	require.Equal(t, "the job's findings and log windows do not fit --num-ctx 2048: each role's diagnosis was asked first (--llm-per-role; =false turns it off)", llmWarnings[3])

	fake = &fakeLLM{text: hostileAnswer}
	code, out, stderr = analyzeWithLLM(t, fake, sampleDir, "--llm", "--num-ctx", "2048", "--llm-per-role=false", "--format", "json")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, int32(1), fake.calls.Load())
	require.Contains(t, out, `"perRole": false`)
	require.Equal(t, 1, strings.Count(stderr, "coroner: warning: the LLM prompt was cut to fit --num-ctx 2048"))
}
