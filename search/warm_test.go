package search

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
)

// warmSearch opens the bundle against the cache, searches and closes, as the command does: the
// hits' texts and the bundle's warnings about its logs.
func warmSearch(t *testing.T, dir string, c *index.Cache, q string) (texts, warnings []string) {
	t.Helper()
	src, err := Open(t.Context(), []string{dir}, strings.NewReader(""), Options{Cache: c, Version: "test", Limits: bundle.DefaultLimits()})
	require.NoError(t, err)
	defer func() { require.NoError(t, src.Close()) }()
	res, err := src.Search(t.Context(), Query{Query: q})
	require.NoError(t, err)
	for _, h := range res.Hits {
		texts = append(texts, h.Text)
	}
	for _, w := range src.Bundle().Warnings {
		if strings.HasPrefix(w, "logs/") {
			warnings = append(warnings, w)
		}
	}
	return texts, warnings
}

// TestWarmSearchSeesAChangedLog: a search of a bundle indexed before skips looking at its logs'
// heads and takes the signatures the bundle's walk took, yet a log changed since is never
// served from the old index nor read in its old form: rewritten with the same size and its
// modification time set back, replaced by UTF-16 text of the same name (decoded again), or by
// a gzip of the same name (warned about as binary).
func TestWarmSearchSeesAChangedLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	log := filepath.Join(dir, "logs", "ml", "job-0", "trainer.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(log), 0o755))
	text := "2026-03-14T10:00:00Z step 1 loss 2.5\n2026-03-14T10:00:01Z NCCL watchdog timeout alpha\n"
	require.NoError(t, os.WriteFile(log, []byte(text), 0o644))
	c := &index.Cache{Dir: t.TempDir()}
	for range 2 { // indexed, then found in the cache
		texts, warnings := warmSearch(t, dir, c, "timeout")
		require.Equal(t, []string{"NCCL watchdog timeout alpha"}, texts)
		require.Empty(t, warnings)
	}

	// The same size, the modification time set back: the change time still differs.
	rewriteKeepingModTime(t, log, strings.Replace(text, "alpha", "omega", 1))
	texts, _ := warmSearch(t, dir, c, "timeout")
	require.Equal(t, []string{"NCCL watchdog timeout omega"}, texts)

	// UTF-16 under the same name: decoded, as a first open would.
	var u16 bytes.Buffer
	u16.Write([]byte{0xff, 0xfe})
	for _, r := range utf16.Encode([]rune(strings.Replace(text, "alpha", "utf16word", 1))) {
		u16.Write([]byte{byte(r), byte(r >> 8)})
	}
	time.Sleep(10 * time.Millisecond) // a coarse clock must still see a new change time
	require.NoError(t, os.WriteFile(log, u16.Bytes(), 0o644))
	texts, warnings := warmSearch(t, dir, c, "timeout")
	require.Equal(t, []string{"NCCL watchdog timeout utf16word"}, texts)
	require.Empty(t, warnings)
	texts, _ = warmSearch(t, dir, c, "timeout") // and again, from the cache
	require.Equal(t, []string{"NCCL watchdog timeout utf16word"}, texts)

	// A gzip under the same name: looked at again, and said to look binary.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write(bytes.Repeat([]byte(text), 50))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(log, gz.Bytes(), 0o644))
	_, warnings = warmSearch(t, dir, c, "timeout")
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], "looks like binary data")
}

// TestWarmSearchSeesAChangedObject: the objects' index takes the signatures the bundle's walk
// took of the resources too; a resource rewritten with the same size and its modification time
// set back is still searched as it is now.
func TestWarmSearchSeesAChangedObject(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	log := filepath.Join(dir, "logs", "ml", "job-0", "trainer.log")
	pod := filepath.Join(dir, "resources", "v1", "Pod", "ml", "job-0.yaml")
	for _, p := range []string{log, pod} {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	}
	require.NoError(t, os.WriteFile(log, []byte("2026-03-14T10:00:00Z step 1 loss 2.5\n"), 0o644))
	yaml := "kind: Pod\nmetadata:\n  name: job-0\n  labels:\n    flavour: alpha\n"
	require.NoError(t, os.WriteFile(pod, []byte(yaml), 0o644))
	c := &index.Cache{Dir: t.TempDir()}
	for range 2 { // indexed, then found in the cache
		texts, _ := warmSearch(t, dir, c, "flavour")
		require.Equal(t, []string{"    flavour: alpha"}, texts)
	}
	rewriteKeepingModTime(t, pod, strings.Replace(yaml, "alpha", "omega", 1))
	texts, _ := warmSearch(t, dir, c, "flavour")
	require.Equal(t, []string{"    flavour: omega"}, texts)
}

// TestWarmSearchSeesLogsAppendedRemovedAndAdded: in a bundle of many pods (their directories
// read ahead of the walk's visits), a warm search finds a line appended to a log, no longer
// finds the lines of a log removed, finds those of a log added, and lists the hits in the
// same order as a search of a fresh cache.
func TestWarmSearchSeesLogsAppendedRemovedAndAdded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	logOf := func(i int) string {
		return filepath.Join(dir, "logs", "ml", fmt.Sprintf("job-%03d", i), "trainer.log")
	}
	line := func(i int, word string) string {
		return fmt.Sprintf("2026-03-14T10:%02d:%02dZ NCCL watchdog timeout %s\n", i/60, i%60, word)
	}
	for i := range 300 {
		require.NoError(t, os.MkdirAll(filepath.Dir(logOf(i)), 0o755))
		require.NoError(t, os.WriteFile(logOf(i), []byte("2026-03-14T09:00:00Z step 1 loss 2.5\n"+line(i, "first")), 0o644))
	}
	c := &index.Cache{Dir: t.TempDir()}
	search := func(q string) []string {
		texts, _ := warmSearch(t, dir, c, q)
		fresh, _ := warmSearch(t, dir, &index.Cache{Dir: t.TempDir()}, q)
		require.Equal(t, fresh, texts, "a warm search lists what a fresh one does")
		return texts
	}
	require.Len(t, search("first"), 200) // the default limit
	warmSearch(t, dir, c, "first")       // found in the cache

	f, err := os.OpenFile(logOf(7), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(line(400, "appended"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, []string{"NCCL watchdog timeout appended"}, search("appended"))

	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(logOf(9)), "extra.log"), []byte(line(500, "removed")), 0o644))
	require.Equal(t, []string{"NCCL watchdog timeout removed"}, search("removed"))
	require.NoError(t, os.Remove(filepath.Join(filepath.Dir(logOf(9)), "extra.log")))
	require.Empty(t, search("removed"))

	require.NoError(t, os.MkdirAll(filepath.Dir(logOf(300)), 0o755))
	require.NoError(t, os.WriteFile(logOf(300), []byte(line(600, "added")), 0o644))
	require.Equal(t, []string{"NCCL watchdog timeout added"}, search("added"))
}

// rewriteKeepingModTime writes text over path and sets its modification time back to what it
// was: only the change time (and the content) says it changed.
func rewriteKeepingModTime(t *testing.T, path, text string) {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	require.NoError(t, os.Chtimes(path, info.ModTime(), info.ModTime()))
}
