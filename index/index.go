// Package index makes a bundle's logs searchable. Build runs the single scan of the logs
// (package logscan: each line cleaned, timed and given its shape) and records, for each shape
// of each log that repeats, a template: the compact list of its lines, per-block summaries of
// its variable words, and checkpoints to read lines back; the template texts go into a bleve
// index. Lines whose shape does not repeat go into chunks of 32 to 64 KiB of text with a Bloom
// filter of their words. Search finds templates in bleve and chunks by their filters, narrows
// templates with the block summaries, and reads back from the bundle only the lines it must
// verify or show. Memory and the index stay bounded whatever the logs hold: the templates of
// a log and of a bundle are bounded (logscan.MaxShapes, MaxDocs), the rest is chunks.
//
// Indexes are cached by the content of the logs (see Cache), written under a temporary name
// and renamed when complete.
package index

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/scratch"
)

// Index is an opened index of one bundle's logs. It reads lines back from the bundle, which
// must stay open while the index is used.
type Index struct {
	dir     string
	scratch *scratch.Dir // a private index, removed by Close
	cache   *Cache       // the cache holding dir, for a cached index (see drop)
	fsys    fs.FS
	maxLine int
	meta    meta
	files   map[string]metaFile // meta's files by name
	streams []*Stream
	docs    []doc
	chunks  *chunkTable
	bodies  *os.File
	body    *bodyReader // reads ix.bodies
	filters *os.File
	bleve   bleve.Index
	readers sync.Pool // of *logscan.LineReader, to read lines back with
	// denseReaders read many lines of a log (see denseLines)
	denseReaders sync.Pool
	closer       io.Closer // what fsys holds open (a tarball)
}

// doc is a distinct template text: one bleve document, and the templates of every log with
// that text.
type doc struct {
	idx      int
	key      string
	refData  []byte // its templates, encoded (see encodeDocs)
	refOnce  sync.Once
	refs     []tref
	refErr   error
	tokOnce  sync.Once
	tokens   []token
	rankSlot bool // the text starts with torchrun's "[rankN]:" (see logscan.RankPrefix)
	// levels has bit levelCode(l) set for the level l of each of its templates, so that a
	// level clause rules out a text without decoding its templates
	levels byte
	// spans are each slot's values over all its templates (nil: not kept), so that a number
	// rules out a text before its templates are decoded
	spans    []numSpan
	textOnce sync.Once
	text     string
}

// tref names a template: streams[stream].templates[id].
type tref struct{ stream, id int32 }

// toks returns the text's words and slots (see tokensOf), read on first use.
func (d *doc) toks() []token {
	d.tokOnce.Do(func() { d.tokens = tokensOf(d.key) })
	return d.tokens
}

// display shows the text, every variable word as "<*>".
func (d *doc) display() string {
	d.textOnce.Do(func() { d.text = display(d.key) })
	return d.text
}

// Streams returns the indexed logs in bundle path order.
func (ix *Index) Streams() []*Stream { return ix.streams }

// Key is the cache key the index was built for ("" for a private index).
func (ix *Index) Key() string { return ix.meta.Key }

// Dir is where the index lives.
func (ix *Index) Dir() string { return ix.dir }

// Close releases the index (and removes it when it was a private, uncached one).
func (ix *Index) Close() error {
	if ix == nil {
		return nil
	}
	var err error
	if ix.bleve != nil {
		err = ix.bleve.Close()
		ix.bleve = nil
	}
	for _, f := range []**os.File{&ix.bodies, &ix.filters} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	if ix.closer != nil {
		ix.closer.Close()
		ix.closer = nil
	}
	if ix.scratch != nil {
		if rerr := ix.scratch.Remove(); err == nil {
			err = rerr
		}
		ix.scratch = nil
	}
	return err
}

// Size is the index's size on disk in bytes.
func (ix *Index) Size() int64 {
	var n int64
	for _, f := range ix.meta.Files {
		n += f.Size
	}
	return n
}

const metaName = "meta.json"

// meta describes an index directory; its checksums make corrupt or foreign contents
// detectable. The bodies and filters files, which grow with the logs, are checked a piece at
// a time as they are read (see Stream and filterReader); the others whole, at open.
type meta struct {
	Format  int        `json:"format"`
	Version string     `json:"coronerVersion"`
	Key     string     `json:"key"`
	MaxLine int        `json:"maxLineBytes"`
	Streams int        `json:"streams"`
	Docs    int        `json:"docs"`
	Files   []metaFile `json:"files"`
}

type metaFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	CRC  uint32 `json:"crc32c"`
}

// castagnoli checksums the index's files.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readByOpen are the files Index.open reads whole, checking them then (see readChecked).
func readByOpen(name string) bool { return name == docsFile || name == headsFile || name == chunksFile }

// checkedLater are the files whose parts carry their own checksums.
func checkedLater(name string) bool { return name == bodiesFile || name == filtersFile }

// writeMeta lists and checksums every file of dir, and writes meta.json last: an index
// directory without a meta.json that matches its files is never used.
func writeMeta(dir string, m meta) error {
	m.Files = nil
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == metaName || rel == scratch.LockName || strings.HasPrefix(rel, tarballPrefix) || strings.HasPrefix(rel, "."+tarballPrefix) {
			return nil
		}
		f := metaFile{Name: rel}
		if checkedLater(rel) {
			info, err := d.Info()
			if err != nil {
				return err
			}
			f.Size = info.Size()
		} else {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f.Size, f.CRC = int64(len(data)), crc32.Checksum(data, castagnoli)
		}
		m.Files = append(m.Files, f)
		return nil
	})
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, metaName), data, 0o644)
}

// openDir opens the index in dir over the bundle files in fsys. With verify, every file is
// checked against meta.json first (a cached index may have been damaged or replaced); want,
// when set, is the meta the index must have been built for.
func openDir(dir string, fsys fs.FS, verify bool, want *meta) (*Index, error) {
	return openDirHeads(dir, fsys, verify, want, written{})
}

// written is what the writer of an index has in hand when it opens it: the heads file
// unpacked and the logs it was written from, in its order; a cache lookup has the logs alone
// (heads nil: the file is read).
type written struct {
	heads []byte
	logs  []bundle.LogStream
}

// openDirHeads is openDir; w.heads, when set, is the heads file unpacked, which the writer of
// the index has in hand: not read and unpacked again (a second copy of every log's heads,
// 9 to 13 MB at 16,384 or 200,000 logs, made where a diagnosis's heap is at its largest). The
// streams' names are then w.logs' (see decodeRawHeads).
func openDirHeads(dir string, fsys fs.FS, verify bool, want *meta, w written) (*Index, error) {
	data, err := os.ReadFile(filepath.Join(dir, metaName))
	if err != nil {
		return nil, err
	}
	var m meta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", metaName, err)
	}
	if m.Format != FormatVersion {
		return nil, fmt.Errorf("index format %d, this coroner reads %d", m.Format, FormatVersion)
	}
	if want != nil && (m.Key != want.Key || m.Version != want.Version || m.MaxLine != want.MaxLine || (want.Streams >= 0 && m.Streams != want.Streams)) {
		return nil, errors.New("the index was built for another bundle, coroner version or line limit")
	}
	if m.MaxLine <= 0 {
		return nil, errors.New("meta.json: no line limit")
	}
	files := map[string]metaFile{}
	for _, f := range m.Files {
		files[f.Name] = f
	}
	if verify {
		if err := checkFiles(dir, files); err != nil {
			return nil, err
		}
	}
	ix := &Index{dir: dir, fsys: fsys, maxLine: m.MaxLine, meta: m, files: files}
	if err := ix.open(verify, w); err != nil {
		ix.Close()
		return nil, err
	}
	return ix, nil
}

// readChecked reads one of the index's small files, checked against meta.json.
func (ix *Index) readChecked(name string, verify bool) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(ix.dir, name))
	if err != nil {
		return nil, err
	}
	if f, ok := ix.files[name]; !ok || (verify && (f.Size != int64(len(data)) || f.CRC != crc32.Checksum(data, castagnoli))) {
		return nil, fmt.Errorf("%s does not match meta.json", name)
	}
	return data, nil
}

