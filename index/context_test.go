package index

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestContextIsBounded: the context lines of a search's hits stay within the context budget
// whatever -C and the lines' length ask for; the first hits get their whole context, the cut
// is said, and more than MaxContext lines is refused.
func TestContextIsBounded(t *testing.T) {
	defer func(n int64) { contextBudget = n }(contextBudget)
	contextBudget = 1 << 20
	dir := filepath.Join(t.TempDir(), "long")
	var log strings.Builder
	filler := strings.Repeat("x", 4000)
	for i := range 3000 {
		if i%100 == 50 {
			fmt.Fprintf(&log, "2026-03-14T10:%02d:%02dZ needle %d\n", i/60%60, i%60, i)
			continue
		}
		fmt.Fprintf(&log, "2026-03-14T10:%02d:%02dZ %s %d\n", i/60%60, i%60, filler, i)
	}
	p := filepath.Join(dir, "logs", "ml", "job-0", "main.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(log.String()), 0o644))
	_, ix := buildIndex(t, dir)

	res, err := ix.Search(t.Context(), SearchOptions{Query: "needle", All: true, Context: 2})
	require.NoError(t, err)
	require.Len(t, res.Hits, 30)
	require.False(t, res.ContextCut, "a small context fits")
	for _, h := range res.Hits {
		require.Len(t, h.Before, 2)
		require.Len(t, h.After, 2)
	}

	res, err = ix.Search(t.Context(), SearchOptions{Query: "needle", All: true, Context: MaxContext})
	require.NoError(t, err)
	require.Len(t, res.Hits, 30, "the hits are all there")
	require.True(t, res.ContextCut)
	var held int64
	for _, h := range res.Hits {
		for _, l := range append(append([]Line{}, h.Before...), h.After...) {
			held += int64(len(l.Text) + lineCost)
		}
	}
	require.LessOrEqual(t, held, contextBudget)
	require.Len(t, res.Hits[0].Before, 50, "the first hit has the log's lines before it")

	_, err = ix.Search(t.Context(), SearchOptions{Query: "needle", Context: MaxContext + 1})
	var qe *QueryError
	require.ErrorAs(t, err, &qe)
	require.ErrorContains(t, err, "at most 1000")
}
