package narrate

import (
	"errors"
	"fmt"
	"time"
)

// Errors an LLM returns, so that the narrative's failure can say what to do.
var (
	// ErrUnreachable: no server answers at the address (a *ConnectError says which).
	ErrUnreachable = errors.New("the Ollama server cannot be reached")
	// ErrModelNotFound: the server does not have the model.
	ErrModelNotFound = errors.New("model not pulled")
	// ErrContextTooSmall: the prompt does not fit the context window (a
	// *ContextTooSmallError says by how much).
	ErrContextTooSmall = errors.New("context too small")
	// ErrStreamCut: the answer stream ended before its final chunk.
	ErrStreamCut = errors.New("the answer stream ended before its final chunk")
)

// The errors below carry what a caller needs to say what to do in its own terms (a command
// names its flags; this package does not).

// ConnectError is a server that could not be reached: nothing at the address, a name that
// does not resolve, or a proxy on the way that could not reach it either.
type ConnectError struct {
	// Host is the server's address.
	Host string
	// Reason is why, in a few words: "connection refused", "a proxy or gateway answered
	// 502 Bad Gateway".
	Reason string
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("could not connect to %s: %s", e.Host, e.Reason)
}

// Is makes a ConnectError an ErrUnreachable.
func (e *ConnectError) Is(target error) bool { return target == ErrUnreachable }

// ContextTooSmallError is a context window that cannot hold the prompt with the answer's
// budget: found before any call (the smallest prompt coroner sends does not fit), or by the
// server, whose tokenizer counted more than the estimate.
type ContextTooSmallError struct {
	// What is what the smallest prompt holds: "the root cause", "the verdict and its reason".
	What string
	// Need is the estimated tokens of the smallest prompt; Min the context that holds it and
	// the answer's budget. Both are 0 when the server refused.
	Need, Min int
	// Server is the server's refusal, "" when found before any call.
	Server string
}

func (e *ContextTooSmallError) Error() string {
	if e.Server != "" {
		return fmt.Sprintf("context too small: the server says %q", e.Server)
	}
	return fmt.Sprintf("context too small: %s alone needs %d tokens, and with the answer's budget a context of at least %d", e.What, e.Need, e.Min)
}

// Is makes a ContextTooSmallError an ErrContextTooSmall.
func (e *ContextTooSmallError) Is(target error) bool { return target == ErrContextTooSmall }

// TimeoutError is a question not answered within the time allowed.
type TimeoutError struct {
	Limit time.Duration
	// Streaming is true when the answer had begun: no complete answer came in time.
	Streaming bool
}

func (e *TimeoutError) Error() string {
	if e.Streaming {
		return fmt.Sprintf("no complete answer within the %s timeout", e.Limit)
	}
	return fmt.Sprintf("no answer within the %s timeout", e.Limit)
}

// NoRecordedAnswerError is a replay file without the answer to a question.
type NoRecordedAnswerError struct {
	File, Model, Template, Hash string
	Options                     GenOptions
}

func (e *NoRecordedAnswerError) Error() string {
	return fmt.Sprintf("%s holds no answer of %s to the %s prompt %s (options %+v)", e.File, e.Model, e.Template, e.Hash, e.Options)
}
