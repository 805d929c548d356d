package analyze

import "bytes"

// dmlc-core (MXNet, XGBoost, ps-lite and BytePS under them) logs a failed check as
// "[06:46:00] .../dmlc/logging.h:308: [06:46:00] src/io/image_io.cc:168: Check failed: ..."
// before it throws, and, when the error is not caught, the stack of the throw follows: "Stack
// trace returned 8 entries:" and its "[bt] (0) ..." frames (apache/mxnet#8693, a blank line
// between), "Stack trace:" in newer builds (dmlc/xgboost#6438). It logs the same line for an
// error that is caught (an optional checkpoint load, a GPU probe that falls back to the CPU),
// and training goes on. The stack is no sign either way: dmlc appends it to the message it
// logs before the throw, caught or not. So the line is the process's failure only when it
// ends the log, alone or with its stack and nothing after but the stack's frames and the
// process's abort ("terminate called ...", "what(): ").

// dmlcStackLines bounds how far below the logging line its stack may start (blank lines, the
// message's continuation).
const dmlcStackLines = 3

// fatalDmlc gives kind fatal to each dmlc logging line among lines that ends the log, alone or
// followed only by its stack trace and the process's abort, unless it already has a stronger
// kind or training progress followed it (lastProgress, a line number).
func fatalDmlc(lines []tailLine, kinds []lineKind, lastProgress int) {
	last := lastNonBlank(lines)
	for i, l := range lines {
		if kinds[i] >= kindFatal || l.line < lastProgress || !isDmlcLogLine(l.text) {
			continue
		}
		fatal := i == last
		for j := i + 1; j < len(lines) && j <= i+dmlcStackLines && !fatal; j++ {
			t := bytes.TrimSpace(lines[j].text)
			if bytes.HasPrefix(t, []byte("Stack trace returned ")) || bytes.Equal(t, []byte("Stack trace:")) {
				fatal = onlyStackAfter(lines[j+1:])
				break
			}
		}
		if fatal {
			kinds[i] = kindFatal
		}
	}
}

// onlyStackAfter says whether lines hold nothing but a stack's frames ("[bt] (0) ...", "  0:
// ..."), blank lines and the process's abort.
func onlyStackAfter(lines []tailLine) bool {
	for _, l := range lines {
		t := bytes.TrimSpace(l.text)
		d := leading(t, isDigit)
		switch {
		case len(t) == 0, bytes.HasPrefix(t, []byte("[bt]")), d > 0 && bytes.HasPrefix(t[d:], []byte(":")),
			bytes.HasPrefix(t, []byte("terminate called")), bytes.HasPrefix(t, []byte("what(): ")), bytes.Contains(t, []byte("core dumped")):
		default:
			return false
		}
	}
	return true
}

// isDmlcLogLine says whether t is dmlc-core's logging line: a source path ending in
// "logging.h", ":", its line number, ": ".
func isDmlcLogLine(t []byte) bool {
	i := bytes.Index(t[:min(len(t), 256)], []byte("logging.h:"))
	if i < 0 {
		return false
	}
	rest := t[i+len("logging.h:"):]
	n := leading(rest, isDigit)
	return n > 0 && bytes.HasPrefix(rest[n:], []byte(": "))
}
