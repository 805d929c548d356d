package bundle

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// openWithMemo opens the bundle at dir with a tree memo and returns its files (path and
// signature) and the memo its walk kept.
func openWithMemo(t *testing.T, dir string, memo []byte) (files map[string]Sig, kept []byte, changed bool) {
	t.Helper()
	b, err := Open(WithTreeMemo(context.Background(), memo), dir, DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	files = map[string]Sig{}
	for _, f := range b.Files {
		sig, ok := b.WalkSig(f.Path)
		require.True(t, ok, f.Path)
		files[f.Path] = sig
	}
	kept, changed = b.TreeMemo()
	return files, kept, changed
}

// TestTreeMemoSeesEveryChange: a walk given the listing of the walk before takes the entries
// of the directories whose times did not change from it, yet finds what a walk without it
// finds after a file is added, removed, rewritten in place with its size and modification
// time kept, a directory added or replaced by another of its name and files; the memo it keeps
// then says it changed. Pod c has enough files to be signed relative to its directory (see
// dirFDFiles), the others by their paths under the root.
func TestTreeMemoSeesEveryChange(t *testing.T) {
	defer func(m time.Duration) { settleMargin = m }(settleMargin)
	settleMargin = 20 * time.Millisecond
	dir := t.TempDir()
	for _, pod := range []string{"a", "b", "c"} {
		p := filepath.Join(dir, "logs", "ml", pod)
		require.NoError(t, os.MkdirAll(p, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(p, "main.log"), []byte("step 1\n"), 0o644))
	}
	for i := range dirFDFiles {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "ml", "c", fmt.Sprintf("side-%d.log", i)), []byte("x\n"), 0o644))
	}
	time.Sleep(50 * time.Millisecond) // the directories settle
	fresh := func() map[string]Sig {
		files, _, _ := openWithMemo(t, dir, nil)
		return files
	}
	_, memo, changed := openWithMemo(t, dir, nil)
	require.True(t, changed, "no memo before")
	files, again, changed := openWithMemo(t, dir, memo)
	require.False(t, changed, "nothing changed")
	require.Nil(t, again, "an unchanged memo is not made again")
	require.Equal(t, fresh(), files)
	m, err := decodeTreeMemo(memo)
	require.NoError(t, err)
	require.Equal(t, 6, m.dirs(), "the root, logs, ml and three pods")

	for _, change := range []struct {
		name string
		do   func()
	}{
		{"a file added", func() {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "ml", "b", "side.log"), []byte("x\n"), 0o644))
		}},
		{"a file removed", func() { require.NoError(t, os.Remove(filepath.Join(dir, "logs", "ml", "a", "main.log"))) }},
		// Pod c holds dirFDFiles files or more: its files are stat'ed through the directory
		// opened once, whose own signature must then say that an entry came or went.
		{"a file added to a directory of many files", func() {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "ml", "c", "side-new.log"), []byte("x\n"), 0o644))
		}},
		{"a file removed from a directory of many files", func() {
			require.NoError(t, os.Remove(filepath.Join(dir, "logs", "ml", "c", "side-0.log")))
		}},
		{"a file rewritten in place", func() {
			p := filepath.Join(dir, "logs", "ml", "c", "main.log")
			info, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, []byte("step 2\n"), 0o644))
			require.NoError(t, os.Chtimes(p, info.ModTime(), info.ModTime()))
		}},
		{"a directory of many files replaced by another of its name and files", func() {
			p := filepath.Join(dir, "logs", "ml", "c")
			require.NoError(t, os.Rename(p, p+".old"))
			require.NoError(t, os.Mkdir(p, 0o755))
			ents, err := os.ReadDir(p + ".old")
			require.NoError(t, err)
			for _, e := range ents {
				data, err := os.ReadFile(filepath.Join(p+".old", e.Name()))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(p, e.Name()), data, 0o644))
			}
			require.NoError(t, os.RemoveAll(p+".old"))
		}},
		{"a directory added", func() {
			p := filepath.Join(dir, "logs", "ml", "d")
			require.NoError(t, os.MkdirAll(p, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(p, "main.log"), []byte("step 1\n"), 0o644))
		}},
	} {
		before := fresh()
		change.do()
		files, kept, _ := openWithMemo(t, dir, memo)
		after := fresh()
		require.NotEqual(t, before, after, change.name)
		require.Equal(t, after, files, change.name)
		time.Sleep(50 * time.Millisecond) // the next change starts from a settled memo
		if _, settled, changed := openWithMemo(t, dir, kept); changed {
			kept = settled
		}
		m, err := decodeTreeMemo(kept)
		require.NoError(t, err)
		dirs := 0
		require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs++
			}
			return err
		}))
		require.Equal(t, dirs, m.dirs(), "every directory settled, remembered")
		memo = kept
	}
}

