package index

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/logscan"
)

// FormatVersion is the on-disk format of an index; part of the cache key. An index of
// another format is never read: it is rebuilt (see openDir). Format 9 keeps a chunk filter's
// item in one 64-bit word (see filterPos).
const FormatVersion = 9

const headsMagic = "coroner-index-heads\n"

// Stream is one indexed log.
type Stream struct {
	bundle.LogStream
	// Lines and Bytes are what the scan read.
	Lines     int
	Bytes     int64
	LongLines int
	// First and Last are the first and last times of the log, as Unix nanoseconds (0: none).
	First, Last int64
	// Rank is the first torchrun "[rankN]:" prefix seen, or -1.
	Rank int

	idx int
	// heads is the stream's templates, encoded (see appendHead); decodeTemplates reads them
	// when a search or a caller first needs them.
	heads []byte
	// unordered: the log's time does not follow its line order (a line is earlier than the
	// line before it, or untimed lines come before the first timed one).
	unordered bool
	bodyCRC   uint32 // beside unordered: a Stream is made for every log at open
	templates []template
	over      overflow
	// The body: what reading lines back needs, the checkpoints, the templates' line runs and
	// blocks and the overflow lines and segments. It grows with the log, so it stays in the
	// bodies file until a search or a window reads the log (see Index.load).
	bodyOff int64
	bodyLen int
	cpLen   int
	// once is made when the templates or the body are first decoded (see onces).
	once atomic.Pointer[streamOnces]
	// cp is the checkpoints and the overflow's lines and segments, once the body is read:
	// most logs of an opened index are never read, and a Stream is made for each (225,000 at
	// 200,000 files).
	cp *checkpoints
}

// streamOnces decode a stream's templates and its body once each, and keep their errors. They
// are made for the streams a search reaches, not in the Stream made for every log at open (64
// bytes each: 14 MB of a warm search of 200,000 files, whose streams are one allocation made
// and cleared at open).
type streamOnces struct {
	head, body       sync.Once
	headErr, bodyErr error
}

// onces returns the stream's onces, made by the first caller.
func (s *Stream) onces() *streamOnces {
	if o := s.once.Load(); o != nil {
		return o
	}
	s.once.CompareAndSwap(nil, new(streamOnces))
	return s.once.Load()
}

// checkpoints are a stream's checkpoints, encoded in its body and decoded on first use, and
// the sections of its overflow (see overflow), which only a body read has.
type checkpoints struct {
	data []byte
	once sync.Once
	cps  []checkpoint
	err  error

	overLines []byte    // the runs of the overflow's lines
	overDescs []segDesc // where each segment's lines are in overLines
}

// template is one line shape of one stream: its variable words masked, with where it occurs.
type template struct {
	stream, id          int32
	doc                 int32 // its text: Index.docs[doc]
	level               byte  // see levels
	count               int32
	firstLine, lastLine int32
	// slots is how many variable words the template has; maskBytes their masks (the classes
	// of bytes each slot's words hold), encoded: see classes. (slots sits here to fill the gap
	// before first: 128 bytes a template, not 136.)
	slots             int32
	first, last       int64
	maskBytes         []byte
	linesLen, blobLen int32
	lines             []byte // body: the runs of its lines
	blob              []byte // body: its blocks (see eachBlock)
}

// classes is the union of the masks of the template's slots (logscan.Classes of its words).
// decodeTemplates checked that maskBytes holds slots whole uvarints.
func (t *template) classes() uint64 {
	var m uint64
	for b := t.maskBytes; len(b) > 0; {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			break
		}
		m |= v
		b = b[n:]
	}
	return m
}

// overflow is how many of a stream's lines have no template, and the sizes of their runs and
// of their segments (one per chunk the stream has lines in) in its body; the runs and segments
// themselves are in checkpoints, once the body is read.
type overflow struct {
	count, nsegs     int
	linesLen, segLen int
}

// segDesc is where a segment's lines are in the overflow runs (see block).
type segDesc struct {
	lineOff, skip, prevLine, n int
}

