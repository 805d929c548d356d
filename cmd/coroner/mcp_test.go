package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/mcpserver"
)

// callJSON calls a tool that must answer and decodes its structured answer.
func callJSON(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	require.False(t, res.IsError, "%s: %v", name, res.Content)
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, out))
}

// TestMCPOverStdio: an MCP client starts the built coroner as Claude Code or Cursor does and
// talks to it over its standard input and output: the tools are listed, the diagnosis is
// what `coroner analyze --format json` says of the same bundle, a search finds the root
// cause's line, a path outside --root is refused, and closing the session ends the process
// with exit status 0.
func TestMCPOverStdio(t *testing.T) {
	bin := coronerBinary(t)
	tmp := t.TempDir()
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	root := filepath.Join(tmp, "incidents")
	require.NoError(t, os.CopyFS(filepath.Join(root, "job-disk-full"), os.DirFS(filepath.Join(samplesDir, "job-disk-full"))))
	for name, src := range map[string]string{"good": diffGood, "bad": diffBad} {
		require.NoError(t, os.CopyFS(filepath.Join(root, "runs", name), os.DirFS(src)))
	}
	cmd := exec.Command(bin, "mcp", sample, "--root", root)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, stderr.String())

	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		require.True(t, tool.Annotations.ReadOnlyHint, tool.Name)
	}
	sort.Strings(names)
	require.Equal(t, []string{"diagnosis", "diff", "events", "finding", "findings", "list_bundles", "log_window", "open_bundle", "resources", "rules", "search", "timeline"}, names)

	code, out, errOut := run(t, "analyze", sample, "--format", "json", "--no-cache")
	require.Equal(t, 0, code, errOut)
	var want struct {
		Verdict   string
		RootCause map[string]any
		Findings  []any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &want))
	var got struct {
		Verdict   string
		RootCause map[string]any
		Findings  int
	}
	callJSON(t, cs, "diagnosis", map[string]any{"bundle": "pytorchjob-cuda-oom-rank"}, &got)
	require.Equal(t, want.Verdict, got.Verdict)
	require.Equal(t, want.RootCause, got.RootCause, "the root cause as analyze --format json says it")
	require.Equal(t, len(want.Findings), got.Findings)

	var hits mcpserver.SearchOut
	callJSON(t, cs, "search", map[string]any{"bundle": "pytorchjob-cuda-oom-rank", "query": `"CUDA out of memory"`}, &hits)
	require.NotEmpty(t, hits.Hits)
	require.Equal(t, "train-job-worker-4", hits.Hits[0].Pod)
	code, out, errOut = run(t, "search", sample, "NCCL", "--format", "json", "--limit", "20", "--no-cache")
	require.Equal(t, 0, code, errOut)
	var cli struct {
		Hits []struct {
			Path, Text string
			Line       int
		}
		Lines int
	}
	require.NoError(t, json.Unmarshal([]byte(out), &cli))
	callJSON(t, cs, "search", map[string]any{"bundle": "pytorchjob-cuda-oom-rank", "query": "NCCL", "limit": 20}, &hits)
	require.Equal(t, cli.Lines, hits.Lines)
	require.Len(t, hits.Hits, len(cli.Hits))
	for i, h := range cli.Hits {
		require.Equal(t, []any{h.Path, h.Line, h.Text}, []any{hits.Hits[i].Path, hits.Hits[i].Line, hits.Hits[i].Text}, "hit %d as coroner search says it", i)
	}

	// diff answers what coroner diff --format json says of the same runs.
	code, out, errOut = run(t, "diff", diffGood, diffBad, "--format", "json", "--no-cache")
	require.Equal(t, 0, code, errOut)
	var cliDiff, mcpDiff map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &cliDiff))
	callJSON(t, cs, "diff", map[string]any{"good": "runs/good", "bad": "runs/bad", "points": true}, &mcpDiff)
	for _, k := range []string{"formatVersion", "coronerVersion", "good", "bad", "changes", "divergence", "progress", "warnings"} {
		require.Equal(t, cliDiff[k], mcpDiff[k], "diff's %s as coroner diff --format json says it", k)
	}
	require.Contains(t, errOf(t, cs, "diff", map[string]any{"good": "runs/good", "bad": diffBad}), "outside the allowed roots")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "open_bundle", Arguments: map[string]any{"path": filepath.Join(samplesDir, "job-disk-full")}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "outside the allowed roots")
	var opened mcpserver.OpenOut
	callJSON(t, cs, "open_bundle", map[string]any{"path": "job-disk-full"}, &opened)
	require.Equal(t, "job-disk-full", opened.Bundle)

	require.NoError(t, cs.Close())
	require.NotNil(t, cmd.ProcessState, "closing the session ends coroner")
	require.Equal(t, 0, cmd.ProcessState.ExitCode(), stderr.String())
}

