package index

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index/gzindex"
)

// A bundle tarball's index can be used without extracting the tarball: the index of a
// tarball also holds where each log is in the tarball's decompressed stream, and access
// points into that stream (package gzindex), so that the lines a search shows or checks are
// decompressed from the nearest point. OpenTarball finds the index from the tarball file
// itself (its path, size, times and inode, as for a directory's logs).

// tarSpan is how much decompressed output lies between two access points: reading a line
// back decompresses at most this much.
const tarSpan = 1 << 20

// tarSpans is how many decompressed spans a tarball's reader keeps (about tarSpan each): a
// search that reads lines of many logs in time order decompresses each span once.
const tarSpans = 16

const tarballMagic = "coroner-index-tarball 2\n"

// maxTarResources bounds the resources (objects and events) a tarball's index keeps, so that a
// search reads them without decompressing the tarball; past it, search streams them.
const maxTarResources = 64 << 20

// tarEntry is where a file's data is in the tarball's decompressed stream.
type tarEntry struct {
	off, size int64
}

// isTarball reports whether a bundle was read from a tarball file.
func isTarball(source string, plain bool) bool {
	if plain {
		return false
	}
	info, err := os.Stat(source)
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	// Only a gzip'd tarball has access points; one compressed otherwise is read extracted.
	f, err := os.Open(source)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [2]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && magic[0] == 0x1f && magic[1] == 0x8b
}

// tarballSig is the signature of the tarball file a bundle was read from, which names its
// index in the cache (see Cache's stat entries).
func tarballSig(file string) []fileSig {
	info, err := os.Stat(file)
	if err != nil {
		return []fileSig{{Size: -1}}
	}
	abs, _ := filepath.Abs(file)
	sig := fileSig{Path: abs, Size: info.Size(), Mtime: info.ModTime().UnixNano()}
	sig.Ino, sig.Ctime = bundle.ChangeTime(info)
	return []fileSig{sig}
}

// indexTarball decompresses a tarball once more and encodes its access points and where
// each log is in it. It runs beside the scan of the extracted logs.
func indexTarball(ctx context.Context, file string, logs []bundle.LogStream) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pr, pw := io.Pipe()
	done := make(chan struct{})
	var gix *gzindex.Index
	var gerr error
	go func() {
		defer close(done)
		gix, gerr = gzindex.Build(bufio.NewReaderSize(ctxReader{ctx, f}, 64<<10), pw, tarSpan)
		pw.CloseWithError(gerr)
	}()
	cr := &countingReader{r: pr}
	tr := tar.NewReader(cr)
	found := map[string]tarEntry{}
	var resources []tarResource
	var resBytes int64
	keep := true
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			pr.CloseWithError(err)
			<-done
			return nil, err
		}
		if err := bundle.SparseEntry(hdr); err != nil {
			// bundle.Open refused it; the file was replaced since.
			pr.CloseWithError(err)
			<-done
			return nil, err
		}
		if hdr.Typeflag == tar.TypeReg {
			name := strings.TrimPrefix(path.Clean(hdr.Name), "./")
			found[name] = tarEntry{off: cr.n, size: hdr.Size}
			if rel, ok := resourcePath(name); ok && keep {
				if resBytes += hdr.Size; resBytes > maxTarResources {
					keep, resources = false, nil
					continue
				}
				data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
				if err != nil {
					pr.CloseWithError(err)
					<-done
					return nil, err
				}
				resources = append(resources, tarResource{path: rel, data: data})
			}
		}
	}
	io.Copy(io.Discard, cr) // the end of the archive, up to the gzip trailer
	<-done
	if gerr != nil {
		return nil, gerr
	}
	// A bundle's paths are the entries' names, or their names below one top folder.
	entries := make([]tarEntry, len(logs))
	for i, ls := range logs {
		e, ok := found[ls.Path]
		if !ok {
			for name, fe := range found {
				if _, rest, cut := strings.Cut(name, "/"); cut && rest == ls.Path {
					if ok {
						return nil, fmt.Errorf("%s: two tar entries hold it", ls.Path)
					}
					e, ok = fe, true
				}
			}
		}
		if !ok {
			return nil, fmt.Errorf("%s: no tar entry holds it", ls.Path)
		}
		entries[i] = e
	}
	enc, err := gix.Encode()
	if err != nil {
		return nil, err
	}
	b := []byte(tarballMagic)
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(e.off))
		b = binary.AppendUvarint(b, uint64(e.size))
	}
	b = appendBool(b, keep)
	sort.Slice(resources, func(i, j int) bool { return resources[i].path < resources[j].path })
	b = binary.AppendUvarint(b, uint64(len(resources)))
	for _, r := range resources {
		b = appendString(b, r.path)
		b = appendBytes(b, r.data)
	}
	return append(b, enc...), nil
}

