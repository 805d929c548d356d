package analyze

import "bytes"

// Programs that log through a logging library put a header in front of every line they log,
// traceback lines included when they log an exception: Python's logging ("ERROR:root:...",
// "2024-05-01 10:00:00,123 - trainer - ERROR - ..."), loguru ("... | ERROR    | mod:fn:12 - ..."),
// the "LEVEL date time file:line] " of vLLM and SGLang, DeepSpeed's "[time] [ERROR]
// [file:line:func] ", glog and TensorFlow's C++ ("E0613 ... file.cc:12] ", "...: E file.cc:12] ")
// and PyTorch's c10 ("[E ProcessGroupNCCL.cpp:737] "). A process that died of an exception it
// logged at ERROR level before exiting shows its traceback only behind such headers. The
// terminal failure (terminal.go) reads the message after an error-level header, so that the
// traceback and its exception line are seen as they are; the evidence keeps the whole line.
// Only error levels (ERROR, CRITICAL, FATAL, E, F) are taken off: an exception logged as a
// warning was handled.

// maxHeaderBytes bounds how far into a line a header may reach.
const maxHeaderBytes = 80

// errorLevels are the level words of an error-level header.
var errorLevels = [][]byte{[]byte("ERROR"), []byte("CRITICAL"), []byte("FATAL")}

// logMessage returns the message after an error-level logging header of t, or t itself when
// t has none.
func logMessage(t []byte) []byte {
	if glogHead(t, 'E') || glogHead(t, 'F') || c10Head(t, 'E') || c10Head(t, 'F') {
		return afterBracket(t, t)
	}
	head := t[:min(len(t), maxHeaderBytes)]
	for _, lv := range errorLevels {
		for from := 0; ; {
			i := bytes.Index(head[from:], lv)
			if i < 0 {
				break
			}
			p := from + i
			from = p + 1
			end := p + len(lv)
			if !wordEdge(t, p) || !wordEdge(t, end) || !headerBefore(t[:p]) {
				continue
			}
			if msg, ok := afterLevel(t, t[end:]); ok {
				return msg
			}
		}
	}
	// TensorFlow's C++ logging: "2019-06-13 01:17:08.886805: E tensorflow/core/x.cc:672] ".
	for _, lv := range [][]byte{[]byte(": E "), []byte(": F ")} {
		if p := bytes.Index(head, lv); p > 0 && headerBefore(t[:p+2]) {
			if msg := afterBracket(t, t[p+4:]); len(msg) < len(t)-p-4 {
				return msg
			}
		}
	}
	return t
}

// headerBefore says whether b can be what a header holds before its level: nothing, or a
// time, brackets and separators, with at most two names of several letters (a logger's name,
// a host) and starting with a digit or a bracket, never a sentence's words.
func headerBefore(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if !isDigit(b[0]) && b[0] != '[' && b[0] != '(' {
		return false
	}
	names := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case isDigit(c) || bytes.IndexByte([]byte(" -:.,/[]()|+_"), c) >= 0:
			i++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			n := leading(b[i:], func(c byte) bool { return isWordByte(c) || c == '.' })
			if n > 1 {
				names++
			}
			i += n
		default:
			return false
		}
	}
	return names <= 2
}

// afterLevel returns the message after a level word, rest being what follows the word.
func afterLevel(t, rest []byte) ([]byte, bool) {
	switch {
	case len(rest) == 0:
		return nil, false
	case rest[0] == ':':
		// "ERROR: message", Python's default "ERROR:root:message".
		rest = rest[1:]
		if len(rest) > 0 && rest[0] == ' ' {
			return rest[1:], true
		}
		if n := leading(rest, func(c byte) bool { return isWordByte(c) || c == '.' }); n > 0 && n < len(rest) && rest[n] == ':' {
			return rest[n+1:], true
		}
		return rest, true
	case rest[0] == ']':
		// "[ERROR] [launch.py:321:sigkill_handler] message", "[ERROR] message".
		rest = bytes.TrimPrefix(rest[1:], []byte(" "))
		if len(rest) > 0 && rest[0] == '[' {
			if j := bytes.IndexByte(rest, ']'); j > 0 && j < maxHeaderBytes && bytes.IndexByte(rest[:j], ' ') < 0 {
				rest = bytes.TrimPrefix(rest[j+1:], []byte(" "))
			}
		}
		return rest, true
	case rest[0] == ' ':
		s := bytes.TrimLeft(rest, " ")
		if len(s) > 1 && (s[0] == '|' || s[0] == '-') && s[1] == ' ' {
			// loguru's "| ERROR    | module:function:12 - message", "- ERROR - message".
			s = s[2:]
			if n := leading(s, isNonSpace); n > 0 && bytes.IndexByte(s[:n], ':') > 0 && bytes.HasPrefix(s[n:], []byte(" - ")) {
				s = s[n+3:]
			}
			return s, true
		}
		// "ERROR 11-18 18:07:28 engine.py:366] message" (vLLM, SGLang).
		if msg := afterBracket(t, rest); len(msg) < len(rest) {
			return msg, true
		}
		return rest[1:], true
	}
	return nil, false
}

// afterBracket returns what follows the "file:line] " that ends a header within rest, or t
// when rest has none.
func afterBracket(t, rest []byte) []byte {
	j := bytes.Index(rest[:min(len(rest), maxHeaderBytes)], []byte("] "))
	if j < 0 {
		return t
	}
	tok := rest[:j]
	if k := bytes.LastIndexByte(tok, ' '); k >= 0 {
		tok = tok[k+1:]
	}
	c := bytes.LastIndexByte(tok, ':')
	if c <= 0 || c == len(tok)-1 || !isDigits(tok[c+1:]) {
		return t
	}
	return rest[j+2:]
}
