package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type entry struct {
	hdr  tar.Header
	data []byte
}

func file(name, data string) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}, data: []byte(data)}
}

func writeTarGz(t *testing.T, entries ...entry) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := e.hdr
		require.NoError(t, tw.WriteHeader(&h))
		if len(e.data) > 0 {
			_, err := tw.Write(e.data)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	return p
}

const manifest = `{"formatVersion":1,"target":{"apiVersion":"batch/v1","kind":"Job","namespace":"ml","name":"j"},"files":[]}`

func TestOpenTarball(t *testing.T) {
	p := writeTarGz(t, file("manifest.json", manifest), file("logs/ml/j-0/main.log", "hello\n"))
	b, err := Open(t.Context(), p, DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, "j", b.Manifest.Target.Name)
	data, err := fs.ReadFile(b.FS, "logs/ml/j-0/main.log")
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(data))
	require.Equal(t, []File{{"logs/ml/j-0/main.log", 6}, {"manifest.json", int64(len(manifest))}}, b.Files)
	require.Empty(t, b.Warnings)
}

func TestCloseRemovesExtractedTree(t *testing.T) {
	b, err := Open(t.Context(), writeTarGz(t, file("manifest.json", manifest)), DefaultLimits())
	require.NoError(t, err)
	dir := b.FS.(interface{ ReadFile(string) ([]byte, error) })
	_, err = dir.ReadFile("manifest.json")
	require.NoError(t, err)
	require.NoError(t, b.Close())
	_, err = dir.ReadFile("manifest.json")
	require.True(t, errors.Is(err, fs.ErrNotExist), "extracted files are gone after Close")
}

