package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// tarGzDir packs a directory the way collect would, for fuzz seeds.
func tarGzDir(tb testing.TB, dir string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func fuzzLimits() Limits {
	return Limits{MaxFileBytes: 4 << 20, MaxTotalBytes: 8 << 20, MaxEntries: 2000, MaxLineBytes: 1 << 16, MaxResourceBytes: 1 << 20}
}

// FuzzOpen feeds arbitrary bytes to the tarball reader: it returns a bundle or an error, never
// panics, never leaves its extraction directory behind, and the files it lists are readable.
func FuzzOpen(f *testing.F) {
	f.Add(tarGzDir(f, "../samples/pytorchjob-image-pull"))
	f.Add(tarGzDir(f, "../samples/trainjob-missing-runtime"))
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"))
	f.Add([]byte{})
	tmp := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(tmp, "in.tar.gz")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := Open(p, fuzzLimits())
		if err != nil {
			if b != nil {
				t.Fatal("a bundle and an error")
			}
			return
		}
		defer b.Close()
		var total int64
		for _, file := range b.Files {
			data, err := fs.ReadFile(b.FS, file.Path)
			if err != nil {
				t.Fatalf("listed file %s is unreadable: %v", file.Path, err)
			}
			if int64(len(data)) != file.Size {
				t.Fatalf("%s: listed as %d bytes, holds %d", file.Path, file.Size, len(data))
			}
			total += file.Size
		}
		if total > fuzzLimits().MaxTotalBytes {
			t.Fatalf("extracted %d bytes, over the limit", total)
		}
	})
}

// FuzzParseManifest: any bytes give a manifest or an error, never a panic.
func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{"pytorchjob-cuda-oom-rank", "trainjob-dataset-init-failed", "pytorchjob-succeeded"} {
		data, err := os.ReadFile(filepath.Join("../samples", s, "manifest.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"formatVersion":1,"files":[{"path":"a","bytes":-1,"sha256":"zz"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		if m.FormatVersion != FormatVersion {
			t.Fatalf("accepted formatVersion %d", m.FormatVersion)
		}
		for _, e := range m.Files {
			if m.File(e.Path) == nil {
				t.Fatalf("File(%q) is nil", e.Path)
			}
		}
	})
}
