package bundle

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coroner-dev/coroner/internal/samplegen"
)

// sparseBundle writes a bundle whose last log is a sparse entry of form, one hole of size bytes.
func sparseBundle(t *testing.T, form string, size int64) string {
	t.Helper()
	gz, err := samplegen.SparseTarGz([]samplegen.TarFile{
		{Name: "manifest.json", Data: `{"formatVersion":1,"target":{"apiVersion":"v1","kind":"Pod","namespace":"ml","name":"p"},"files":[]}`},
		{Name: "logs/ml/p/c.log", Data: "hello\n"},
	}, "logs/ml/p/hole.log", form, size)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "sparse.tar.gz")
	if err := os.WriteFile(p, gz, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A sparse entry is refused before its hole is read: archive/tar would fill it with zeros, and a
// tarball of a few hundred bytes would write gigabytes to the scratch directory (issue 22).
func TestSparseEntriesAreRefused(t *testing.T) {
	const size = 64 << 20 // within the default limits, and quick to write if it ever is
	for _, form := range samplegen.SparseForms {
		t.Run(form, func(t *testing.T) {
			p := sparseBundle(t, form, size)
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			stop := samplegen.PeakSize(tmp)
			b, err := Open(context.Background(), p, DefaultLimits())
			peak := stop()
			if err == nil {
				b.Close()
				t.Fatalf("Open accepted a sparse entry (peak scratch %d bytes)", peak)
			}
			want := p + ": logs/ml/p/hole.log: tar entry is a sparse file ("
			if msg := err.Error(); !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
				t.Fatalf("Open: %q, want one line starting %q", msg, want)
			}
			if peak > 1<<20 {
				t.Fatalf("Open wrote %d bytes to TMPDIR before refusing", peak)
			}

			var read int64
			_, err = Stream(context.Background(), p, DefaultLimits(), func(f File, r io.Reader) error {
				n, err := io.Copy(io.Discard, r)
				read += n
				return err
			})
			if err == nil || !strings.Contains(err.Error(), "logs/ml/p/hole.log: tar entry is a sparse file") {
				t.Fatalf("Stream: %v, want the sparse entry refused", err)
			}
			if read > 1<<10 {
				t.Fatalf("Stream read %d bytes before refusing", read)
			}
		})
	}
}
