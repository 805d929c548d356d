package watch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// store writes a bundle (size bytes) with its reports, modified at mod.
func store(t *testing.T, dir, rel string, size int, mod time.Time) string {
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
	setup := func(t *testing.T) (string, []string) {
		dir := t.TempDir()
		var bases []string
		for i, rel := range []string{"ml/a/20260314T100000Z", "ml/b/20260315T100000Z", "team/c/20260316T100000Z", "team/c/20260317T100000Z"} {
			bases = append(bases, store(t, dir, rel, 100, now.Add(time.Duration(i-4)*day)))
		}
		// What retention must not count or touch: a bundle being written, a stranger's file.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ml", "a", ".20260318T000000Z.tar.gz.tmp-1"), make([]byte, 1000), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644))
		return dir, bases
	}
	none := func(string) bool { return false }

	t.Run("--keep removes the oldest, with their reports and empty directories", func(t *testing.T) {
		dir, bases := setup(t)
		n, left, err := prune(dir, retention{Keep: 2}, now, none)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Len(t, left, 2)
		for _, ext := range bundleExts {
			require.False(t, exists(bases[0]+ext))
			require.False(t, exists(bases[1]+ext))
			require.True(t, exists(bases[2]+ext))
		}
		require.True(t, exists(filepath.Join(dir, "ml", "a")), "a directory with a file being written stays")
		require.False(t, exists(filepath.Join(dir, "ml", "b")), "an emptied job directory goes")
		require.True(t, exists(filepath.Join(dir, "notes.txt")))
	})
	t.Run("--max-bytes", func(t *testing.T) {
		dir, bases := setup(t)
		n, left, err := prune(dir, retention{MaxBytes: 700}, now, none) // 300 bytes a bundle
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, bases[2], left[0].base)
		require.Equal(t, int64(300), left[0].bytes)
	})
	t.Run("--max-age", func(t *testing.T) {
		dir, _ := setup(t)
		n, left, err := prune(dir, retention{MaxAge: 2*day + time.Hour}, now, none)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Len(t, left, 2)
	})
	t.Run("a bundle in use is spared", func(t *testing.T) {
		dir, bases := setup(t)
		n, left, err := prune(dir, retention{Keep: 2}, now, func(b string) bool { return b == bases[0] })
		require.NoError(t, err)
		require.Equal(t, 2, n, "the in-use bundle counts towards --keep")
		require.Equal(t, []string{bases[0], bases[3]}, []string{left[0].base, left[1].base})
	})
	t.Run("no bound", func(t *testing.T) {
		dir, _ := setup(t)
		n, left, err := prune(dir, retention{}, now, none)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Len(t, left, 4)
	})
	t.Run("stale temporary files", func(t *testing.T) {
		dir, bases := setup(t)
		n, err := removeStaleTemps(dir)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.True(t, exists(bases[0]+".tar.gz"))
	})
}
