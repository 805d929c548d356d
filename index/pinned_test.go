package index

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPinnedSlotsAnswerWithoutReading: a block whose slot holds one number throughout (each
// rank's one NCCL watchdog line, "SeqNum=48120") matches a word or phrase of that number in
// every line, and only there: the words around it must be the template's, in order. Every
// answer is the brute force's, with the lines read back or not.
func TestPinnedSlotsAnswerWithoutReading(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pinned")
	for r := range 6 {
		var b strings.Builder
		for i := range 40 {
			fmt.Fprintf(&b, "2026-03-14T10:00:%02dZ [rank%d]: step %d loss 3.%d\n", i, r, 100+i, i%4)
			if i%10 == 9 {
				// the same number throughout one log, another in the last log
				fmt.Fprintf(&b, "2026-03-14T10:00:%02dZ [rank%d]: Watchdog WorkNCCL(SeqNum=%d, OpType=ALLREDUCE) ran for 600034 ms\n", i, r, 48120+r/5)
			}
		}
		p := filepath.Join(dir, "logs", "ml", fmt.Sprintf("job-%d", r), "trainer.log")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	}
	b, ix := buildIndex(t, dir)
	lines := bruteLines(t, b)
	for _, c := range []struct {
		q string
		p pred
	}{
		{"SeqNum=48120", seq("seqnum", "48120")},
		{"SeqNum=48121", seq("seqnum", "48121")},
		{"48120", has("48120")},
		{`"48120 optype"`, seq("48120", "optype")},
		{`"optype 48120"`, seq("optype", "48120")},
		{`"workncll seqnum 48120 optype allreduce"`, seq("workncll", "seqnum", "48120", "optype", "allreduce")},
		{"600034", has("600034")},
		{`"ran for 600034 ms"`, seq("ran", "for", "600034", "ms")},
		{`"for 600034 watchdog"`, seq("for", "600034", "watchdog")},
		{`"for 48120"`, seq("for", "48120")},
		{`"seqnum 600034"`, seq("seqnum", "600034")},
		{"SeqNum=48120 -rank5", and(seq("seqnum", "48120"), not(has("rank5")))},
		{"-SeqNum=48120", not(seq("seqnum", "48120"))},
		{"loss 3", and(has("loss"), has("3"))},
		{"loss 2", and(has("loss"), has("2"))},
		{"step 101", and(has("step"), has("101"))},
		{`"loss 3 2"`, seq("loss", "3", "2")},
	} {
		want := bruteSet(lines, c.p)
		require.Equal(t, want, searchSet(t, ix, SearchOptions{Query: c.q}), "query %s", c.q)
		res, err := ix.Search(t.Context(), SearchOptions{Query: c.q, Limit: 3})
		require.NoError(t, err)
		require.Equal(t, len(want), res.Lines, "query %s --limit 3: the count", c.q)
	}
}
