package analyze

import "bytes"

// tracebackHead is how a Python traceback's header line reads after its exception's name
// in IPython and Jupyter (and so in every notebook or Colab paste): the exception's class,
// padded, then this ("ModuleNotFoundError       Traceback (most recent call last)").
var tracebackHead = []byte("Traceback (most recent call last)")

// isTracebackHeader says whether trimmed line t starts a Python traceback: the interpreter's
// own "Traceback (most recent call last):", or IPython's, which names the exception first.
// A notebook paste cut before the exception's own line still shows, in the header, what was
// raised.
func isTracebackHeader(t []byte) bool {
	if bytes.HasPrefix(t, tracebackHead) {
		return true
	}
	i := bytes.Index(t, tracebackHead)
	if i < 3 || t[i-1] != ' ' || t[i-2] != ' ' {
		return false
	}
	name := bytes.TrimRight(t[:i], " ")
	if len(name) == 0 || !isIdentStart(name[0]) {
		return false
	}
	for _, c := range name {
		if !isWordByte(c) && c != '.' {
			return false
		}
	}
	return true
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
