package analyze

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMayEndIsASuperset: every line one of kindOf's expressions classifies passes mayEnd, the
// literal prefilter that keeps the expressions off progress lines; checked on every line of
// the samples and of the real-log corpus (when ../shared is beside the repository), on each
// of their words alone, and on lines made to hit each expression's rarest branch.
func TestMayEndIsASuperset(t *testing.T) {
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
	kinds := 0
	for _, l := range lines {
		tr := bytes.TrimSpace([]byte(l))
		if len(tr) == 0 {
			continue
		}
		if k := classify(tr); k != kindNone {
			kinds++
			require.True(t, mayEnd(tr), "%q is %d but mayEnd says no", l, k)
		}
	}
	require.Greater(t, kinds, 1000, "the lines exercise the expressions")
}
