package analyze

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/coroner-dev/coroner/internal/literal"

	"github.com/stretchr/testify/require"
)

// TestGatesAreSupersets: every line one of kindOf's expressions matches passes that
// expression's gate and mayEnd, the literal prefilters that keep the expressions off progress
// lines; checked on every line of the samples and of the real-log corpus (when ../shared is
// beside the repository), on each of their words alone, and on lines made to hit each
// expression's rarest branch.
func TestGatesAreSupersets(t *testing.T) {
	lines := []string{
		"F0314 10:00:00.000 main.cc:12] Check failed", "E0314 10:00:00.000 x.cc:1] boom",
		"Unavailable: Socket closed", "RESOURCE_EXHAUSTED: OOM when allocating", "Internal: x",
		"13.8it/s]Killed", "Aborted", "*** JOB 12 ON node1 CANCELLED AT 2026-03-14T10:00:00 ***",
		"Primary job  terminated normally, but 1 process returned", "  Warning  FailedScheduling  3m",
		"Reason: OOMKilled", "exitcode  : 1", "error_file: <N/A>", "traceback : x",
		"terminate called after throwing an instance of 'c10::Error'  what():  boom",
		"SIGSEGV", "signal 9", "Fatal Python error: Aborted", "fatal error: x", "xid 79", "room oom",
		"KeyboardInterrupt", "SystemExit", "SomeFault", "ChildFailedError:", "mpirun noticed that process rank 0",
		"process exited with return code 1", "exit status 2", "non-zero exit", "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
		// the edges of errorLine and errorWords, written out by hand in terminal.go
		"ERROR", "xERROR", "ERROR_x", "[ERROR]", "ERRORS", "error: x", "a/b.c-d: error: x", "a b: error: x", "a: error:x",
		"E0314x", "E0314 ", "E031 x", "Unavailable:x", "Unavailable: x", "Unavailablex: x", "NOT_FOUND: x", "Not_Found: x",
		"Errors", "errorsx", "error_", "NetworkError", "EXCEPTIONS.", "exceptionally", "abort", "aborted", "aborts", "xabort",
		"timed  out", "timed out", "OOM!", "boom", "oom_killer", "Xid", "xid79", "cannot", "cannotx", "fail-ed", "failed.",
		// c10 heads: with and without the time, and what is not one
		"[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught", "[E1206 18:44:12.715588844 ProcessGroupNCCL.cpp:607] [Rank 0] x",
		"[F socket.cpp:1] x", "[E x.cpp:]", "[E :12]", "[E a:12", "[E1206 x.cpp:1]", "[E1206 t a.cpp:1]x", "[E1206  a.cpp:1]",
		"[W socket.cpp:401] [c10d] x", "[E\ta.cpp:1]", "[E a.cpp:1x]", "[E a:1:2]", "[E a:1] [b:2]",
		"[E513 13:25:57.714781669 ProcessGroupNCCL.cpp:616] [Rank 2] x", "[F513 t a.cpp:1] x", "[E51 t a.cpp:1] x",
		"[E51234 t a.cpp:1] x", "[E513  a.cpp:1]", "[E513 t]",
		// exception lines' ends (mayBeException)
		"ValueError", "ValueError:", "ValueError x", "ValueError (see above for traceback)", "ValueError (see above",
		"DataLossError (see above for traceback): corrupted record at 12", "ray.exceptions.RayTaskError(ZeroDivisionError): x",
		"RayTaskError(RuntimeError)", "RayTaskError(Runtime Error): x", "a.b.exc.Unsupported: x", "a.b.exc.unsupported: x",
		"pyarrow.lib.ArrowInvalid: x", "Exception", "Exception: Timed out", "step 82 | loss 3.3", "_Error:", "x.Error.y: z",
		"torch.distributed.run: [WARNING] x", "config: {'a': 1}", "a.errors.B: x", "a.errors.b: x", "errors.B: x", ".exc.B: x",
		"SystemExit", "SystemExitx: y", "pyarrow.lib.ArrowX: y", "pyarrow.lib.Arrowx: y", "x.pyarrow.lib.ArrowX: y", "Exceptions: x",
	}
	var files []string
	for _, glob := range []string{"../samples/*/logs/*/*/*.log", "../../shared/corpus/real/*.log"} {
		m, err := filepath.Glob(glob)
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			for _, w := range bytes.Fields(sc.Bytes()) {
				lines = append(lines, string(w))
			}
		}
	}
	gates := map[string]gated{"exception": exceptionLine, "exit": exitLine, "signal": signalLine, "fatal": fatalLine,
		"launcher": launcherLine, "object": objectLine, "error": errorLine, "words": errorWords}
	matched := map[string]int{}
	for _, l := range lines {
		tr := bytes.TrimSpace([]byte(l))
		if len(tr) == 0 {
			continue
		}
		w := tailWordsOf(tr)
		for name, g := range gates {
			want := g.re().Match(tr)
			require.Equal(t, want, g.Match(tr), "%s on %q: the gate and code must say what the expression says", name, l)
			require.Equal(t, want, g.matchWith(tr, w&g.bit != 0), "%s on %q: the one pass must find its words", name, l)
			if want {
				matched[name]++
				require.True(t, mayEnd(tr), "%s matches %q but mayEnd says no", name, l)
			}
		}
		if bytes.Contains(tr, []byte("what():")) {
			require.True(t, mayEnd(tr), "%q", l)
		}
		want := wordSet(0)
		if literal.Any(endWords, []byte(l)) {
			want |= hasEndWord
		}
		if hasWords(literal.NewMatcher(recoveryWords), recoveryWords, []byte(l)) {
			want |= hasRecoveryWord
		}
		if hasWords(literal.NewMatcher(probeWords), probeWords, []byte(l)) {
			want |= hasProbeWord
		}
		require.Equal(t, want, tailWordsOf([]byte(l))&(hasEndWord|hasRecoveryWord|hasProbeWord), "%q: one pass must find what a pass per list finds", l)
	}
	for name := range gates {
		require.Positive(t, matched[name], "no line exercises %s", name)
	}
}