type block struct {
	// the block's first line: skip lines into the run at byte lineOff of the template's
	// lines, the line before that run being prevLine
	lineOff, skip, prevLine int
	n                       int
	tmin, tmax              int64
	ranges                  []slotRange
}

// encodeBody appends the body of a stream (see Stream) to b and returns it with the length
// of its checkpoints.
func encodeBody(b []byte, sb *streamBuilder) (body []byte, cpLen int) {
	// The checkpoints as one section: only the logs whose lines are read decode theirs.
	start := len(b)
	b = binary.AppendUvarint(b, uint64(len(sb.checkpoints)))
	var off, t int64
	for _, c := range sb.checkpoints {
		b = binary.AppendUvarint(b, uint64(c.off-off))
		b = binary.AppendVarint(b, c.time-t)
		off, t = c.off, c.time
	}
	cpLen = len(b) - start
	for _, tb := range sb.templates {
		tb.flushRun() // the last run and block are still open
		tb.flushBlock()
		b = append(b, tb.lines...)
		b = append(b, tb.blocks...)
	}
	sb.over.flushRun()
	b = append(b, sb.over.lines...)
	b = append(b, sb.over.segs...)
	return b, cpLen
}

// appendIdentity encodes a log's names and its first time as differences from the log before
// it in the heads file (logs come in path order: a pod's logs share all but their file name).
func appendIdentity(b []byte, prev, ls bundle.LogStream, prevFirst, first int64) []byte {
	common := 0
	for common < len(prev.Path) && common < len(ls.Path) && prev.Path[common] == ls.Path[common] {
		common++
	}
	b = binary.AppendUvarint(b, uint64(common))
	b = appendString(b, ls.Path[common:])
	for _, f := range [][2]string{{prev.Namespace, ls.Namespace}, {prev.Pod, ls.Pod}, {prev.Container, ls.Container}} {
		if f[0] == f[1] {
			b = append(b, 1)
		} else {
			b = append(b, 0)
			b = appendString(b, f[1])
		}
	}
	b = appendBool(b, ls.Previous)
	b = appendBool(b, ls.Truncated)
	return binary.AppendVarint(b, first-prevFirst)
}

// span is where a name is in the arena of the heads' names (see identity).
type span struct{ start, end int32 }

// identity decodes a log's names (see appendIdentity) into arena and returns where each is
// (path, namespace, pod, container; prev is where the log before's are). The names become
// substrings of one string once every head is read: opening an index allocates no string per
// log.
func (d *decoder) identity(arena []byte, prev [4]span, s *Stream) ([]byte, [4]span) {
	var cur [4]span
	common := d.int()
	if d.err != nil || common > int(prev[0].end-prev[0].start) {
		d.fail()
		return arena, cur
	}
	start := len(arena)
	arena = append(arena, arena[prev[0].start:int(prev[0].start)+common]...)
	arena = append(arena, d.bytes()...)
	cur[0] = span{int32(start), int32(len(arena))}
	for k := 1; k < 4; k++ {
		if d.bool() {
			cur[k] = prev[k]
			continue
		}
		start := len(arena)
		arena = append(arena, d.bytes()...)
		cur[k] = span{int32(start), int32(len(arena))}
	}
	s.Previous, s.Truncated = d.bool(), d.bool()
	if len(arena) > math.MaxInt32 {
		d.fail()
	}
	return arena, cur
}