func TestOpenRefusesUnsafeArchives(t *testing.T) {
	tests := []struct {
		name    string
		entries []entry
		want    string
	}{
		{"dot-dot", []entry{file("logs/../../etc/passwd", "x")}, `escapes the bundle ("..")`},
		{"absolute", []entry{file("/etc/passwd", "x")}, "absolute path"},
		{"symlink", []entry{{hdr: tar.Header{Name: "logs/ml/p/c.log", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}}}, "is a link"},
		{"hardlink", []entry{file("a", "x"), {hdr: tar.Header{Name: "b", Typeflag: tar.TypeLink, Linkname: "a"}}}, "is a link"},
		{"device", []entry{{hdr: tar.Header{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}}, "not a regular file"},
		{"fifo", []entry{{hdr: tar.Header{Name: "fifo", Typeflag: tar.TypeFifo}}}, "not a regular file"},
		{"duplicate", []entry{file("manifest.json", manifest), file("manifest.json", manifest)}, "duplicate path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(t.Context(), writeTarGz(t, tt.entries...), DefaultLimits())
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestOpenEnforcesLimits(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxEntries = 3
	_, err := Open(t.Context(), writeTarGz(t, file("a", "1"), file("b", "2"), file("c", "3"), file("d", "4")), lim)
	require.ErrorContains(t, err, "number of entries exceeds the entry count limit of 3")
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitEntries, le.Kind, "the error says which limit, so the caller can say how to raise it")

	// A gzip bomb: a small archive that expands past the limit stops at the limit.
	lim = DefaultLimits()
	lim.MaxTotalBytes = 1 << 20
	big := strings.Repeat("A", 2<<20)
	p := writeTarGz(t, file("logs/ml/p/c.log", big))
	st, _ := os.Stat(p)
	require.Less(t, st.Size(), int64(64<<10), "the archive is small")
	_, err = Open(t.Context(), p, lim)
	require.ErrorContains(t, err, "exceeds the bundle size limit")
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitTotalBytes, le.Kind)
}

func TestOpenBrokenArchives(t *testing.T) {
	good := writeTarGz(t, file("manifest.json", manifest), file("logs/ml/p/c.log", strings.Repeat("line\n", 20000)))
	data, err := os.ReadFile(good)
	require.NoError(t, err)

	truncated := filepath.Join(t.TempDir(), "t.tar.gz")
	require.NoError(t, os.WriteFile(truncated, data[:len(data)/2], 0o644))
	_, err = Open(t.Context(), truncated, DefaultLimits())
	require.Error(t, err)
	require.Contains(t, err.Error(), "t.tar.gz")

	notGzip := filepath.Join(t.TempDir(), "x.tgz")
	require.NoError(t, os.WriteFile(notGzip, []byte("PK\x03\x04 a zip file"), 0o644))
	_, err = Open(t.Context(), notGzip, DefaultLimits())
	require.ErrorContains(t, err, "not a gzip file")

	// A tar whose last entry ends early: the header promises more than the stream holds.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "logs/ml/p/c.log", Typeflag: tar.TypeReg, Size: 1000, Mode: 0o644}))
	_, _ = tw.Write([]byte("short"))
	zw.Close() // no tw.Close: the entry is cut
	cut := filepath.Join(t.TempDir(), "cut.tar.gz")
	require.NoError(t, os.WriteFile(cut, buf.Bytes(), 0o644))
	_, err = Open(t.Context(), cut, DefaultLimits())
	require.ErrorContains(t, err, "logs/ml/p/c.log")
}

func TestManifest(t *testing.T) {
	// Missing: readable, with a warning.
	b, err := Open(t.Context(), writeTarGz(t, file("logs/ml/p/c.log", "x\n")), DefaultLimits())
	require.NoError(t, err)
	require.Nil(t, b.Manifest)
	require.Contains(t, b.Warnings[0], "manifest.json is missing")

	_, err = Open(t.Context(), writeTarGz(t, file("manifest.json", `{"formatVersion":7}`)), DefaultLimits())
	require.ErrorContains(t, err, "manifest.json: formatVersion 7 is not supported")

	_, err = Open(t.Context(), writeTarGz(t, file("manifest.json", `{"formatVersion":`)), DefaultLimits())
	require.ErrorContains(t, err, "manifest.json: invalid JSON")

	// A manifest that lies about sizes: analyzed, with a warning per file.
	lying := `{"formatVersion":1,"files":[{"path":"logs/ml/p/c.log","bytes":99},{"path":"logs/ml/p/gone.log","bytes":1}]}`
	b, err = Open(t.Context(), writeTarGz(t, file("manifest.json", lying), file("logs/ml/p/c.log", "x\n")), DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, []string{
		"logs/ml/p/c.log: 2 bytes, manifest.json says 99 (edited after collection?)",
		"manifest.json lists logs/ml/p/gone.log but the bundle does not hold it",
	}, b.Warnings)
}

func TestOpenDirRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs/ml/p"), 0o755))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "logs/ml/p/c.log")))
	_, err := Open(t.Context(), dir, DefaultLimits())
	require.ErrorContains(t, err, "logs/ml/p/c.log: is a symbolic link")
}

func TestOpenLogs(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "train.log")
	require.NoError(t, os.WriteFile(a, []byte("x\n"), 0o644))
	b, err := OpenLogs(t.Context(), []string{a, "-"}, strings.NewReader("from stdin\n"), DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.True(t, b.Plain)
	require.Equal(t, []File{{"logs/_/stdin/main.log", 11}, {"logs/_/train/main.log", 2}}, b.Files)
	data, err := fs.ReadFile(b.FS, "logs/_/stdin/main.log")
	require.NoError(t, err)
	require.Equal(t, "from stdin\n", string(data))
	entries, err := fs.ReadDir(b.FS, "logs/_")
	require.NoError(t, err)
	require.Len(t, entries, 2)

	_, err = OpenLogs(t.Context(), []string{filepath.Join(dir, "nope.log")}, nil, DefaultLimits())
	require.ErrorContains(t, err, "nope.log")
}

func TestCleanEntryName(t *testing.T) {
	for _, ok := range []string{"manifest.json", "./logs/a/b/c.log", "resources/core/Pod/ml/x.yaml", "logs/"} {
		_, err := cleanEntryName(ok)
		require.NoError(t, err, ok)
	}
	for _, bad := range []string{"", "/abs", "..", "a/../../b", `C:\x`, "a\\b"} {
		_, err := cleanEntryName(bad)
		require.Error(t, err, bad)
	}
}

// TestManifestSHA256 reports, per file, content that differs from what the manifest says,
// in a tarball and in a directory alike; the bundle is still read.
func TestManifestSHA256(t *testing.T) {
	m := `{"formatVersion":1,"files":[{"path":"logs/ml/p/c.log","bytes":2,"sha256":"` + sha("x\n") + `"},` +
		`{"path":"logs/ml/p/d.log","bytes":2,"sha256":"` + sha("y\n") + `"}]}`
	p := writeTarGz(t, file("manifest.json", m), file("logs/ml/p/c.log", "x\n"), file("logs/ml/p/d.log", "z\n"))
	b, err := Open(t.Context(), p, DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, []string{"logs/ml/p/d.log: sha256 differs from manifest.json (edited after collection?)"}, b.Warnings)

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs/ml/p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(m), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs/ml/p/c.log"), []byte("x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs/ml/p/d.log"), []byte("z\n"), 0o644))
	b, err = Open(t.Context(), dir, DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, []string{"logs/ml/p/d.log: sha256 differs from manifest.json (edited after collection?)"}, b.Warnings)
}

func TestOpenCancelled(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	p := writeTarGz(t, file("logs/ml/p/c.log", strings.Repeat("line\n", 100000)))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Open(ctx, p, DefaultLimits())
	require.ErrorIs(t, err, context.Canceled)
	es, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, es, "what was extracted is removed")

	_, err = OpenLogs(ctx, []string{"-"}, strings.NewReader("a line\n"), DefaultLimits())
	require.ErrorIs(t, err, context.Canceled)
	es, _ = os.ReadDir(tmp)
	require.Empty(t, es, "the copy of standard input is removed")
}
