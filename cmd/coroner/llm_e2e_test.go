//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/tinygguf"
	"github.com/coroner-dev/coroner/narrate"
	"github.com/coroner-dev/coroner/narrate/ollama"
	"github.com/coroner-dev/coroner/report"
)

// ollamaServer is a real Ollama server, built from the same module version as the client
// (scripts/ollama-server.sh), serving the tiny model on 127.0.0.1.
type ollamaServer struct {
	bin, host, dir string
	cmd            *exec.Cmd
	log            *syncBuffer
	once           sync.Once
}

func (o *ollamaServer) env() []string {
	return append(os.Environ(), "HOME="+o.dir, "OLLAMA_MODELS="+filepath.Join(o.dir, "models"), "OLLAMA_HOST="+o.host,
		"OLLAMA_NUM_PARALLEL=1", "OLLAMA_MAX_LOADED_MODELS=1")
}

// startOllama starts `ollama serve` on a free port with its home and models in a temporary
// directory, and stops it (by its PID) when the test ends.
func startOllama(t *testing.T) *ollamaServer {
	t.Helper()
	bin := os.Getenv("CORONER_OLLAMA_BIN")
	require.NotEmpty(t, bin, "CORONER_OLLAMA_BIN names the server binary: run `make e2e-llm`")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	host := l.Addr().String()
	require.NoError(t, l.Close())
	o := &ollamaServer{bin: bin, host: host, dir: t.TempDir(), log: &syncBuffer{}}
	o.cmd = exec.Command(bin, "serve")
	o.cmd.Env = o.env()
	o.cmd.Stdout, o.cmd.Stderr = o.log, o.log
	// Its own process group, so that stopping it also stops the model runner it starts.
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, o.cmd.Start())
	t.Cleanup(func() {
		o.stop()
		if t.Failed() {
			t.Logf("ollama serve log:\n%s", o.log.String())
		}
	})

	client, err := ollama.New(host, nil)
	require.NoError(t, err)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := client.Digest(ctx, "none")
		cancel()
		if err != nil && !errors.Is(err, narrate.ErrUnreachable) {
			break // it answers (that it has no such model)
		}
		require.True(t, time.Now().Before(deadline), "the server did not start: %s", o.log.String())
		time.Sleep(100 * time.Millisecond)
	}
	return o
}

// stop kills the server and its runner: the process group led by the server's PID.
func (o *ollamaServer) stop() {
	o.once.Do(func() {
		syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
		o.cmd.Wait()
	})
}

// create makes the tiny model with `ollama create`, as a user would from a GGUF file.
func (o *ollamaServer) create(t *testing.T, name string) {
	t.Helper()
	o.createWith(t, name, tinygguf.Write, "")
}

