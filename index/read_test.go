package index

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/logscan"
)

// TestReadLinesTimes: a line read back alone has the time a scan of the whole log gives it,
// its own or, for a line without one, the last before it, however far back (the lines
// skipped on the way are not parsed for their time).
func TestReadLinesTimes(t *testing.T) {
	var sb strings.Builder
	rnd := rand.New(rand.NewPCG(5, 6))
	sec := 0
	for n := 1; n <= 1000; n++ {
		switch r := rnd.IntN(10); {
		case r < 3: // a traceback's lines, and runs of them across checkpoints
			fmt.Fprintf(&sb, "  File \"train.py\", line %d, in step\n", n)
		case r < 4 && n > 1:
			for k := rnd.IntN(150); k > 0; k-- {
				sb.WriteString("    continued\n")
				n++
			}
			fallthrough
		default:
			sec++
			fmt.Fprintf(&sb, "2026-03-14T10:%02d:%02d.%06dZ step %d done\n", sec/60%60, sec%60, n, n)
		}
	}
	file := filepath.Join(t.TempDir(), "train.log")
	require.NoError(t, os.WriteFile(file, []byte(sb.String()), 0o644))
	b, err := bundle.OpenLogs(t.Context(), []string{file}, nil, bundle.DefaultLimits())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	logs, _ := bundle.LogStreams(b)
	ix, err := Build(t.Context(), b, logs, BuildOptions{Version: "test"})
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	s := ix.Streams()[0]

	// The times a scan gives, line by line.
	want := []int64{0}
	var last int64
	for _, line := range strings.Split(strings.TrimSuffix(sb.String(), "\n"), "\n") {
		if ts, _, ok := logscan.SplitTimestamp([]byte(line)); ok {
			last = ts.UnixNano()
		}
		want = append(want, last)
	}
	require.Equal(t, len(want)-1, s.Lines)
	for range 200 {
		var lines []int
		for n := 1; n <= s.Lines; n++ {
			if rnd.IntN(40) == 0 {
				lines = append(lines, n)
			}
		}
		err := ix.readLines(t.Context(), s, lines, func(n int, ts int64, _ []byte) error {
			if ts != want[n] {
				return fmt.Errorf("line %d: time %d, want %d", n, ts, want[n])
			}
			return nil
		})
		require.NoError(t, err)
	}
}
