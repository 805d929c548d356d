package index

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLimitKeepsTheEarliestLinesWhenTimeGoesBack: --limit keeps the earliest matching lines
// by time (untimed ones last) when a log's time does not follow its line order, as when it
// does: lines are not assumed to be in time order.
func TestLimitKeepsTheEarliestLinesWhenTimeGoesBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := filepath.Join(t.TempDir(), "unordered")
	var a, b strings.Builder
	a.WriteString("needle before any time\n")
	for i := range 300 {
		s := rng.IntN(3600)
		fmt.Fprintf(&a, "2026-03-14T10:%02d:%02dZ needle %s item %d\n", s/60, s%60, strings.Repeat("x", i%5), i)
		fmt.Fprintf(&b, "2026-03-14T11:%02d:%02dZ needle ordered %d\n", i/60, i%60, i)
	}
	for name, text := range map[string]string{"a.log": a.String(), "b.log": b.String()} {
		p := filepath.Join(dir, "logs", "ml", "job-0", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	bun, ix := buildIndex(t, dir)
	lines := bruteLines(t, bun)
	type at struct {
		key  int64
		path string
		n    int
	}
	var all []at
	for _, l := range lines {
		if has("needle")(&l) {
			all = append(all, at{timeKey(l.time), l.path, l.n})
		}
	}
	slices.SortFunc(all, func(x, y at) int {
		if x.key != y.key {
			return cmp.Compare(x.key, y.key)
		}
		return strings.Compare(fmt.Sprintf("%s:%09d", x.path, x.n), fmt.Sprintf("%s:%09d", y.path, y.n))
	})
	for _, limit := range []int{1, 7, 40} {
		res, err := ix.Search(t.Context(), SearchOptions{Query: "needle", All: true, Limit: limit})
		require.NoError(t, err)
		var got, want []string
		for _, h := range res.Hits {
			got = append(got, fmt.Sprintf("%s:%d", h.Path, h.Number))
		}
		for _, w := range all[:limit] {
			want = append(want, fmt.Sprintf("%s:%d", w.path, w.n))
		}
		require.Equal(t, want, got, "limit %d", limit)
		require.Equal(t, len(all)-limit, res.Omitted)
	}
}
