package bundle

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
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

// FuzzGzipStream feeds arbitrary bytes to the gzip layer of the tarball reader and compares it
// with compress/gzip reading the same bytes to their end: when one reads them whole, so does
// the other, with the same bytes out (trailing bytes that are not gzip aside); a damaged
// stream is an error, never a different result.
func FuzzGzipStream(f *testing.F) {
	f.Add(sampleSeed(f, "pytorchjob-image-pull", "manifest.json"))
	two := append(tarGz(f, map[string][]byte{"a": []byte("hello\n")}, "a"), tarGz(f, map[string][]byte{"b": []byte("world\n")}, "b")...)
	f.Add(two)
	f.Add(append(tarGz(f, map[string][]byte{"a": []byte("x")}, "a"), 0, 0, 0, 0))
	f.Add(append(tarGz(f, map[string][]byte{"a": []byte("x")}, "a"), "trailing"...))
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want []byte
		var wantErr error
		if zr, err := gzip.NewReader(bytes.NewReader(data)); err != nil {
			wantErr = err
		} else {
			want, wantErr = io.ReadAll(io.LimitReader(zr, 1<<20))
		}
		a := &archive{lim: DefaultLimits(), in: &countReader{r: bytes.NewReader(data)}}
		a.br = bufio.NewReader(a.in)
		zr, err := gzip.NewReader(a.br)
		if err != nil {
			if wantErr == nil {
				t.Fatalf("compress/gzip reads it, the archive reader does not start: %v", err)
			}
			return
		}
		zr.Multistream(false)
		a.zr = zr
		got, err := io.ReadAll(io.LimitReader(a, 1<<20))
		switch {
		case err == nil && !bytes.Equal(got, want):
			// compress/gzip stops at the same place (at its end, or failing on what follows
			// the last member: trailing bytes), with the same bytes.
			t.Fatalf("read whole, but not the bytes compress/gzip reads: %d and %d (%v)", len(got), len(want), wantErr)
		case err != nil && wantErr == nil:
			t.Fatalf("compress/gzip reads it whole, the archive reader fails: %v", err)
		}
	})
}
