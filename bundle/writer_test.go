package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coroner-dev/coroner/internal/tartest"
	"github.com/stretchr/testify/require"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func writeBundle(t *testing.T, p string) {
	t.Helper()
	w, err := NewWriter(p)
	require.NoError(t, err)
	defer w.Abort()
	require.NoError(t, w.WriteFile("resources/core/Pod/ml/p.yaml", []byte("kind: Pod\n")))
	f, err := w.Create("logs/ml/p/c.log")
	require.NoError(t, err)
	for i := range 1000 {
		fmt.Fprintf(f, "line %d\n", i)
	}
	require.NoError(t, f.Close())
	m := &Manifest{Target: Target{APIVersion: "v1", Kind: "Pod", Namespace: "ml", Name: "p"},
		Files: []FileEntry{{Path: "logs/ml/p/c.log", Truncated: true, TruncatedBytes: 42}, {Path: "not/written"}}}
	require.NoError(t, w.Close(m))
}

func TestWriterRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "b.tar.gz")
	writeBundle(t, p)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left beside the bundle")

	b, err := Open(t.Context(), p, DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.Empty(t, b.Warnings, "sizes and sha256 agree with the manifest")
	var log strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&log, "line %d\n", i)
	}
	require.Equal(t, FormatVersion, b.Manifest.FormatVersion)
	require.Equal(t, []FileEntry{
		{Path: "logs/ml/p/c.log", Bytes: int64(log.Len()), SHA256: sha(log.String()), Truncated: true, TruncatedBytes: 42},
		{Path: "resources/core/Pod/ml/p.yaml", Bytes: 10, SHA256: sha("kind: Pod\n")},
	}, b.Manifest.Files, "sorted, with the caller's truncation kept and unwritten files dropped")
	data, err := fs.ReadFile(b.FS, "logs/ml/p/c.log")
	require.NoError(t, err)
	require.Equal(t, log.String(), string(data))
}

func TestWriterIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.tgz"), filepath.Join(dir, "b.tgz")
	writeBundle(t, a)
	writeBundle(t, b)
	da, err := os.ReadFile(a)
	require.NoError(t, err)
	db, err := os.ReadFile(b)
	require.NoError(t, err)
	require.Equal(t, da, db, "the same files give the same bytes")
}

func TestWriterRefusesBadNames(t *testing.T) {
	w, err := NewWriter(filepath.Join(t.TempDir(), "b.tar.gz"))
	require.NoError(t, err)
	defer w.Abort()
	for _, name := range []string{"", "/abs", "../up", "a/../b", "a//b", `a\b`, "manifest.json", "./x"} {
		require.Error(t, w.WriteFile(name, nil), name)
	}
	require.NoError(t, w.WriteFile("a", nil))
	require.ErrorContains(t, w.WriteFile("a", nil), "a: written twice")
	_, err = w.Create("a")
	require.ErrorContains(t, err, "written twice")
}

func TestWriterAbortAndOpenEntries(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "b.tar.gz")
	w, err := NewWriter(p)
	require.NoError(t, err)
	f, err := w.Create("logs/ml/p/c.log")
	require.NoError(t, err)
	_, err = io.WriteString(f, "x\n")
	require.NoError(t, err)
	require.ErrorContains(t, w.Close(&Manifest{}), "logs/ml/p/c.log: still open")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "a failed Close leaves nothing")
	require.Error(t, f.Close(), "the writer is gone")

	w, err = NewWriter(p)
	require.NoError(t, err)
	require.NoError(t, w.WriteFile("a", []byte("x")))
	w.Abort()
	w.Abort()
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "Abort removes the temporary file")
	require.Error(t, w.WriteFile("b", nil))
}

func TestWriterConcurrentCreate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	w, err := NewWriter(p)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := w.Create(fmt.Sprintf("logs/ml/p-%d/c.log", i))
			if err == nil {
				_, err = io.WriteString(f, strings.Repeat("x", i*1000))
			}
			if err == nil {
				err = f.Close()
			}
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	require.NoError(t, w.Close(&Manifest{}))
	b, err := Open(t.Context(), p, DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.Len(t, b.Manifest.Files, 16)
	require.Empty(t, b.Warnings)
}

// TestWriterSymlink: a link is written only to a file the bundle holds, relative to its own
// folder, and never with a name that leaves the bundle.
func TestWriterSymlink(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	w, err := NewWriter(out)
	require.NoError(t, err)
	defer w.Abort()
	require.ErrorContains(t, w.Symlink("a/link.log", "logs/x.log"), "a link to logs/x.log, which the bundle does not hold")
	require.NoError(t, w.WriteFile("logs/x.log", []byte("line\n")))
	require.Error(t, w.Symlink("../out.log", "logs/x.log"))
	require.Error(t, w.Symlink("a/b.log", "../etc/passwd"))
	require.NoError(t, w.Symlink("a/b/link.log", "logs/x.log"))
	require.NoError(t, w.Close(&Manifest{}))

	links := tartest.Links(t, out)
	require.Equal(t, map[string]string{"a/b/link.log": "../../logs/x.log"}, links)
}
