package index

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFirstHitsReadAloneAsAllRead: a search reads back only the hits that may be among the
// first Limit (by the times the index holds), and its result is the one of reading every
// hit: the same hits in the same order, texts, times, counts and omitted count. The bundle
// has ties (the same second in every log), lines before any time, a log with no time at all,
// a log whose time goes back, and repeated lines shown as one hit.
func TestFirstHitsReadAloneAsAllRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	dir := filepath.Join(t.TempDir(), "ties")
	write := func(pod, text string) {
		p := filepath.Join(dir, "logs", "ml", pod, "trainer.log")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	for r := range 12 {
		var b strings.Builder
		b.WriteString("needle starting up before any time\n")
		for i := range 60 {
			sec := i / 4 // four lines a second in every log: ties across logs and within one
			fmt.Fprintf(&b, "2026-03-14T10:00:%02dZ needle step %d rank %d\n", sec, i%7, r)
			if i%9 == 0 {
				b.WriteString("  untimed needle continuation\n")
			}
			if i%5 == 0 {
				fmt.Fprintf(&b, "2026-03-14T10:00:%02dZ NCCL watchdog timeout needle\n", sec)
			}
		}
		write(fmt.Sprintf("job-%02d", r), b.String())
	}
	var back, untimed strings.Builder
	for i := range 80 {
		s := rng.IntN(60)
		fmt.Fprintf(&back, "2026-03-14T10:00:%02dZ needle going back %d\n", s, i%3)
		fmt.Fprintf(&untimed, "needle without a time %d\n", i%4)
	}
	write("back", back.String())
	write("untimed", untimed.String())
	_, ix := buildIndex(t, dir)
	for _, q := range []string{"needle", "needle step", "needle rank 3", "NCCL AND timeout", "untimed", "needle going back", "time", "needle -step"} {
		for _, all := range []bool{false, true} {
			for _, limit := range []int{1, 2, 3, 4, 5, 13, 50, 200, 5000} {
				opts := SearchOptions{Query: q, Limit: limit, All: all}
				got, err := ix.Search(t.Context(), opts)
				require.NoError(t, err)
				readEveryHit = true
				want, err := ix.Search(t.Context(), opts)
				readEveryHit = false
				require.NoError(t, err)
				require.NotEmpty(t, want.Hits, "%s", q)
				require.Equal(t, want, got, "%q --limit %d --all=%v", q, limit, all)
			}
		}
	}
}
