package samplegen

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

// The hand-made headers are what archive/tar reads as sparse files: a hole of the declared size.
func TestSparseTarGzIsSparse(t *testing.T) {
	for _, form := range SparseForms {
		gz, err := SparseTarGz([]TarFile{{"a", "x"}}, "logs/ml/p/hole.log", form, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		if _, err := tr.Next(); err != nil {
			t.Fatal(form, err)
		}
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: %v", form, err)
		}
		n, err := io.Copy(io.Discard, tr)
		if err != nil || n != 1<<20 || hdr.Name != "logs/ml/p/hole.log" {
			t.Fatalf("%s: %s read as %d bytes (%v), want 1 MiB of hole", form, hdr.Name, n, err)
		}
	}
}
