// Package ollama is the narrative's model client: a local Ollama server, through Ollama's
// official Go client (github.com/ollama/ollama/api). It is the only network use of the LLM
// step, and only towards the host the user names.
package ollama

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/ollama/ollama/api"

	"github.com/coroner-dev/coroner/narrate"
)

// DefaultHost is where Ollama listens unless OLLAMA_HOST says otherwise.
const DefaultHost = "http://127.0.0.1:11434"

// maxAnswerBytes bounds an answer kept in memory, whatever NumPredict says.
const maxAnswerBytes = 256 << 10

// Client is the LLM of a local Ollama server.
type Client struct {
	host   string
	client *api.Client
}

var (
	_ narrate.LLM      = (*Client)(nil)
	_ narrate.Digester = (*Client)(nil)
)

// New returns the client of the server at host, written as OLLAMA_HOST is ("host",
// "host:port", "http://host:port"); "" is DefaultHost.
func New(host string, hc *http.Client) (*Client, error) {
	u, err := ParseHost(host)
	if err != nil {
		return nil, err
	}
	c := &http.Client{}
	if hc != nil {
		*c = *hc
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = gatewayCheck{base}
	return &Client{host: u.String(), client: api.NewClient(u, c)}, nil
}

// gatewayCheck turns the answer of a proxy or gateway that could not reach the server (502,
// 503 or 504, and not Ollama's JSON) into an error: Ollama's client would read its empty or
// HTML body as no error at all, or as "see the ollama server logs", though no server was
// reached.
type gatewayCheck struct{ base http.RoundTripper }

// gatewayError is a gateway's status.
type gatewayError struct{ status string }

func (e *gatewayError) Error() string {
	return "a proxy or gateway on the way answered HTTP " + e.status
}

func (g gatewayCheck) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(r)
	if err != nil || !gateway(resp.StatusCode) || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, err
	}
	resp.Body.Close()
	status := resp.Status
	if status == "" {
		status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return nil, &gatewayError{status}
}

// ParseHost reads an Ollama address the way OLLAMA_HOST is written: the scheme defaults to
// http and the port to 11434 (443 for https).
func ParseHost(host string) (*url.URL, error) {
	host = strings.TrimSpace(host)
	if host == "" {
		host = DefaultHost
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("bad Ollama host %q: want host, host:port or http://host:port", host)
	}
	if u.Port() == "" {
		port := "11434"
		if u.Scheme == "https" {
			port = "443"
		}
		u.Host = net.JoinHostPort(u.Hostname(), port)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}

// Host is the server's address.
func (o *Client) Host() string { return o.host }

// Digest returns the digest of a model the server has, from its model list.
func (o *Client) Digest(ctx context.Context, model string) (string, error) {
	list, err := o.client.List(ctx)
	if err != nil {
		return "", o.classify(ctx, model, err)
	}
	want := fullName(model)
	for _, m := range list.Models {
		if fullName(m.Name) == want || fullName(m.Model) == want {
			return m.Digest, nil
		}
	}
	return "", fmt.Errorf("%w: the Ollama server at %s does not have %q: run `ollama pull %s`", narrate.ErrModelNotFound, o.host, model, model)
}

// fullName adds the ":latest" tag Ollama assumes when a name has none.
func fullName(name string) string {
	if i := strings.LastIndexByte(name, ':'); i < 0 || strings.Contains(name[i:], "/") {
		return name + ":latest"
	}
	return name
}

// Chat streams the answer and returns it once the final chunk has arrived. The client returns
// nil when the context ends or the connection drops mid-stream, so a missing final chunk is
// checked here, not trusted to an error.
func (o *Client) Chat(ctx context.Context, req *narrate.Request) (*narrate.Reply, error) {
	stream, truncate, shift := true, false, false
	msgs := make([]api.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = api.Message{Role: m.Role, Content: m.Content}
	}
	areq := &api.ChatRequest{
		Model:    req.Model,
		Messages: msgs,
		Stream:   &stream,
		Format:   req.Format,
		// An oversized prompt is an error, never silently cut from the front; an answer that
		// fills the context stops there ("length") rather than shifting the prompt's start
		// (the system message, the root cause) out of the model's view.
		Truncate: &truncate,
		Shift:    &shift,
		Options: map[string]any{
			"num_ctx":     req.Options.NumCtx,
			"num_predict": req.Options.NumPredict,
			"temperature": req.Options.Temperature,
			"seed":        req.Options.Seed,
		},
	}
	var text strings.Builder
	var final *api.ChatResponse
	err := o.client.Chat(ctx, areq, func(r api.ChatResponse) error {
		if text.Len()+len(r.Message.Content) > maxAnswerBytes {
			return fmt.Errorf("the answer is longer than %d bytes", maxAnswerBytes)
		}
		text.WriteString(r.Message.Content)
		if r.Done {
			final = &r
		}
		return nil
	})
	if err != nil {
		return nil, o.classify(ctx, req.Model, err)
	}
	if final == nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w (%d bytes received): the server stopped or the connection dropped", narrate.ErrStreamCut, text.Len())
	}
	return &narrate.Reply{Text: text.String(), DoneReason: final.DoneReason, PromptTokens: final.PromptEvalCount, AnswerTokens: final.EvalCount}, nil
}

// classify turns the client's errors into the package's, with what to do about them.
func (o *Client) classify(ctx context.Context, model string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var se api.StatusError
	if errors.As(err, &se) {
		msg := strings.TrimSpace(se.ErrorMessage)
		switch {
		case se.StatusCode == http.StatusNotFound && strings.Contains(msg, "not found"):
			return fmt.Errorf("%w: the Ollama server at %s does not have %q: run `ollama pull %s`", narrate.ErrModelNotFound, o.host, model, model)
		case strings.Contains(msg, "exceeds") && strings.Contains(msg, "context"):
			return &narrate.ContextTooSmallError{Server: msg}
		case msg == "":
			return fmt.Errorf("the server at %s answered %s, with no message", o.host, httpStatus(se))
		}
		return fmt.Errorf("Ollama at %s: %w", o.host, err)
	}
	var ae api.AuthorizationError
	if errors.As(err, &ae) {
		return fmt.Errorf("the server at %s refused the request: %s", o.host, httpStatus(api.StatusError{StatusCode: ae.StatusCode, Status: ae.Status}))
	}
	var ge *gatewayError
	if errors.As(err, &ge) {
		return &narrate.ConnectError{Host: o.host, Reason: ge.Error()}
	}
	if reason, ok := dialFailure(err); ok {
		return &narrate.ConnectError{Host: o.host, Reason: reason}
	}
	return fmt.Errorf("Ollama at %s: %w", o.host, err)
}

// gateway reports the statuses a proxy answers when it cannot reach the server behind it.
// Ollama itself answers 503 only when busy, and says so in JSON.
func gateway(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

func httpStatus(se api.StatusError) string {
	if se.Status != "" {
		return "HTTP " + se.Status
	}
	if t := http.StatusText(se.StatusCode); t != "" {
		return fmt.Sprintf("HTTP %d %s", se.StatusCode, t)
	}
	return fmt.Sprintf("HTTP %d", se.StatusCode)
}

// dialFailure says, in a few words, why no connection was made: nothing listens, the name
// does not resolve, the network cannot reach the address.
func dialFailure(err error) (string, bool) {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return fmt.Sprintf("lookup %s: %s", dns.Name, dns.Err), true
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		if oe.Err != nil {
			return oe.Err.Error(), true
		}
		return oe.Error(), true
	}
	var ne net.Error
	if errors.As(err, &ne) && !ne.Timeout() {
		return err.Error(), true
	}
	return "", false
}
