package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

// FormatVersion is the on-disk format of an index; part of the cache key.
const FormatVersion = 3

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

	idx int // the stream's number in the index
	// The body: what reading lines back needs, the checkpoints and the templates' line runs
	// and blocks. It grows with the log, so an opened index loads it per log on first use
	// (see Index.load); bodyOnce guards that.
	bodyOnce sync.Once
	bodyErr  error
	// cpData holds the encoded checkpoints, decoded into cps on first use.
	cpData []byte
	cpOnce sync.Once
	cps    []checkpoint
	cpErr  error
}

// dropBody forgets the stream's body (see Index.load).
func (s *Stream) dropBody() {
	s.cpData = nil
	for _, t := range s.Templates {
		t.lines, t.blob = nil, nil
	}
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

	stream  int
	id      int
	key     string
	tokOnce sync.Once
	tokens  []token // see toks
	masks   []uint64
	lines   []byte
	blob    []byte // encoded blocks (see eachBlock)
}

type block struct {
	// the block's first line: skip lines into the run at byte lineOff of the template's
	// lines, the line before that run being prevLine
	lineOff, skip, prevLine int
	n                       int
	tmin, tmax              int64
	ranges                  []slotRange
}

func encodeStream(ls parse.LogStream, st logscan.Stats, sb *streamBuilder) []byte {
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
	// The checkpoints as one length-prefixed section: opening an index skips it, and only
	// the logs whose lines are read decode theirs.
	cps := binary.AppendUvarint(nil, uint64(len(sb.checkpoints)))
	var off, t int64
	for _, c := range sb.checkpoints {
		cps = binary.AppendUvarint(cps, uint64(c.off-off))
		cps = binary.AppendVarint(cps, c.time-t)
		off, t = c.off, c.time
	}
	b = appendBytes(b, cps)
	b = binary.AppendUvarint(b, uint64(len(sb.templates)))
	for _, tb := range sb.templates {
		tb.flushRun() // the last run and block are still open
		tb.flushBlock()
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
	s := &Stream{idx: idx}
	s.Path, s.Namespace, s.Pod, s.Container = d.string(), d.string(), d.string(), d.string()
	s.Previous, s.Truncated = d.bool(), d.bool()
	s.Lines, s.Bytes, s.LongLines = d.int(), int64(d.uvarint()), d.int()
	s.Rank = int(d.varint())
	s.First, s.Last = d.varint(), d.varint()
	s.cpData = d.bytes()
	if n, _ := binary.Uvarint(s.cpData); d.err == nil && n != uint64((s.Lines+checkpointEvery-1)/checkpointEvery) {
		d.fail()
	}
	s.Templates = make([]*Template, d.count())
	for i := range s.Templates {
		t := &Template{stream: idx, id: i}
		t.key = d.string()
		t.Level = d.string()
		t.Rank = int(d.varint())
		if t.Count = d.int(); t.Count > s.Lines {
			d.fail()
		}
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
		if slots := countSlots(t.key); !t.Overflow && slots != len(t.masks) {
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

// countSlots counts the variable words of a template key, as tokensOf reads them.
func countSlots(key string) int {
	n := 0
	for i := 0; i+1 < len(key); i++ {
		if key[i] == 0 {
			n++
			i++
		}
	}
	return n
}

// checkpoint returns the stream's checkpoint i, decoding them all on first use.
func (s *Stream) checkpoint(i int) (checkpoint, error) {
	s.cpOnce.Do(func() {
		d := &decoder{b: s.cpData}
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
		s.cps, s.cpErr = cps, d.err
	})
	if s.cpErr != nil {
		return checkpoint{}, fmt.Errorf("%s: checkpoints: %w", s.Path, s.cpErr)
	}
	if i < 0 || i >= len(s.cps) {
		return checkpoint{}, fmt.Errorf("%s: no checkpoint %d: the index does not fit the bundle", s.Path, i)
	}
	return s.cps[i], nil
}

// toks returns the template's words and slots (see tokensOf), read on first use.
func (t *Template) toks() []token {
	t.tokOnce.Do(func() { t.tokens = tokensOf(t.key) })
	return t.tokens
}

// eachBlock decodes a template's block summaries in line order, handing each to fn. The
// block and its ranges are reused from one call to the next (a step template of a large log
// has hundreds of blocks of a dozen ranges: search reads them all and keeps none).
func (t *Template) eachBlock(fn func(bl *block) error) error {
	d := &decoder{b: t.blob}
	bl := &block{ranges: make([]slotRange, len(t.masks))}
	var tmax int64
	for total := 0; total < t.Count; {
		bl.lineOff, bl.skip, bl.prevLine, bl.n = d.int(), d.int(), d.int(), d.int()
		if bl.n < 1 || bl.n > blockSize || bl.n > t.Count-total {
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
func (t *Template) blockLines(bl *block, dst []int) ([]int, error) {
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
