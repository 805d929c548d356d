package bundle

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"time"
)

// A tree memo is the listing of a directory bundle's directories as its last walk read them:
// each directory's signature (modification and change times, inode) and entries (names and
// types). A walk given one lists again only the directories whose signature changed (an entry
// added, removed or renamed changes its directory's times) and takes the others' entries from
// the memo: no open, read or close of each of 16,384 pods' directories. Every file is still
// signed by its own stat, so a log rewritten in place is seen as before.
//
// A directory changed twice within one tick of the file system's clock keeps its times: a
// listing is remembered only for directories whose change time is settleMargin older than the
// walk that listed them (as git's index treats "racily clean" entries).
var settleMargin = 2 * time.Second

const treeMemoMagic = "coroner-tree-memo-1\n"

// maxTreeMemo bounds the memo a walk reads (a cache file: 200,000 files take ~4 MB).
const maxTreeMemo = 256 << 20

type memoDir struct {
	mtime, ctime int64
	ino          uint64
	ents         []memoEnt // sorted by name
}

// memoEnt is a directory's entry: its name and the type getdents gave (DT_*).
type memoEnt struct {
	name string
	typ  byte
}

type treeMemo struct {
	root    string
	listing map[string]*memoDir // by path under the root ("" for the root)
	ents    int                 // entries of every directory listed
}

// entries is how many entries the memo's directories hold.
func (m *treeMemo) entries() int {
	if m == nil {
		return 0
	}
	return m.ents
}

// dirs is how many directories the memo lists.
func (m *treeMemo) dirs() int {
	if m == nil {
		return 0
	}
	return len(m.listing)
}

type treeMemoKey struct{}

// WithTreeMemo returns a context under which opening a directory bundle takes the listings
// of memo (Bundle.TreeMemo of an earlier open of the same directory; nil for none) for its
// unchanged directories, and keeps the listing of its own walk (Bundle.TreeMemo). A memo that
// cannot be read is not used.
func WithTreeMemo(ctx context.Context, memo []byte) context.Context {
	return context.WithValue(ctx, treeMemoKey{}, memo)
}

// treeMemoOf is the memo the context gives for the tree at root, and whether it asks for one.
func treeMemoOf(ctx context.Context, root string) (*treeMemo, bool) {
	data, asked := ctx.Value(treeMemoKey{}).([]byte)
	if len(data) == 0 || len(data) > maxTreeMemo {
		return nil, asked
	}
	m, err := decodeTreeMemo(data)
	if err != nil || m.root != root {
		return nil, asked
	}
	return m, asked
}

// TreeMemo is the listing the walk of a directory bundle read (see WithTreeMemo), when it
// differs from the memo the walk was given (changed); nil for other bundles, when not asked
// for, and when unchanged.
func (b *Bundle) TreeMemo() (memo []byte, changed bool) {
	return b.treeMemo, b.treeChanged
}

// memoWriter collects the directories a walk settled, in the walk's order; they are encoded
// only when they differ from the memo the walk was given.
type memoWriter struct {
	root     string
	dirs     []memoEntry
	settled  int64 // a directory changed at or after this is not remembered
	changed  bool  // a directory was listed afresh, or one remembered was left out
	fromMemo int
}

type memoEntry struct {
	rel string
	d   *memoDir
}

func newMemoWriter(root string, start time.Time) *memoWriter {
	return &memoWriter{root: root, settled: start.Add(-settleMargin).UnixNano()}
}

func (w *memoWriter) add(rel string, d *memoDir) {
	if d.ctime >= w.settled || d.mtime >= w.settled {
		return
	}
	w.dirs = append(w.dirs, memoEntry{rel, d})
}

// done is the memo: the directories, then their count; nil when the walk kept none or
// nothing changed.
func (w *memoWriter) done() []byte {
	if !w.changed {
		return nil
	}
	b := append([]byte(treeMemoMagic), 0)[:len(treeMemoMagic)]
	b = appendBytes(b, w.root)
	for _, e := range w.dirs {
		b = appendBytes(b, e.rel)
		b = binary.AppendVarint(b, e.d.mtime)
		b = binary.AppendVarint(b, e.d.ctime)
		b = binary.AppendUvarint(b, e.d.ino)
		b = binary.AppendUvarint(b, uint64(len(e.d.ents)))
		for _, ent := range e.d.ents {
			b = appendBytes(b, ent.name)
			b = append(b, ent.typ)
		}
	}
	return binary.BigEndian.AppendUint32(b, uint32(len(w.dirs)))
}

func appendBytes(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errBadTreeMemo = errors.New("bad tree memo")

func decodeTreeMemo(data []byte) (*treeMemo, error) {
	if !bytes.HasPrefix(data, []byte(treeMemoMagic)) || len(data) < len(treeMemoMagic)+4 {
		return nil, errBadTreeMemo
	}
	n := int(binary.BigEndian.Uint32(data[len(data)-4:]))
	body := data[len(treeMemoMagic) : len(data)-4]
	d := memoReader{b: body, all: string(body)} // names are substrings of one string
	m := &treeMemo{root: d.str()}
	// Each directory takes 5 bytes at least (its path's length, three times and its count),
	// each entry 3 (a name's length, one byte of name, its type): a count the bytes left
	// cannot hold is refused before anything is made for it.
	if n > len(d.b)/5 {
		return nil, errBadTreeMemo
	}
	m.listing = make(map[string]*memoDir, n)
	// The directories are made 1,024 at a time, not one by one (16,384 allocations at 16,384
	// ranks), and no more ahead than that of what the bytes really hold.
	var slab []memoDir
	for i := range n {
		rel := d.str()
		if len(slab) == 0 {
			slab = make([]memoDir, min(n-i, 1024))
		}
		md := &slab[0]
		slab = slab[1:]
		*md = memoDir{mtime: d.varint(), ctime: d.varint(), ino: d.uvarint()}
		k := d.uvarint()
		if _, dup := m.listing[rel]; d.err || dup || k > uint64(len(d.b)/3) {
			return nil, errBadTreeMemo
		}
		md.ents = make([]memoEnt, k)
		m.ents += int(k)
		for i := range md.ents {
			name := d.str()
			if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
				return nil, errBadTreeMemo // a name getdents never gives: not a memo of ours
			}
			if i > 0 && name <= md.ents[i-1].name {
				return nil, errBadTreeMemo // a listing is sorted and names are unique
			}
			md.ents[i].name = name
			md.ents[i].typ = d.byte()
		}
		m.listing[rel] = md
	}
	if d.err || len(d.b) != 0 {
		return nil, errBadTreeMemo
	}
	return m, nil
}

type memoReader struct {
	b   []byte
	all string // b's bytes as they were at the start
	err bool
}

func (d *memoReader) uvarint() uint64 {
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.err, d.b = true, nil
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *memoReader) varint() int64 {
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.err, d.b = true, nil
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *memoReader) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err, d.b = true, nil
		return ""
	}
	off := len(d.all) - len(d.b)
	d.b = d.b[n:]
	return d.all[off : off+int(n)]
}

func (d *memoReader) byte() byte {
	if len(d.b) == 0 {
		d.err = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// dir is the memo's listing of the directory rel under the root, or nil.
func (m *treeMemo) dir(rel string) *memoDir {
	if m == nil {
		return nil
	}
	return m.listing[rel]
}
