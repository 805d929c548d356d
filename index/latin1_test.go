package index

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSearchReadsPastInvalidUTF8: a Latin-1 byte in a line (an invalid UTF-8 byte) is one
// character of its word, and every word after it is found, in lines that repeat (templates)
// and in lines that do not (chunks), as the brute force finds them.
func TestSearchReadsPastInvalidUTF8(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "latin1")
	var log strings.Builder
	for i := range 40 {
		// Repeated shapes, the bad byte inside a word, alone and at the end of the line.
		fmt.Fprintf(&log, "2026-03-14T10:00:%02dZ caf\xe9 step %d opened alpha beta\n", i, i)
		fmt.Fprintf(&log, "2026-03-14T10:00:%02dZ r\xe9sum\xe9 \xff gamma delta%d\xe9\n", i, i)
		// Lines that never repeat.
		fmt.Fprintf(&log, "2026-03-14T10:00:%02dZ %s na\xefve unique%s epsilon %x\n", i, strings.Repeat("w", i+1), strings.Repeat("z", i), i*7919)
	}
	p := filepath.Join(dir, "logs", "ml", "job-0", "main.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(log.String()), 0o644))
	b, ix := buildIndex(t, dir)
	lines := bruteLines(t, b)
	for _, w := range []string{"opened", "alpha", "beta", "gamma", "epsilon", "step"} {
		require.Len(t, bruteSet(lines, has(w)), 40, w)
		require.Equal(t, bruteSet(lines, has(w)), searchSet(t, ix, SearchOptions{Query: w}), "query %s", w)
	}
	checkWords(t, ix, lines, 200)
}
