package analyze

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/coroner-dev/coroner/internal/literal"
	"github.com/coroner-dev/coroner/logscan"
)

// A log's terminal failure is how its process said it ended: the last exception of its last
// traceback (with the exceptions it was chained to), a C++ what(), torchelastic's summary of
// a failed child (exitcode, error_file, traceback), fatal and signal lines, a non-zero exit
// code, a launcher's summary, ERROR lines at the very end. The second tier (tier2.go)
// classifies it when no specific rule explained the failure. Only the end of a log is kept
// for it: a process's failure is what it printed last.

// tailLines is how many of a log's last lines are kept to find its terminal failure.
const tailLines = 256

// maxTailLineBytes bounds a kept line: failure messages are shorter, and a log of lines at
// the line length limit must not keep megabytes.
const maxTailLineBytes = 1024

// tailLine is one kept line, launcher prefix stripped.
type tailLine struct {
	line   int
	time   int64
	text   []byte
	stream string
	rank   int
	// quiet: the line's shape showed that it holds no tail word (newTailFilter).
	quiet bool
}

// tailBuf is a ring of a log's last lines; the line buffers are reused, so keeping them
// allocates nothing once the ring is full.
type tailBuf struct {
	lines []tailLine
	n     int
	// lastProgress is the line number of the log's last training progress line (0: none),
	// and earlierProgress the two progress lines before it (0: none), the older first.
	lastProgress    int
	earlierProgress [2]int
	// marks is terminalOf's scratch of what it found of each line, handed from one log to
	// the next with the lines (at 16,384 logs it was 19 MB of garbage).
	marks tailMarks
	// started is the line number of the tail's last line that says a container was created
	// (0: none) and startedPod the pod it names, found with the terminal failure (recovered.go).
	started    int
	startedPod []byte
	// skipped is the line number of the tail's last line that says a batch was skipped after
	// running out of memory, when nothing failed after it (0: none; recovered.go), and
	// caughtLines the numbers of the out-of-memory lines such skips follow.
	skipped     int
	caughtLines []int
	// startedContainer is the container the last creation line names (nil: none),
	// endedPulls the numbers of the image complaints it ended, and manyPods whether the log
	// holds more than one pod's text: two kubectl describe names, or two pods its tail names
	// (recovered.go).
	startedContainer []byte
	endedPulls       []int
	manyPods         bool
	// running is the line number of the last Running phase that ended a gang's refusals above
	// it (0: none), and ranPast the line numbers of the refusals such phases ended, in order
	// (forgetScheduled, recovered.go).
	running int
	ranPast []int
	// describedPod is the first name a "Name:" line of kubectl describe gave (of a pod, or
	// of any object pasted with it), and describedPods whether a second, other name followed.
	describedPod  []byte
	describedPods bool
}

// tailMarks are what terminalOf finds of each kept line: its kind, tail words and whether
// it is a traceback's frame.
type tailMarks struct {
	kinds    []lineKind
	words    []wordSet
	inFrames []bool
}

// reset returns the marks of n lines, all zero.
func (m *tailMarks) reset(n int) ([]lineKind, []wordSet, []bool) {
	m.kinds = append(m.kinds[:0], make([]lineKind, n)...)
	m.words = append(m.words[:0], make([]wordSet, n)...)
	m.inFrames = append(m.inFrames[:0], make([]bool, n)...)
	return m.kinds, m.words, m.inFrames
}

func (t *tailBuf) add(line int, time int64, text []byte, stream string, rank int, quiet bool) {
	if t.n == len(t.lines) && t.n < tailLines { // t.lines may hold a previous log's buffers
		t.lines = append(t.lines, tailLine{})
	}
	l := &t.lines[t.n%tailLines]
	l.line, l.time, l.stream, l.rank, l.quiet = line, time, stream, rank, quiet
	l.text = append(l.text[:0], text[:min(len(text), maxTailLineBytes)]...)
	t.n++
	if len(text) > 5 && text[0] == 'N' && bytes.HasPrefix(text, describeName) {
		t.described(text)
	}
}

// ordered returns the kept lines, oldest first.
func (t *tailBuf) ordered() []tailLine {
	if t.n <= tailLines {
		return t.lines[:t.n]
	}
	start := t.n % tailLines
	return append(append([]tailLine{}, t.lines[start:]...), t.lines[:start]...)
}

// lineKind is what a line says about how a process ended.
type lineKind int

const (
	kindNone      lineKind = iota
	kindError              // an ERROR line (counts only near the end of the log)
	kindRetried            // the last of the retries a log ends in (retriedEnd)
	kindExit               // a non-zero exit code or a launcher's summary
	kindSignal             // a signal, "Killed", a segfault, a bus error
	kindFatal              // FATAL, glog F lines, "Fatal Python error"
	kindWhat               // a C++ exception's what()
	kindException          // a Python exception line
)

// strong says whether a kind shows on its own that the process failed.
func (k lineKind) strong() bool { return k >= kindRetried }

