package watch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// putBundle writes a bundle (size bytes) with its reports, modified at mod.
func putBundle(t *testing.T, dir, rel string, size int, mod time.Time) string {
	t.Helper()
	base := filepath.Join(dir, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(base), 0o755))
	for _, ext := range bundleExts {
		p := base + ext
		require.NoError(t, os.WriteFile(p, make([]byte, size), 0o644))
		require.NoError(t, os.Chtimes(p, mod, mod))
	}
	return base
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestPrune(t *testing.T) {
	now := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	// Two namespaces: ml's two bundles are the oldest in the directory; team's four are newer.
	setup := func(t *testing.T) (string, []string) {
		dir := t.TempDir()
		var bases []string
		for i, rel := range []string{"ml/a/20260313T100000Z", "ml/b/20260314T100000Z",
			"team/c/20260315T100000Z", "team/c/20260316T100000Z", "team/d/20260317T100000Z", "team/d/20260318T100000Z"} {
			bases = append(bases, putBundle(t, dir, rel, 100, now.Add(time.Duration(i-7)*day)))
		}
		// What retention must not count or touch: a bundle being written, a stranger's file.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "team", "c", ".20260319T000000Z.tar.gz.tmp-1"), make([]byte, 1000), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644))
		return dir, bases
	}
	none := func(string) bool { return false }
	lefts := func(left []*stored) []string {
		var out []string
		for _, s := range left {
			out = append(out, s.base)
		}
		return out
	}

	t.Run("--keep bounds each namespace: a busy one never evicts another's bundles", func(t *testing.T) {
		dir, bases := setup(t)
		n, left, err := prune(dir, retention{Keep: 2}, now, none)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, []string{bases[0], bases[1], bases[4], bases[5]}, lefts(left), "ml's two oldest bundles stay; team keeps its 2 newest")
		for _, ext := range bundleExts {
			require.False(t, exists(bases[2]+ext))
			require.False(t, exists(bases[3]+ext))
			require.True(t, exists(bases[0]+ext))
		}
		require.True(t, exists(filepath.Join(dir, "team", "c")), "a directory with a file being written stays")
		require.True(t, exists(filepath.Join(dir, "notes.txt")))
	})
	t.Run("--keep removes emptied job directories", func(t *testing.T) {
		dir, bases := setup(t)
		n, _, err := prune(dir, retention{Keep: 1}, now, none)
		require.NoError(t, err)
		require.Equal(t, 4, n)
		require.False(t, exists(filepath.Join(dir, "ml", "a")), "an emptied job directory goes")
		require.True(t, exists(bases[1]+".tar.gz"))
		require.True(t, exists(bases[5]+".tar.gz"))
	})
	t.Run("--max-bytes bounds each namespace", func(t *testing.T) {
		dir, bases := setup(t)
		n, left, err := prune(dir, retention{MaxBytes: 700}, now, none) // 300 bytes a bundle
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, []string{bases[0], bases[1], bases[4], bases[5]}, lefts(left))
		require.Equal(t, int64(300), left[0].bytes)
	})
	t.Run("--max-dir-bytes takes from the namespace that stores the most", func(t *testing.T) {
		dir, bases := setup(t)
		// 1800 bytes: ml 600, team 1200. To 1200: team gives two (1200 -> 600), ml none.
		n, left, err := prune(dir, retention{MaxDirBytes: 1200}, now, none)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, []string{bases[0], bases[1], bases[4], bases[5]}, lefts(left))
		// Equal, they give in turn, the name deciding between equals: ml, then team.
		n, left, err = prune(dir, retention{MaxDirBytes: 600}, now, none)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, []string{bases[1], bases[5]}, lefts(left))
	})
	t.Run("--max-dir-bytes with the per-namespace bounds", func(t *testing.T) {
		dir, bases := setup(t)
		n, left, err := prune(dir, retention{Keep: 3, MaxDirBytes: 1200}, now, none)
		require.NoError(t, err)
		require.Equal(t, 2, n, "team: one for --keep, one for the total")
		require.Equal(t, []string{bases[0], bases[1], bases[4], bases[5]}, lefts(left))
	})
	t.Run("--max-age", func(t *testing.T) {
		dir, bases := setup(t)
		n, left, err := prune(dir, retention{MaxAge: 4*day + time.Hour}, now, none)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		require.Equal(t, []string{bases[3], bases[4], bases[5]}, lefts(left))
	})
	t.Run("a bundle in use is spared, and counts towards its namespace's bound", func(t *testing.T) {
		dir, bases := setup(t)
		n, left, err := prune(dir, retention{Keep: 2}, now, func(b string) bool { return b == bases[2] })
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, []string{bases[0], bases[1], bases[2], bases[5]}, lefts(left))
		n, left, err = prune(dir, retention{MaxDirBytes: 300}, now, func(string) bool { return true })
		require.NoError(t, err)
		require.Zero(t, n, "everything in use: nothing removed")
		require.Len(t, left, 4)
	})
	t.Run("no bound", func(t *testing.T) {
		dir, _ := setup(t)
		n, left, err := prune(dir, retention{}, now, none)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Len(t, left, 6)
	})
	t.Run("stale temporary files", func(t *testing.T) {
		dir, bases := setup(t)
		n, err := removeStaleTemps(dir)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.True(t, exists(bases[2]+".tar.gz"))
	})
}
