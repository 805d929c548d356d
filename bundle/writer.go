package bundle

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coroner-dev/coroner/internal/outfile"
	"github.com/coroner-dev/coroner/internal/scratch"
)

// ManifestName is the path of the manifest inside a bundle.
const ManifestName = "manifest.json"

// Writer writes a bundle tarball: a gzip'd tar under a temporary name beside the final path,
// renamed into place by Close once complete, so an interrupted run never leaves a half
// bundle under the final name. The same files in the same order give the same bytes: entries
// have fixed modes, owners and times. It is safe for concurrent use; entries are written in
// the order they are completed (WriteFile returns, or a Create's Close).
type Writer struct {
	path string
	out  *outfile.File
	buf  *bufio.Writer
	zw   *gzip.Writer
	tw   *tar.Writer

	mu      sync.Mutex
	files   []FileEntry
	names   map[string]bool
	spools  map[*entryWriter]bool
	err     error
	closed  bool
	aborted bool
}

// NewWriter starts a bundle that Close will create at path (see internal/outfile: a regular
// file is replaced only when complete, a device or pipe is written as a stream, a link is
// refused).
func NewWriter(p string) (*Writer, error) {
	f, err := outfile.Create(p)
	if err != nil {
		return nil, err
	}
	scratch.Sweep("", spoolPrefix) // what a killed run left where spools cannot be unlinked open
	w := &Writer{path: p, out: f, names: map[string]bool{}, spools: map[*entryWriter]bool{}}
	w.buf = bufio.NewWriterSize(f, 256<<10)
	w.zw = gzip.NewWriter(w.buf) // no name, no time: deterministic
	w.tw = tar.NewWriter(w.zw)
	return w, nil
}

// epoch is the modification time of every entry.
var epoch = time.Unix(0, 0).UTC()

// checkName accepts the paths a bundle may hold: relative, slash-separated, clean.
func checkName(name string) error {
	switch {
	case name == "" || name == ".":
		return errors.New("empty file name")
	case strings.HasPrefix(name, "/") || strings.Contains(name, "\\"):
		return fmt.Errorf("%q: bundle paths are relative and slash-separated", name)
	case path.Clean(name) != name || strings.HasPrefix(name, "../") || name == "..":
		return fmt.Errorf("%q: not a clean path inside the bundle", name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("%q: NUL byte in file name", name)
	case name == ManifestName:
		return fmt.Errorf("%s is written by Close", ManifestName)
	}
	return nil
}

// reserve claims a name, or says why it cannot be written.
func (w *Writer) reserve(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed || w.aborted:
		return errors.New("bundle writer is closed")
	case w.err != nil:
		return w.err
	case w.names[name]:
		return fmt.Errorf("%s: written twice", name)
	}
	w.names[name] = true
	return nil
}

// WriteFile adds a file.
func (w *Writer) WriteFile(name string, data []byte) error {
	if err := w.reserve(name); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.entry(name, int64(len(data)), hex.EncodeToString(sum[:]), func(tw io.Writer) error {
		_, err := tw.Write(data)
		return err
	})
}

// entry writes one tar entry; w.mu is held.
func (w *Writer) entry(name string, size int64, sum string, body func(io.Writer) error) error {
	if w.err != nil {
		return w.err
	}
	hdr := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: epoch, Format: tar.FormatPAX}
	if w.err = w.tw.WriteHeader(hdr); w.err == nil {
		w.err = body(w.tw)
	}
	if w.err != nil {
		w.err = fmt.Errorf("writing %s: %w", name, w.err)
		return w.err
	}
	w.files = append(w.files, FileEntry{Path: name, Bytes: size, SHA256: sum})
	return nil
}

// Symlink adds a symbolic link at name to target, a file already written (a support bundle
// links a logs collector's files into cluster-resources/: see Link). The link is relative, so
// that it resolves inside the bundle wherever it is extracted.
func (w *Writer) Symlink(name, target string) error {
	if err := checkName(target); err != nil {
		return err
	}
	if err := w.reserve(name); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.err != nil:
		return w.err
	case !w.written(target):
		return fmt.Errorf("%s: a link to %s, which the bundle does not hold", name, target)
	}
	rel, err := filepath.Rel(path.Dir(name), target)
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: filepath.ToSlash(rel), Mode: 0o777, ModTime: epoch, Format: tar.FormatPAX}
	if w.err = w.tw.WriteHeader(hdr); w.err != nil {
		w.err = fmt.Errorf("writing %s: %w", name, w.err)
	}
	return w.err
}

// written reports whether a regular file was written at name; w.mu is held.
func (w *Writer) written(name string) bool {
	for _, f := range w.files {
		if f.Path == name {
			return true
		}
	}
	return false
}

