package bundle

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/coroner-dev/coroner/internal/samplegen"
)

// FuzzTarHeader feeds arbitrary tar bytes (gzip'd here, so the fuzzer works on the headers) to
// the tarball reader. It never panics, and never hands out more bytes than the archive holds:
// every size a header declares is a claim (a sparse file's hole, a size past the data), so the
// files' bytes, even before an error, add up to at most the tar's length and the limits.
func FuzzTarHeader(f *testing.F) {
	files := []samplegen.TarFile{{Name: "manifest.json", Data: `{"formatVersion":1,"files":[]}`}, {Name: "logs/ml/p/c.log", Data: "hello\n"}}
	for _, form := range samplegen.SparseForms {
		gz, err := samplegen.SparseTarGz(files, "logs/ml/p/hole.log", form, 32<<10)
		if err != nil {
			f.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			f.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add(make([]byte, 1024))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
		zw.Write(raw)
		zw.Close()
		lim := fuzzLimits()
		var total int64
		res, err := readTarball(t.Context(), &gz, lim, func(tf *tarFile) error {
			if tf.Size < 0 || tf.Size > lim.MaxFileBytes {
				t.Fatalf("%s: visited with a size of %d", tf.Name, tf.Size)
			}
			n, err := io.Copy(io.Discard, io.LimitReader(tf, lim.MaxFileBytes+1))
			total += n
			if n > lim.MaxFileBytes {
				t.Fatalf("%s: %d bytes read, over the file limit", tf.Name, n)
			}
			return err
		})
		if total > int64(len(raw)) || total > lim.MaxTotalBytes {
			t.Fatalf("%d bytes handed out from a tar of %d bytes (err %v)", total, len(raw), err)
		}
		if err == nil {
			for _, file := range res.files {
				if file.Size < 0 || file.Size > lim.MaxFileBytes {
					t.Fatalf("%s: listed with %d bytes", file.Path, file.Size)
				}
			}
		}
	})
}