// appendHead encodes what an opened index keeps of a stream but its names and first time (see
// appendIdentity): its sizes and where its body is, read at open, then its templates, which
// are decoded only when a search or a caller reaches them (see Stream.decodeTemplates).
func appendHead(b []byte, st logscan.Stats, sb *streamBuilder, bodyOff int64, body []byte, cpLen int) []byte {
	b = binary.AppendUvarint(b, uint64(st.Lines))
	b = binary.AppendUvarint(b, uint64(st.Bytes))
	b = binary.AppendUvarint(b, uint64(st.LongLines))
	b = appendBool(b, sb.unordered)
	b = binary.AppendVarint(b, int64(sb.rank))
	first := unixNano(st.First)
	b = binary.AppendVarint(b, unixNano(st.Last)-first)
	b = binary.AppendUvarint(b, uint64(bodyOff))
	b = binary.AppendUvarint(b, uint64(len(body)))
	if !packed(len(body)) { // a pack has one checksum for all its bodies
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(body, castagnoli))
	}
	b = binary.AppendUvarint(b, uint64(cpLen))
	o := &sb.over
	b = binary.AppendUvarint(b, uint64(o.count))
	b = binary.AppendUvarint(b, uint64(o.nsegs))
	b = binary.AppendUvarint(b, uint64(len(o.lines)))
	b = binary.AppendUvarint(b, uint64(len(o.segs)))
	t := binary.AppendUvarint(sb.scratch[:0], uint64(len(sb.templates)))
	nmasks := 0
	for _, tb := range sb.templates {
		nmasks += len(tb.masks)
	}
	t = binary.AppendUvarint(t, uint64(nmasks)) // so that a search decodes them into one slice made once
	for _, tb := range sb.templates {
		t = binary.AppendUvarint(t, uint64(tb.doc))
		t = append(t, levelCode(tb.level))
		t = binary.AppendUvarint(t, uint64(tb.count))
		t = binary.AppendUvarint(t, uint64(tb.firstLine))
		t = binary.AppendUvarint(t, uint64(tb.lastLine-tb.firstLine))
		t = binary.AppendVarint(t, tb.first-first)
		t = binary.AppendVarint(t, tb.last-tb.first)
		t = binary.AppendUvarint(t, uint64(len(tb.masks)))
		for _, m := range tb.masks {
			t = binary.AppendUvarint(t, m)
		}
		t = binary.AppendUvarint(t, uint64(len(tb.lines)))
		t = binary.AppendUvarint(t, uint64(len(tb.blocks)))
	}
	b = binary.AppendUvarint(b, uint64(len(t)))
	sb.scratch = t
	return append(b, t...)
}

// pack is an index file of the given magic holding raw compressed: the magic, raw's length and
// raw compressed (DEFLATE). The heads and the docs are read whole at open and neighbouring
// entries differ in a few bytes (a pod's containers, the same shapes at the same sizes, the
// same logs in each text's list): compressed, the heads of 200,000 files of one line each are
// a fraction of their ~70 bytes a file.
func pack(magic string, raw []byte) []byte {
	var out bytes.Buffer
	out.WriteString(magic)
	out.Write(binary.AppendUvarint(nil, uint64(len(raw))))
	zw, _ := flate.NewWriter(&out, flate.BestSpeed) // only an invalid level fails
	zw.Write(raw)                                   // a bytes.Buffer does not fail
	zw.Close()
	return out.Bytes()
}

// maxPackRatio bounds what a packed file expands to: DEFLATE's own bound is 1032 to 1, and the
// length it claims is checked against it before anything is allocated.
const maxPackRatio = 1032

// unpack is the content of an index file written by pack with the given magic.
// maxUnpackAtOnce bounds the buffer unpack makes before it has read anything: a forged file
// claims 64 times its size and a ratio of at most maxPackRatio, both of which a heads file of
// tens of megabytes makes gigabytes.
const maxUnpackAtOnce = 64 << 20