// The expressions that say what a line is. Each runs only on a line that holds one of its
// literals (gated.words, ASCII case folded; a superset, checked on every sample and corpus line
// by TestGatesAreSupersets), or passes its own check of how the line starts: Go's regexp costs
// tens of microseconds on a 300-byte line it does not match, and a 16,384-rank job has tens of
// thousands of tail lines.
var (
	// exceptionLine is a Python exception as a traceback ends: "pkg.mod.SomeError: message",
	// or an exception whose class name does not say so but whose module does: a class of a
	// package's exceptions module ("torch._dynamo.exc.Unsupported: ...",
	// "google.api_core.exceptions.NotFound: 404 ...") or of pyarrow's ("pyarrow.lib.ArrowInvalid:
	// ..."; pyarrow defines them in its compiled lib), or Python's base class itself, which
	// scripts and launchers raise with their message ("Exception: Timed out waiting for tasks
	// to start. ...", horovodrun's: horovod/horovod#1414, #3971). TensorFlow 1's session
	// names the op's error with a pointer to the op's traceback printed above it
	// ("ResourceExhaustedError (see above for traceback): OOM when allocating tensor ...",
	// "DataLossError (see above for traceback): corrupted record at 12":
	// tensorflow/tensorflow#13463). Ray re-raises a task's exception in the caller wrapped,
	// the task's class in parentheses ("ray.exceptions.RayTaskError(ZeroDivisionError): ray::
	// PPOTrainer.fit() (pid=111331, ...)": TideDra/lmm-r1#82; "RayTaskError(RuntimeError)":
	// ray-project/ray#13953): the line is the exception that ends the traceback.
	// Anchored: it never searches the line.
	exceptionExpr = lazyRegexp(`^(?:(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Failure|Fault|Exit)|Exception|` +
		`(?:[A-Za-z_][A-Za-z0-9_]*\.)+(?:exc|exceptions|errors)\.[A-Z][A-Za-z0-9_]*|pyarrow\.lib\.Arrow[A-Z][A-Za-z0-9_]*)(?:\([A-Za-z_][A-Za-z0-9_.]*\))?(?: \(see above for traceback\))?(?::|$)`)
	// exceptionLine runs its expression only on a line that starts as every branch does, with
	// a letter or an underscore, and whose first run of name bytes ends as every branch's does
	// (mayBeException): a c10 line ("[E314 ...") fails at its first byte and a progress line
	// ("step 82 | loss ...") at its first blank, but Go's backtracker still clears its bit
	// set, the size of the expression times the line, first.
	exceptionLine = gated{re: exceptionExpr}.by(func(t []byte) bool {
		return len(t) > 0 && isIdentStart(t[0]) && mayBeException(t) && exceptionExpr().Match(t)
	})
	// exitLine is a non-zero exit code, as programs, launchers and shells say it.
	exitLine = gate(`(?i)(?:exit ?code|exit status|return ?code|exitcode)\s*(?:[:=]|is|of)?\s*\(?(-?[1-9][0-9]*)`,
		nil, "exit", "return code", "returncode").as(hasExitWord)
	// signalLine names a signal or how a process died of one. A shell reports a SIGKILLed
	// foreground process with a bare "Killed", which lands right after whatever the process
	// printed last without a newline (a progress bar's "13.8it/s]Killed").
	signalLine = gate(`\bSIG(?:KILL|SEGV|BUS|ABRT|ILL|FPE|TERM)\b|(?i:\bsignal:? ?\d+\b|segmentation fault|bus error|core dumped|killed by signal)|(?:^|\s)Killed(?:\s|$)|(?:^|[^\pL\pN\s])Killed[^\pL\pN]*$|^Aborted`,
		nil, "sig", "segmentation fault", "bus error", "core dumped", "killed", "aborted").as(hasSignalWord)
	// fatalLine is a fatal line: FATAL, a glog F line, "Fatal Python error", or the ROCm (HSA)
	// runtime's own message for the memory access fault it aborts the process on ("Memory
	// access fault by GPU node-1 (Agent handle: ...) on address ... Reason: ..."), whose abort
	// follows it: ROCm/legacy-rocm-build#1535, #1574.
	fatalLine = gate(`\bFATAL\b|^F\d{4} |Fatal Python error|(?i:fatal error)|^\[F(?: |\d{3,4} \S+ )\S+:\d+\]|Memory access fault by GPU node-\d`,
		func(t []byte) bool { return glogHead(t, 'F') || c10Head(t, 'F') }, "fatal", "memory access fault by gpu").as(hasFatalWord)
	// launcherLine is a launcher's summary of a failed process: torchelastic's, mpirun's,
	// MPICH's, the DeepSpeed launcher's, Slurm's, PaddlePaddle's ("ABORT!!! Out of all 4
	// trainers, the trainer process with rank=[1, 2, 3] was aborted. Please check its log.").
	launcherLine = gate(`ChildFailedError|Primary job\s+terminated normally, but|mpirun noticed that process|mpirun detected that one or more processes exited|exits with return code|exit with status code|^\s*(?:exitcode|error_file|traceback)\s*:|non-zero exit|process returned a non-zero|BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES|\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT|ABORT!!! Out of all \d+ trainers`,
		nil, "ChildFailedError", "Primary job", "mpirun", "exits with return code", "exit with status code", "exitcode", "error_file",
		"traceback", "non-zero", "BAD TERMINATION", "CANCELLED AT", "ABORT!!!").as(hasLauncherWord)
	// coordinationLine is JAX's (and TensorFlow's) coordination service ending a task: its
	// agent's error callback ("Coordination service agent in error status: ...", logged by
	// xla's pjrt/distributed/client.cc before the callback that terminates the process by
	// default), the leader giving up on tasks that never registered ("Stopping coordination
	// service as cluster registration failed"), and a task's own registration that failed,
	// which gRPC and absl name by its RPC ("while calling /tensorflow.CoordinationService/
	// RegisterTask:", "RPC: /tensorflow.CoordinationService/RegisterTask"; newer xla calls the
	// service /xla.coordination.CoordinationService, marin-community/marin#5480): the RPC is
	// named only in an error, and jax.distributed.initialize raises on it. jax-ml/jax#39095's
	// fault-tolerance notes and marin-community/levanter#432 print these lines.
	coordinationLine = gate(`Coordination service agent in error status|cluster registration failed|(?:while calling|RPC:|from) /[\w.]*CoordinationService/RegisterTask\b`,
		nil, "coordination service agent", "cluster registration failed", "coordinationservice/registertask").as(hasCoordinationWord)
	// objectLine is a Kubernetes object's failure as kubectl describe and get print it: a
	// Warning event, a container's or pod's reason.
	objectExpr = lazyRegexp(`^\s*(?:Warning\s+[A-Z][A-Za-z]+\s|Reason:\s+(?:OOMKilled|Evicted|Error|ContainerCannotRun|DeadlineExceeded|ImagePullBackOff|ErrImagePull|CrashLoopBackOff|Unschedulable|CreateContainerConfigError)\b)`)
	// objectLine runs its expression only on a line whose first byte past blanks is a 'W' or
	// an 'R', as both branches start.
	objectLine = gated{re: objectExpr}.by(func(t []byte) bool {
		rest := bytes.TrimLeft(t, " \t\n\f\r")
		return len(rest) > 0 && (rest[0] == 'W' || rest[0] == 'R') && objectExpr().Match(t)
	})
	// errorLine is an ERROR line, a compiler-style "error:", a glog E line, PyTorch's c10 E line
	// ("[E ProcessGroupNCCL.cpp:737] ..."), or a status as TensorFlow, XLA, absl and gRPC print
	// one ("Unavailable: ...", "RESOURCE_EXHAUSTED: ...").
	errorLine = gate(`\bERROR\b|^(?:[\w./-]+: )?error: |^E\d{4} |^\[E(?: |\d{3,4} \S+ )\S+:\d+\]|`+
		`^(?:Cancelled|Unknown|InvalidArgument|DeadlineExceeded|NotFound|AlreadyExists|PermissionDenied|ResourceExhausted|FailedPrecondition|OutOfRange|Unimplemented|Internal|Unavailable|DataLoss|Unauthenticated|`+
		`CANCELLED|UNKNOWN|INVALID_ARGUMENT|DEADLINE_EXCEEDED|NOT_FOUND|ALREADY_EXISTS|PERMISSION_DENIED|RESOURCE_EXHAUSTED|FAILED_PRECONDITION|ABORTED|OUT_OF_RANGE|UNIMPLEMENTED|INTERNAL|UNAVAILABLE|DATA_LOSS|UNAUTHENTICATED): `,
		func(t []byte) bool { return glogHead(t, 'E') || c10Head(t, 'E') || statusHead(t) }, "error").by(isErrorLine).as(hasErrorLineWord)
	// errorWords are the words a line that reports a failure uses, in any log format:
	// "NetworkError", "Call to ibv_create_cq failed", "connection refused".
	errorWords = gate(`(?i)(?:error|exception)s?\b|\b(?:failed|failure|fatal|killed|abort(?:ed)?|refused|denied|timed out|unable to|cannot|could not|out of memory|oom|xid|evicted|preempted|unschedulable|backoff|insufficient|exceeded)\b`,
		nil, errorWordList...).by(hasErrorWord).as(hasErrorWordWord)
	// errorWordList is errorWords' words: the first two end a word, the others are whole words.
	errorWordList = []string{"error", "exception", "failed", "failure", "fatal", "killed", "abort", "aborted", "refused", "denied",
		"timed out", "unable to", "cannot", "could not", "out of memory", "oom", "xid", "evicted", "preempted", "unschedulable",
		"backoff", "insufficient", "exceeded"}
	errorWordMatcher = literal.NewMatcher(errorWordList)
)

// gated is an expression that runs only on lines that hold one of its words or pass head;
// with neither, it always runs (it is anchored, and cheap). With code, code runs in its place:
// the expression written out by hand where the regexp costs too much on the lines that pass
// the gate (TestGatesAreSupersets checks that both say the same on every line it has).
type gated struct {
	re    func() *regexp.Regexp // compiled on first use (lazyRegexp)
	words *literal.Matcher
	head  func([]byte) bool
	code  func([]byte) bool
	// list is the words; bit is what tailWordsOf sets for a line that holds one of them.
	list []string
	bit  wordSet
}

