package bundle

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Writer writes a bundle as a gzip'd tar to a temporary file beside its final path, and renames it
// into place on Close. (Temporary: replaced by the shared writer of the redaction branch.)
type Writer struct {
	path, tmp string
	f         *os.File
	gz        *gzip.Writer
	tw        *tar.Writer
	mu        sync.Mutex
	files     map[string]FileEntry
	size      int64
}

func NewWriter(path string) (*Writer, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	gz := gzip.NewWriter(f)
	return &Writer{path: path, tmp: f.Name(), f: f, gz: gz, tw: tar.NewWriter(gz), files: map[string]FileEntry{}}, nil
}

func (w *Writer) WriteFile(name string, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.files[name]; dup {
		return fmt.Errorf("bundle: %s written twice", name)
	}
	h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := w.tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := w.tw.Write(data); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	w.files[name] = FileEntry{Path: name, Bytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	return nil
}

func (w *Writer) Close(m *Manifest) error {
	extra := map[string]FileEntry{}
	for _, f := range m.Files {
		extra[f.Path] = f
	}
	m.Files = m.Files[:0]
	for _, f := range w.files {
		if e, ok := extra[f.Path]; ok {
			f.Truncated, f.TruncatedBytes = e.Truncated, e.TruncatedBytes
		}
		m.Files = append(m.Files, f)
	}
	sort.Slice(m.Files, func(a, b int) bool { return m.Files[a].Path < m.Files[b].Path })
	data, err := json.MarshalIndent(m, "", "  ")
	if err == nil {
		err = w.WriteFile("manifest.json", append(data, '\n'))
	}
	if err == nil {
		err = w.tw.Close()
	}
	if err == nil {
		err = w.gz.Close()
	}
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(w.tmp); err == nil {
			w.size = st.Size()
			err = os.Rename(w.tmp, w.path)
		}
	}
	if err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	return nil
}

func (w *Writer) Size() int64 { return w.size }

func (w *Writer) Abort() {
	w.f.Close()
	os.Remove(w.tmp)
}