// createWith makes a model of the GGUF that write writes, with a chat template when not "".
func (o *ollamaServer) createWith(t *testing.T, name string, write func(io.Writer) error, template string) {
	t.Helper()
	gguf := filepath.Join(o.dir, name+".gguf")
	f, err := os.Create(gguf)
	require.NoError(t, err)
	require.NoError(t, write(f))
	require.NoError(t, f.Close())
	modelfile := filepath.Join(o.dir, "Modelfile")
	mf := "FROM " + gguf + "\nPARAMETER num_thread 1\n"
	if template != "" {
		mf += "TEMPLATE \"\"\"" + template + "\"\"\"\n"
	}
	require.NoError(t, os.WriteFile(modelfile, []byte(mf), 0o644))
	cmd := exec.Command(o.bin, "create", name, "-f", modelfile)
	cmd.Env = o.env()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

// chatCalls counts the /api/chat requests in the server's access log. The server logs a
// request after its response, so a line may come a moment after the client has its answer:
// wait for want, then a little longer for any line that should not be there.
func (o *ollamaServer) chatCalls(want int) int {
	count := func() int { return strings.Count(o.log.String(), `"/api/chat"`) }
	for deadline := time.Now().Add(5 * time.Second); count() < want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	return count()
}

// e2eRun runs `coroner analyze` in process, returning the exit code, stdout and stderr.
func e2eRun(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(ctx, args, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

func decodeLLM(t *testing.T, data string) *report.Narrative {
	t.Helper()
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(data), &r), data)
	require.NotNil(t, r.LLM)
	return r.LLM
}

// TestLLME2E drives a real Ollama server end to end: create, chat with a format schema,
// streaming to the final chunk, the answer cache, and every failure the issue names.
func TestLLME2E(t *testing.T) {
	srv := startOllama(t)
	srv.create(t, "tiny")

	// A short prompt keeps the tiny model's byte-level tokens few: the built-in templates are
	// covered by the golden prompts; this test is about the serving path.
	prompts := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(prompts, "pytorchjob.tmpl"),
		[]byte("{{/* e2e, version: 1 */}}Job {{ index .Metadata \"JobName\" }} is {{ index .Metadata \"JobStatus\" }}: {{ .VerdictReason }}\n"), 0o644))
	sampleDir := filepath.Join(samplesDir, "pytorchjob-master-oomkilled")
	cache := t.TempDir()
	base := []string{"analyze", sampleDir, "--llm", "--ollama-host", srv.host, "--model", "tiny", "--prompt-dir", prompts,
		"--llm-cache-dir", cache, "--num-ctx", "2048", "--llm-max-tokens", "48", "--llm-timeout", "60s", "--format", "json"}

	client, err := ollama.New(srv.host, nil)
	require.NoError(t, err)
	digest, err := client.Digest(t.Context(), "tiny")
	require.NoError(t, err)

	var first string
	t.Run("chat with a format schema, streamed to its final chunk", func(t *testing.T) {
		code, out, stderr := e2eRun(t, t.Context(), base...)
		require.Equal(t, 0, code, stderr)
		require.Empty(t, stderr)
		l := decodeLLM(t, out)
		require.Empty(t, l.Failure)
		require.Equal(t, "tiny", l.Model)
		require.Equal(t, digest, l.ModelDigest)
		require.False(t, l.Cached)
		require.Contains(t, []string{"stop", "length"}, l.DoneReason, "the final chunk arrived")
		require.True(t, strings.HasPrefix(strings.TrimSpace(l.Raw), "{"), "the schema constrains the answer to JSON: %q", l.Raw)
		require.Equal(t, "1", l.Prompt.Version)
		require.Equal(t, filepath.Join(prompts, "pytorchjob.tmpl"), l.Prompt.Source)
		require.Equal(t, 1, srv.chatCalls(1))
		first = out
	})

	t.Run("a re-run answers from the cache without a call", func(t *testing.T) {
		code, out, stderr := e2eRun(t, t.Context(), base...)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, 1, srv.chatCalls(1), "no new /api/chat")
		require.Equal(t, strings.Replace(first, `"cached": false`, `"cached": true`, 1), out)
		code, again, _ := e2eRun(t, t.Context(), base...)
		require.Equal(t, 0, code)
		require.Equal(t, out, again, "the same report, byte for byte")
	})

	t.Run("a model not pulled", func(t *testing.T) {
		args := append(append([]string{}, base...), "--model", "qwen2.5:7b-instruct")
		code, out, stderr := e2eRun(t, t.Context(), args...)
		require.Equal(t, 0, code, "the report is still written")
		l := decodeLLM(t, out)
		require.Contains(t, l.Failure, "run `ollama pull qwen2.5:7b-instruct`")
		require.Contains(t, stderr, "ollama pull qwen2.5:7b-instruct")
	})

	t.Run("a prompt larger than the context", func(t *testing.T) {
		// The estimate (made for the BPE vocabularies of real models) lets it through; the tiny
		// model spends a token per character, and the server refuses instead of cutting it.
		big := t.TempDir()
		words := strings.Repeat("alpha beta gamma delta epsilon ", 60)
		require.NoError(t, os.WriteFile(filepath.Join(big, "pytorchjob.tmpl"), []byte(words+"{{ .Verdict }}\n"), 0o644))
		args := append(append([]string{}, base...), "--prompt-dir", big, "--num-ctx", "1024", "--llm-max-tokens", "16")
		code, out, _ := e2eRun(t, t.Context(), args...)
		require.Equal(t, 0, code)
		l := decodeLLM(t, out)
		require.Contains(t, l.Failure, "context too small")
		require.Contains(t, l.Failure, "exceeds the context length")
		require.LessOrEqual(t, l.Prompt.Tokens, 1024-16)
	})

	t.Run("a prompt near the limit: the model's count beside the estimate", func(t *testing.T) {
		// The built-in template and the whole sample, the estimate filling --num-ctx less the
		// answer's budget. The tiny model spends a token per byte where the BPE tokenizers of
		// real models spend one per 2.4-3.1 bytes (docs/llm.md): its count exceeds what the
		// estimate allowed, which the report records and warns about; the answer then stops
		// when the context is full (no shift of the prompt out of view).
		args := []string{"analyze", sampleDir, "--llm", "--ollama-host", srv.host, "--model", "tiny",
			"--llm-cache-dir", cache, "--num-ctx", "4096", "--llm-max-tokens", "2600", "--llm-timeout", "120s", "--format", "json"}
		code, out, stderr := e2eRun(t, t.Context(), args...)
		require.Equal(t, 0, code, stderr)
		l := decodeLLM(t, out)
		require.Empty(t, l.Failure)
		p := l.Prompt
		t.Logf("estimate %d tokens (%d bytes), the tiny model counted %d (%.2f a byte); budget %d of --num-ctx %d",
			p.Tokens, p.Bytes, p.ActualTokens, float64(p.ActualTokens)/float64(p.Bytes), p.NumCtx-p.NumPredict, p.NumCtx)
		require.LessOrEqual(t, p.Tokens, 4096-2600)
		require.Greater(t, p.Tokens, (4096-2600)*3/4, "the prompt is near the limit: the parts filled it")
		require.True(t, p.Cut(), "and parts were cut to fit")
		require.Positive(t, p.ActualTokens, "Ollama's prompt_eval_count is kept")
		// About a token per byte: a count the estimate could not know for this vocabulary,
		// more than the budget allowed.
		require.Greater(t, p.ActualTokens, p.NumCtx-p.NumPredict)
		require.InDelta(t, p.Bytes, p.ActualTokens, float64(p.Bytes)/5)
		require.Contains(t, stderr, fmt.Sprintf("but the model counted %d", p.ActualTokens))
		require.Contains(t, stderr, "was cut to fit --num-ctx 4096")
		require.Equal(t, "length", l.DoneReason, "the context filled before --llm-max-tokens")
	})

	t.Run("an unreachable host", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		args := append(append([]string{}, base...), "--ollama-host", addr, "--llm-no-cache")
		code, out, stderr := e2eRun(t, t.Context(), args...)
		require.Equal(t, 0, code, "the report is still written")
		want := "could not connect to http://" + addr + ": connect: connection refused: start it with `ollama serve`, or name the server with --ollama-host or OLLAMA_HOST"
		require.Equal(t, want, decodeLLM(t, out).Failure)
		require.Equal(t, "coroner: no LLM narrative: "+want+"\n", stderr)
	})

	long := append(append([]string{}, base...), "--llm-max-tokens", "3000", "--num-ctx", "4096", "--llm-no-cache")

	t.Run("timeout", func(t *testing.T) {
		args := append(append([]string{}, long...), "--llm-timeout", "700ms")
		start := time.Now()
		code, out, _ := e2eRun(t, t.Context(), args...)
		require.Equal(t, 0, code)
		require.Less(t, time.Since(start), 30*time.Second)
		require.Equal(t, "no complete answer within --llm-timeout 700ms", decodeLLM(t, out).Failure)
	})

	t.Run("cancellation", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(700*time.Millisecond, cancel)
		dir := t.TempDir()
		code, _, stderr := e2eRun(t, ctx, append(append([]string{}, long...), "-o", filepath.Join(dir, "r.json"))...)
		require.NotZero(t, code)
		require.Contains(t, stderr, "LLM step interrupted: context canceled")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "an interrupted run writes no report, not even a temporary one")
	})

	t.Run("the stream cut mid-way", func(t *testing.T) {
		// A server of its own (the aborted requests above may still hold the other's runner)
		// dies while it streams: the client returns no error, only no final chunk.
		dying := startOllama(t)
		dying.create(t, "tiny")
		args := append(append([]string{}, long[1:]...), "--ollama-host", dying.host)
		var opts *AnalyzeOptions
		var out, errOut bytes.Buffer
		ios := &IOStreams{Out: &out, ErrOut: &errOut}
		cmd := NewCmdAnalyze(ios, func(o *AnalyzeOptions) error { opts = o; return nil })
		cmd.SetArgs(args)
		require.NoError(t, cmd.Execute())
		streaming := make(chan struct{})
		var once sync.Once
		opts.LLM.NewLLM = func(host string) (narrate.LLM, error) {
			hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := http.DefaultTransport.RoundTrip(r)
				if err == nil && r.URL.Path == "/api/chat" {
					resp.Body = &firstRead{ReadCloser: resp.Body, seen: func() { once.Do(func() { close(streaming) }) }}
				}
				return resp, err
			})}
			return ollama.New(host, hc)
		}
		go func() {
			<-streaming
			dying.stop()
		}()
		require.NoError(t, runAnalyze(t.Context(), opts, ios))
		l := decodeLLM(t, out.String())
		require.Contains(t, l.Failure, "the answer stream ended before its final chunk")
	})

	t.Run("with the server gone, the cached answer still serves", func(t *testing.T) {
		srv.stop()
		code, out, stderr := e2eRun(t, t.Context(), base...)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, strings.Replace(first, `"cached": false`, `"cached": true`, 1), out)
	})
}

