package narrate

import (
	"unicode/utf8"
)

// messageOverhead is what a chat template adds around each message (role markers).
const messageOverhead = 8

// EstimateTokens estimates how many tokens the tokenizers of common local models (Qwen 2.5
// and 3, Llama 3, Mistral, Gemma 3) make of s, erring on the high side for log text. It
// follows how their pre-tokenizers split text: a run of ASCII letters is one token per 4
// letters or part of it; every digit is a token (Qwen, Mistral and Gemma split numbers into
// digits; Llama 3 groups three); every other symbol, and every non-ASCII character, is a
// token; a space joins the word after it, and a run of spaces costs a token per 8 beyond the
// first. A margin of an eighth goes on top.
//
// Measured against those tokenizers (docs/llm.md, "What is sent"): on log text in windows of
// ten lines the models count at most 0.998 tokens per estimated token, on whole prompts at
// most 0.89; Llama 3 about 0.6-0.75. Timestamps, hex addresses, paths and NCCL lines are what
// the margin is for: a bytes/4 rule undercounts them by half.
func EstimateTokens(s string) int {
	n := 0
	letters, spaces := 0, 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r != ' ' && spaces > 1 {
			n += (spaces - 1 + 7) / 8
		}
		if r != ' ' {
			spaces = 0
		}
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			letters++
			continue
		}
		n += (letters + 3) / 4
		letters = 0
		if r == ' ' {
			spaces++
			continue
		}
		n++
	}
	n += (letters + 3) / 4
	return (n*9 + 7) / 8
}

// messagesTokens estimates a chat request's prompt, the chat template's tokens included.
func messagesTokens(msgs []Message) int {
	n := requestOverhead
	for _, m := range msgs {
		n += messageOverhead + EstimateTokens(m.Content)
	}
	return n
}