// tarResource is a resource file (an object or the events) a tarball's index keeps.
type tarResource struct {
	path string
	data []byte
}

// resourcePath is the bundle path of a tar entry under resources/, itself or below one top
// folder (what 'tar czf x.tgz dir' makes).
func resourcePath(name string) (string, bool) {
	if strings.HasPrefix(name, "resources/") {
		return name, true
	}
	if _, rest, ok := strings.Cut(name, "/"); ok && strings.HasPrefix(rest, "resources/") {
		return rest, true
	}
	return "", false
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

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

// tarFS reads a bundle's logs from its tarball, through the tarball's access points.
type tarFS struct {
	f       *os.File
	gix     *gzindex.Index
	spans   *gzindex.SpanReader
	entries map[string]tarEntry
	// resources are the tarball's resource files, when resourcesKept (see maxTarResources).
	resources     map[string][]byte
	resourcesKept bool
}

func decodeTarball(data []byte, streams []*Stream, f *os.File) (*tarFS, error) {
	if len(data) < len(tarballMagic) || string(data[:len(tarballMagic)]) != tarballMagic {
		return nil, fmt.Errorf("tarball: %w", errCorrupt)
	}
	d := &decoder{b: data[len(tarballMagic):]}
	n := d.count()
	if d.err == nil && n != len(streams) {
		d.fail()
	}
	t := &tarFS{f: f, entries: map[string]tarEntry{}}
	for i := 0; i < n && d.err == nil; i++ {
		e := tarEntry{off: int64(d.uvarint()), size: int64(d.uvarint())}
		if e.size != streams[i].Bytes {
			d.fail()
		}
		t.entries[streams[i].Path] = e
	}
	t.resourcesKept = d.bool()
	nres := d.count()
	t.resources = make(map[string][]byte, nres)
	for i := 0; i < nres && d.err == nil; i++ {
		p := d.string()
		t.resources[p] = d.bytes()
	}
	if d.err != nil {
		return nil, fmt.Errorf("tarball: %w", d.err)
	}
	gix, err := gzindex.Decode(d.b)
	if err != nil {
		return nil, fmt.Errorf("tarball: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if gix.Compressed != info.Size() {
		return nil, errors.New("the tarball is not the one indexed")
	}
	for _, e := range t.entries {
		if e.off+e.size > gix.Size {
			return nil, fmt.Errorf("tarball: %w", errCorrupt)
		}
	}
	t.gix = gix
	t.spans = gzindex.NewSpanReader(gix, f, tarSpans)
	return t, nil
}

func (t *tarFS) Open(name string) (fs.File, error) {
	e, ok := t.entries[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &tarFile{name: name, e: e, r: t.spans}, nil
}

func (t *tarFS) Close() error {
	t.spans.Close()
	return t.f.Close()
}

// tarFile is one log of a tarball, read at any offset.
type tarFile struct {
	name string
	e    tarEntry
	r    *gzindex.SpanReader // the tarball's, shared by its files
	pos  int64
}

func (f *tarFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.e.size {
		return 0, io.EOF
	}
	want := p
	if rest := f.e.size - off; int64(len(want)) > rest {
		want = want[:rest]
	}
	n, err := f.r.ReadAt(want, f.e.off+off)
	if err == nil && len(want) < len(p) {
		err = io.EOF
	}
	return n, err
}

func (f *tarFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *tarFile) Stat() (fs.FileInfo, error) { return tarInfo{f}, nil }

func (f *tarFile) Close() error { return nil } // the tarFS holds the reader

type tarInfo struct{ f *tarFile }

func (i tarInfo) Name() string       { return path.Base(i.f.name) }
func (i tarInfo) Size() int64        { return i.f.e.size }
func (i tarInfo) Mode() fs.FileMode  { return 0o444 }
func (i tarInfo) ModTime() time.Time { return time.Time{} }
func (i tarInfo) IsDir() bool        { return false }
func (i tarInfo) Sys() any           { return nil }

// tarballName is the file, in an index's directory, of a tarball's access points: one per
// tarball file (named by its signature) holding these logs. It is not listed in meta.json,
// so that it can be added to an index already in the cache; it carries its own checksum.
func tarballName(sigs []fileSig) string {
	return tarballPrefix + sigsHash(sigs)[:32] + ".bin"
}

const tarballPrefix = "tarball-"

// writeTarball adds a tarball's access points to an index's directory.
func writeTarball(dir string, sigs []fileSig, data []byte) error {
	data = binary.LittleEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
	return writeAtomic(filepath.Join(dir, tarballName(sigs)), data)
}

// readTarball reads a tarball's access points, checked.
func readTarball(dir string, sigs []fileSig) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, tarballName(sigs)))
	if err != nil {
		return nil, err
	}
	if len(data) < 4 || crc32.Checksum(data[:len(data)-4], castagnoli) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, fmt.Errorf("%s: %w", tarballName(sigs), errCorrupt)
	}
	return data[:len(data)-4], nil
}

