package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// gzMember is one gzip member holding data.
func gzMember(t testing.TB, data []byte) []byte {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// zeroBomb writes a tarball of files logs of size bytes of zeros each, as concatenated gzip
// members (one valid gzip stream) so that the test does not spend a minute compressing: each
// MiB of zeros is the same 1 KB member. It returns the path and the archive's size.
func zeroBomb(t testing.TB, files int, size int64) (string, int64) {
	p := filepath.Join(t.TempDir(), "bomb.tar.gz")
	f, err := os.Create(p)
	require.NoError(t, err)
	mib := gzMember(t, make([]byte, 1<<20))
	hdr := func(name string, size int64) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}))
		return buf.Bytes() // the header block is written at once; the data follows

	}
	write := func(b []byte) {
		_, err := f.Write(b)
		require.NoError(t, err)
	}
	write(gzMember(t, hdr("manifest.json", int64(len(manifest)))))
	write(gzMember(t, append([]byte(manifest), make([]byte, 512-len(manifest)%512)...)))
	for i := range files {
		write(gzMember(t, hdr(fmt.Sprintf("logs/ml/p/zeros-%d.log", i), size)))
		for range size >> 20 {
			write(mib)
		}
	}
	write(gzMember(t, make([]byte, 1024))) // the tar's end
	require.NoError(t, f.Close())
	st, err := os.Stat(p)
	require.NoError(t, err)
	return p, st.Size()
}

// TestGzipBomb is the case: ten logs of 1 GiB of zeros in a 10 MB tarball, within
// the default size limits. Open and Stream stop at the expansion limit after reading a few
// hundred kilobytes, with one line that names the entry and the flag, and leave nothing in
// the temporary directory.
func TestGzipBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 10 MB archive; skipped with -short")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	p, size := zeroBomb(t, 10, 1<<30)
	require.Less(t, size, int64(11<<20))
	lim := DefaultLimits()
	require.Less(t, int64(10<<30), lim.MaxTotalBytes, "within the default total")
	require.Less(t, int64(1<<30), lim.MaxFileBytes, "and file limits")

	_, err := Open(t.Context(), p, lim)
	require.ErrorContains(t, err, "logs/ml/p/zeros-0.log: the archive's expansion (")
	require.ErrorContains(t, err, "a gzip bomb?) exceeds the expansion ratio limit of 100")
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitExpansion, le.Kind)
	es, _ := os.ReadDir(tmp)
	require.Empty(t, es, "the partial extraction is removed")

	read := int64(0)
	_, err = Stream(t.Context(), p, lim, func(f File, r io.Reader) error {
		n, err := io.Copy(io.Discard, r)
		read += n
		return err
	})
	require.ErrorAs(t, err, &le)
	require.LessOrEqual(t, read, int64(expansionFloor+(1<<20)), "streaming stops at the same point")

	// Raising the bound is the user's call; 0 lifts it, and the total limit still holds.
	lim.MaxExpansion = 0
	lim.MaxTotalBytes = 512 << 20
	_, err = Open(t.Context(), p, lim)
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitTotalBytes, le.Kind)
}

// TestExpansionUnderTheFloor: a small archive of zeros expands 1,000 times and is harmless.
func TestExpansionUnderTheFloor(t *testing.T) {
	p := writeTarGz(t, file("manifest.json", manifest), file("logs/ml/p/c.log", string(make([]byte, 8<<20))))
	b, err := Open(t.Context(), p, DefaultLimits())
	require.NoError(t, err)
	b.Close()
}

// TestSingleMemberBomb: the usual bomb, one gzip member, fails the same way.
func TestSingleMemberBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("compresses 200 MB; skipped with -short")
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "logs/ml/p/c.log", Typeflag: tar.TypeReg, Mode: 0o644, Size: 200 << 20}))
	zeros := make([]byte, 1<<20)
	for range 200 {
		_, err := tw.Write(zeros)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	p := filepath.Join(t.TempDir(), "b.tgz")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	_, err := Open(t.Context(), p, DefaultLimits())
	require.ErrorContains(t, err, "logs/ml/p/c.log: the archive's expansion (")
}