func (ix *Index) open(verify bool, w written) error {
	data, err := ix.readChecked(docsFile, verify)
	if err != nil {
		return err
	}
	if ix.docs, err = decodeDocs(data); err != nil {
		return err
	}
	var frames []frame
	if w.heads != nil {
		if ix.streams, frames, err = decodeRawHeads(w.heads, w.logs); err != nil {
			return err
		}
	} else {
		if data, err = ix.readChecked(headsFile, verify); err != nil {
			return err
		}
		if ix.streams, frames, err = decodeHeads(data, w.logs); err != nil {
			return err
		}
	}
	if len(ix.streams) != ix.meta.Streams || len(ix.docs) != ix.meta.Docs {
		return errors.New("meta.json does not match the index")
	}
	for i := 1; i < len(ix.streams); i++ {
		if ix.streams[i-1].Path > ix.streams[i].Path {
			return errors.New("streams are not in path order")
		}
	}
	if data, err = ix.readChecked(chunksFile, verify); err != nil {
		return err
	}
	if ix.chunks, err = decodeChunks(data, len(ix.streams)); err != nil {
		return err
	}
	for _, seg := range ix.chunks.segs {
		if int(seg.seg) >= ix.streams[seg.stream].over.nsegs {
			return fmt.Errorf("chunks: %w", errCorrupt)
		}
	}
	for i := range ix.docs {
		d := &ix.docs[i]
		d.rankSlot = strings.HasPrefix(d.key, "[rank\x00"+string(rune(tokRun))+"]")
	}
	// The bodies were written as the logs were scanned, in any order: together they fill the
	// file, without overlap.
	byOff := slices.Clone(ix.streams)
	slices.SortFunc(byOff, func(a, b *Stream) int { return cmp.Compare(a.bodyOff, b.bodyOff) })
	var size int64
	for _, s := range byOff {
		if s.bodyOff != size {
			return fmt.Errorf("heads: %w", errCorrupt)
		}
		size += int64(s.bodyLen)
	}
	var fileSize, raw int64
	for _, f := range frames {
		fileSize, raw = fileSize+int64(f.size), raw+int64(f.raw)
	}
	if raw != size {
		return fmt.Errorf("heads: %w", errCorrupt)
	}
	if err := checkFrames(byOff, frames); err != nil {
		return err
	}
	for name, want := range map[string]int64{bodiesFile: fileSize, filtersFile: filtersSize(ix.chunks)} {
		if f, ok := ix.files[name]; !ok || f.Size != want {
			return fmt.Errorf("%s does not match meta.json", name)
		}
	}
	if ix.bodies, err = os.Open(filepath.Join(ix.dir, bodiesFile)); err != nil {
		return err
	}
	ix.body = &bodyReader{f: ix.bodies, frames: frames}
	if ix.filters, err = os.Open(filepath.Join(ix.dir, filtersFile)); err != nil {
		return err
	}
	for _, f := range []*os.File{ix.bodies, ix.filters} {
		if info, err := f.Stat(); err != nil || info.Size() != ix.files[filepath.Base(f.Name())].Size {
			return fmt.Errorf("%s does not match meta.json", filepath.Base(f.Name()))
		}
	}
	ix.bleve, err = bleve.OpenUsing(filepath.Join(ix.dir, bleveDir), map[string]interface{}{"read_only": true})
	if err != nil {
		return fmt.Errorf("opening the bleve index: %w", err)
	}
	n, err := ix.bleve.DocCount()
	if err == nil && n != uint64(len(ix.docs)) {
		err = fmt.Errorf("the bleve index holds %d template texts, the docs %d", n, len(ix.docs))
	}
	return err
}

func filtersSize(t *chunkTable) int64 {
	var n int64
	for _, b := range t.batches {
		n += b.len
	}
	return n
}

// checkFiles compares dir with meta.json's list: the same files, sizes and checksums, but for
// the bodies and filters, checked as they are read, and the files Index.open reads whole and
// checks itself (see readChecked): each is read once.
func checkFiles(dir string, files map[string]metaFile) error {
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == metaName || rel == scratch.LockName || strings.HasPrefix(rel, tarballPrefix) || strings.HasPrefix(rel, "."+tarballPrefix) {
			return nil // the build directory's lock goes before it joins the cache; a tarball's access points carry their own checksum
		}
		f, ok := files[rel]
		if !ok {
			return fmt.Errorf("%s is not listed in meta.json", rel)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", rel)
		}
		seen++
		if checkedLater(rel) || readByOpen(rel) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if int64(len(data)) != f.Size || crc32.Checksum(data, castagnoli) != f.CRC {
			return fmt.Errorf("%s does not match its checksum", rel)
		}
		return nil
	})
	if err == nil && seen != len(files) {
		err = errors.New("files listed in meta.json are missing")
	}
	return err
}

// load reads a stream's body (see Stream) from the bodies file, checked against its
// checksum, once.
func (ix *Index) load(s *Stream) error { return ix.loadFrom(s, nil) }