func unpack(magic string, data []byte) ([]byte, error) {
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		return nil, errors.New("not an index " + strings.TrimSpace(strings.TrimPrefix(magic, "coroner-index-")) + " file")
	}
	data = data[len(magic):]
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data))*maxPackRatio+64 || n > math.MaxInt32 {
		return nil, errCorrupt
	}
	// The length is a claim: the buffer grows with what the stream really holds (a forged
	// length of 2 GiB over a few bytes of stream allocates a few bytes), and reading one byte
	// past it tells a longer stream. Heads compress 10 to 40 times: a buffer of the claimed
	// size (and the byte past it) is made at once, within 64 times the file's size and
	// maxUnpackAtOnce, so that it is not made twice over (bytes.Buffer grows by doubling
	// whenever less than 512 bytes are free: 35 MB a search at 16,384 logs); past that it
	// grows with what the stream holds.
	// A bytes.Reader is an io.ByteReader: flate reads no byte past the stream's end, so any
	// left over is data after it.
	br := bytes.NewReader(data[k:])
	zr := flate.NewReader(br)
	raw := make([]byte, 0, min(n, uint64(len(data))*64+4096, maxUnpackAtOnce)+1)
	for lr := io.LimitReader(zr, int64(n)+1); ; {
		if len(raw) == cap(raw) {
			raw = append(raw, 0)[:len(raw)]
		}
		m, err := lr.Read(raw[len(raw):cap(raw)])
		raw = raw[:len(raw)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errCorrupt
		}
	}
	if uint64(len(raw)) != n {
		return nil, errCorrupt
	}
	if _, err := io.ReadFull(zr, make([]byte, 1)); err != io.EOF || br.Len() != 0 {
		return nil, errCorrupt // more than it claims, a broken end, bytes after it
	}
	return raw, nil
}

// namesPerStream is about what a stream's path, namespace, pod and container take in the
// arena decodeHeads makes: a Kubernetes log's path ("logs/<namespace>/<pod>/<container>.log")
// and its parts, some shared with the stream before.
const namesPerStream = 128

// decodeHeads reads the heads file: every stream's names, sizes and the place of its body,
// then the frames of the bodies file (see frame). A stream's templates stay encoded, a slice
// of data, until they are first needed; the streams are one allocation and their names
// substrings of one string, whatever the number of logs.
// logs, when set, are the logs the heads should name (see decodeRawHeads).
func decodeHeads(file []byte, logs []bundle.LogStream) ([]*Stream, []frame, error) {
	data, err := unpack(headsMagic, file)
	if err != nil {
		return nil, nil, fmt.Errorf("heads: %w", err)
	}
	return decodeRawHeads(data, logs)
}

// decodeRawHeads is decodeHeads of the heads unpacked; the streams keep slices of data. logs,
// when set, are the logs the heads were written from, in their order (the writer opening what
// it wrote, or a cache lookup the logs whose signatures named the index): each stream's names
// are checked against its log's and are its log's strings, so the names of every log (an arena
// the size of the heads, 13 MB at 200,000 logs, and where each name is, 7 MB) are not made a
// second time, at the end of a diagnosis or in every warm search. Heads that do not name the
// same logs are decoded as without them.
func decodeRawHeads(data []byte, logs []bundle.LogStream) ([]*Stream, []frame, error) {
	d := &decoder{b: data}
	if logs != nil {
		if streams, frames, ok := decodeKnownHeads(*d, logs); ok {
			return streams, frames, nil
		}
	}
	slab := make([]Stream, d.count())
	streams := make([]*Stream, len(slab))
	where := make([][4]span, len(slab))
	// The arena is made at once at the size the names take, about, so that it is not copied
	// as it grows (a fifth of decoding 200,000 heads): namesPerStream bytes a stream, or the
	// heads' own size when smaller. Where the templates' heads are most of the file (a log
	// of many templates), the file's size was eight times the names (13.5 MB for 1.75 MB of
	// names at 16,384 logs, every search).
	arena := make([]byte, 0, min(len(data), len(slab)*namesPerStream))
	var prev [4]span
	var prevFirst int64
	for i := range slab {
		s := &slab[i]
		s.idx = i
		streams[i] = s
		arena, where[i] = d.identity(arena, prev, s)
		prev = where[i]
		prevFirst = d.head(s, prevFirst)
		if d.err != nil {
			break
		}
	}
	var frames []frame
	if d.err == nil {
		frames = d.frames()
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, nil, fmt.Errorf("heads: %w", d.err)
	}
	names := unsafe.String(unsafe.SliceData(arena), len(arena)) // the arena is not written again
	for i, w := range where {
		s := &slab[i]
		s.Path, s.Namespace, s.Pod, s.Container = names[w[0].start:w[0].end], names[w[1].start:w[1].end],
			names[w[2].start:w[2].end], names[w[3].start:w[3].end]
	}
	return streams, frames, nil
}