// TestTreeMemoKeepsNoUnsettledDirectory: a directory changed within settleMargin of a walk is
// not remembered (a change in the same tick of the file system's clock would keep its times),
// so a file added to it right after is found.
func TestTreeMemoKeepsNoUnsettledDirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "logs", "ml", "a")
	require.NoError(t, os.MkdirAll(p, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(p, "main.log"), []byte("step 1\n"), 0o644))
	_, memo, _ := openWithMemo(t, dir, nil)
	m, err := decodeTreeMemo(memo)
	require.NoError(t, err)
	require.Zero(t, m.dirs(), "every directory changed just now")
	require.NoError(t, os.WriteFile(filepath.Join(p, "side.log"), []byte("x\n"), 0o644))
	files, _, _ := openWithMemo(t, dir, memo)
	require.Contains(t, files, "logs/ml/a/side.log")
}

// TestDamagedTreeMemoIsNotUsed: a memo cut short, for another directory or of random bytes is
// ignored (never a panic), and the walk reads every directory.
func TestDamagedTreeMemoIsNotUsed(t *testing.T) {
	defer func(m time.Duration) { settleMargin = m }(settleMargin)
	settleMargin = 0
	dir := t.TempDir()
	p := filepath.Join(dir, "logs", "ml", "a")
	require.NoError(t, os.MkdirAll(p, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(p, "main.log"), []byte("step 1\n"), 0o644))
	time.Sleep(20 * time.Millisecond)
	want, memo, _ := openWithMemo(t, dir, nil)
	for n := range len(memo) {
		_, _ = decodeTreeMemo(memo[:n])
		files, _, _ := openWithMemo(t, dir, memo[:n])
		require.Equal(t, want, files)
	}
	other, _, _ := openWithMemo(t, t.TempDir(), memo)
	require.Empty(t, other)
	_, _, changed := openWithMemo(t, dir, []byte("coroner-tree-memo-1\n\xff\xff\xff\xff\xff"))
	require.True(t, changed)

	// A name no directory holds (a forged memo) would have the walk sign a file outside the
	// bundle: the memo is refused.
	forged := &memoWriter{root: dir, changed: true, dirs: []memoEntry{{"", &memoDir{ents: []memoEnt{{"../x", 0}}}}}}
	_, err := decodeTreeMemo(forged.done())
	require.ErrorIs(t, err, errBadTreeMemo)

	// A listing holds each name once, sorted, and each directory once: a forged memo that
	// repeats a log would have the bundle hold it twice.
	for _, dirs := range [][]memoEntry{
		{{"", &memoDir{ents: []memoEnt{{"main.log", 0}, {"main.log", 0}}}}},
		{{"", &memoDir{ents: []memoEnt{{"b.log", 0}, {"a.log", 0}}}}},
		{{"p", &memoDir{ents: []memoEnt{{"a.log", 0}}}}, {"p", &memoDir{ents: []memoEnt{{"b.log", 0}}}}},
	} {
		forged := &memoWriter{root: dir, changed: true, dirs: dirs}
		_, err := decodeTreeMemo(forged.done())
		require.ErrorIs(t, err, errBadTreeMemo)
	}

	// A count is a claim: 2^40 entries in a few bytes are refused before anything is made.
	b := appendBytes([]byte(treeMemoMagic), dir)
	b = appendBytes(b, "")
	b = append(b, 0, 0, 0)
	b = binary.AppendUvarint(b, 1<<40)
	b = appendBytes(b, "main.log")
	b = append(b, 0)
	_, err = decodeTreeMemo(binary.BigEndian.AppendUint32(b, 1))
	require.ErrorIs(t, err, errBadTreeMemo)
	_, err = decodeTreeMemo(binary.BigEndian.AppendUint32(b, 1<<30))
	require.ErrorIs(t, err, errBadTreeMemo)
}
