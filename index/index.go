// Package index makes a bundle's logs searchable. Build runs the single scan of the logs
// (package logscan: each line cleaned, timed and given its shape) and records, for each shape
// of each log, a template: the compact list of its lines, per-block summaries of its variable
// words, and checkpoints to read lines back; the template texts go into a bleve index. Search
// finds templates in bleve, narrows them with the block summaries, and reads back from the
// bundle only the lines it must verify or show. Indexes are cached by the content of the logs
// (see Cache), written under a temporary name and renamed when complete.
package index

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2"

	"github.com/coroner-dev/coroner/internal/scratch"
)

// Index is an opened index of one bundle's logs. It reads lines back from the bundle, which
// must stay open while the index is used.
type Index struct {
	dir  string
	temp bool // a private index, removed by Close
	// release, when set, lets go of the private index's scratch directory (its lock).
	release func()
	fsys    fs.FS
	maxLine int
	meta    meta
	files   map[string]metaFile // meta's files by name
	streams []*Stream
	bleve   bleve.Index
	groups  [][]*Template // the templates of bleve document i (see shapeGroups)
}

// Streams returns the indexed logs in bundle path order.
func (ix *Index) Streams() []*Stream { return ix.streams }

// Key is the cache key the index was built for.
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
	if ix.temp {
		if rerr := os.RemoveAll(ix.dir); err == nil {
			err = rerr
		}
		ix.temp = false
	}
	if ix.release != nil {
		ix.release()
		ix.release = nil
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

// meta describes an index directory; its checksums make corrupt or foreign contents detectable.
type meta struct {
	Format  int        `json:"format"`
	Version string     `json:"coronerVersion"`
	Key     string     `json:"key"`
	MaxLine int        `json:"maxLineBytes"`
	Streams int        `json:"streams"`
	Files   []metaFile `json:"files"`
}

type metaFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	CRC  uint32 `json:"crc32c"`
}

func streamFile(i int) string { return fmt.Sprintf("streams/%06d.bin", i) }

// castagnoli checksums the index's files.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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
		if rel == metaName || rel == scratch.LockName {
			return nil // the build directory's lock goes before it joins the cache
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m.Files = append(m.Files, metaFile{Name: rel, Size: int64(len(data)), CRC: crc32.Checksum(data, castagnoli)})
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
	if want != nil && (m.Key != want.Key || m.Version != want.Version || m.MaxLine != want.MaxLine) {
		return nil, errors.New("the index was built for another bundle, coroner version or line limit")
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
	if m.MaxLine <= 0 {
		return nil, errors.New("meta.json: no line limit")
	}
	for i := 0; i < m.Streams; i++ {
		name := streamFile(i)
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		if f, ok := files[name]; !ok || (verify && (f.Size != int64(len(data)) || f.CRC != crc32.Checksum(data, castagnoli))) {
			return nil, fmt.Errorf("%s does not match meta.json", name)
		}
		s, err := decodeStream(data, i)
		if err != nil {
			return nil, err
		}
		s.dropBody()
		ix.streams = append(ix.streams, s)
	}
	ix.groups = shapeGroups(ix.streams)
	if !sort.SliceIsSorted(ix.streams, func(i, j int) bool { return ix.streams[i].Path < ix.streams[j].Path }) {
		return nil, errors.New("streams are not in path order")
	}
	ix.bleve, err = bleve.OpenUsing(filepath.Join(dir, "bleve"), map[string]interface{}{"read_only": true})
	if err != nil {
		return nil, fmt.Errorf("opening the bleve index: %w", err)
	}
	n, err := ix.bleve.DocCount()
	if err == nil && n != uint64(len(ix.groups)) {
		err = fmt.Errorf("the bleve index holds %d template texts, the streams %d", n, len(ix.groups))
	}
	if err != nil {
		ix.bleve.Close()
		return nil, err
	}
	return ix, nil
}

// checkFiles compares dir with meta.json's list: the same files, sizes and checksums. The
// stream files are checked again when read; this pass covers bleve's.
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
		if rel == metaName || rel == scratch.LockName {
			return nil // the build directory's lock goes before it joins the cache
		}
		f, ok := files[rel]
		if !ok {
			return fmt.Errorf("%s is not listed in meta.json", rel)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", rel)
		}
		seen++
		if strings.HasPrefix(rel, "streams/") {
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

// load reads a stream's body (see Stream) from its file, checked again against meta.json,
// once.
func (ix *Index) load(s *Stream) error {
	s.bodyOnce.Do(func() {
		name := streamFile(s.idx)
		data, err := os.ReadFile(filepath.Join(ix.dir, filepath.FromSlash(name)))
		if err == nil {
			if f, ok := ix.files[name]; !ok || f.Size != int64(len(data)) || f.CRC != crc32.Checksum(data, castagnoli) {
				err = fmt.Errorf("%s no longer matches meta.json", name)
			}
		}
		var full *Stream
		if err == nil {
			full, err = decodeStream(data, s.idx)
		}
		if err == nil && (full.Path != s.Path || len(full.Templates) != len(s.Templates)) {
			err = fmt.Errorf("%s: %w", name, errCorrupt)
		}
		if err != nil {
			s.bodyErr = fmt.Errorf("the index of %s: %w", s.Path, err)
			return
		}
		s.cpData = full.cpData
		for i, t := range s.Templates {
			t.lines, t.blob = full.Templates[i].lines, full.Templates[i].blob
		}
	})
	return s.bodyErr
}

// stream returns the stream of a bundle path, or nil.
func (ix *Index) stream(path string) *Stream {
	i := sort.Search(len(ix.streams), func(i int) bool { return ix.streams[i].Path >= path })
	if i < len(ix.streams) && ix.streams[i].Path == path {
		return ix.streams[i]
	}
	return nil
}
