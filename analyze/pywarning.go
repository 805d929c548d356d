package analyze

import "bytes"

// Python's warnings module prints a warning as "path.py:LINE: CategoryWarning: message", the
// message as it was given, newlines and all, then the source line of the call that warned,
// indented by two spaces:
//
//	/usr/local/lib/python3.10/dist-packages/jax/_src/compiler.py:522: UserWarning: Error reading persistent compilation cache entry for 'jit_convert_element_type': XlaRuntimeError: INTERNAL: Failed to parse serialized GpuThunkAotCompilationResult.
//	  warnings.warn(
//
// (jax-ml/jax#22281: the program compiled and ran on). A message of several lines puts its
// words on lines of their own, with no header: torch's device warnings (pytorch/pytorch#3601's
// "UserWarning: Found GPU0 ... which requires CUDA_VERSION >= 8000 for" and its indented
// continuation; IAHispano/Applio#1006's capability warning, a blank line, "  warnings.warn(",
// and the app launched). The lines between the header and the source line are the warning's
// message, no failure of their own whatever their words ("Access denied."); the header is read
// as any line is: a warning that CUDA could not initialise says why a process then runs
// without its GPU.

// maxWarningLines bounds how many lines a warning's message may span: a header whose source
// line does not come within them is taken alone.
const maxWarningLines = 12

// quietWarnings gives kind none to the message lines of each Python warning among lines: the
// lines between its header and its source line, when that follows within maxWarningLines. A
// line of a strong kind (an exception, a signal, a traceback's header) ends the search: it is
// no message line, and the warning's source line was not printed.
func quietWarnings(lines []tailLine, kinds []lineKind) {
	for i := 0; i < len(lines); i++ {
		if kinds[i].strong() || !isWarningHeader(lines[i].text) {
			continue
		}
		for j := i + 1; j < len(lines) && j <= i+maxWarningLines; j++ {
			t := lines[j].text
			if isWarningSource(t) {
				for k := i + 1; k < j; k++ {
					if kinds[k] == kindError {
						kinds[k] = kindNone
					}
				}
				i = j
				break
			}
			if kinds[j].strong() || isTracebackHeader(bytes.TrimSpace(t)) || isWarningHeader(t) || hasLogHeader(t) {
				break
			}
		}
	}
}

// isWarningHeader says whether t starts as the warnings module's first line of a warning:
// a file ending in ".py", ":", its line number, ": ", a class whose name ends in "Warning",
// and ":" ("/x/compiler.py:686: UserWarning: ...", "C:\\x\\image.py:13: UserWarning: ...").
func isWarningHeader(t []byte) bool {
	head := t[:min(len(t), 512)]
	if !bytes.Contains(head, []byte("Warning:")) {
		return false // most lines: 'W' is rare, where '.' of ".py:" starts every number
	}
	i := bytes.Index(head, []byte(".py:"))
	if i <= 0 {
		return false
	}
	rest := head[i+len(".py:"):]
	n := leading(rest, isDigit)
	if n == 0 || !bytes.HasPrefix(rest[n:], []byte(": ")) {
		return false
	}
	rest = rest[n+2:]
	n = leading(rest, isWordByte)
	return n > len("Warning") && rest[0] >= 'A' && rest[0] <= 'Z' && bytes.HasSuffix(rest[:n], []byte("Warning")) &&
		n < len(rest) && rest[n] == ':'
}

// isWarningSource says whether t is the source line the warnings module prints under a
// warning: two spaces, then code; a progress bar indented the same ("  3%|...") is none.
func isWarningSource(t []byte) bool {
	return len(t) > 2 && t[0] == ' ' && t[1] == ' ' && t[2] != ' ' && t[2] != '\t' &&
		!bytes.Contains(t, []byte("%|"))
}

// hasLogHeader says whether t carries a log header of its own ("ERROR: ...", "[E ...]"): a
// logger's line, which no warning's message is, so the warning's source line was not printed
// before it.
func hasLogHeader(t []byte) bool {
	return len(logMessage(t)) != len(t)
}