// hasWords says whether line t holds one of words (m matches them) at word boundaries: a
// pass of its own, which tailWordsOf folds into one.
func hasWords(m *literal.Matcher, words []string, t []byte) bool {
	for _, h := range literal.Append(m, t, nil) {
		if n := len(words[h.ID]); wordEdge(t, h.End-n) && wordEdge(t, h.End) {
			return true
		}
	}
	return false
}

// BenchmarkKindOf classifies the last lines of a rank of a collective timeout: progress lines
// (which the gates keep every expression off) and the watchdog's two error lines.
func BenchmarkKindOf(b *testing.B) {
	lines := [][]byte{
		[]byte(`2026-03-14T13:59:16.562049786Z [rank0]: step 85 | loss 3.2483 | lr 3.00e-04 | grad_norm 0.699 | tokens/s 41260 | mem 69.8GiB`),
		[]byte(`[rank0]:[E314 14:10:00.182731 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.`),
		[]byte(`[rank0]:[E314 14:10:00.183000 ProcessGroupNCCL.cpp:1575] [PG 0 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 48120, last enqueued NCCL work: 48121, last completed NCCL work: 48119.`),
	}
	for b.Loop() {
		for _, l := range lines {
			kindOf(l)
		}
	}
}

// TestNCCLReturnTrace: a line of NCCL's error trace ends in " -> <code>"; a line with another
// '>' is no such line (it once sliced past its start: "=>" at a log's end crashed analyze).
func TestNCCLReturnTrace(t *testing.T) {
	for line, want := range map[string]bool{
		"gpu-node-1:2187:2293 [0] NCCL INFO transport/net_ib.cc:1297 -> 6": true,
		"host:512:520 [0] INFO init.cu:542 -> 2":                           true,
		"=>":                                                               false,
		">":                                                                false,
		"epoch 3 top5 acc >90%":                                            false,
		"NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC": false,
	} {
		require.Equal(t, want, ncclReturn([]byte(line)), line)
	}
	for _, log := range []string{"step 1 loss 2.5\nRuntimeError: boom\n=>\n", "epoch 3 top5 acc >90%\n"} {
		all, err := DefaultRules()
		require.NoError(t, err)
		require.NotPanics(t, func() { analyzeLogs(t, all, log) }, log)
	}
}
