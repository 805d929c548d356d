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