func (g gated) by(code func([]byte) bool) gated { g.code = code; return g }

func (g gated) as(bit wordSet) gated { g.bit = bit; return g }

func gate(expr string, head func([]byte) bool, words ...string) gated {
	return gated{re: lazyRegexp(expr), words: literal.NewMatcher(words), head: head, list: words}
}

// lazyRegexp compiles expr when it is first used, not as the package starts: every process
// starts it (coroner search, version), few read a log's end, and compiling these expressions
// was most of the package's start-up (2 of a warm search's 28 ms of start-up CPU).
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Match says whether t matches the expression, reading t for its words.
func (g gated) Match(t []byte) bool {
	return g.matchWith(t, g.words != nil && literal.Any(g.words, t))
}

// matchWith is Match of a line whose pass for the words is done: found says it holds one.
func (g gated) matchWith(t []byte, found bool) bool {
	if g.words != nil && !found && (g.head == nil || !g.head(t)) {
		return false
	}
	if g.code != nil {
		return g.code(t)
	}
	return g.re().Match(t)
}

// isErrorLine is errorLine's expression written out.
func isErrorLine(t []byte) bool {
	if hasWord(t, "ERROR") {
		return true
	}
	rest := t
	if n := leading(t, isPathByte); n > 0 && bytes.HasPrefix(t[n:], []byte(": ")) {
		rest = t[n+2:]
	}
	if bytes.HasPrefix(t, []byte("error: ")) || bytes.HasPrefix(rest, []byte("error: ")) {
		return true
	}
	if glogHead(t, 'E') && t[5] == ' ' || c10Head(t, 'E') {
		return true
	}
	n := leading(t, func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' })
	return n > 0 && bytes.HasPrefix(t[n:], []byte(": ")) && statusWords[string(t[:n])]
}

// hasWord says whether t holds w as a whole word (case as given).
func hasWord(t []byte, w string) bool {
	for i := 0; ; {
		j := bytes.Index(t[i:], []byte(w))
		if j < 0 {
			return false
		}
		if at := i + j; wordEdge(t, at) && wordEdge(t, at+len(w)) {
			return true
		}
		i += j + 1
	}
}

// isWarnOrErrorLine says whether t is logged at warning or error level: an error line, a
// c10 or glog warning head ("[W socket.cpp:436]", "W0312 ..."), or the word WARN or WARNING
// (NCCL's "NCCL WARN", Python logging's "WARNING").
func isWarnOrErrorLine(t []byte) bool {
	return isErrorLine(t) || c10Head(t, 'W') || glogHead(t, 'W') && t[5] == ' ' || hasWord(t, "WARN") || hasWord(t, "WARNING")
}

// statusWords are the status codes of gRPC, absl and TensorFlow, in both spellings.
var statusWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("Cancelled Unknown InvalidArgument DeadlineExceeded NotFound AlreadyExists PermissionDenied " +
		"ResourceExhausted FailedPrecondition OutOfRange Unimplemented Internal Unavailable DataLoss Unauthenticated " +
		"CANCELLED UNKNOWN INVALID_ARGUMENT DEADLINE_EXCEEDED NOT_FOUND ALREADY_EXISTS PERMISSION_DENIED RESOURCE_EXHAUSTED " +
		"FAILED_PRECONDITION ABORTED OUT_OF_RANGE UNIMPLEMENTED INTERNAL UNAVAILABLE DATA_LOSS UNAUTHENTICATED") {
		statusWords[w] = true
	}
}

// hasErrorWord is errorWords' expression written out (ASCII case folded): "error" or
// "exception", with an "s" or not, at the end of a word; the other words as whole words.
func hasErrorWord(t []byte) bool {
	var buf [8]literal.Hit
	for _, h := range literal.Append(errorWordMatcher, t, buf[:0]) {
		end := h.End
		switch h.ID {
		case 0, 1: // error, exception: "NetworkError", "errors"
			if wordEdge(t, end) || end < len(t) && t[end]|0x20 == 's' && wordEdge(t, end+1) {
				return true
			}
		default:
			if n := len(errorWordList[h.ID]); wordEdge(t, end-n) && wordEdge(t, end) {
				return true
			}
		}
	}
	return false
}

// wordEdge says whether i is a word boundary of t (\b: a word byte on one side only).
func wordEdge(t []byte, i int) bool {
	before := i > 0 && isWordByte(t[i-1])
	after := i < len(t) && isWordByte(t[i])
	return before != after
}

func isPathByte(c byte) bool { return isWordByte(c) || c == '.' || c == '/' || c == '-' }

// leading counts the bytes at the start of t that ok accepts.
func leading(t []byte, ok func(byte) bool) int {
	n := 0
	for n < len(t) && ok(t[n]) {
		n++
	}
	return n
}

// glogHead says whether t starts as a glog line of severity c: "E0314 ".
func glogHead(t []byte, c byte) bool { return len(t) > 5 && t[0] == c && isDigits(t[1:5]) }

// c10Head says whether t starts as a line of PyTorch's C++ logging (c10) of severity c: the
// letter, the time since PyTorch 2.4, and the source file and line in brackets, as in
// "[E ProcessGroupNCCL.cpp:737] ..." and "[E1206 18:44:12.715588844 ProcessGroupNCCL.cpp:607] ...";
// c10 does not pad the month, so from January to September the date is three digits
// ("[E513 13:25:57.714781669 ProcessGroupNCCL.cpp:616]"). The launcher's "[rank0]:" is taken
// off before. It is the expression `^\[c(?: |\d{3,4} \S+ )\S+:\d+\]` written out.
func c10Head(t []byte, c byte) bool {
	if len(t) < 3 || t[0] != '[' || t[1] != c {
		return false
	}
	rest := t[2:]
	if d := leading(rest, isDigit); rest[0] == ' ' {
		rest = rest[1:]
	} else if (d == 3 || d == 4) && d < len(rest) && rest[d] == ' ' {
		rest = rest[d+1:]
		n := leading(rest, isNonSpace)
		if n == 0 || n == len(rest) || rest[n] != ' ' {
			return false
		}
		rest = rest[n+1:]
	} else {
		return false
	}
	tok := rest[:leading(rest, isNonSpace)]
	for p := 1; p < len(tok); p++ {
		if tok[p] != ':' {
			continue
		}
		q := p + 1
		for q < len(tok) && isDigit(tok[q]) {
			q++
		}
		if q > p+1 && q < len(tok) && tok[q] == ']' {
			return true
		}
	}
	return false
}

// isNonSpace is RE2's \S on a byte.
func isNonSpace(c byte) bool { return c != ' ' && c != '\t' && c != '\n' && c != '\f' && c != '\r' }