// decodeKnownHeads is decodeRawHeads with the logs the heads were written from: false when
// the heads are not whole or name other logs (d is a copy: the caller's decoder starts over).
func decodeKnownHeads(d decoder, logs []bundle.LogStream) ([]*Stream, []frame, bool) {
	if d.count() != len(logs) || d.err != nil {
		return nil, nil, false
	}
	slab := make([]Stream, len(logs))
	streams := make([]*Stream, len(slab))
	var prevFirst int64
	for i := range slab {
		s := &slab[i]
		s.idx = i
		streams[i] = s
		var prev bundle.LogStream
		if i > 0 {
			prev = logs[i-1]
		}
		if !d.sameIdentity(prev, logs[i], s) {
			return nil, nil, false
		}
		prevFirst = d.head(s, prevFirst)
		if d.err != nil {
			return nil, nil, false
		}
	}
	frames := d.frames()
	if d.err != nil || len(d.b) != 0 {
		return nil, nil, false
	}
	return streams, frames, true
}

// head decodes what follows a stream's names (see appendIdentity and appendHead) into s, given
// the first time of the stream before; it returns s's.
func (d *decoder) head(s *Stream, prevFirst int64) int64 {
	s.First = prevFirst + d.varint()
	s.Lines, s.Bytes, s.LongLines = d.int(), int64(d.uvarint()), d.int()
	s.unordered = d.bool()
	s.Rank = int(d.varint())
	s.Last = s.First + d.varint()
	s.bodyOff, s.bodyLen = int64(d.uvarint()), d.int()
	if !packed(s.bodyLen) {
		if len(d.b) < 4 {
			d.fail()
			return s.First
		}
		s.bodyCRC = binary.LittleEndian.Uint32(d.b)
		d.b = d.b[4:]
	}
	s.cpLen = d.int()
	o := &s.over
	o.count, o.nsegs, o.linesLen, o.segLen = d.int(), d.int(), d.int(), d.int()
	s.heads = d.bytes()
	if d.err == nil && (s.cpLen+o.linesLen+o.segLen > s.bodyLen || o.count > s.Lines) {
		d.fail()
	}
	return s.First
}

// sameIdentity decodes a log's names (see appendIdentity) and says whether they are ls's,
// prev being the log before's; s takes ls's names, its strings.
func (d *decoder) sameIdentity(prev, ls bundle.LogStream, s *Stream) bool {
	common := d.int()
	if d.err != nil || common > len(prev.Path) || common > len(ls.Path) || prev.Path[:common] != ls.Path[:common] ||
		string(d.bytes()) != ls.Path[common:] {
		return false
	}
	for _, f := range [][2]string{{prev.Namespace, ls.Namespace}, {prev.Pod, ls.Pod}, {prev.Container, ls.Container}} {
		if d.bool() {
			if f[0] != f[1] {
				return false
			}
		} else if string(d.bytes()) != f[1] {
			return false
		}
	}
	s.Path, s.Namespace, s.Pod, s.Container = ls.Path, ls.Namespace, ls.Pod, ls.Container
	s.Previous, s.Truncated = d.bool(), d.bool()
	return d.err == nil && s.Previous == ls.Previous && s.Truncated == ls.Truncated
}

