package bundle

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/internal/scratch"
)

// Limits bound what is read from a bundle. Bundles come from strangers: every limit has a
// default and is a flag of the commands that read bundles.
type Limits struct {
	MaxFileBytes     int64 // one file, uncompressed
	MaxTotalBytes    int64 // all files, uncompressed
	MaxEntries       int   // files and directories
	MaxLineBytes     int   // one log line; longer lines are cut and reported
	MaxResourceBytes int64 // one resource YAML or the manifest
}

// DefaultLimits fit a large real bundle (64 ranks, several GiB of logs) with room to spare.
func DefaultLimits() Limits {
	return Limits{
		MaxFileBytes:     4 << 30,
		MaxTotalBytes:    32 << 30,
		MaxEntries:       200_000,
		MaxLineBytes:     1 << 20,
		MaxResourceBytes: 16 << 20,
	}
}

// LimitKind names one of the Limits, so that a caller can say how to raise it.
type LimitKind int

// The limits of Limits, one kind each.
const (
	LimitFileBytes LimitKind = iota + 1
	LimitTotalBytes
	LimitEntries
	LimitLineBytes
	LimitResourceBytes
)

var limitNames = map[LimitKind]string{
	LimitFileBytes:     "file size limit",
	LimitTotalBytes:    "bundle size limit",
	LimitEntries:       "entry count limit",
	LimitLineBytes:     "line length limit",
	LimitResourceBytes: "resource size limit",
}

func (k LimitKind) String() string {
	if n, ok := limitNames[k]; ok {
		return n
	}
	return fmt.Sprintf("limit(%d)", int(k))
}

// LimitError reports a bound that a bundle exceeded. Kind says which; the caller knows how the
// user raises it.
type LimitError struct {
	What  string
	Limit int64
	Kind  LimitKind
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s exceeds the %s of %d", e.What, e.Kind, e.Limit)
}

// File is one regular file of an opened bundle.
type File struct {
	Path string
	Size int64
}

// Bundle is an opened bundle. Read its files through FS.
type Bundle struct {
	// Source is the path the user named.
	Source string
	// FS holds the bundle tree: manifest.json, resources/, logs/.
	FS fs.FS
	// Manifest is nil when the bundle has none (it is still readable).
	Manifest *Manifest
	// Files lists every regular file, sorted by path.
	Files []File
	// Warnings are problems that did not stop the bundle from being read.
	Warnings []string
	// Plain is true when the bundle was made from plain log files.
	Plain  bool
	Limits Limits

	// sums holds the sha256 of the files extracted from a tarball, computed while extracting.
	sums    map[string]string
	cleanup func() error
}

// Close releases what Open made (the extracted tree of a tarball).
func (b *Bundle) Close() error {
	if b.cleanup == nil {
		return nil
	}
	err := b.cleanup()
	b.cleanup = nil
	return err
}