// statusHead says whether t starts with a word and ": " ("Unavailable: ", "DATA_LOSS: ").
func statusHead(t []byte) bool {
	for i, c := range t {
		if c == ':' {
			return i > 0 && i+1 < len(t) && t[i+1] == ' '
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return false
}

// mayBeException says whether t can be an exceptionExpr line. Each branch of the expression
// is a run of name bytes (letters, digits, '_' and '.') followed by the line's end, ':', the
// wrapped class's '(' or " (see above for traceback)", none of them a name byte: so a match's
// run is the line's longest run of name bytes from its start, and what follows that run is
// one of these. The run is the class: it ends as a class of the first branch does, or holds
// the third's module, or starts as the fourth's (a logger's "torch.distributed.run:" or a
// "config:" line is none).
func mayBeException(t []byte) bool {
	i := 0
	for i < len(t) && (isIdentStart(t[i]) || isDigit(t[i]) || t[i] == '.') {
		i++
	}
	if i < len(t) && t[i] != ':' && t[i] != '(' && !bytes.HasPrefix(t[i:], []byte(" (see above for traceback)")) {
		return false
	}
	class := t[:i]
	for _, end := range exceptionEnds {
		if bytes.HasSuffix(class, end) {
			return true
		}
	}
	for _, mod := range exceptionModules {
		if bytes.Contains(class, mod) {
			return true
		}
	}
	return bytes.HasPrefix(class, []byte("pyarrow.lib.Arrow"))
}

// exceptionEnds and exceptionModules are how exceptionExpr's classes end and the modules its
// third branch names ("Exception" alone, the second branch, ends as the first's do).
var (
	exceptionEnds    = [][]byte{[]byte("Error"), []byte("Exception"), []byte("Interrupt"), []byte("Failure"), []byte("Fault"), []byte("Exit")}
	exceptionModules = [][]byte{[]byte(".exc."), []byte(".exceptions."), []byte(".errors.")}
)

// kindOf is what a line says about how its process ended.
func kindOf(text []byte) lineKind {
	return kindWith(text, tailWordsOf(text))
}

// kindWith is kindOf of a line whose literal pass is done: w is what it found (tailWordsOf).
func kindWith(text []byte, w wordSet) lineKind {
	t := bytes.TrimSpace(text)
	if len(t) == 0 || !mayEndWith(t, w&hasEndWord != 0) {
		return kindNone
	}
	return classify(t, w)
}

// classify is kindOf's expressions, in order, on a trimmed line whose words are w.
func classify(t []byte, w wordSet) lineKind {
	match := func(g gated) bool { return g.matchWith(t, w&g.bit != 0) }
	switch {
	case exceptionLine.Match(t):
		return kindException
	case bytes.Contains(t, []byte("what():")):
		return kindWhat
	case match(fatalLine) || match(coordinationLine):
		return kindFatal
	case match(signalLine):
		return kindSignal
	case match(launcherLine) || match(exitLine) || objectLine.Match(t) || ncclReturn(t):
		return kindExit
	case match(errorLine) || match(errorWords):
		return kindError
	}
	return kindNone
}

// endWords holds, ASCII case folded, a literal of every match of the expressions kindOf runs
// but three: a glog line's head ("E0314 ", "F0314 "), a c10 line's ("[E socket.cpp:435]") and
// a status ("Unavailable: "), which mayEnd checks by hand. It is a superset (TestMayEndIsASuperset): a line without one of them
// is no kind, and the expressions, which cost microseconds a line, never run on the hundreds
// of tail lines of each of thousands of logs that only report progress.
var endWords = literal.NewMatcher(endWordList)

var endWordList = []string{
	"error", "exception", "interrupt", "failure", "fault", "exit", "what():", "fatal",
	"sig", "segmentation", "bus error", "core dumped", "killed", "abort", ".exc.", "pyarrow.lib.arrow",
	"primary job", "mpirun", "return code", "returncode", "status code", "error_file", "traceback",
	"non-zero", "termination", "cancelled", "warning", "reason:",
	"failed", "refused", "denied", "timed out", "unable to", "cannot", "could not", "out of memory",
	"oom", "xid", "evicted", "preempted", "unschedulable", "backoff", "insufficient", "exceeded",
	"coordinationservice/registertask",
}

// mayEnd says whether kindOf's expressions could match trimmed line t: one pass over a line
// that none of them could match (a progress line, most of a log).
func mayEnd(t []byte) bool { return mayEndWith(t, literal.Any(endWords, t)) }

// mayEndWith is mayEnd of a line whose literal pass said whether it holds an end word.
func mayEndWith(t []byte, endWord bool) bool {
	return endWord || glogHead(t, 'E') || glogHead(t, 'F') || c10Head(t, 'E') || c10Head(t, 'F') || statusHead(t) || ncclReturn(t)
}

// tailWords is every literal a tail line is read for, in one automaton (tailWordList). A
// terminal failure reads each of a log's last 256 lines (at 16,384 logs of 100 lines, every
// line) once for all of them, where a pass per list costs as much as the one.
var tailWords = literal.NewMatcher(tailWordList)

// wordSet is what tailWords found in a line.
type wordSet uint16

const (
	hasEndWord      wordSet = 1 << iota // one of endWords, anywhere
	hasRecoveryWord                     // one of recoveryWords at word boundaries: a recovery line
	hasProbeWord                        // one of probeWords at word boundaries: a batch-size finder's step
	hasSocketWord                       // one of socketAttemptWords at word boundaries: c10d's connect attempt
	hasStartWord                        // one of startWords at word boundaries: a container created (recovered.go)
	hasSkipWord                         // one of skipWords at word boundaries: a batch skipped (recovered.go)
	hasGroupWord                        // one of groupWordList: an agent's worker group line (recovery.go)
	// one of the words of exitLine, signalLine, fatalLine, launcherLine, errorLine, errorWords
	hasExitWord
	hasSignalWord
	hasFatalWord
	hasCoordinationWord
	hasLauncherWord
	hasErrorLineWord
	hasErrorWordWord
)

// edgedWords are the lists whose phrases count only at word boundaries: the recovery lines'
// (recovered.go), which a longer word must not make ("retrying" in "retryingly" is none).
const edgedWords = hasRecoveryWord | hasProbeWord | hasSocketWord | hasStartWord | hasSkipWord

// tailWordList is tailWords' literals: endWords, recoveryWords, probeWords, then the words
// of each gated expression classify runs; tailWordBits is the bit each sets, tailWordEdged
// whether it counts only at word boundaries.
var tailWordList, tailWordBits, tailWordEdged = tailWordTable([]gated{
	{list: endWordList, bit: hasEndWord},
	{list: recoveryWords, bit: hasRecoveryWord},
	{list: probeWords, bit: hasProbeWord},
	{list: socketAttemptWords, bit: hasSocketWord},
	{list: startWords, bit: hasStartWord},
	{list: skipWords, bit: hasSkipWord},
	{list: groupWordList[:], bit: hasGroupWord},
	exitLine, signalLine, fatalLine, coordinationLine, launcherLine, errorLine, errorWords,
})

func tailWordTable(lists []gated) (words []string, bits []wordSet, edged []bool) {
	for _, g := range lists {
		for _, w := range g.list {
			words, bits = append(words, w), append(bits, g.bit)
			edged = append(edged, g.bit&edgedWords != 0)
		}
	}
	return words, bits, edged
}

// newTailFilter says which lines of a shape can hold a tail word, as shapeFilter says it for
// the rules' literals: the tail lines of a log are mostly its progress lines, whose shape
// holds none, so most need no pass for their terminal failure.
func newTailFilter(sh *logscan.Shape) *shapeFilter {
	f := &shapeFilter{}
	for _, w := range tailWordList {
		always, needs := sh.Literal(literal.Lower(w))
		if always {
			return &shapeFilter{all: true}
		}
		for _, n := range needs {
			f.needs = logscan.AddNeed(f.needs, n)
		}
	}
	return f
}

// tailMemo returns the memo of a shape's tail filter, made once per shape key for the logs a
// scratch space serves.
func (sc *Scratch) tailMemo(sh *logscan.Shape) *shapeMemo {
	if m, ok := sc.tails[sh.Key]; ok {
		return m
	}
	return sc.keepMemo(&sc.tails, sh.Key, newShapeMemo(newTailFilter(sh)))
}

// tailWordsOf reads line t once for tailWords.
func tailWordsOf(t []byte) wordSet {
	var buf [8]literal.Hit
	var w wordSet
	for _, h := range literal.Append(tailWords, t, buf[:0]) {
		bit := tailWordBits[h.ID]
		if w&bit != 0 {
			continue
		}
		if n := len(tailWordList[h.ID]); tailWordEdged[h.ID] && !(wordEdge(t, h.End-n) && wordEdge(t, h.End)) {
			continue
		}
		w |= bit
	}
	return w
}

// ncclReturn says whether t is a line of NCCL's error trace: with NCCL_DEBUG=INFO, NCCL's
// NCCLCHECK prints "NCCL INFO <file>:<line> -> <code>" (since 2.2x "<file>:<line> (<function>)
// -> <code>", and " [Async thread]" or " [Proxy thread]" after it from those threads) in every
// function a failed call returns through, with its ncclResult_t (1 unhandled CUDA error, 2
// system error, 3 internal error, 4 invalid argument, 5 invalid usage, 6 remote error; success
// and "in progress" are never printed), and the NCCL WARN line above it says why. A log that
// ends in one ends in a failed NCCL call. NCCL 2.0 to 2.2 printed the level without "NCCL"
// after the device ("host:pid:tid [0] INFO init.cu:542 -> 2").
func ncclReturn(t []byte) bool {
	if bytes.IndexByte(t, '>') < 0 {
		return false // most lines: IndexByte is vectorised, LastIndex of " -> " is not
	}
	i := bytes.LastIndex(t, []byte(" -> "))
	if i < 0 {
		return false // a '>' elsewhere: "=>", "acc >90%"
	}
	code := t[i+4:]
	if len(code) == 0 || code[0] < '1' || code[0] > '6' || len(code) > 1 && code[1] != ' ' {
		return false
	}
	head := []byte("NCCL INFO ")
	j := bytes.Index(t[:i], head)
	if j < 0 {
		head = []byte("] INFO ")
		if j = bytes.Index(t[:i], head); j < 0 {
			return false
		}
	}
	loc := t[j+len(head) : i]
	if k := bytes.Index(loc, []byte(" (")); k > 0 && loc[len(loc)-1] == ')' {
		loc = loc[:k]
	}
	c := bytes.LastIndexByte(loc, ':')
	return c > 0 && c < len(loc)-1 && isDigits(loc[c+1:]) && bytes.IndexByte(loc, ' ') < 0
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// terminalFailure is how one log's process said it ended.
type terminalFailure struct {
	log, pod, container string
	// lines are the failure's own lines (exceptions of the last traceback chain, what(),
	// fatal, signal, exit and launcher lines), oldest first; strongest is the kind of the
	// strongest of them.
	lines     []tailLine
	kinds     []lineKind
	strongest lineKind
	// context holds the lines around them (a traceback's frames, neighbours).
	context []tailLine
	// above is the warning or error line right above the last failure line, when there is
	// one: the cause a library printed just before the exception it led to ("NCCL WARN
	// Duplicate GPU detected" above "NCCL error: invalid usage"). When it names a cause on its
	// own, more strongly than the failure's lines, it is the classification (classifyTerminal).
	above *tailLine
	// lastLine is the log's last line number and lastProgress its last progress line.
	lastLine, lastProgress int
	// frame is the innermost frame of the traceback the log ends inside, before its
	// exception line (cutframe.go), nil when it ends otherwise; cutAt is the header line of
	// the last traceback when no exception line the vocabulary knows follows it (0 when one
	// does), which then does not stand for an exception (raised).
	frame []tailLine
	cutAt int
	// caller is the frame right above the log's last exception line, when there is one: the
	// call that raised it (libcall.go).
	caller []tailLine
	// waitEnded says a line after the last failure line shows a scheduling wait ended
	// (schedwait.go).
	waitEnded bool
	// errorEnd says that the log's last non-blank line is an error-level line (an ERROR level
	// field, a glog or c10 E head, a vendor's error code with a failure's words) after its
	// last training progress, and no retry: the runtime's own report of the failure it stopped
	// on, with nothing after it but more of the same (errorEndsLog).
	errorEnd bool
}

// maxFailureLines and maxContextLines bound what is classified.
const (
	maxFailureLines = 12
	maxContextLines = 40
	// maxAboveSkipped is how many empty or progress lines may stand between a failure and the
	// warning or error line above it that still counts as right above it (terminalFailure.above).
	maxAboveSkipped = 3
	// errorNearEnd is how close to a log's end an error line must be to count: earlier ones
	// were most likely survived.
	errorNearEnd = 60
	// contextAround is how many lines on each side of a failure line are context.
	contextAround = 2
)

// terminalOf finds a log's terminal failure in its last lines, or nil when they show none.
func terminalOf(t *tailBuf, log, pod, container string) *terminalFailure {
	lines := t.ordered()
	if len(lines) == 0 {
		return nil
	}
	last := lines[len(lines)-1].line
	tf := &terminalFailure{log: log, pod: pod, container: container, lastLine: last, lastProgress: t.lastProgress}
	kinds, words, inFrames := t.marks.reset(len(lines))
	tb, header := false, -1
	ignored := false // after "Exception ignored in ...": the next exception was survived (recovered.go)
	// thread: the traceback is a thread's (after "Exception in thread ...:"; recovered.go),
	// threadNext: the line before was such a header.
	thread, threadNext := false, false
	for i, l := range lines {
		// The message after an error-level logging header (logheader.go): a traceback logged
		// at ERROR is read as a traceback. A line with such a header is of some kind (its
		// level word is an error word), so most lines, of no kind, are never parsed for one.
		if !l.quiet {
			words[i] = tailWordsOf(l.text)
		}
		k := kindWith(l.text, words[i])
		msg := l.text
		if k != kindNone {
			msg = logMessage(l.text)
		}
		trim := bytes.TrimSpace(msg)
		if e := errorRecordException(trim); e != nil {
			k = kindException
		}
		if isIgnoredHeader(trim) {
			ignored = true
			continue
		}
		if isThreadHeader(trim) {
			threadNext = true
			continue
		}
		// A header holds "Traceback", one of the end words: a line without one is not read for
		// it (at 16,384 logs of 100 lines, a search of every line).
		if words[i]&hasEndWord != 0 && isTracebackHeader(trim) {
			if tb {
				ignored = false // the ignored traceback ended in a line of no kind
			}
			tb, header, thread, threadNext = true, i, threadNext, false
			continue
		}
		threadNext = false
		if bytes.HasPrefix(trim, []byte("The above exception was")) || bytes.HasPrefix(trim, []byte("During handling of the above exception")) {
			continue // joins two tracebacks of one chain; says nothing itself
		}
		if len(msg) != len(l.text) {
			k = max(k, kindOf(msg))
		}
		if tb && k != kindException && (len(msg) > 0 && (msg[0] == ' ' || msg[0] == '\t') || bytes.HasPrefix(trim, []byte("File \""))) {
			inFrames[i] = true // a frame of a traceback: context, whatever it says
			continue
		}
		if k == kindException {
			tb = false
			if ignored {
				ignored, k = false, kindNone
			}
		} else if !tb {
			ignored = false
		}
		if k == kindError && (last-l.line > errorNearEnd || l.line < t.lastProgress) {
			k = kindNone // far from the end, or training went on after it: survived
		}
		kinds[i] = k
	}
	if !tb {
		// A paste of frames alone, its header and exception both cut off, ends as a traceback
		// cut inside its frames does (cutframe.go), unless a line of them says more on its own
		// (the code of a raise: "raise RuntimeError(f\"CUDA out of memory while loading {path}\")").
		// Only a paste that is nothing but them: frames after other lines are a stack printed by
		// a live process (traceback.print_stack, logging's stack_info, faulthandler, gdb's
		// py-bt, torch.compile's graph breaks), under headers of their own.
		if h := trailingFrames(lines); h >= 0 && lastNonBlank(lines[:h]) < 0 && !slices.ContainsFunc(kinds[h:], func(k lineKind) bool { return k != kindNone }) {
			tb, header, ignored, thread = true, h, false, false
			for j := h + 1; j < len(lines); j++ {
				inFrames[j] = true
			}
		}
	}
	quietWarnings(lines, kinds)             // a Python warning's lines say no process failed (pywarning.go)
	fatalDmlc(lines, kinds, t.lastProgress) // dmlc's logging line before an uncaught throw (dmlc.go)
	t.skipped, t.caughtLines = caught(lines, kinds, words)
	forgetRecovered(t, lines, kinds, words)
	retriedEnd(lines, kinds, words, t.lastProgress)
	quietSummaries(lines, kinds, t.lastProgress) // a launcher's report below a worker's exception (launchsummary.go)
	peers := peerRows(lines, kinds)              // torchrun's rows of the peers it stopped (logs.go, seeElasticTable)
	if tb && !ignored && !thread {
		// The log ends inside a traceback, before its exception line: the process was raising
		// when its output stopped (or the paste was cut there), and its frames say where. A
		// thread's traceback says that a thread was.
		kinds[header] = kindException
		if last := lastNonBlank(lines); last >= 0 && inFrames[last] {
			// Only a log that ends in the frames is cut before its exception: one that ends in a
			// line the vocabulary does not know as one ("zipfile.BadZipFile: ...", a bare
			// "StopIteration") has its exception, and that says more than any frame.
			tf.frame = innermostFrame(lines, inFrames, header)
		}
		tf.cutAt = lines[header].line
	}
	if tf.frame == nil {
		tf.caller = callerFrame(lines, kinds)
	}
	tf.errorEnd = errorEndsLog(lines, kinds, words, t.lastProgress)
	var picked []int
	for i := len(lines) - 1; i >= 0 && len(picked) < maxFailureLines; i-- {
		if kinds[i] != kindNone {
			picked = append(picked, i)
		}
	}
	if len(picked) == 0 {
		return nil
	}
	i, bar := picked[0]-1, false
	for skip := 0; skip < maxAboveSkipped && i > 0 && kinds[i] == kindNone && !inFrames[i] &&
		(len(bytes.TrimSpace(lines[i].text)) == 0 || lines[i].line == tf.lastProgress && barNotStarted(lines[i].text)); skip++ {
		// Output interleaved between a cause and its failure belongs to neither: another
		// process's empty prefixed line, the progress bar the failure interrupted (a rollout
		// actor's "CUDA Error: out of memory", the trainer's "Episode 0/309" bar, its traceback).
		bar = bar || lines[i].line == tf.lastProgress
		i--
	}
	// An error line right above the bar the failure interrupted was taken as survived (the
	// bar came after it), but only the failure followed that bar.
	if i >= 0 && kinds[i] == kindNone && !inFrames[i] && !peers[i] && (isWarnOrErrorLine(lines[i].text) || bar && kindWith(lines[i].text, words[i]) == kindError) {
		l := lines[i]
		l.text = bytes.Clone(l.text)
		tf.above = &l
	}
	tf.waitEnded = waitEndedAfter(lines, picked)
	near := map[int]bool{}
	for j := len(picked) - 1; j >= 0; j-- {
		i := picked[j]
		l := lines[i]
		text, end := rejoinWrapped(lines, i)
		l.text = append(bytes.Clone(text), continued(lines, kinds, inFrames, i, end)...)
		tf.lines = append(tf.lines, l)
		tf.kinds = append(tf.kinds, kinds[i])
		tf.strongest = max(tf.strongest, kinds[i])
		for d := -contextAround; d <= contextAround; d++ {
			near[i+d] = true
		}
	}
	for i, l := range lines {
		if len(tf.context) >= maxContextLines {
			break
		}
		if kinds[i] == kindNone && (inFrames[i] || near[i]) && !peers[i] {
			l.text = bytes.Clone(l.text)
			tf.context = append(tf.context, l)
		}
	}
	return tf
}

// barNotStarted says whether progress line t shows no work done yet, so that an error above it
// was not survived: its percentage (tqdm's "  0%|") or, without one, its last count ("0/309")
// is zero, and no later update follows a carriage return in it (a bar that went from 0/309 to
// 155/309 on one line did work after the error).
func barNotStarted(t []byte) bool {
	if bytes.IndexByte(t, '\r') >= 0 {
		return false
	}
	percent := false
	for i := 0; i < len(t); i++ {
		if t[i] != '%' || i == 0 || !isDigit(t[i-1]) {
			continue
		}
		j := i - 1
		for j > 0 && (isDigit(t[j-1]) || t[j-1] == '.') {
			j--
		}
		if strings.Trim(string(t[j:i]), "0.") != "" {
			return false // "3%", "100%", "0.5%"
		}
		percent = true
	}
	if percent {
		return true // every percentage is zero
	}
	for i := len(t) - 2; i > 0; i-- {
		if t[i] == '/' && isDigit(t[i-1]) && isDigit(t[i+1]) {
			j := i - 1
			for j > 0 && isDigit(t[j-1]) {
				j--
			}
			return strings.TrimLeft(string(t[j:i]), "0") == ""
		}
	}
	return false
}

// A library that retries a failed attempt says so on every try, and says when it gives up
// only at the end, if at all: NCCL's socket layer retries a refused or unreachable connect
// ("NCCL INFO Call to connect returned Connection refused, retrying"; since 2.2x
// "socketPollConnect: connect returned Connection timed out, retrying (1/34) after sleep for
// 100 msec", up to a fixed number of tries: NVIDIA/nccl#1515, NVIDIA/nccl#1618, #1311), the
// Hugging Face Hub client a request ("Retrying in 1s [Retry 1/5]"), a setup script its command
// ("command failed, retrying after 5 seconds"). A log whose last line is such a try ends in the
// failure it retried when the log's end is nothing but that retry: the same try printed again
// and again (minRetries times, with nothing between the tries but the lines each try repeats,
// and no training progress among them), or a try numbered as the last ("(34/34)", "[Retry
// 5/5]", "attempt 3 of 3"). Nothing after it says the attempt ever succeeded, and the process
// printed nothing else. Its error is read as any other (its words name the cause), and it
// shows on its own that the process did not get past it.
//
// Three retries are no end. One whose count says tries remain ("[Retry 3/5]", urllib3's
// "Retrying (Retry(total=2, ...))", which counts the tries left: pip's download retries,
// pypa/pip#9489) had not given up when the log stopped. One between training lines is a
// client retrying beside the training, which went on. And one that says a retry loop is
// entered is wandb's: it prints that once as its uploader starts retrying on its own thread
// and retries silently while training goes on (wandb/wandb#805, #2039); a failed run ends in
// what wandb raises after it ("wandb.errors.CommError: Error communicating with wandb
// process", wandb/wandb#5017), not in the retry.

// minRetries is how many times a log's end must print its last retry for it to be an end.
const minRetries = 3

// maxRetryCycle is how many lines one try may print, its retry line included: a setup
// script's "running command ...", the command's error and "command failed, retrying".
const maxRetryCycle = 4

// retryWord is in every retry line; the other recovery lines ("falling back", "Using network
// Socket") say what replaced a failed attempt, and each rank of a healthy start prints them.
var retryWord = literal.NewMatcher([]string{"retry"})

// enteredLoop is in a line that says a client entered its retry loop, not that it tried again.
var enteredLoop = literal.NewMatcher([]string{"entering retry loop"})

// retriedEnd marks the log's last line as kindRetried when it is a retry (a recovery line that
// says it retries) that ends the log: the last try of a numbered count, or an uncounted try the
// log's end repeats at least minRetries times after its last training progress (retriesAtEnd),
// with nothing that failed more strongly after it.
func retriedEnd(lines []tailLine, kinds []lineKind, words []wordSet, lastProgress int) {
	end := len(lines) - 1
	for end >= 0 && len(bytes.TrimSpace(lines[end].text)) == 0 {
		end--
	}
	if end < 0 || words[end]&hasRecoveryWord == 0 || kinds[end] > kindError {
		return
	}
	t := lines[end].text
	if !retryLine(t) {
		return
	}
	if counted, last := retryCount(t); counted {
		if last {
			kinds[end] = kindRetried
		}
		return
	}
	if retriesAtEnd(lines, end, lastProgress) >= minRetries {
		kinds[end] = kindRetried
	}
}

// retriesAtEnd counts the tries of line end's retry in the run of lines that ends the log
// repeating it. Walking back from end over the non-blank lines after the last training
// progress, a try is a cycle of at most maxRetryCycle lines that ends in the retry (one line
// for NCCL's, whose ranks print the same line but for their numbers); each line of the run
// must have the shape of the line one cycle later, and the first that does not ends the run.
func retriesAtEnd(lines []tailLine, end, lastProgress int) int {
	var shapes [][]byte // shapes of the non-blank lines from end back, newest first
	retry := retryShape(lines[end].text)
	cycle := 0
	n := 0
	for i := end; i >= 0 && lines[i].line > lastProgress; i-- {
		if len(bytes.TrimSpace(lines[i].text)) == 0 {
			continue
		}
		s := retryShape(lines[i].text)
		k := len(shapes)
		switch {
		case k == 0:
		case cycle == 0 && bytes.Equal(s, retry):
			cycle = k
		case cycle == 0 && k >= maxRetryCycle:
			return n
		case cycle != 0 && !bytes.Equal(s, shapes[k-cycle]):
			return n
		}
		shapes = append(shapes, s)
		if bytes.Equal(s, retry) {
			n++
		}
	}
	return n
}

// retryShape is a line without its digits: the same retry of another process or try.
func retryShape(t []byte) []byte {
	return bytes.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, bytes.TrimSpace(t))
}

// retryCounter is a retry's count, "retrying (34/34)", "[Retry 5/5]", "attempt 3 of 3", or
// the tries left in urllib3's "Retry(total=0, ...)".
var retryCounter = regexp.MustCompile(`(?i)\b(?:retry|retrying|attempt)\D{0,3}(\d{1,4}) ?(?:/|of) ?(\d{1,4})\b|\bRetry\(total=(\d{1,4})\b`)

// retryCount says whether retry line t counts its tries, and whether it numbers itself the
// last of them.
func retryCount(t []byte) (counted, last bool) {
	m := retryCounter.FindSubmatch(t)
	switch {
	case m == nil:
		return false, false
	case m[3] != nil:
		return true, bytes.Equal(m[3], []byte("0"))
	}
	return true, bytes.Equal(m[1], m[2])
}

// retryLine says whether t says that it retries (not that a retry loop is entered).
func retryLine(t []byte) bool {
	return literal.Any(retryWord, t) && !literal.Any(enteredLoop, t)
}

// lastTry says whether retry line t numbers itself as the last of its count.
func lastTry(t []byte) bool {
	_, last := retryCount(t)
	return last
}

// errorRecordException returns the exception of a line of a JSON error record, nil when t is
// no such line. torchelastic writes a failed child's exception into an error file as JSON and
// prints it, indented, under its summary's "msg:" and in its error handler's ERROR log
// (torch 1.9 and 1.10): `"message": "RuntimeError: Address already in use",`. The exception
// inside is how the child ended, as a traceback's last line would say it.
func errorRecordException(t []byte) []byte {
	rest, ok := bytes.CutPrefix(t, []byte(`"message": "`))
	if !ok {
		return nil
	}
	rest, ok = bytes.CutSuffix(bytes.TrimSuffix(rest, []byte(",")), []byte(`"`))
	if !ok || !exceptionLine.Match(rest) {
		return nil
	}
	return rest
}

// terminalWidths are the widths terminals and CI log viewers wrap lines at.
var terminalWidths = []int{80, 100, 120, 132, 160, 200}

// rejoinWrapped returns line i with the lines a terminal wrapped it onto (while a line is
// exactly a terminal's width, the next line of the same process continues it), and the
// index of the last line it took.
func rejoinWrapped(lines []tailLine, i int) ([]byte, int) {
	out := lines[i].text
	j := i
	for ; j+1 < len(lines) && j-i < 4; j++ {
		n := len([]rune(string(lines[j].text)))
		wrapped := false
		for _, w := range terminalWidths {
			if n == w {
				wrapped = true
			}
		}
		if !wrapped || lines[j+1].stream != lines[i].stream {
			break
		}
		out = append(append([]byte{}, out...), lines[j+1].text...)
	}
	return out, j
}

// continued returns the indented lines after line from that continue line i's message, each
// after a space: the context TensorFlow and other C++ libraries print on the next lines of a
// status, indented ("Unavailable: Unexpected response code 410\n\t when resuming upload
// gs://..."). A message that ends in a colon announces what follows it, so its next line
// continues it indented or not: a job runner's status quoting the job's own last output
// ("Job entrypoint command failed with exit code 127, last available logs (truncated to
// 20,000 chars):" above the shell's "/bin/bash: train.sh: No such file or directory"), unless
// that line is a heading of its own (torchelastic's "Root Cause (first observed failure):"
// above "[0]:"). A line that is a failure of its own, a traceback's header or frame ends it.
func continued(lines []tailLine, kinds []lineKind, inFrames []bool, i, from int) []byte {
	var out []byte
	announces := bytes.HasSuffix(bytes.TrimSpace(lines[from].text), []byte(":"))
	for j := from + 1; j < len(lines) && j-from <= maxContinuation; j++ {
		l := lines[j]
		trim := bytes.TrimSpace(l.text)
		indented := len(trim) > 0 && (l.text[0] == ' ' || l.text[0] == '\t')
		// The line a colon announces is the message's own, not a logger's next record
		// ("INFO: Started server process [812]" after "last available logs:").
		announced := announces && j == from+1 && !bytes.HasSuffix(trim, []byte(":")) && !isLogRecord(trim)
		if len(trim) == 0 || !indented && !announced || l.stream != lines[i].stream ||
			kinds[j] != kindNone || inFrames[j] || bytes.HasPrefix(trim, []byte("File \"")) || isTracebackHeader(trim) {
			break
		}
		out = append(append(out, ' '), trim...)
	}
	return out
}

// maxContinuation bounds the lines one message continues onto.
const maxContinuation = 4

// failureText is the failure's own lines, one per line, and its context.
func (tf *terminalFailure) failureText() (failure, context string) {
	var b strings.Builder
	for i, l := range tf.lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.Write(l.text)
	}
	var c strings.Builder
	for i, l := range tf.context {
		if i > 0 {
			c.WriteByte('\n')
		}
		c.Write(l.text)
	}
	return b.String(), c.String()
}

// raised says whether a line of the failure shows on its own that the process failed, the
// header of a traceback cut before its exception line aside.
func (tf *terminalFailure) raised() bool {
	for i, l := range tf.lines {
		if tf.kinds[i].strong() && l.line != tf.cutAt {
			return true
		}
	}
	return false
}

// endsLog says whether the failure is how the log ends: one of its lines that shows on its
// own that the process failed (strong) or any of its lines (!strong) comes after the log's
// last training progress, or ends that progress line itself (a bar the process died in the
// middle of, with the shell's "Killed" after it, or a bar another message was printed after
// without a newline: "17.07 examples/s][E ProcessGroupGloo.cpp:138] Rank 3 ...").
func (tf *terminalFailure) endsLog(strong bool) bool {
	for i, l := range tf.lines {
		past := l.line > tf.lastProgress || l.line == tf.lastProgress && (tf.kinds[i] == kindSignal || gluedAfterBar(l.text))
		if (tf.kinds[i].strong() || !strong) && past {
			return true
		}
	}
	return false
}

// gluedAfterBar says whether line t goes on after a progress bar: a bar (tqdm's "|") whose
// rate closes it ("13.8it/s]", "1.65s/it]", "17.07 examples/s]") with more text after it on
// the same line, which a process printed while the bar had no newline yet.
func gluedAfterBar(t []byte) bool {
	i := max(bytes.LastIndex(t, []byte("/s]")), bytes.LastIndex(t, []byte("/it]")))
	if i < 0 || !bytes.Contains(t[:i], []byte("|")) {
		return false
	}
	end := i + bytes.IndexByte(t[i:], ']') + 1
	return len(bytes.TrimSpace(t[end:])) > 0
}

// levelWords are the level words of a logging header, of every level.
var levelWords = [][]byte{[]byte("INFO"), []byte("WARNING"), []byte("WARN"), []byte("DEBUG"), []byte("ERROR"), []byte("CRITICAL"), []byte("FATAL")}

// isLogRecord says whether trimmed line t starts a logger's record of any level: a glog or
// c10 head, or a level word that only a header comes before ("INFO: ...", "[2024-03-01
// 10:00:00,000] [INFO] ...").
func isLogRecord(t []byte) bool {
	for _, c := range []byte("IWEF") {
		if glogHead(t, c) || c10Head(t, c) {
			return true
		}
	}
	head := t[:min(len(t), maxHeaderBytes)]
	for _, lv := range levelWords {
		if p := bytes.Index(head, lv); p >= 0 && wordEdge(t, p) && wordEdge(t, p+len(lv)) && headerBefore(t[:p]) {
			return true
		}
	}
	return false
}

// peerRows marks the rows of torchrun's failure table under its "Failures:" heading whose
// process ended by SIGKILL or SIGTERM, every line of such a row ("[2]:" to the next), and takes
// their kind away: the processes the agent stopped after the first failure, which it lists last
// under "Root Cause" (pytorch/pytorch#160908; seeElasticTable keeps the rules from them). Their
// signals are the agent's, so the second tier reads neither them nor their words as the failure
// or its context.
func peerRows(lines []tailLine, kinds []lineKind) []bool {
	peers := make([]bool, len(lines))
	in, row := false, -1
	mark := func(end int) {
		if row < 0 {
			return
		}
		stopped := false
		for k := row; k < end; k++ {
			trim := bytes.TrimSpace(lines[k].text)
			stopped = stopped || sigkillRow.Match(trim) || sigtermRow.Match(trim)
		}
		for k := row; stopped && k < end; k++ {
			peers[k], kinds[k] = true, kindNone
		}
		row = -1
	}
	for i, l := range lines {
		trim := bytes.TrimSpace(l.text)
		opens, closes := elasticHeading(trim)
		switch {
		case opens:
			in, row = true, -1
		case !in:
		case closes:
			mark(i)
			in = false
		case tableRowHead.Match(trim):
			mark(i)
			row = i
		}
	}
	if in {
		mark(len(lines))
	}
	return peers
}

// tableRowHead is the head of a row of torchelastic's failure table ("[2]:").
var tableRowHead = regexp.MustCompile(`^\[\d+\]:$`)

// sigtermRow is a row of torchelastic's failure table that says its process was stopped by
// SIGTERM ("exitcode  : -15 (pid: 1721)", "traceback : Signal 15 (SIGTERM) received by PID 1721").
var sigtermRow = regexp.MustCompile(`^(?:traceback\s*:\s*Signal 15 \(SIGTERM\) received by PID \d+|exitcode\s*:\s*-15\b)`)

// errorEndsLog says whether a log ends in its runtime's error records: a run of lines, each
// with the shape of a logger's error record (errorRecord), ends the log with nothing after it
// but blank lines, comes after the last training progress, and none of it says retry. A
// runtime that stops on a failure it cannot get past (a queue pair that never connects, a
// device synchronize that timed out) often prints only that, at error level, and exits: no
// exception, no exit code. A run that logs an error and goes on prints something after it (a
// progress line, an INFO record), so its error is not its end. A line that merely holds a
// failure's word ("failed", "forbidden") or a WARN record is no error record: either ends a
// healthy run's paste as well. Only the vocabulary names such an end (classifyTerminal), and
// at low confidence: a log that stops on an error record may still be a log cut while running.
func errorEndsLog(lines []tailLine, kinds []lineKind, words []wordSet, lastProgress int) bool {
	run, i := 0, len(lines)-1
	for ; i >= 0; i-- {
		t := bytes.TrimSpace(lines[i].text)
		if len(t) == 0 {
			continue
		}
		if !errorRecord(t) || kinds[i] != kindError || lines[i].line <= lastProgress || isRecovery(lines[i].text, words[i]&hasSocketWord) {
			break
		}
		run++
	}
	for ; i >= 0; i-- {
		if runCompleted(lines[i].text) {
			// The run said it finished before the records: an uploader's or a tracker's
			// error after that is no end of training (a review of session 26).
			return false
		}
	}
	end := lastNonBlank(lines)
	return run > 0 && end >= 0 && errorRecord(bytes.TrimSpace(lines[end].text))
}

// completedWords are what trainers print once training is over: Lightning's "`Trainer.fit`
// stopped: `max_epochs=3` reached.", Hugging Face's "Training completed. Do not forget to share
// your model" and its metrics dict with 'train_runtime', Ray Train's "Training completed after
// 10 iterations".
var completedWords = [][]byte{[]byte("`Trainer.fit` stopped"), []byte("Training completed"), []byte("'train_runtime'")}

// runCompleted says whether line t says that training is over.
func runCompleted(t []byte) bool {
	return slices.ContainsFunc(completedWords, func(w []byte) bool { return bytes.Contains(t, w) })
}

// errorRecord says whether trimmed line t has the shape of a logger's error record: a glog
// or c10 E head ("E0314 12:00:00.000 ...", "[E socket.cpp:435]"), the level word ERROR or
// FATAL where a header puts its level ("2024-03-01 10:00:00,000 ERROR ...", "[ERROR] ...",
// Neuron's "... 1234:1234 ERROR  NRT:..."), or a vendor's error code that opens the line
// (CANN's "EH9999:", "EE1002:").
func errorRecord(t []byte) bool {
	if glogHead(t, 'E') && t[5] == ' ' || c10Head(t, 'E') || vendorErrorCode.Match(t) {
		return true
	}
	head := t[:min(len(t), maxHeaderBytes)]
	for _, lv := range [][]byte{[]byte("ERROR"), []byte("FATAL")} {
		if p := bytes.Index(head, lv); p >= 0 && wordEdge(t, p) && wordEdge(t, p+len(lv)) && headerBefore(t[:p]) {
			return true
		}
	}
	return false
}

// vendorErrorCode is a CANN error code that opens a line ("EH9999: Inner Error!",
// "EE1002: ..."): an E, a letter for the module, four digits and a colon.
var vendorErrorCode = regexp.MustCompile(`^E[A-Z][0-9]{4}:`)
