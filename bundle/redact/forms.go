package redact

import (
	"bytes"
	"slices"
	"strings"
)

// Secret forms found by where they stand rather than by a name: a password given to a
// command by a short flag (docker login -p, sshpass -p, curl -u user:pass), and a Telegram bot
// token (the bot's id, a colon and 35 characters starting with "A", as BotFather issues them;
// Telegram's own documentation shows 34).

// cliPassword is how one command takes a password on its command line.
type cliPassword struct {
	// sub, when set, is a word that must follow the command (login).
	sub string
	// flags take the password as their value: "-p VALUE", "-pVALUE" (short) and "--password
	// VALUE", "--password=VALUE" (long).
	flags []string
	// userPass: the value is user:password and only what follows its first ':' is secret.
	userPass bool
}

// cliPasswords are the commands whose password flags have no secret-looking name (a long
// flag named --password is secret-assignment's already).
var cliPasswords = map[string]cliPassword{
	"docker":  {sub: "login", flags: []string{"-p"}},
	"podman":  {sub: "login", flags: []string{"-p"}},
	"nerdctl": {sub: "login", flags: []string{"-p"}},
	"buildah": {sub: "login", flags: []string{"-p"}},
	"skopeo":  {sub: "login", flags: []string{"-p"}},
	"oras":    {sub: "login", flags: []string{"-p"}},
	"helm":    {sub: "login", flags: []string{"-p"}}, // helm registry login
	"sshpass": {flags: []string{"-p"}},
	"curl":    {flags: []string{"-u", "--user", "-U", "--proxy-user"}, userPass: true},
}

func cliTriggers() []string {
	out := make([]string, 0, len(cliPasswords))
	for c := range cliPasswords {
		out = append(out, c)
	}
	// Sorted, so that the automaton (and so the order of hits) is the same in every run.
	slices.Sort(out)
	return out
}

// cliPasswordAt finds the password of a command whose name is b[start:end], on the rest of
// its line (up to a pipe, ';' or '&&').
func cliPasswordAt(_ *Redactor, b []byte, start, end int) (span, bool) {
	if start > 0 && !cmdBefore(b[start-1]) || end < len(b) && !isBlank(b[end]) {
		return span{}, false // "mydocker", "curl_opts", "sshpass-wrapper"
	}
	spec, ok := cliPasswords[strings.ToLower(string(b[start:end]))]
	if !ok {
		return span{}, false
	}
	var buf [maxWords]span
	words := shellWords(b, end, buf[:0])
	if spec.sub != "" && !hasWord(b, words, spec.sub) {
		return span{}, false // docker run -p 8080:8080
	}
	for i, w := range words {
		word := b[w.start:w.end]
		for _, f := range spec.flags {
			var v span
			switch {
			case string(word) == f && i+1 < len(words):
				v = words[i+1]
			case strings.HasPrefix(f, "--") && bytes.HasPrefix(word, []byte(f+"=")):
				v = span{start: w.start + len(f) + 1, end: w.end}
			case !strings.HasPrefix(f, "--") && len(word) > len(f) && bytes.HasPrefix(word, []byte(f)) && !bytes.HasPrefix(word, []byte("--")):
				v = span{start: w.start + len(f), end: w.end} // -pVALUE
			default:
				continue
			}
			v = unquote(b, v)
			if spec.userPass {
				colon := bytes.IndexByte(b[v.start:v.end], ':')
				if colon < 0 {
					return span{}, false // a user alone: curl asks for the password
				}
				v.start += colon + 1
			}
			val := string(b[v.start:v.end])
			if v.end <= v.start || !plausibleValue(val) || strings.Contains(val, "$") {
				return span{}, false
			}
			return v, true
		}
	}
	return span{}, false
}

// maxCommand and maxWords bound how much of a line after a command's name is read for its
// flags: a line of thousands of "curl" costs each one little.
const (
	maxCommand = 4 << 10
	maxWords   = 48
)

// cmdBefore reports whether c may stand before a command's name: a line's start, a blank, a
// quote, a path's '/', a shell's '(' or '`', or the '+' of set -x.
func cmdBefore(c byte) bool {
	switch c {
	case ' ', '\t', '"', '\'', '/', '(', '`', '+', '=', ']':
		return true
	}
	return false
}

// shellWords appends to out the words of the command that starts at b[from:], split at
// blanks, quoted words whole (the quotes in them), up to the end of the command (a line end,
// '|', ';' or '&' outside quotes), maxWords words or maxCommand bytes.
func shellWords(b []byte, from int, out []span) []span {
	to := min(len(b), from+maxCommand)
	for i := from; i < to && len(out) < maxWords; {
		for i < to && isBlank(b[i]) {
			i++
		}
		if i >= to || commandEnd(b[i]) {
			break
		}
		s := i
		var quote byte
		for i < to && b[i] != '\n' && (quote != 0 || !isBlank(b[i]) && !commandEnd(b[i])) {
			switch {
			case quote != 0 && b[i] == quote:
				quote = 0
			case quote == 0 && (b[i] == '"' || b[i] == '\''):
				quote = b[i]
			}
			i++
		}
		out = append(out, span{start: s, end: i})
	}
	return out
}

func commandEnd(c byte) bool { return c == '\n' || c == '|' || c == ';' || c == '&' }

func hasWord(b []byte, words []span, w string) bool {
	for _, s := range words {
		if string(b[s.start:s.end]) == w {
			return true
		}
	}
	return false
}

// unquote drops the quotes around a word's value: 'pass word' -> pass word.
func unquote(b []byte, v span) span {
	if v.end-v.start >= 2 {
		if q := b[v.start]; (q == '"' || q == '\'') && b[v.end-1] == q {
			return span{start: v.start + 1, end: v.end - 1}
		}
	}
	if v.end-v.start >= 1 && (b[v.start] == '"' || b[v.start] == '\'') {
		// user:'pass' or "user:pass" cut: keep what is inside.
		v.start++
	}
	for v.end > v.start && (b[v.end-1] == '"' || b[v.end-1] == '\'') {
		v.end--
	}
	return v
}

// telegramAt finds a Telegram bot token whose ":A" is b[start:end]: the bot id (5 to 16
// digits, not part of a longer number or word... except the "bot" of an API URL) before it,
// 33 or 34 token characters after it, and no more.
func telegramAt(_ *Redactor, b []byte, start, end int) (span, bool) {
	if b[start+1] != 'A' {
		return span{}, false
	}
	s := start
	for s > 0 && start-s < 16 && b[s-1] >= '0' && b[s-1] <= '9' {
		s--
	}
	if start-s < 5 || s > 0 && (b[s-1] >= '0' && b[s-1] <= '9' || b[s-1] == '_' || b[s-1] == '-' ||
		isAlnum(b[s-1]) && !bytes.HasSuffix(bytes.ToLower(b[max(0, s-3):s]), []byte("bot"))) {
		return span{}, false
	}
	e := end
	for e < len(b) && e-end < 35 && (isAlnum(b[e]) || b[e] == '_' || b[e] == '-') {
		e++
	}
	if e-end < 33 || e-end > 34 || e < len(b) && (isAlnum(b[e]) || b[e] == '_' || b[e] == '-') {
		return span{}, false
	}
	return span{start: start + 1, end: e}, true
}