// decodeTemplates decodes the stream's templates from its head, once; docs is how many
// template texts the index has. A template that does not fit its log is a corrupt index.
func (s *Stream) decodeTemplates(docs int) error {
	o := s.onces()
	o.head.Do(func() {
		d := &decoder{b: s.heads}
		s.templates = make([]template, d.count())
		// The templates' masks stay encoded (see template.classes): only a regular expression's
		// search reads them, and a search of a text in 16,384 logs decoded every slot of every
		// template of those logs.
		nmasks, seen := d.count(), 0
		total := s.cpLen
		for k := range s.templates {
			t := &s.templates[k]
			t.stream, t.id = int32(s.idx), int32(k)
			t.doc = int32(d.int())
			t.level = d.byte()
			t.count = int32(d.int())
			t.firstLine = int32(d.int())
			t.lastLine = t.firstLine + int32(d.int())
			t.first = s.First + d.varint()
			t.last = t.first + d.varint()
			n := d.count()
			t.slots, t.maskBytes = int32(n), d.skipUvarints(n)
			seen += n
			t.linesLen, t.blobLen = int32(d.int()), int32(d.int())
			total += int(t.linesLen) + int(t.blobLen)
			if d.err == nil && (int(t.doc) >= docs || int(t.level) >= len(levels) || t.count < 1 || int(t.count) > s.Lines ||
				int(t.lastLine) > s.Lines) {
				d.fail()
			}
			if d.err != nil {
				break
			}
		}
		total += s.over.linesLen + s.over.segLen
		if d.err == nil && (total != s.bodyLen || len(d.b) != 0 || seen != nmasks) {
			d.fail()
		}
		if d.err != nil {
			s.templates = nil
			o.headErr = fmt.Errorf("the index of %s: heads: %w", s.Path, d.err)
		}
	})
	return o.headErr
}

// setBody splits a stream's body into its sections.
func (s *Stream) setBody(body []byte) error {
	if n, _ := binary.Uvarint(body); n != uint64((s.Lines+checkpointEvery-1)/checkpointEvery) {
		return errCorrupt
	}
	s.cp = &checkpoints{data: body[:s.cpLen:s.cpLen]}
	body = body[s.cpLen:]
	for k := range s.templates {
		t := &s.templates[k]
		t.lines, body = body[:t.linesLen:t.linesLen], body[t.linesLen:]
		t.blob, body = body[:t.blobLen:t.blobLen], body[t.blobLen:]
	}
	o, c := &s.over, s.cp
	c.overLines, body = body[:o.linesLen:o.linesLen], body[o.linesLen:]
	d := &decoder{b: body} // the segments
	c.overDescs = make([]segDesc, 0, o.nsegs)
	total := 0
	for k := 0; k < o.nsegs && d.err == nil; k++ {
		sd := segDesc{lineOff: d.int(), skip: d.int(), prevLine: d.int(), n: d.int()}
		if sd.lineOff > len(c.overLines) || sd.n < 1 {
			d.fail()
		}
		total += sd.n
		c.overDescs = append(c.overDescs, sd)
	}
	if d.err == nil && (len(d.b) != 0 || total != o.count) {
		d.fail()
	}
	return d.err
}

const docsMagic = "coroner-index-docs\n"