// loadFrom is load with the body already read (nil: read it).
func (ix *Index) loadFrom(s *Stream, body []byte) error {
	if err := s.decodeTemplates(len(ix.docs)); err != nil {
		return err
	}
	o := s.onces()
	o.body.Do(func() {
		var err error
		if body == nil {
			body = make([]byte, s.bodyLen)
			err = ix.body.ReadAt(body, s.bodyOff)
		}
		// A packed body was checked with its pack.
		if err == nil && !packed(s.bodyLen) && crc32.Checksum(body, castagnoli) != s.bodyCRC {
			err = mismatchError{bodiesFile}
		}
		if err == nil {
			err = s.setBody(body)
		}
		if err != nil {
			o.bodyErr = fmt.Errorf("the index of %s: %w", s.Path, err)
		}
	})
	return o.bodyErr
}

// Bodies next to each other in the bodies file are read together (see loadAll) when the gap
// between them is at most loadGap bytes, up to loadSpan bytes a read.
const (
	loadGap  = 4 << 10
	loadSpan = 4 << 20
)

// loadAll loads the bodies of streams, reading those that lie close together in the bodies
// file with one read: a query whose texts are in every log of a large job reads thousands of
// bodies of a few hundred bytes each.
func (ix *Index) loadAll(streams []*Stream) error {
	streams = slices.Clone(streams)
	slices.SortFunc(streams, func(a, b *Stream) int { return cmp.Compare(a.bodyOff, b.bodyOff) })
	streams = slices.Compact(streams)
	for i := 0; i < len(streams); {
		start := streams[i].bodyOff
		end := start + int64(streams[i].bodyLen)
		j := i + 1
		for ; j < len(streams); j++ {
			s := streams[j]
			if s.bodyOff-end > loadGap || s.bodyOff+int64(s.bodyLen)-start > loadSpan {
				break
			}
			end = max(end, s.bodyOff+int64(s.bodyLen))
		}
		buf := make([]byte, end-start)
		if j-i == 1 {
			buf = nil // load reads it
		} else if err := ix.body.ReadAt(buf, start); err != nil {
			buf = nil // each is read alone, and fails alone
		}
		for _, s := range streams[i:j] {
			var body []byte
			if buf != nil {
				off := s.bodyOff - start
				body = buf[off : off+int64(s.bodyLen) : off+int64(s.bodyLen)]
			}
			if err := ix.loadFrom(s, body); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// checkBodies reads every stream's body and checks it against its checksum, keeping none.
func (ix *Index) checkBodies() error {
	var buf []byte
	// In the bodies' order: a pack is decompressed once for all its bodies.
	byOff := slices.Clone(ix.streams)
	slices.SortFunc(byOff, func(a, b *Stream) int { return cmp.Compare(a.bodyOff, b.bodyOff) })
	for _, s := range byOff {
		if cap(buf) < s.bodyLen {
			buf = make([]byte, s.bodyLen)
		}
		body := buf[:s.bodyLen]
		if err := ix.body.ReadAt(body, s.bodyOff); err != nil {
			return fmt.Errorf("the index of %s: %w", s.Path, err)
		}
		if !packed(s.bodyLen) && crc32.Checksum(body, castagnoli) != s.bodyCRC {
			return fmt.Errorf("the index of %s: %w", s.Path, mismatchError{bodiesFile})
		}
	}
	return nil
}

// mismatchError is a part of one of the index's files that no longer matches its checksum:
// the index is damaged (errCorrupt).
type mismatchError struct{ name string }

func (e mismatchError) Error() string        { return e.name + " no longer matches meta.json" }
func (e mismatchError) Is(target error) bool { return target == errCorrupt }

// ErrDamaged is what Search returns (wrapped) when a part of the index read during the search
// does not match its checksum or cannot be decoded. A cached index is removed from the cache
// before Search returns, so the next build makes a sound one instead of reusing it.
var ErrDamaged = errors.New("the index is damaged")

// drop removes a damaged cached index from the cache; the opened files stay readable
// until Close.
func (ix *Index) drop() {
	if ix.cache != nil && ix.scratch == nil && filepath.Dir(ix.dir) == filepath.Clean(ix.cache.Dir) {
		ix.cache.discard(ix.dir)
		ix.cache = nil
	}
}

// stream returns the stream of a bundle path, or nil.
func (ix *Index) stream(path string) *Stream {
	i := sort.Search(len(ix.streams), func(i int) bool { return ix.streams[i].Path >= path })
	if i < len(ix.streams) && ix.streams[i].Path == path {
		return ix.streams[i]
	}
	return nil
}
