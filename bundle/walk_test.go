package bundle

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWalkSignsEveryFileAsLstatDoes: the walk of a directory bundle visits what
// filepath.WalkDir does, in its order, and signs each regular file with what an lstat of its
// path says (size, modification and change time, inode), so the cache key built from these
// signatures still catches any rewrite.
func TestWalkSignsEveryFileAsLstatDoes(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"a-b", "a/b", "a/c/d.log", "a/c/e", "b.txt", "z/y/x/w.log", "logs/ml/p/c.log"} {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(p+"\n"), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "empty"), 0o755))

	type seen struct {
		rel string
		typ fs.FileMode
		sig Sig
	}
	var want []seen
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		s := seen{rel: filepath.ToSlash(rel), typ: d.Type()}
		if d.Type().IsRegular() {
			info, err := os.Lstat(p)
			require.NoError(t, err)
			s.sig = SigOf(info)
		}
		want = append(want, s)
		return nil
	}))
	var got []seen
	require.NoError(t, walkSigned(root, 1<<20, func(rel string, typ fs.FileMode, sig Sig) error {
		got = append(got, seen{rel, typ, sig})
		return nil
	}))
	require.Equal(t, want, got)
	for _, s := range got {
		if s.typ.IsRegular() {
			require.NotZero(t, s.sig.Size, s.rel)
			require.NotZero(t, s.sig.Mtime, s.rel)
		}
	}
}

// TestOpenDirRefusesOtherFiles: a named pipe in a bundle directory is refused by name, as a
// link is, never opened.
func TestOpenDirRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs/ml/p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs/ml/p/a.log"), []byte("x\n"), 0o644))
	if err := mkfifo(filepath.Join(dir, "logs/ml/p/b.log")); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	_, err := Open(t.Context(), dir, DefaultLimits())
	require.ErrorContains(t, err, "logs/ml/p/b.log: is not a regular file")
}

// TestOpenDirCountsEntries: the bound on entries counts the directories and the root too.
func TestOpenDirCountsEntries(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs/ml/p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs/ml/p/a.log"), []byte("x\n"), 0o644))
	lim := DefaultLimits()
	lim.MaxEntries = 5 // the root, logs, ml, p, a.log
	b, err := Open(t.Context(), dir, lim)
	require.NoError(t, err)
	b.Close()
	lim.MaxEntries = 4
	_, err = Open(t.Context(), dir, lim)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitEntries, le.Kind)
}

// TestWalkOfADeepTreeHoldsFewDirectoriesOpen: a bundle nested 200 directories deep is walked
// with a few descriptors open at its bottom, not one per level, so a hostile depth cannot run
// the process out of descriptors.
func TestWalkOfADeepTreeHoldsFewDirectoriesOpen(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to count open descriptors")
	}
	root := t.TempDir()
	deep := root
	for range 200 {
		deep = filepath.Join(deep, "d")
	}
	require.NoError(t, os.MkdirAll(deep, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(deep, "x.log"), []byte("x\n"), 0o644))
	before, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	atBottom := -1
	require.NoError(t, walkSigned(root, 1<<20, func(rel string, typ fs.FileMode, sig Sig) error {
		if filepath.Base(rel) == "x.log" {
			fds, err := os.ReadDir("/proc/self/fd")
			require.NoError(t, err)
			atBottom = len(fds)
		}
		return nil
	}))
	require.Positive(t, atBottom, "the file at the bottom was visited")
	require.LessOrEqual(t, atBottom-len(before), 10, "descriptors open at the bottom of a 200-deep tree")
}