// qwenVocab reads Qwen 2.5/3's published tokenizer.json (scripts/tokenizers.sh) as a GGUF
// vocabulary: the byte-level BPE, its merges, the qwen2 pre-tokenizer and the special tokens.
func qwenVocab(t *testing.T) *tinygguf.Vocab {
	t.Helper()
	dir := os.Getenv("CORONER_TOKENIZERS")
	require.NotEmpty(t, dir, "CORONER_TOKENIZERS names the tokenizers' directory: run `make e2e-llm`")
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	require.NoError(t, err)
	var tj struct {
		Added []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges [][2]string    `json:"merges"`
		} `json:"model"`
	}
	require.NoError(t, json.Unmarshal(data, &tj))
	n := len(tj.Model.Vocab)
	for _, a := range tj.Added {
		n = max(n, a.ID+1)
	}
	v := &tinygguf.Vocab{Model: "gpt2", Pre: "qwen2", Tokens: make([]string, n), Types: make([]int32, n)}
	for tok, id := range tj.Model.Vocab {
		v.Tokens[id], v.Types[id] = tok, tinygguf.TokenNormal
	}
	for _, a := range tj.Added {
		v.Tokens[a.ID], v.Types[a.ID] = a.Content, tinygguf.TokenUserDefined
		if a.Special {
			v.Types[a.ID] = tinygguf.TokenControl
		}
		switch a.Content {
		case "<|endoftext|>":
			v.BOS = uint32(a.ID)
		case "<|im_end|>":
			v.EOS = uint32(a.ID)
		}
	}
	for i, tok := range v.Tokens {
		require.NotEmpty(t, tok, "token %d", i)
	}
	for _, m := range tj.Model.Merges {
		v.Merges = append(v.Merges, m[0]+" "+m[1])
	}
	return v
}