// encodeDocs encodes the template texts and, after each, the summary of its templates (see
// docSum) and the templates that have it (refs[i]: the logs, ascending, and the
// template's number in each), so that a search decodes the heads of the logs a text it finds
// is in, and no others.
func encodeDocs(keys []string, refs [][]tref, sums []docSum) []byte {
	b := binary.AppendUvarint(nil, uint64(len(keys)))
	var r []byte
	for i, k := range keys {
		b = appendString(b, k)
		var sum docSum
		if i < len(sums) {
			sum = sums[i]
		}
		b = append(b, sum.levels)
		// The spans: how many (0: none kept), then each one's flags and numbers.
		b = binary.AppendUvarint(b, uint64(len(sum.spans)))
		for _, s := range sum.spans {
			var flags byte
			if s.hasNum {
				flags |= rangeNum
			}
			if s.hasStr {
				flags |= rangeStr
			}
			b = append(b, flags)
			if s.hasNum {
				b = binary.AppendUvarint(b, s.min)
				b = binary.AppendUvarint(b, s.max)
			}
		}
		r = binary.AppendUvarint(r[:0], uint64(len(refs[i])))
		var prev int32
		for _, t := range refs[i] {
			r = binary.AppendUvarint(r, uint64(t.stream-prev))
			r = binary.AppendUvarint(r, uint64(t.id))
			prev = t.stream
		}
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	return pack(docsMagic, b)
}

// decodeDocs reads the template texts; each text's templates stay encoded (see Index.refs).
func decodeDocs(data []byte) ([]doc, error) {
	data, err := unpack(docsMagic, data)
	if err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	d := &decoder{b: data}
	docs := make([]doc, d.count())
	for i := range docs {
		docs[i].idx = i
		docs[i].key = d.string()
		docs[i].levels = d.byte()
		if n := d.count(); n > 0 && d.err == nil {
			spans := make([]numSpan, n)
			for k := range spans {
				s := &spans[k]
				flags := d.byte()
				s.hasNum, s.hasStr = flags&rangeNum != 0, flags&rangeStr != 0
				if s.hasNum {
					s.min, s.max = d.uvarint(), d.uvarint()
				}
			}
			docs[i].spans = spans
		}
		docs[i].refData = d.bytes()
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, fmt.Errorf("docs: %w", d.err)
	}
	return docs, nil
}

// refs returns the templates that have text d, decoded on first use: each names a log of the
// index and one of its templates, whose text must be d's.
func (ix *Index) refs(d *doc) ([]tref, error) {
	d.refOnce.Do(func() {
		dec := &decoder{b: d.refData}
		refs := make([]tref, dec.count())
		var stream int
		for k := range refs {
			stream += dec.int()
			id := dec.int()
			if dec.err != nil || stream >= len(ix.streams) {
				dec.fail()
				break
			}
			s := ix.streams[stream]
			if err := s.decodeTemplates(len(ix.docs)); err != nil {
				d.refErr = err
				return
			}
			if id >= len(s.templates) || int(s.templates[id].doc) != d.idx {
				dec.fail()
				break
			}
			refs[k] = tref{int32(stream), int32(id)}
		}
		if dec.err == nil && len(dec.b) != 0 {
			dec.fail()
		}
		if dec.err != nil {
			d.refErr = fmt.Errorf("docs: %w", dec.err)
			return
		}
		d.refs = refs
	})
	return d.refs, d.refErr
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// decoder reads the encoding back; any malformed input becomes an error, never a panic.
type decoder struct {
	b   []byte
	err error
}

var errCorrupt = errors.New("malformed index data")

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

// number reads a slot number (see logscan.NumberValue): its digit count, then its value.
func (d *decoder) number() uint64 {
	n := d.byte()
	v := d.uvarint()
	if n == 0 || n > logscan.MaxNumDigits || v >= 1<<59 {
		d.fail()
	}
	return logscan.NumberValue(int(n), v)
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length that must fit what is left (each item takes at least one byte).
func (d *decoder) count() int {
	v := d.uvarint()
	if v > uint64(len(d.b)) || v > math.MaxInt32 {
		d.fail()
		return 0
	}
	return int(v)
}

func (d *decoder) int() int {
	v := d.uvarint()
	if v > math.MaxInt32*8 {
		d.fail()
		return 0
	}
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) string() string { return string(d.bytes()) }

// filter reads a block's filter of a slot's numbers (see numFilter): a count of 64-bit words,
// a power of two up to filterWords, then the words.
func (d *decoder) filter() []byte {
	n := int(d.byte())
	if d.err != nil || n == 0 || n > filterWords || n&(n-1) != 0 || len(d.b) < 8*n {
		d.fail()
		return nil
	}
	s := d.b[: 8*n : 8*n]
	d.b = d.b[8*n:]
	return s
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bool() bool { return d.byte() == 1 }

// skipUvarints passes over n uvarints, each read by binary.Uvarint (which refuses one cut
// short or over 64 bits), and returns their bytes.
func (d *decoder) skipUvarints(n int) []byte {
	if d.err != nil {
		return nil
	}
	i := 0
	for ; n > 0; n-- {
		_, k := binary.Uvarint(d.b[i:])
		if k <= 0 {
			d.fail() // cut short, or over 64 bits
			return nil
		}
		i += k
	}
	b := d.b[:i:i]
	d.b = d.b[i:]
	return b
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
}

// checkpoint returns the stream's checkpoint i, decoding them all on first use.
func (s *Stream) checkpoint(i int) (checkpoint, error) {
	c := s.cp
	if c == nil {
		return checkpoint{}, fmt.Errorf("%s: checkpoints: the log's body was not read", s.Path)
	}
	c.once.Do(func() {
		d := &decoder{b: c.data}
		cps := make([]checkpoint, d.count())
		var off, t int64
		for k := range cps {
			off += int64(d.uvarint())
			t += d.varint()
			cps[k] = checkpoint{off: off, time: t}
		}
		if d.err == nil && len(d.b) != 0 {
			d.fail()
		}
		c.cps, c.err = cps, d.err
	})
	if c.err != nil {
		return checkpoint{}, fmt.Errorf("%s: checkpoints: %w", s.Path, c.err)
	}
	if i < 0 || i >= len(c.cps) {
		return checkpoint{}, fmt.Errorf("%s: no checkpoint %d: the index does not fit the bundle", s.Path, i)
	}
	return c.cps[i], nil
}

// eachBlock decodes a template's block summaries in line order into bl, handing it to fn
// after each. The block and its ranges are reused from one block to the next and, when the
// caller passes the same bl, from one template to the next (a step template of a large log
// has hundreds of blocks of a dozen ranges, and a search of 16,384 logs goes through a
// template or more of each: it reads them all and keeps none).
func (t *template) eachBlock(bl *block, fn func(bl *block) error) error {
	d := &decoder{b: t.blob}
	if cap(bl.ranges) < int(t.slots) {
		bl.ranges = make([]slotRange, t.slots)
	}
	bl.ranges = bl.ranges[:t.slots]
	clear(bl.ranges) // as made: nothing of the template before is left in a range it does not set
	var tmax int64
	for total := 0; total < int(t.count); {
		bl.lineOff, bl.skip, bl.prevLine, bl.n = d.int(), d.int(), d.int(), d.int()
		if bl.n < 1 || bl.n > blockSize || bl.n > int(t.count)-total {
			d.fail()
		}
		total += bl.n
		bl.tmin = tmax + d.varint()
		bl.tmax = bl.tmin + d.varint()
		tmax = bl.tmax
		for k := range bl.ranges {
			r := &bl.ranges[k]
			flags := d.byte()
			r.hasNum, r.hasStr = flags&rangeNum != 0, flags&rangeStr != 0
			if r.hasNum {
				r.numMin = d.number()
				if flags&rangeSameLen != 0 {
					r.numMax = r.numMin + d.uvarint()
					if r.numMax>>59 != r.numMin>>59 {
						d.fail()
					}
				} else {
					r.numMax = d.number()
				}
			}
			r.filter = nil
			if flags&rangeFilter != 0 {
				r.filter = d.filter()
			}
			if r.hasStr {
				r.strMin, r.strMax = d.bytes(), d.bytes()
			}
		}
		if d.err == nil && bl.lineOff > len(t.lines) {
			d.fail()
		}
		if d.err != nil {
			return d.err
		}
		if err := fn(bl); err != nil {
			return err
		}
	}
	if len(d.b) != 0 {
		return errCorrupt
	}
	return nil
}

// blockLines decodes the line numbers of one block.
func (t *template) blockLines(bl *block, dst []int) ([]int, error) {
	return decodeRuns(t.lines[bl.lineOff:], bl.prevLine, bl.skip, bl.n, dst)
}

// decodeRuns appends n line numbers read from runs (see tmplBuilder.lines) to dst, after
// skipping skip lines; prev is the line before the first run.
func decodeRuns(runs []byte, prev, skip, n int, dst []int) ([]int, error) {
	d := &decoder{b: runs}
	for n > 0 && d.err == nil {
		gap, extra := d.int(), d.int()
		if gap < 1 {
			d.fail()
			break
		}
		first := prev + gap
		prev = first + extra
		if skip > extra {
			skip -= extra + 1
			continue
		}
		for l := first + skip; l <= prev && n > 0; l++ {
			dst = append(dst, l)
			n--
		}
		skip = 0
	}
	return dst, d.err
}
