package analyze

import (
	"bytes"

	"github.com/coroner-dev/coroner/internal/literal"
)

// A library that fails an attempt and goes on says so: c10d's "..., will retry" while the
// rendezvous store is not yet listening, the Hugging Face Hub client's "Retrying in 1s [Retry
// 1/5]", wandb's "entering retry loop", NCCL's "falling back to simple order" and, after a
// network plugin that would not initialise, "Using network Socket". Error lines printed
// before such a line were survived: they are not how the log ended, whatever follows.

// recoveryWords are the phrases, ASCII case folded, matched at word boundaries.
var recoveryWords = []string{"will retry", "retrying", "retry loop", "falling back", "using network"}

var recoveryMatcher = literal.NewMatcher(recoveryWords)

// isRecovery says whether line t says that something that failed is retried or replaced.
func isRecovery(t []byte) bool {
	var buf [4]literal.Hit
	for _, h := range literal.Append(recoveryMatcher, t, buf[:0]) {
		if n := len(recoveryWords[h.ID]); wordEdge(t, h.End-n) && wordEdge(t, h.End) {
			return true
		}
	}
	return false
}

// forgetRecovered drops the error lines (kindError: an ERROR or a failure word, nothing that
// shows on its own that a process ended) printed before the log's last recovery line; the
// recovery line itself keeps its kind, so a log that ends retrying still ends in its error.
func forgetRecovered(lines []tailLine, kinds []lineKind) {
	last := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if isRecovery(lines[i].text) {
			last = i
			break
		}
	}
	for i := 0; i < last; i++ {
		if kinds[i] == kindError {
			kinds[i] = kindNone
		}
	}
}

// isIgnoredHeader says whether trimmed line t is how Python reports an exception it caught
// and ignored (sys.unraisablehook: in a __del__, a finaliser, an atexit callback, a DataLoader
// iterator torn down): "Exception ignored in: <bound method _DataLoaderIter.__del__ ...>",
// then the traceback and the exception. The process went on; that exception is not its end.
func isIgnoredHeader(t []byte) bool {
	return bytes.HasPrefix(t, []byte("Exception ignored "))
}
