package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"github.com/ulikunitz/xz"
)

// compressWith compresses data as c: gzip, xz and zstd with their Go writers, bzip2 with the
// bzip2 tool (the standard library only reads it).
func compressWith(t *testing.T, c Compression, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	var err error
	switch c {
	case Gzip:
		w = gzip.NewWriter(&b)
	case Xz:
		w, err = xz.NewWriter(&b)
	case Zstd:
		w, err = zstd.NewWriter(&b)
	case Bzip2:
		if _, err := exec.LookPath("bzip2"); err != nil {
			t.Skip("bzip2 is not installed (apt-get install bzip2): it makes the bzip2 inputs")
		}
		cmd := exec.Command("bzip2", "-c")
		cmd.Stdin = bytes.NewReader(data)
		out, err := cmd.Output()
		require.NoError(t, err)
		return out
	}
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

// extOf is the file name extension of a compression.
var extOf = map[Compression]string{Gzip: "gz", Xz: "xz", Zstd: "zst", Bzip2: "bz2"}

func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, name := range []string{"manifest.json", "logs/ml/p-0/c.log"} {
		body, ok := files[name]
		if !ok {
			continue
		}
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return b.Bytes()
}

// TestCompressedInputs: a tarball compressed with gzip, xz, zstd or bzip2 is a bundle, by its
// name or by its content; a compressed log is that log, whatever its name.
func TestCompressedInputs(t *testing.T) {
	log := "2026-03-14T10:00:00Z step 1\n2026-03-14T10:00:01Z torch.OutOfMemoryError: CUDA out of memory.\n"
	archive := tarOf(t, map[string]string{"logs/ml/p-0/c.log": log})
	for _, c := range []Compression{Gzip, Xz, Zstd, Bzip2} {
		t.Run(string(c), func(t *testing.T) {
			dir := t.TempDir()
			tarball := filepath.Join(dir, "bundle.tar."+extOf[c])
			require.NoError(t, os.WriteFile(tarball, compressWith(t, c, archive), 0o644))
			unnamed := filepath.Join(dir, "download")
			require.NoError(t, os.WriteFile(unnamed, compressWith(t, c, archive), 0o644))
			for _, p := range []string{tarball, unnamed} {
				require.True(t, IsBundlePath(p), p)
				b, err := Open(t.Context(), p, DefaultLimits())
				require.NoError(t, err)
				data, err := readAll(b, "logs/ml/p-0/c.log")
				require.NoError(t, err)
				require.Equal(t, log, string(data))
				require.NoError(t, b.Close())
				var streamed []string
				_, err = Stream(t.Context(), p, DefaultLimits(), func(f File, r io.Reader) error {
					streamed = append(streamed, f.Path)
					return nil
				})
				require.NoError(t, err)
				require.Equal(t, []string{"logs/ml/p-0/c.log"}, streamed)
			}

			rotated := filepath.Join(dir, "train.log."+extOf[c])
			require.NoError(t, os.WriteFile(rotated, compressWith(t, c, []byte(log)), 0o644))
			require.False(t, IsBundlePath(rotated), "a compressed log is not a bundle")
			b, err := OpenLogs(t.Context(), []string{rotated}, nil, DefaultLimits())
			require.NoError(t, err)
			defer b.Close()
			require.Equal(t, []File{{Path: "logs/_/train/main.log", Size: int64(len(log))}}, b.Files)
			data, err := readAll(b, "logs/_/train/main.log")
			require.NoError(t, err)
			require.Equal(t, log, string(data))
			require.Equal(t, "train.log."+extOf[c], b.PlainName("logs/_/train/main.log"))
		})
	}
}

func readAll(b *Bundle, name string) ([]byte, error) {
	f, err := b.FS.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// TestCompressedBombs: a compressed log or tarball that expands past the ratio is stopped at
// the limit, whatever its compression (the check is one for all: zstd stands for the others,
// whose Go writers take a minute to make a bomb).
func TestCompressedBombs(t *testing.T) {
	zeros := make([]byte, expansionFloor+16<<20)
	lim := DefaultLimits()
	for _, c := range []Compression{Zstd} {
		t.Run(string(c), func(t *testing.T) {
			dir := t.TempDir()
			bomb := compressWith(t, c, zeros)
			p := filepath.Join(dir, "huge.log."+extOf[c])
			require.NoError(t, os.WriteFile(p, bomb, 0o644))
			_, err := OpenLogs(t.Context(), []string{p}, nil, lim)
			var le *LimitError
			require.True(t, errors.As(err, &le), "%v", err)
			require.Equal(t, LimitExpansion, le.Kind)

			var tb bytes.Buffer
			tw := tar.NewWriter(&tb)
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: "logs/ml/p-0/c.log", Mode: 0o644, Size: int64(len(zeros)), Typeflag: tar.TypeReg}))
			_, err = tw.Write(zeros)
			require.NoError(t, err)
			require.NoError(t, tw.Close())
			tp := filepath.Join(dir, "bomb.tar."+extOf[c])
			require.NoError(t, os.WriteFile(tp, compressWith(t, c, tb.Bytes()), 0o644))
			_, err = Open(t.Context(), tp, lim)
			require.True(t, errors.As(err, &le), "%v", err)
			require.Equal(t, LimitExpansion, le.Kind)
			require.Contains(t, err.Error(), "of "+string(c)+" gave")
		})
	}
}