// chatML is Qwen 2.5's chat template as Ollama serves it, for messages without tools.
const chatML = `{{- range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
`

// TestLLMTokenEstimateE2E serves a tiny model with Qwen 2.5/3's real tokenizer and asks about
// every sample with prompts filled to a small context: the server's count of each prompt
// (prompt_eval_count, the chat template's tokens included) must not exceed coroner's
// estimate, which is what a prompt "estimated to fit does fit" means.
func TestLLMTokenEstimateE2E(t *testing.T) {
	vocab := qwenVocab(t)
	srv := startOllama(t)
	srv.createWith(t, "qwen-vocab", func(w io.Writer) error { return tinygguf.WriteVocab(w, vocab) }, chatML)
	const numCtx, answer = 1200, 8
	var worst float64
	var near int
	for _, name := range sampleNames(t) {
		t.Run(name, func(t *testing.T) {
			code, out, stderr := e2eRun(t, t.Context(), "analyze", filepath.Join(samplesDir, name), "--llm", "--ollama-host", srv.host,
				"--model", "qwen-vocab", "--llm-no-cache", "--num-ctx", fmt.Sprint(numCtx), "--llm-max-tokens", fmt.Sprint(answer),
				"--llm-timeout", "120s", "--format", "json")
			require.Equal(t, 0, code, stderr)
			l := decodeLLM(t, out)
			require.Empty(t, l.Failure)
			require.NotContains(t, stderr, "but the model counted")
			prompts := []*report.PromptInfo{&l.Prompt}
			for _, r := range l.Roles {
				if r.Prompt != nil {
					prompts = append(prompts, r.Prompt)
				}
			}
			for _, p := range prompts {
				ratio := float64(p.ActualTokens) / float64(p.Tokens)
				t.Logf("%s: estimate %d, Qwen counted %d (%.3f), %d bytes; budget %d", p.Template, p.Tokens, p.ActualTokens, ratio, p.Bytes, numCtx-answer)
				require.Positive(t, p.ActualTokens)
				require.LessOrEqual(t, p.ActualTokens, p.Tokens, "the estimate covers the model's count")
				worst = max(worst, ratio)
				if p.Tokens*10 >= (numCtx-answer)*9 {
					near++
				}
			}
		})
	}
	t.Logf("Qwen's count / coroner's estimate: at most %.3f; %d prompts within 10%% of the budget", worst, near)
	require.Positive(t, near, "some prompts are near the limit")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// firstRead calls seen once the first bytes of a response body have been read.
type firstRead struct {
	io.ReadCloser
	seen func()
}

func (f *firstRead) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if n > 0 {
		f.seen()
	}
	return n, err
}
