package outfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestRegularFileReplacedWhenComplete(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.html")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o600))

	f, err := Create(p)
	require.NoError(t, err)
	_, err = f.Write([]byte("new"))
	require.NoError(t, err)
	got, _ := os.ReadFile(p)
	require.Equal(t, "old", string(got), "the old file stands until Commit")
	require.NoError(t, f.Commit())
	got, _ = os.ReadFile(p)
	require.Equal(t, "new", string(got))
	require.Equal(t, []string{"report.html"}, entries(t, dir))

	f, err = Create(p)
	require.NoError(t, err)
	f.Write([]byte("half"))
	f.Abort()
	got, _ = os.ReadFile(p)
	require.Equal(t, "new", string(got), "an aborted write leaves the old file")
	require.Equal(t, []string{"report.html"}, entries(t, dir), "and no temporary file")
}

func TestDevicesAndPipesAreStreams(t *testing.T) {
	// /dev/null stays a device (as root, a rename would have replaced it with a file).
	require.NoError(t, WriteFile(os.DevNull, []byte("x")))
	st, err := os.Stat(os.DevNull)
	require.NoError(t, err)
	require.NotZero(t, st.Mode()&os.ModeCharDevice, "/dev/null is still a device")

	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	got := make(chan []byte)
	go func() {
		data, _ := os.ReadFile(fifo)
		got <- data
	}()
	require.NoError(t, WriteFile(fifo, []byte("through the pipe")))
	require.Equal(t, "through the pipe", string(<-got))
	st, err = os.Lstat(fifo)
	require.NoError(t, err)
	require.NotZero(t, st.Mode()&os.ModeNamedPipe, "the FIFO is still a FIFO")

	// A link to a device (/dev/stdout is one) is written through.
	link := filepath.Join(dir, "null")
	require.NoError(t, os.Symlink(os.DevNull, link))
	require.NoError(t, WriteFile(link, []byte("x")))
}

func TestLinksAndDirectoriesRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	require.NoError(t, os.WriteFile(target, []byte("keep"), 0o600))
	link := filepath.Join(dir, "report.html")
	require.NoError(t, os.Symlink(target, link))

	err := WriteFile(link, []byte("x"))
	require.ErrorContains(t, err, "report.html is a symbolic link")
	got, _ := os.ReadFile(target)
	require.Equal(t, "keep", string(got))
	st, _ := os.Lstat(link)
	require.NotZero(t, st.Mode()&os.ModeSymlink, "the link is not replaced")

	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink(filepath.Join(dir, "nowhere"), dangling))
	require.ErrorContains(t, WriteFile(dangling, []byte("x")), "symbolic link")
	require.NoFileExists(t, filepath.Join(dir, "nowhere"))

	require.ErrorContains(t, WriteFile(dir, []byte("x")), "is a directory")
}

func TestStaleTemporaryFilesSwept(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.tar.gz")
	// What a killed run left: a temporary file nobody holds, old enough.
	stale := filepath.Join(dir, ".out.tar.gz.tmp-123")
	require.NoError(t, os.WriteFile(stale, []byte("half"), 0o600))
	require.NoError(t, os.Chtimes(stale, time0, time0))
	require.NoError(t, WriteFile(p, []byte("whole")))
	require.Equal(t, []string{"out.tar.gz"}, entries(t, dir))
}

var time0 = time.Unix(1_000_000_000, 0)
