package narrate

import (
	"unicode"
	"unicode/utf8"
)

// messageOverhead is what a chat template adds around each message (role markers).
const messageOverhead = 8

// EstimateTokens estimates how many tokens the BPE tokenizers of common instruction models
// (Llama 3, Qwen 2.5, Mistral) make of s, erring on the high side: a word of letters is one
// token per 4 letters or part of it, digits go in groups of up to 3, every other symbol is a
// token of its own, and a non-ASCII letter counts as one token. Logs are full of numbers,
// paths and punctuation, where "bytes / 4" undercounts badly.
func EstimateTokens(s string) int {
	n := 0
	letters, digits := 0, 0
	flush := func() {
		n += (letters + 3) / 4
		n += (digits + 2) / 3
		letters, digits = 0, 0
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
			if digits > 0 {
				flush()
			}
			letters++
		case r >= '0' && r <= '9':
			if letters > 0 {
				flush()
			}
			digits++
		case r == ' ':
			// A space joins the word after it.
			flush()
		case r >= utf8.RuneSelf && unicode.IsLetter(r):
			flush()
			n++
		default:
			flush()
			n++
		}
	}
	flush()
	return n
}

// messagesTokens estimates a chat request's prompt.
func messagesTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += messageOverhead + EstimateTokens(m.Content)
	}
	return n
}