// Create adds a file written in a stream. Its bytes are spooled to a private temporary file
// (a tar entry needs its size first) and added to the bundle when the writer is closed. The
// spool's name is removed as soon as it is open, so that it cannot outlive the process, even
// one killed outright; where an open file cannot be removed, the next start sweeps it.
func (w *Writer) Create(name string) (io.WriteCloser, error) {
	if err := w.reserve(name); err != nil {
		return nil, err
	}
	f, err := scratch.CreateTemp("", spoolPrefix+"*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // read back through f alone (see entryWriter.Close)
	ew := &entryWriter{w: w, name: name, f: f, h: sha256.New()}
	ew.buf = bufio.NewWriterSize(io.MultiWriter(f, ew.h), 64<<10)
	w.mu.Lock()
	w.spools[ew] = true
	w.mu.Unlock()
	return ew, nil
}

// spoolPrefix names the spools of Create in the temporary directory.
const spoolPrefix = "coroner-entry-"

type entryWriter struct {
	w    *Writer
	name string
	f    *scratch.File
	h    hash.Hash
	buf  *bufio.Writer
	n    int64
	done bool
}

func (e *entryWriter) Write(p []byte) (int, error) {
	if e.done {
		return 0, fmt.Errorf("%s: write after close", e.name)
	}
	n, err := e.buf.Write(p)
	e.n += int64(n)
	return n, err
}

// Close adds the spooled file to the bundle.
func (e *entryWriter) Close() error {
	if e.done {
		return nil
	}
	e.done = true
	defer func() {
		e.f.Remove()
		e.w.mu.Lock()
		delete(e.w.spools, e)
		e.w.mu.Unlock()
	}()
	if err := e.buf.Flush(); err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	if _, err := e.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	if e.w.closed || e.w.aborted {
		return errors.New("bundle writer is closed")
	}
	return e.w.entry(e.name, e.n, hex.EncodeToString(e.h.Sum(nil)), func(tw io.Writer) error {
		n, err := io.Copy(tw, e.f)
		if err == nil && n != e.n {
			err = fmt.Errorf("spool holds %d bytes, %d were written", n, e.n)
		}
		return err
	})
}

// Close completes the bundle: it fills m.Files with the path, size and sha256 of every file
// written (sorted by path, keeping the Truncated fields the caller set), writes manifest.json
// as the last entry, and renames the tarball into place. A file still open from Create is an
// error. After an error the bundle is aborted.
func (w *Writer) Close(m *Manifest) error {
	w.mu.Lock()
	if w.closed || w.aborted {
		w.mu.Unlock()
		return errors.New("bundle writer is closed")
	}
	open := []string{}
	for e := range w.spools {
		open = append(open, e.name)
	}
	err := w.err
	w.mu.Unlock()
	if err == nil && len(open) > 0 {
		sort.Strings(open)
		err = fmt.Errorf("%s: still open when the bundle was closed", strings.Join(open, ", "))
	}
	if err == nil {
		err = w.finish(m)
	}
	if err != nil {
		w.Abort()
		return err
	}
	return nil
}

func (w *Writer) finish(m *Manifest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m.FormatVersion == 0 {
		m.FormatVersion = FormatVersion
	}
	given := map[string]FileEntry{}
	for _, f := range m.Files {
		given[f.Path] = f
	}
	files := append([]FileEntry(nil), w.files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for i := range files {
		if g, ok := given[files[i].Path]; ok {
			files[i].Truncated, files[i].TruncatedBytes = g.Truncated, g.TruncatedBytes
		}
	}
	m.Files = files
	if m.Errors == nil {
		m.Errors = []Gap{}
	}
	if m.Redaction.Rules == nil {
		m.Redaction.Rules = []RedactionRule{}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	sum := sha256.Sum256(data)
	files = w.files
	if err := w.entry(ManifestName, int64(len(data)), hex.EncodeToString(sum[:]), func(tw io.Writer) error {
		_, err := tw.Write(data)
		return err
	}); err != nil {
		return err
	}
	w.files = files // the manifest does not list itself
	for _, step := range []func() error{w.tw.Close, w.zw.Close, w.buf.Flush} {
		if err := step(); err != nil {
			return fmt.Errorf("writing %s: %w", w.path, err)
		}
	}
	if err := w.out.Commit(); err != nil {
		return err
	}
	w.closed = true
	return nil
}

// Abort drops the bundle: the temporary file and spools are removed, nothing is renamed.
// It may be called after Close (it then does nothing), so `defer w.Abort()` is safe.
func (w *Writer) Abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.aborted {
		return
	}
	w.aborted = true
	for e := range w.spools {
		e.f.Remove()
	}
	w.out.Abort()
}
