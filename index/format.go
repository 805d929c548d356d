package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/coroner-dev/coroner/parse"
)

// FormatVersion is the on-disk format of an index; part of the cache key.
const FormatVersion = 1

const streamMagic = "coroner-index-stream\n"

// Stream is one indexed log.
type Stream struct {
	parse.LogStream
	// Lines and Bytes are what the scan read.
	Lines     int
	Bytes     int64
	LongLines int
	// Rank is the first torchrun "[rankN]:" prefix seen, or -1.
	Rank        int
	First, Last int64
	Templates   []*Template
	checkpoints []checkpoint
}

// Template is one line shape of one stream: its variable words masked, with where it occurs.
type Template struct {
	// Text shows the shape, every variable word as "<*>".
	Text                string
	Level               string
	Rank                int
	Count               int
	First, Last         int64
	FirstLine, LastLine int
	// Overflow holds the lines of a stream with too many shapes; search reads them all.
	Overflow bool

	stream int
	id     int
	key    string
	tokens []token
	masks  []uint64
	lines  []byte
	blob   []byte // encoded blocks, decoded on first use
	blocks []block
}

type block struct {
	prevLine, lineOff int
	n                 int
	tmin, tmax        int64
	ranges            []slotRange
}

func encodeStream(ls parse.LogStream, st StreamStats, sb *streamBuilder) []byte {
	b := []byte(streamMagic)
	b = appendString(b, ls.Path)
	b = appendString(b, ls.Namespace)
	b = appendString(b, ls.Pod)
	b = appendString(b, ls.Container)
	b = appendBool(b, ls.Previous)
	b = appendBool(b, ls.Truncated)
	b = binary.AppendUvarint(b, uint64(st.Lines))
	b = binary.AppendUvarint(b, uint64(st.Bytes))
	b = binary.AppendUvarint(b, uint64(st.LongLines))
	b = binary.AppendVarint(b, int64(sb.rank))
	b = binary.AppendVarint(b, unixNano(st.First))
	b = binary.AppendVarint(b, unixNano(st.Last))
	b = binary.AppendUvarint(b, uint64(len(sb.checkpoints)))
	var off, t int64
	for _, c := range sb.checkpoints {
		b = binary.AppendUvarint(b, uint64(c.off-off))
		b = binary.AppendVarint(b, c.time-t)
		off, t = c.off, c.time
	}
	b = binary.AppendUvarint(b, uint64(len(sb.templates)))
	for _, tb := range sb.templates {
		if tb.count > 0 {
			tb.flushBlock() // the last block is still open
		}
		b = appendString(b, tb.key)
		b = appendString(b, tb.level)
		b = binary.AppendVarint(b, int64(tb.rank))
		b = binary.AppendUvarint(b, uint64(tb.count))
		b = binary.AppendVarint(b, tb.first)
		b = binary.AppendVarint(b, tb.last)
		b = binary.AppendUvarint(b, uint64(tb.firstLine))
		b = binary.AppendUvarint(b, uint64(tb.lastLine))
		b = appendBool(b, tb.overflow)
		b = binary.AppendUvarint(b, uint64(len(tb.masks)))
		for _, m := range tb.masks {
			b = binary.AppendUvarint(b, m)
		}
		b = appendBytes(b, tb.lines)
		b = appendBytes(b, tb.blocks)
	}
	return b
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

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
}

func decodeStream(data []byte, idx int) (*Stream, error) {
	if len(data) < len(streamMagic) || string(data[:len(streamMagic)]) != streamMagic {
		return nil, errors.New("not an index stream file")
	}
	d := &decoder{b: data[len(streamMagic):]}
	s := &Stream{}
	s.Path, s.Namespace, s.Pod, s.Container = d.string(), d.string(), d.string(), d.string()
	s.Previous, s.Truncated = d.bool(), d.bool()
	s.Lines, s.Bytes, s.LongLines = d.int(), int64(d.uvarint()), d.int()
	s.Rank = int(d.varint())
	s.First, s.Last = d.varint(), d.varint()
	s.checkpoints = make([]checkpoint, d.count())
	var off, t int64
	for i := range s.checkpoints {
		off += int64(d.uvarint())
		t += d.varint()
		s.checkpoints[i] = checkpoint{off: off, time: t}
	}
	if d.err == nil && len(s.checkpoints) != (s.Lines+checkpointEvery-1)/checkpointEvery {
		d.fail()
	}
	s.Templates = make([]*Template, d.count())
	for i := range s.Templates {
		t := &Template{stream: idx, id: i}
		t.key = d.string()
		t.Level = d.string()
		t.Rank = int(d.varint())
		t.Count = d.int()
		t.First, t.Last = d.varint(), d.varint()
		t.FirstLine, t.LastLine = d.int(), d.int()
		t.Overflow = d.bool()
		t.masks = make([]uint64, d.count())
		for k := range t.masks {
			t.masks[k] = d.uvarint()
		}
		t.lines = d.bytes()
		t.blob = d.bytes()
		if d.err != nil {
			break
		}
		t.Text = display(t.key)
		t.tokens = tokensOf(t.key)
		if slots := countSlots(t.tokens); !t.Overflow && slots != len(t.masks) {
			d.fail()
		}
		s.Templates[i] = t
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, fmt.Errorf("stream %d: %w", idx, d.err)
	}
	return s, nil
}

func countSlots(toks []token) int {
	n := 0
	for _, t := range toks {
		if t.kind != tokConst {
			n++
		}
	}
	return n
}

// decodeBlocks reads a template's block summaries on first use.
func (t *Template) decodeBlocks() ([]block, error) {
	if t.blocks != nil || t.Count == 0 {
		return t.blocks, nil
	}
	d := &decoder{b: t.blob}
	nb := (t.Count + blockSize - 1) / blockSize
	blocks := make([]block, nb)
	for i := range blocks {
		bl := &blocks[i]
		bl.prevLine, bl.lineOff = d.int(), d.int()
		bl.tmin, bl.tmax = d.varint(), d.varint()
		bl.n = min(blockSize, t.Count-i*blockSize)
		bl.ranges = make([]slotRange, len(t.masks))
		for k := range bl.ranges {
			r := &bl.ranges[k]
			flags := d.byte()
			r.hasNum, r.hasStr = flags&1 != 0, flags&2 != 0
			if r.hasNum {
				r.numMin, r.numMax = d.uvarint(), d.uvarint()
			}
			if r.hasStr {
				r.strMin, r.strMax = d.bytes(), d.bytes()
			}
		}
		if d.err == nil && bl.lineOff > len(t.lines) {
			d.fail()
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, d.err
	}
	t.blocks = blocks
	return blocks, nil
}

// blockLines decodes the line numbers of one block.
func (t *Template) blockLines(bl *block, dst []int) ([]int, error) {
	d := &decoder{b: t.lines[bl.lineOff:]}
	n := bl.prevLine
	for k := 0; k < bl.n; k++ {
		n += d.int()
		dst = append(dst, n)
	}
	return dst, d.err
}
