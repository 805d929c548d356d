package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/compare"
	"github.com/coroner-dev/coroner/diagnose"
)

// The sample runs of package compare: a healthy run, another of the same spec, and one that
// failed (a new image tag, a new env var, nan loss from step 60).
const runs = "../compare/testdata"

// diffRoot is a root holding copies of the sample runs, and a bundle outside it.
func diffRoot(t *testing.T) (root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	for _, r := range []string{"good", "good2", "bad"} {
		copyDir(t, filepath.Join(runs, r), filepath.Join(root, "runs", r))
	}
	copyDir(t, filepath.Join(runs, "bad"), filepath.Join(outside, "bad"))
	return root, outside
}

// TestDiffIsCompares: the diff tool answers what package compare says of the same runs (what
// `coroner diff --format json` writes), change for change; its first page has each role's
// pace and curves (their points when asked); runs are named by path under a root or by an
// open bundle's id.
func TestDiffIsCompares(t *testing.T) {
	root, _ := diffRoot(t)
	opts := testOptions(t)
	opts.Roots = []string{root}
	c := connect(t, nil, opts)

	ctx := context.Background()
	var rs [2]*compare.Run
	for i, p := range []string{"good", "bad"} {
		r, err := compare.Diagnose(ctx, diagnose.Input{Paths: []string{filepath.Join(root, "runs", p)}}, opts.Diagnose)
		require.NoError(t, err)
		defer r.Close()
		rs[i] = r
	}
	want, err := compare.Compare(ctx, rs[0], rs[1], "test", compare.Options{})
	require.NoError(t, err)
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)

	var got map[string]any
	c.call("diff", map[string]any{"good": "runs/good", "bad": "runs/bad", "points": true}, &got)
	require.Equal(t, float64(len(want.Changes)), got["total"])
	require.Nil(t, got["nextCursor"], "one page holds them")
	var wantMap map[string]any
	require.NoError(t, json.Unmarshal(wantJSON, &wantMap))
	for _, k := range []string{"formatVersion", "coronerVersion", "good", "bad", "changes", "divergence", "progress", "warnings"} {
		require.Equal(t, wantMap[k], got[k], "%s as compare (coroner diff --format json) says it", k)
	}
	require.Equal(t, false, got["empty"])
	first := got["changes"].([]any)[3].(map[string]any)
	require.Equal(t, "Master/pytorch image", first["path"], "the image first after the diagnoses")

	// Without points, the curves are their summaries.
	var sum DiffOut
	c.call("diff", map[string]any{"good": "runs/good", "bad": "runs/bad"}, &sum)
	require.NotEmpty(t, sum.Progress)
	loss := sum.Progress[0].Curves[0]
	require.Equal(t, "loss", loss.Metric)
	require.Empty(t, loss.Bad.X)
	require.Equal(t, 15, loss.Bad.NonFinite)

	// One section; an open bundle by its id.
	var opened OpenOut
	c.call("open_bundle", map[string]any{"path": "runs/good"}, &opened)
	var prog DiffOut
	c.call("diff", map[string]any{"good": opened.Bundle, "bad": "runs/bad", "section": "progress"}, &prog)
	require.Equal(t, want.Section(compare.SectionProgress), prog.Changes)

	var same DiffOut
	c.call("diff", map[string]any{"good": "runs/good", "bad": "runs/good2"}, &same)
	require.True(t, same.Empty, "two runs of one spec: %v", same.Changes)
	require.Empty(t, same.Changes)
}

// TestDiffPagesAndRefuses: with a small answer limit the changes come a page at a time and
// the cursors reach every one, once; a cursor of other runs is refused; paths outside the
// roots, a ".." out of them and an unknown section are tool errors.
func TestDiffPagesAndRefuses(t *testing.T) {
	root, outside := diffRoot(t)
	opts := testOptions(t)
	opts.Roots = []string{root}
	opts.MaxBytes = 6 << 10
	c := connect(t, nil, opts)

	args := map[string]any{"good": "runs/good", "bad": "runs/bad"}
	var seen []string
	cur, pages := "", 0
	for {
		a := map[string]any{"cursor": cur}
		for k, v := range args {
			a[k] = v
		}
		var out DiffOut
		text := c.call("diff", a, &out)
		require.Less(t, len(text), opts.MaxBytes+maxLineBytes*4, "an answer of %d bytes", len(text))
		require.Equal(t, cur == "", out.Progress != nil, "the curves come on the first page only")
		for _, ch := range out.Changes {
			seen = append(seen, ch.Kind+" "+ch.Title)
		}
		pages++
		if cur = out.NextCursor; cur == "" {
			require.Equal(t, out.Total, len(seen))
			break
		}
		require.Contains(t, out.Note, "ask for the next page")
	}
	require.Greater(t, pages, 1, "a 6 KiB answer does not hold the whole diff")
	require.Len(t, seen, 10, "every change once")

	var first DiffOut
	c.call("diff", args, &first)
	require.NotEmpty(t, first.NextCursor)
	require.Contains(t, c.fail("diff", map[string]any{"good": "runs/good", "bad": "runs/good2", "cursor": first.NextCursor}), "belongs to other arguments")

	for _, p := range []string{filepath.Join(outside, "bad"), "../" + filepath.Base(outside) + "/bad", "/etc"} {
		require.Contains(t, c.fail("diff", map[string]any{"good": "runs/good", "bad": p}), "outside the allowed roots", p)
	}
	require.Contains(t, c.fail("diff", map[string]any{"good": "runs/good", "bad": "runs/nope"}), "no such file")
	require.Contains(t, c.fail("diff", map[string]any{"good": "runs/good", "bad": "runs/bad", "section": "vibes"}), "no section")
	require.Contains(t, c.fail("diff", map[string]any{"good": "runs/good"}), "bad")
}

// TestDiffOfHostileRunIsAToolError: a run that cannot be diagnosed is a tool error naming it,
// and the server goes on.
func TestDiffOfHostileRunIsAToolError(t *testing.T) {
	root, _ := diffRoot(t)
	require.NoError(t, os.WriteFile(filepath.Join(root, "empty.log"), nil, 0o644))
	opts := testOptions(t)
	opts.Roots = []string{root}
	c := connect(t, nil, opts)
	require.NotEmpty(t, c.fail("diff", map[string]any{"good": "runs/good", "bad": "empty.log"}))
	var out DiffOut
	c.call("diff", map[string]any{"good": "runs/good", "bad": "runs/good2"}, &out)
	require.True(t, out.Empty)
}