// tarPass runs indexTarball in the background; wait returns its result.
type tarPass struct {
	done   chan struct{}
	data   []byte
	err    error
	cancel context.CancelFunc
}

func startTarPass(ctx context.Context, file string, logs []bundle.LogStream) *tarPass {
	ctx, cancel := context.WithCancel(ctx)
	p := &tarPass{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.done)
		p.data, p.err = indexTarball(ctx, file, logs)
	}()
	return p
}

func (p *tarPass) wait() ([]byte, error) {
	if p == nil {
		return nil, errors.New("no tarball pass")
	}
	<-p.done
	p.cancel()
	return p.data, p.err
}

// stop ends the pass (the build failed).
func (p *tarPass) stop() {
	if p != nil {
		p.cancel()
		<-p.done
	}
}

// OpenTarball opens the cached index of a bundle tarball without extracting it: the index
// an earlier analyze or search of the same tarball file (same path, size, times and inode)
// left, with the access points to read its logs back. It returns nil, nil when the cache
// holds none; the index reads lines from the tarball, which it keeps open until Close.
func OpenTarball(c *Cache, file, version string, maxLine int) (*Index, error) {
	if c == nil || !isTarball(file, false) {
		return nil, nil
	}
	source, _ := filepath.Abs(file)
	sigs := tarballSig(file)
	e := c.readStat(source)
	if e == nil || e.Version != version || e.MaxLine != maxLine || e.Files != sigsHash(sigs) || !validKey(e.Key) {
		return nil, nil
	}
	dir := filepath.Join(c.Dir, e.Key)
	data, err := readTarball(dir, sigs)
	if err != nil {
		return nil, nil
	}
	want := meta{Format: FormatVersion, Version: version, Key: e.Key, MaxLine: maxLine, Streams: -1}
	ix, err := openDir(dir, nil, true, &want)
	if err != nil {
		return nil, nil // the slow way (extracting) rebuilds or repairs it
	}
	f, err := os.Open(file)
	if err != nil {
		ix.Close()
		return nil, err
	}
	tfs, err := decodeTarball(data, ix.streams, f)
	if err != nil {
		f.Close()
		ix.Close()
		return nil, nil
	}
	ix.fsys, ix.closer, ix.cache = tfs, tfs, c
	c.touch(dir)
	return ix, nil
}

// TarballResources gives the resource files (objects and events) of the tarball an index was
// opened from by OpenTarball, as its index kept them, so that they are read without
// decompressing the tarball; ok is false when the index did not keep them (past
// maxTarResources, or not a tarball's index). Each file carries the tarball's modification time.
func (ix *Index) TarballResources() (files fstest.MapFS, ok bool) {
	t, isTar := ix.fsys.(*tarFS)
	if !isTar || !t.resourcesKept {
		return nil, false
	}
	var mtime time.Time
	if info, err := t.f.Stat(); err == nil {
		mtime = info.ModTime()
	}
	files = fstest.MapFS{}
	for p, data := range t.resources {
		files[p] = &fstest.MapFile{Data: data, Mode: 0o444, ModTime: mtime}
	}
	return files, true
}
