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

// tarGz packs files the way collect would, for fuzz seeds.
func tarGz(tb testing.TB, files map[string][]byte, names ...string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range names {
		data := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// sampleSeed is a small bundle made of a sample's files: the fuzzer mutates it fast.
func sampleSeed(tb testing.TB, sample string, names ...string) []byte {
	files := map[string][]byte{}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("../samples", sample, n))
		if err != nil {
			tb.Fatal(err)
		}
		if len(data) > 2048 {
			data = data[len(data)-2048:]
		}
		files[n] = data
	}
	return tarGz(tb, files, names...)
}

func fuzzLimits() Limits {
	return Limits{MaxFileBytes: 64 << 10, MaxTotalBytes: 256 << 10, MaxEntries: 64, MaxLineBytes: 1 << 12, MaxResourceBytes: 64 << 10}
}

// FuzzOpen feeds arbitrary bytes to the tarball reader: it returns a bundle or an error, never
// panics, stays within its limits, and the files it lists are readable at their listed sizes.
func FuzzOpen(f *testing.F) {
	f.Add(sampleSeed(f, "pytorchjob-image-pull", "manifest.json", "resources/core/Pod/ml/train-job-worker-0.yaml"))
	f.Add(sampleSeed(f, "pytorchjob-shm-bus-error", "logs/ml/resnet-imagenet-worker-0/pytorch.log"))
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"))
	f.Add([]byte{})
	tmp := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(tmp, "in.tar.gz")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := Open(t.Context(), p, fuzzLimits())
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
