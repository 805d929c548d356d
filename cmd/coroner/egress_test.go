package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNothingLeavesButThePrompt: analyze talks to no one, and with --llm only to the Ollama
// host it is given, only to list the models and send the prompt. Every other host is reached
// through a proxy (HTTP_PROXY, HTTPS_PROXY) that records what it is asked; it is asked nothing.
// (A connection that bypasses the proxy settings would not be seen here.)
func TestNothingLeavesButThePrompt(t *testing.T) {
	var mu sync.Mutex
	var proxied, asked []string
	var sent []map[string]any
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxied = append(proxied, r.Method+" "+r.Host)
		mu.Unlock()
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer proxy.Close()
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/tags":
			io.WriteString(w, `{"models":[{"name":"tiny:latest","model":"tiny:latest","digest":"sha256:0123"}]}`)
		case "/api/chat":
			var req map[string]any
			require.NoError(t, json.Unmarshal(body, &req))
			mu.Lock()
			sent = append(sent, req)
			mu.Unlock()
			io.WriteString(w, `{"model":"tiny","message":{"role":"assistant","content":"Healthy: No\nError: The master ran out of memory.\nAnalysis: x\nSolution:\n1. y"},"done":false}`+"\n")
			io.WriteString(w, `{"model":"tiny","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":10,"eval_count":5}`+"\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer ollama.Close()
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"} {
		t.Setenv(v, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	t.Setenv("OLLAMA_HOST", ollama.URL) // read only with --llm

	tmp := t.TempDir()
	sample := filepath.Join(samplesDir, "pytorchjob-master-oomkilled")
	plain := start(t, tmp, nil, "analyze", sample, "-o", filepath.Join(tmp, "plain.json"))
	require.Equal(t, 0, plain.wait(t), plain.stderr.String())
	require.Empty(t, asked, "without --llm nothing is sent")

	s := start(t, tmp, nil, "analyze", sample, "--llm", "--model", "tiny", "--ollama-host", ollama.URL,
		"--llm-cache-dir", filepath.Join(tmp, "llm"), "-o", filepath.Join(tmp, "r.json"))
	require.Equal(t, 0, s.wait(t), s.stderr.String())
	require.NotContains(t, s.stderr.String(), "no LLM narrative", "the fake server answered")

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, proxied, "no other host is asked anything")
	paths := append([]string(nil), asked...)
	sort.Strings(paths)
	require.Equal(t, []string{"GET /api/tags", "POST /api/chat"}, paths)
	require.Len(t, sent, 1)
	msgs, _ := sent[0]["messages"].([]any)
	require.NotEmpty(t, msgs)
	var prompt strings.Builder
	for _, m := range msgs {
		prompt.WriteString(m.(map[string]any)["content"].(string))
	}
	require.Contains(t, prompt.String(), "OOMKilled", "what is sent is the prompt built from the analysis")
}
