package ollama

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/narrate"
)

func TestParseHost(t *testing.T) {
	tests := map[string]string{
		"":                        "http://127.0.0.1:11434",
		"gpu-box":                 "http://gpu-box:11434",
		"10.0.0.5:8080":           "http://10.0.0.5:8080",
		"http://localhost:11434/": "http://localhost:11434",
		"https://ollama.internal": "https://ollama.internal:443",
		"[::1]:11500":             "http://[::1]:11500",
	}
	for in, want := range tests {
		u, err := ParseHost(in)
		require.NoError(t, err, in)
		require.Equal(t, want, u.String(), in)
	}
	_, err := ParseHost("ftp://x")
	require.ErrorContains(t, err, "bad Ollama host")
}

// chatServer is an HTTP server on 127.0.0.1 that answers /api/chat with the given chunks and
// then ends the response, as a server that stops mid-answer does.
func chatServer(t *testing.T, status int, chunks ...string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case status >= 400 && len(chunks) > 0:
			w.Header().Set("Content-Type", "application/json; charset=utf-8") // as Ollama's errors
		case status < 400:
			w.Header().Set("Content-Type", "application/x-ndjson")
		}
		w.WriteHeader(status)
		for _, c := range chunks {
			fmt.Fprintln(w, c)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	o, err := New(srv.URL, nil)
	require.NoError(t, err)
	return o
}

func chunk(content string, done bool) string {
	b, _ := json.Marshal(map[string]any{"model": "m", "message": map[string]string{"role": "assistant", "content": content}, "done": done, "done_reason": map[bool]string{true: "stop"}[done], "eval_count": 3})
	return string(b)
}

func TestOllamaChat(t *testing.T) {
	req := &narrate.Request{Model: "m", Messages: []narrate.Message{{Role: "user", Content: "hi"}}}

	o := chatServer(t, 200, chunk(`{"healthy":`, false), chunk(`"No"}`, true))
	reply, err := o.Chat(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, &narrate.Reply{Text: `{"healthy":"No"}`, DoneReason: "stop", AnswerTokens: 3}, reply)

	// The client returns nil when the stream just stops; the missing final chunk is the tell.
	o = chatServer(t, 200, chunk(`{"healthy":`, false))
	_, err = o.Chat(t.Context(), req)
	require.ErrorIs(t, err, narrate.ErrStreamCut)
	require.ErrorContains(t, err, "11 bytes received")

	o = chatServer(t, 404, `{"error":"model 'm' not found"}`)
	_, err = o.Chat(t.Context(), req)
	require.ErrorIs(t, err, narrate.ErrModelNotFound)
	require.ErrorContains(t, err, "run `ollama pull m`")

	o = chatServer(t, 400, `{"error":"the input length exceeds the context length"}`)
	_, err = o.Chat(t.Context(), req)
	require.ErrorIs(t, err, narrate.ErrContextTooSmall)
	var small *narrate.ContextTooSmallError
	require.ErrorAs(t, err, &small)
	require.Equal(t, "the input length exceeds the context length", small.Server)

	// A proxy on the way that cannot reach the server answers 502 with no Ollama message:
	// that is a connection that failed, not the server's error.
	o = chatServer(t, 502)
	_, err = o.Chat(t.Context(), req)
	require.ErrorIs(t, err, narrate.ErrUnreachable)
	require.EqualError(t, err, "could not connect to "+o.Host()+": a proxy or gateway on the way answered HTTP 502 Bad Gateway")
	require.NotContains(t, err.Error(), "server logs")

	// Ollama's own 503 says it is busy.
	o = chatServer(t, 503, `{"error":"server busy, please try again.  maximum pending requests exceeded"}`)
	_, err = o.Chat(t.Context(), req)
	require.False(t, errors.Is(err, narrate.ErrUnreachable))
	require.ErrorContains(t, err, "server busy")

	o = chatServer(t, 500, `{"error":"llama runner process has terminated"}`)
	_, err = o.Chat(t.Context(), req)
	require.ErrorContains(t, err, "llama runner process has terminated")
	require.False(t, errors.Is(err, narrate.ErrStreamCut))

	// Nothing listens: a port that was free a moment ago.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	o, err = New(addr, nil)
	require.NoError(t, err)
	_, err = o.Chat(t.Context(), req)
	require.ErrorIs(t, err, narrate.ErrUnreachable)
	require.EqualError(t, err, "could not connect to http://"+addr+": connect: connection refused")
	_, err = o.Digest(t.Context(), "m")
	require.ErrorIs(t, err, narrate.ErrUnreachable)
	var ce *narrate.ConnectError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "http://"+addr, ce.Host)

	// The model list behind a gateway that cannot reach the server.
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGatewayTimeout)
	}))
	defer gw.Close()
	o, err = New(gw.URL, nil)
	require.NoError(t, err)
	_, err = o.Digest(t.Context(), "m")
	require.EqualError(t, err, "could not connect to "+gw.URL+": a proxy or gateway on the way answered HTTP 504 Gateway Timeout")
}

func TestOllamaDigest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/api/tags", r.URL.Path)
		fmt.Fprint(w, `{"models":[{"name":"qwen2.5:7b-instruct","model":"qwen2.5:7b-instruct","digest":"845dbda0ea48"},{"name":"tiny:latest","model":"tiny:latest","digest":"ac73683a376d"}]}`)
	}))
	defer srv.Close()
	o, err := New(srv.URL, nil)
	require.NoError(t, err)
	d, err := o.Digest(t.Context(), "tiny")
	require.NoError(t, err)
	require.Equal(t, "ac73683a376d", d)
	d, err = o.Digest(t.Context(), "qwen2.5:7b-instruct")
	require.NoError(t, err)
	require.Equal(t, "845dbda0ea48", d)
	_, err = o.Digest(t.Context(), "llama3.1")
	require.ErrorIs(t, err, narrate.ErrModelNotFound)
	require.ErrorContains(t, err, "run `ollama pull llama3.1`")
}