// TestCorruptArchive flips the bits of a small bundle tarball, one at a time: each flip is
// an error, or gives exactly the original files (a flip in the gzip header's time or OS byte
// changes nothing). Before the trailer was read, most flips gave a silently different bundle.
func TestCorruptArchive(t *testing.T) {
	log := "2026-03-14T10:00:05Z torch.OutOfMemoryError: CUDA out of memory.\n"
	m := `{"formatVersion":1,"files":[{"path":"logs/ml/p/c.log","bytes":` + fmt.Sprint(len(log)) + `,"sha256":"` + sha(log) + `"}]}`
	p := writeTarGz(t, file("logs/ml/p/c.log", log), file("manifest.json", m))
	orig, err := os.ReadFile(p)
	require.NoError(t, err)
	want := map[string]string{"logs/ml/p/c.log": log, "manifest.json": m}
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	errors, same, named := 0, 0, 0
	step := 11 // 11 is prime to 8: every bit position, bytes all along
	if testing.Short() {
		step = 31
	}
	for bit := 0; bit < len(orig)*8; bit += step {
		data := bytes.Clone(orig)
		data[bit/8] ^= 1 << (bit % 8)
		require.NoError(t, os.WriteFile(bad, data, 0o644))
		got := map[string]string{}
		b, err := Open(t.Context(), bad, DefaultLimits())
		if err == nil {
			for _, f := range b.Files {
				data, rerr := fs.ReadFile(b.FS, f.Path)
				require.NoError(t, rerr)
				got[f.Path] = string(data)
			}
			b.Close()
		}
		if err != nil {
			errors++
			require.NotContains(t, err.Error(), "\n")
			if strings.Contains(err.Error(), "logs/ml/p/c.log") {
				named++
			}
			continue
		}
		require.Equal(t, want, got, "bit %d flipped: no error, so the files must be the original ones", bit)
		same++
	}
	t.Logf("%d flips: %d errors (%d naming the log), %d harmless", errors+same, errors, named, same)
	require.Greater(t, errors, same)
	require.Greater(t, named, 0)

	// A flip inside the log's bytes: found by the CRC at the end, named by the manifest's sha256.
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range []entry{file("logs/ml/p/c.log", log), file("manifest.json", m)} {
		require.NoError(t, tw.WriteHeader(&e.hdr))
		_, err := tw.Write(e.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	tarBytes := raw.Bytes()
	at := bytes.Index(tarBytes, []byte("CUDA out"))
	tarBytes[at] ^= 0x01 // 'C' -> 'B': the stored CRC is of the original
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err = zw.Write(tarBytes)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	crcAt := gz.Len() - 8
	zdata := gz.Bytes()
	good := gzMember(t, append(bytes.Clone(tarBytes[:at]), append([]byte{'C'}, tarBytes[at+1:]...)...))
	copy(zdata[crcAt:crcAt+4], good[len(good)-8:len(good)-4]) // the original's CRC-32
	require.NoError(t, os.WriteFile(bad, zdata, 0o644))
	_, err = Open(t.Context(), bad, DefaultLimits())
	require.EqualError(t, err, bad+": logs/ml/p/c.log: the archive is corrupt: its gzip checksum fails and this file's sha256 differs from manifest.json")
}

// TestTrailingBytes: zeros after the gzip data (tape padding) are fine, other bytes are a
// warning, and concatenated gzip files are one archive.
func TestTrailingBytes(t *testing.T) {
	p := writeTarGz(t, file("manifest.json", manifest), file("logs/ml/p/c.log", "x\n"))
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, tail string
		warn       bool
	}{{"zeros", string(make([]byte, 10240)), false}, {"garbage", "garbage after the end", true}} {
		q := filepath.Join(t.TempDir(), "t.tgz")
		require.NoError(t, os.WriteFile(q, append(bytes.Clone(data), tc.tail...), 0o644))
		b, err := Open(t.Context(), q, DefaultLimits())
		require.NoError(t, err, tc.name)
		if tc.warn {
			require.Contains(t, b.Warnings, "the archive has bytes after the end of its gzip data; they were ignored")
		} else {
			require.Empty(t, b.Warnings)
		}
		b.Close()
	}

	// The tar split over two gzip members.
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range []entry{file("manifest.json", manifest), file("logs/ml/p/c.log", "x\n")} {
		require.NoError(t, tw.WriteHeader(&e.hdr))
		_, err := tw.Write(e.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	half := raw.Len() / 2
	q := filepath.Join(t.TempDir(), "two.tgz")
	require.NoError(t, os.WriteFile(q, append(gzMember(t, raw.Bytes()[:half]), gzMember(t, raw.Bytes()[half:])...), 0o644))
	b, err := Open(t.Context(), q, DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, []File{{"logs/ml/p/c.log", 2}, {"manifest.json", int64(len(manifest))}}, b.Files)
}

// TestTopFolder: `tar czf x.tgz dir` puts every file under dir/; that is the bundle.
func TestTopFolder(t *testing.T) {
	dirEntry := func(name string) entry {
		return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
	}
	p := writeTarGz(t, dirEntry("coroner-ml-train/"), file("coroner-ml-train/manifest.json", manifest),
		dirEntry("coroner-ml-train/logs/"), file("coroner-ml-train/logs/ml/p/c.log", "x\n"))
	b, err := Open(t.Context(), p, DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, []File{{"logs/ml/p/c.log", 2}, {"manifest.json", int64(len(manifest))}}, b.Files)
	require.NotNil(t, b.Manifest)
	require.Empty(t, b.Warnings)
	data, err := fs.ReadFile(b.FS, "logs/ml/p/c.log")
	require.NoError(t, err)
	require.Equal(t, "x\n", string(data))

	// Without the folder, or with logs/ at the top, nothing is taken away.
	b2, err := Open(t.Context(), writeTarGz(t, file("logs/ml/p/c.log", "x\n"), file("manifest.json", manifest)), DefaultLimits())
	require.NoError(t, err)
	defer b2.Close()
	require.Equal(t, []File{{"logs/ml/p/c.log", 2}, {"manifest.json", int64(len(manifest))}}, b2.Files)

	_, err = Open(t.Context(), writeTarGz(t, file("dir/manifest.json", manifest), file("other/logs/ml/p/c.log", "x\n")), DefaultLimits())
	require.ErrorContains(t, err, "other/logs/ml/p/c.log: the archive's files are under dir/ but this one is not")
}

// TestManifestWarningsAreSummarised: 300,000 bogus entries give a handful of warnings, and
// each file is hashed once however often the manifest names it.
func TestManifestWarningsAreSummarised(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"formatVersion":1,"files":[`)
	for i := range 300_000 {
		fmt.Fprintf(&sb, `{"path":"logs/ml/p/f%d.log","bytes":1},`, i)
	}
	for range 1000 {
		sb.WriteString(`{"path":"logs/ml/p/c.log","bytes":2,"sha256":"` + sha("y\n") + `"},`)
	}
	sb.WriteString(`{"path":"logs/ml/p/c.log","bytes":2}]}`)
	fsys := &countingFS{MapFS: fstest.MapFS{"logs/ml/p/c.log": {Data: []byte("x\n")}, "manifest.json": {Data: []byte(sb.String())}}}
	b := &Bundle{FS: fsys, Limits: DefaultLimits(), Files: []File{{"logs/ml/p/c.log", 2}, {"manifest.json", int64(sb.Len())}}}
	require.NoError(t, b.readManifest())
	require.Equal(t, []string{
		"logs/ml/p/c.log: sha256 differs from manifest.json (edited after collection?)",
		"manifest.json lists logs/ml/p/f0.log but the bundle does not hold it",
		"manifest.json lists logs/ml/p/f1.log but the bundle does not hold it",
		"manifest.json lists logs/ml/p/f2.log but the bundle does not hold it",
		"manifest.json lists logs/ml/p/f3.log but the bundle does not hold it",
		"manifest.json lists logs/ml/p/f4.log but the bundle does not hold it",
		"... and 299995 more files listed in manifest.json that the bundle does not hold",
		"manifest.json lists logs/ml/p/c.log 1001 times",
	}, b.Warnings)
	require.Equal(t, 1, fsys.opens["logs/ml/p/c.log"], "hashed once")
	require.Equal(t, "logs/ml/p/c.log", b.Manifest.File("logs/ml/p/c.log").Path)
}

type countingFS struct {
	fstest.MapFS
	opens map[string]int
}

func (c *countingFS) Open(name string) (fs.File, error) {
	if c.opens == nil {
		c.opens = map[string]int{}
	}
	c.opens[name]++
	return c.MapFS.Open(name)
}

// TestOpenDirThroughSymlink: the directory named may be a link ("latest"); links inside it
// are still refused.
func TestOpenDirThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "bundle-2026-03-14")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "logs/ml/p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(real, "manifest.json"), []byte(manifest), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(real, "logs/ml/p/c.log"), []byte("x\n"), 0o644))
	link := filepath.Join(dir, "latest")
	require.NoError(t, os.Symlink(real, link))
	b, err := Open(t.Context(), link, DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, link, b.Source)
	require.Equal(t, []File{{"logs/ml/p/c.log", 2}, {"manifest.json", int64(len(manifest))}}, b.Files)
	require.Empty(t, b.Warnings)

	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(real, "logs/ml/p/d.log")))
	_, err = Open(t.Context(), link, DefaultLimits())
	require.ErrorContains(t, err, "logs/ml/p/d.log: is a symbolic link")
}

// TestStream: a directory and a tarball stream the same files, once each, and describe the
// bundle as Open does.
func TestStream(t *testing.T) {
	m := `{"formatVersion":1,"target":{"name":"j"},"files":[{"path":"logs/ml/p/c.log","bytes":2,"sha256":"` + sha("y\n") + `"}]}`
	p := writeTarGz(t, file("logs/ml/p/c.log", "x\n"), file("resources/core/Pod/ml/p.yaml", "kind: Pod\n"), file("manifest.json", m))
	opened, err := Open(t.Context(), p, DefaultLimits())
	require.NoError(t, err)
	defer opened.Close()
	dir := t.TempDir()
	for _, f := range opened.Files {
		data, err := fs.ReadFile(opened.FS, f.Path)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(f.Path)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.Path), data, 0o644))
	}
	for _, src := range []string{p, dir} {
		got := map[string]string{}
		var order []string
		b, err := Stream(t.Context(), src, DefaultLimits(), func(f File, r io.Reader) error {
			if f.Path == "resources/core/Pod/ml/p.yaml" {
				return nil // not read at all: fine
			}
			data, err := io.ReadAll(r)
			got[f.Path] = string(data)
			order = append(order, f.Path)
			return err
		})
		require.NoError(t, err)
		require.Nil(t, b.FS)
		require.Equal(t, opened.Files, b.Files)
		require.Equal(t, opened.Warnings, b.Warnings)
		require.Equal(t, []string{"logs/ml/p/c.log: sha256 differs from manifest.json (edited after collection?)"}, b.Warnings)
		require.Equal(t, "j", b.Manifest.Target.Name)
		require.Equal(t, map[string]string{"logs/ml/p/c.log": "x\n", "manifest.json": m}, got)
		require.Len(t, order, 2)
	}

	// fn's error names the file.
	_, err = Stream(t.Context(), p, DefaultLimits(), func(f File, r io.Reader) error { return fmt.Errorf("disk full") })
	require.EqualError(t, err, p+": logs/ml/p/c.log: disk full")
}

// TestManifestSizesOnly: under WithManifestSizesOnly a directory bundle's files are checked
// against manifest.json's sizes, not hashed for its sums (search shows no warning and would
// read every file for them); otherwise an edited file of the same size is warned about.
func TestManifestSizesOnly(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "logs", "ml", "p", "c.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(log), 0o755))
	require.NoError(t, os.WriteFile(log, []byte("x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "ml", "p", "d.log"), []byte("abc\n"), 0o644))
	manifest := `{"formatVersion":1,"files":[{"path":"logs/ml/p/c.log","bytes":2,"sha256":"` + sha("y\n") + `"},` +
		`{"path":"logs/ml/p/d.log","bytes":3,"sha256":"` + sha("abc\n") + `"}]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestName), []byte(manifest), 0o644))
	sized := "logs/ml/p/d.log: 4 bytes, manifest.json says 3 (edited after collection?)"

	b, err := Open(t.Context(), dir, DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, []string{sized, "logs/ml/p/c.log: sha256 differs from manifest.json (edited after collection?)"}, b.Warnings)

	b, err = Open(WithManifestSizesOnly(t.Context()), dir, DefaultLimits())
	require.NoError(t, err)
	require.Equal(t, []string{sized}, b.Warnings)
}