// errOf calls a tool that must fail with a tool error and returns its message.
func errOf(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	require.True(t, res.IsError, "%s should fail: %v", name, res.Content)
	return res.Content[0].(*mcp.TextContent).Text
}

// serveMCP runs `coroner mcp --http` in the test's process until the test ends, and returns
// its endpoint.
func serveMCP(t *testing.T, opts *MCPOptions) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan string, 1)
	errs := make(chan error, 1)
	opts.Listening = func(a string) { addrs <- a }
	var errOut bytes.Buffer
	go func() {
		errs <- runMCP(ctx, opts, &IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut})
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-errs, "a signal stops the server: exit status 0")
	})
	select {
	case a := <-addrs:
		return "http://" + a + mcpserver.HTTPPath
	case err := <-errs:
		t.Fatalf("coroner mcp --http: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("coroner mcp --http never listened")
	}
	return ""
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestMCPOverHTTP: --http serves the streamable HTTP transport on loopback; with a token,
// requests without it, with another, from a web page of another origin, or for a foreign Host
// are refused; an address other machines can reach is refused without a token.
func TestMCPOverHTTP(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	newOpts := func() *MCPOptions {
		return &MCPOptions{Inputs: []string{sample}, HTTP: "127.0.0.1:0", Limits: bundle.DefaultLimits(), MaxOutput: mcpserver.DefaultMaxBytes,
			Cache: CacheOptions{Dir: t.TempDir()}}
	}
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)

	open := serveMCP(t, newOpts())
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: open, MaxRetries: -1}, nil)
	require.NoError(t, err)
	var d mcpserver.DiagnosisOut
	callJSON(t, cs, "diagnosis", map[string]any{}, &d)
	require.Equal(t, "cuda-oom", d.RootCause.Category)
	require.NoError(t, cs.Close())

	token := "s3cret-token-0123456789abcdef"
	tf := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tf, []byte(token+"\n"), 0o600))
	o := newOpts()
	o.TokenFile = tf
	guarded := serveMCP(t, o)
	_, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: guarded, MaxRetries: -1}, nil)
	require.Error(t, err, "no token, no session")
	_, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: guarded, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{"wrong-token-0123456789", http.DefaultTransport}}}, nil)
	require.Error(t, err, "another token, no session")
	cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: guarded, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	require.NoError(t, err)
	callJSON(t, cs, "diagnosis", map[string]any{}, &d)
	require.NoError(t, cs.Close())

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for name, hdr := range map[string]map[string]string{
		"no token":             {},
		"a web page elsewhere": {"Authorization": "Bearer " + token, "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
	} {
		req, err := http.NewRequest("POST", guarded, strings.NewReader(initialize))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.StatusCode, name)
	}
	req, err := http.NewRequest("POST", open, strings.NewReader(initialize))
	require.NoError(t, err)
	req.Host = "rebound.example:80" // DNS rebinding: a page of that name resolved to 127.0.0.1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.org:80"} {
		code, _, stderr := run(t, "mcp", "--http", addr, sample)
		require.Equal(t, exitUsage, code, addr)
		require.Contains(t, stderr, "needs a bearer token", addr)
	}
	code, _, stderr := run(t, "mcp", "-")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "standard input")
	short := filepath.Join(t.TempDir(), "short")
	require.NoError(t, os.WriteFile(short, []byte("abc"), 0o600))
	code, _, stderr = run(t, "mcp", "--http", "127.0.0.1:0", "--token-file", short, sample)
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "at least 16 characters")
	code, _, stderr = run(t, "mcp", "--root", filepath.Join(t.TempDir(), "nope"))
	require.Equal(t, exitError, code)
	require.Contains(t, stderr, "root")
	notBundle := t.TempDir()
	code, _, stderr = run(t, "mcp", notBundle)
	require.Equal(t, exitError, code, stderr)
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
}
