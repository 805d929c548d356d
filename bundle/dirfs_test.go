package bundle

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// TestDirFSIsADirFS: the bundle's directory file system behaves as an fs.FS must (fstest),
// reads files as os.DirFS does, whatever their size, and names a missing or invalid file by
// its name in the bundle.
func TestDirFSIsADirFS(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 3*4096+17)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	files := map[string][]byte{"logs/a/x.log": []byte("one\ntwo\n"), "logs/b/big.log": big, "resources/empty.yaml": nil}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	fsys := newDirFS(dir)
	require.NoError(t, fstest.TestFS(fsys, "logs/a/x.log", "logs/b/big.log", "resources/empty.yaml"))
	for name, data := range files {
		got, err := fs.ReadFile(fsys, name)
		require.NoError(t, err)
		require.Equal(t, len(data), len(got), name)
		require.Equal(t, string(data), string(got), name)
	}

	_, err := fsys.Open("logs/missing.log")
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "logs/missing.log", pe.Path)
	require.True(t, errors.Is(err, fs.ErrNotExist))
	_, err = fs.ReadFile(fsys, "logs/missing.log")
	require.True(t, errors.Is(err, fs.ErrNotExist))
	for _, bad := range []string{"../x", "/etc/passwd", "logs/../../x", "a\x00b"} {
		_, err := fsys.Open(bad)
		require.True(t, errors.Is(err, fs.ErrInvalid), bad)
		_, err = fs.ReadFile(fsys, bad)
		require.True(t, errors.Is(err, fs.ErrInvalid), bad)
	}
}

// TestHeldLogs: a directory bundle's small plain logs, which Open's sniff read whole, are read
// once more from what it read (no second open of the file), then from their files; every read
// of every log gives the file's bytes, and the held bytes are let go once each was read.
func TestHeldLogs(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, maxHeldLog+1)
	for i := range big {
		big[i] = byte('a' + i%26)
		if i%80 == 79 {
			big[i] = '\n'
		}
	}
	files := map[string][]byte{
		"logs/ns/a/x.log":              []byte("2026-03-14T08:00:00Z one\n2026-03-14T08:00:01Z two\n"),
		"logs/ns/a/y.log":              nil,
		"logs/ns/b/big.log":            big,
		"logs/ns/c/crlf.log":           []byte("one\rtwo\r"), // read decoded: never held
		"resources/core/Pod/ns/a.yaml": []byte("kind: Pod\n"),
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	b, err := Open(t.Context(), dir, DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	base := b.FS.(*overlayFS).base // the decoded copy of crlf.log is the overlay's
	held := base.(dirFS).held
	require.Equal(t, []string{"logs/ns/a/x.log", "logs/ns/a/y.log"}, held.paths)
	require.NoError(t, fstest.TestFS(base, "logs/ns/a/x.log", "logs/ns/a/y.log", "logs/ns/b/big.log"))
	require.Nil(t, held.chunks, "every held log was read: the bytes are let go")
	for name, data := range files {
		if name == "logs/ns/c/crlf.log" {
			continue
		}
		got, err := fs.ReadFile(b.FS, name)
		require.NoError(t, err)
		require.Equal(t, string(data), string(got), name)
	}
}