// Open opens a bundle directory or a .tar.gz/.tgz file. A cancelled ctx stops it (and removes
// what it extracted) with ctx's error.
func Open(ctx context.Context, p string, lim Limits) (*Bundle, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	var b *Bundle
	if st.IsDir() {
		b, err = openDir(ctx, p, lim)
	} else {
		b, err = openTarball(ctx, p, lim)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err := b.readManifest(); err != nil {
		b.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return b, nil
}

// IsBundlePath reports whether p looks like a bundle (a directory or a gzip file)
// rather than a plain log file.
func IsBundlePath(p string) bool {
	st, err := os.Stat(p)
	if err != nil {
		return false
	}
	if st.IsDir() {
		return true
	}
	if strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz") {
		return true
	}
	if !st.Mode().IsRegular() {
		return false // a FIFO or a device: read as a plain log, never opened twice
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [2]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && magic[0] == 0x1f && magic[1] == 0x8b
}

func openDir(ctx context.Context, dir string, lim Limits) (*Bundle, error) {
	b := &Bundle{Source: dir, FS: os.DirFS(dir), Limits: lim}
	var total int64
	entries := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		entries++
		if entries > lim.MaxEntries {
			return &LimitError{What: "number of entries", Limit: int64(lim.MaxEntries), Kind: LimitEntries}
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: is a symbolic link; bundles hold regular files only", rel)
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: is not a regular file", rel)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := checkSize(rel, info.Size(), &total, lim); err != nil {
			return err
		}
		b.Files = append(b.Files, File{Path: rel, Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortFiles(b.Files)
	return b, nil
}

func checkSize(name string, size int64, total *int64, lim Limits) error {
	if size > lim.MaxFileBytes {
		return &LimitError{What: name + ": size", Limit: lim.MaxFileBytes, Kind: LimitFileBytes}
	}
	*total += size
	if *total > lim.MaxTotalBytes {
		return &LimitError{What: "total uncompressed size", Limit: lim.MaxTotalBytes, Kind: LimitTotalBytes}
	}
	return nil
}

func sortFiles(fs []File) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
}

// extractPrefix names the directories tarballs are extracted into, in the temporary directory.
const extractPrefix = "coroner-bundle-"

// openTarball extracts a gzip'd tar into a private temporary directory, refusing anything
// that is not a plain relative file or directory, and enforcing the limits while it reads
// (a gzip bomb stops at the limit, not at the end of the disk).
func openTarball(ctx context.Context, file string, lim Limits) (b *Bundle, err error) {
	f, err := openFile(ctx, file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer interruptible(ctx, f)()
	zr, err := gzip.NewReader(bufio.NewReader(ctxReader{ctx, f}))
	if err != nil {
		return nil, fmt.Errorf("not a gzip file: %w", err)
	}
	scratch.Sweep("", extractPrefix)
	dir, err := scratch.MkdirTemp("", extractPrefix+"*")
	if err != nil {
		return nil, err
	}
	tmp := dir.Path
	defer func() {
		if err != nil {
			dir.Remove()
		}
	}()
	b = &Bundle{Source: file, FS: os.DirFS(tmp), Limits: lim, sums: map[string]string{}, cleanup: dir.Remove}
	tr := tar.NewReader(zr)
	seen := map[string]bool{}
	var total int64
	entries := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("reading tar: %w", err)
		}
		entries++
		if entries > lim.MaxEntries {
			return nil, &LimitError{What: "number of entries", Limit: int64(lim.MaxEntries), Kind: LimitEntries}
		}
		name, err := cleanEntryName(hdr.Name)
		if err != nil {
			return nil, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if name != "." {
				if err := os.MkdirAll(filepath.Join(tmp, filepath.FromSlash(name)), 0o700); err != nil {
					return nil, err
				}
			}
			continue
		case tar.TypeReg: // the reader already turns the legacy TypeRegA into TypeReg or TypeDir
		case tar.TypeSymlink, tar.TypeLink:
			return nil, fmt.Errorf("%s: tar entry is a link; bundles hold regular files only", name)
		case tar.TypeXGlobalHeader:
			continue
		default:
			return nil, fmt.Errorf("%s: tar entry of type %q is not a regular file", name, hdr.Typeflag)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: duplicate path in tar", name)
		}
		seen[name] = true
		if err := checkSize(name, hdr.Size, &total, lim); err != nil {
			return nil, err
		}
		dst := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return nil, err
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		// Copy one byte more than the header claims so a lying header is caught.
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(tr, hdr.Size+1))
		cerr := out.Close()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("%s: archive ends in the middle of this file (truncated download?)", name)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if cerr != nil {
			return nil, cerr
		}
		if n != hdr.Size {
			return nil, fmt.Errorf("%s: tar entry holds %d bytes, header says %d", name, n, hdr.Size)
		}
		b.Files = append(b.Files, File{Path: name, Size: n})
		b.sums[name] = hex.EncodeToString(h.Sum(nil))
	}
	sortFiles(b.Files)
	return b, nil
}

// openFile opens a file for reading. Opening a FIFO waits for its writer, which may never
// come: a cancelled ctx returns at once.
func openFile(ctx context.Context, p string) (*os.File, error) {
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return os.Open(p)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(p)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// interruptible makes a read of f that waits for data (a pipe, a FIFO, a socket) return once
// ctx is done; it returns the function that stops watching ctx.
func interruptible(ctx context.Context, f *os.File) func() {
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

// ctxReader ends a read loop once ctx is done: every Read checks it first.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// cleanEntryName accepts only relative, slash-separated paths without "..".
func cleanEntryName(name string) (string, error) {
	if name == "" {
		return "", errors.New("tar entry with an empty name")
	}
	if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || (len(name) > 1 && name[1] == ':') {
		return "", fmt.Errorf("%s: absolute path in tar; refusing the archive", name)
	}
	for _, part := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if part == ".." {
			return "", fmt.Errorf("%s: path escapes the bundle (\"..\"); refusing the archive", name)
		}
	}
	clean := path.Clean(name)
	if strings.ContainsRune(clean, 0) {
		return "", fmt.Errorf("%q: NUL byte in tar entry name", name)
	}
	clean = strings.TrimPrefix(clean, "./")
	return clean, nil
}

func (b *Bundle) readManifest() error {
	const name = "manifest.json"
	st, err := fs.Stat(b.FS, name)
	if errors.Is(err, fs.ErrNotExist) {
		b.Warnings = append(b.Warnings, "manifest.json is missing: target, options and collection gaps are unknown")
		return nil
	}
	if err != nil {
		return err
	}
	if st.Size() > b.Limits.MaxResourceBytes {
		return &LimitError{What: name + ": size", Limit: b.Limits.MaxResourceBytes, Kind: LimitResourceBytes}
	}
	data, err := fs.ReadFile(b.FS, name)
	if err != nil {
		return err
	}
	m, err := ParseManifest(data)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	b.Manifest = m
	b.checkManifest()
	return nil
}

// checkManifest compares the manifest with what the bundle holds. A mismatch is a warning:
// the files are still analyzed, but the reader should know the bundle was edited.
func (b *Bundle) checkManifest() {
	have := map[string]int64{}
	for _, f := range b.Files {
		have[f.Path] = f.Size
	}
	for _, e := range b.Manifest.Files {
		size, ok := have[e.Path]
		switch {
		case !ok:
			b.Warnings = append(b.Warnings, fmt.Sprintf("manifest.json lists %s but the bundle does not hold it", e.Path))
		case size != e.Bytes:
			b.Warnings = append(b.Warnings, fmt.Sprintf("%s: %d bytes, manifest.json says %d (edited after collection?)", e.Path, size, e.Bytes))
		case e.SHA256 != "":
			sum, err := b.sha256(e.Path)
			switch {
			case err != nil:
				b.Warnings = append(b.Warnings, fmt.Sprintf("%s: checking sha256: %v", e.Path, err))
			case !strings.EqualFold(sum, e.SHA256):
				b.Warnings = append(b.Warnings, fmt.Sprintf("%s: sha256 differs from manifest.json (edited after collection?)", e.Path))
			}
		}
	}
}

// sha256 returns the hex sha256 of a file: computed while extracting a tarball, read for a
// directory.
func (b *Bundle) sha256(name string) (string, error) {
	if s, ok := b.sums[name]; ok {
		return s, nil
	}
	f, err := b.FS.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
