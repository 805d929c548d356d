// Package narrate is coroner's optional LLM step, which runs after the report is built: it
// builds a bounded, redacted prompt from the report (the job summary, the findings with their
// evidence, the events and the most relevant log windows, read through the bundle's index),
// renders it with a prompt template (prompts/, embedded; the user can override them), asks a
// local model (narrate/ollama) with temperature 0 and a fixed seed, and parses the answer into
// the seed document's fields: Healthy, Error, Analysis, Solution. Answers are cached, and can
// be recorded to and replayed from a file, so a re-run is offline and gives the same report.
//
// Narrate returns the report's narrative and leaves the report alone. Nothing here fails a
// report: every problem (server unreachable, model not pulled, context too small, timeout, a
// stream cut mid-way) becomes the narrative's Failure; only a broken prompt template and an
// interrupted run are errors.
package narrate

import (
	"context"
	"encoding/json"
)

// LLM answers one chat request. narrate/ollama's Client implements it; tests use fakes.
type LLM interface {
	Chat(ctx context.Context, req *Request) (*Reply, error)
}

// Digester is implemented by an LLM that can name the digest of a model it serves. The digest
// is part of the answer cache's key: a re-pulled model does not answer from the old model's
// cache.
type Digester interface {
	Digest(ctx context.Context, model string) (string, error)
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one chat request.
type Request struct {
	Model    string
	Messages []Message
	// Format is a JSON schema the answer must follow, or nil for free text.
	Format  json.RawMessage
	Options GenOptions
}

// GenOptions are the generation options sent with every request. They are part of the cache
// key: the same prompt with other options is another question.
type GenOptions struct {
	NumCtx      int     `json:"num_ctx"`
	NumPredict  int     `json:"num_predict"`
	Temperature float64 `json:"temperature"`
	Seed        int     `json:"seed"`
}

// Reply is a complete answer: its final chunk arrived.
type Reply struct {
	Text string
	// DoneReason is the server's reason to stop: "stop", or "length" when NumPredict cut it.
	DoneReason string
	// PromptTokens and AnswerTokens are the server's counts.
	PromptTokens int
	AnswerTokens int
}
