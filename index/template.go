package index

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"

	"github.com/coroner-dev/coroner/logscan"
)

const (
	// checkpointEvery lines, a stream records the offset of a line (and the time before it), so
	// a line is read back by reading at most this many lines.
	checkpointEvery = 64
	// blockSize occurrences of a template share one summary of their slot values and times.
	blockSize = 256
	// A block also ends once it spans blockSpan lines and holds minBlock occurrences: a rare
	// template's occurrences lie far apart, and one block of them across the whole log would
	// summarise nothing (an "eval step N" line every few thousand lines: a search for a step
	// number would read every one of them, each from its own checkpoint).
	blockSpan = 1024
	minBlock  = 8
)

type checkpoint struct {
	off  int64
	time int64 // the line clock before the checkpoint's line
}

// slotRange summarises one slot's values in a block.
type slotRange struct {
	hasNum, hasStr bool
	numMin, numMax uint64
	strMin, strMax []byte
	// filter, when the block keeps one for the slot, has bit v mod len(filter)*8 set for the
	// value v of each of its numbers (see numFilter); nil when it keeps none.
	filter []byte
}

// filterWords is the most 64-bit words a block's filter of a slot's numbers has.
const filterWords = 16

// numFilter chooses the filter of a slot's numbers that a block keeps, from the bits of its
// values modulo 1024 (seen): the fewest bits, 64 to 1024, of which at most a quarter are set
// (a value not in the block is then ruled out three times in four), else all 1024 when at
// most half are. It keeps none (0 bits) when it would rule out nothing the range does not (a
// block of consecutive numbers, a step counter's) or too little (more than half set). A
// number's value modulo a power of two is its low bits, so consecutive values never share a
// bit, and 64 to 512 bits are the bits modulo 1024 folded.
func numFilter(r *slotRange, seen *[filterWords]uint64) []uint64 {
	set := 0
	for _, w := range seen {
		set += bits.OnesCount64(w)
	}
	const lenShift = 59
	if width := r.numMax - r.numMin; r.numMin>>lenShift == r.numMax>>lenShift && width < 64*filterWords && set == int(width)+1 {
		return nil
	}
	for n := 1; n <= filterWords; n *= 2 {
		var folded [filterWords]uint64
		for i, w := range seen {
			folded[i%n] |= w
		}
		ones := 0
		for _, w := range folded[:n] {
			ones += bits.OnesCount64(w)
		}
		if ones*4 <= 64*n || n == filterWords && ones*2 <= 64*n {
			copy(seen[:n], folded[:n])
			return seen[:n]
		}
	}
	return nil
}

// mayHoldNum reports whether the block's filter of the slot, if it keeps one, may hold a
// number.
func (r *slotRange) mayHoldNum(num uint64) bool {
	if r.filter == nil {
		return true
	}
	i := num & uint64(len(r.filter)*8-1)
	return r.filter[i>>3]&(1<<(i&7)) != 0
}

// addStr adds a value that is not a number (numbers are added in tmplBuilder.add).
func (r *slotRange) addStr(str []byte) {
	if !r.hasStr {
		r.hasStr = true
		r.strMin, r.strMax = logscan.Fold(r.strMin[:0], str), logscan.Fold(r.strMax[:0], str)
		return
	}
	switch c := logscan.CompareFolded(r.strMin, str); {
	case c > 0:
		r.strMin = logscan.Fold(r.strMin[:0], str)
	case c < 0 && logscan.CompareFolded(r.strMax, str) < 0:
		r.strMax = logscan.Fold(r.strMax[:0], str)
	}
}

// mayHold reports whether a value could be in the range.
func (r *slotRange) mayHold(v logscan.Value) bool {
	if v.Numeric {
		return r.hasNum && v.Num >= r.numMin && v.Num <= r.numMax && r.mayHoldNum(v.Num)
	}
	return r.hasStr && logscan.CompareFolded(r.strMin, v.Str) <= 0 && logscan.CompareFolded(r.strMax, v.Str) >= 0
}

// mayStartWith reports whether a string value with that prefix could be in the range.
func (r *slotRange) mayStartWith(p string) bool {
	if !r.hasStr {
		return false
	}
	lo, hi := string(r.strMin), string(r.strMax)
	return p >= lo[:min(len(lo), len(p))] && p <= hi[:min(len(hi), len(p))]
}

// tmplBuilder accumulates one template of one stream while the stream is scanned.
type tmplBuilder struct {
	doc                 int
	level               string
	count               int
	first, last         int64
	firstLine, lastLine int
	masks               []uint64
	// lines are the line numbers as runs of consecutive lines, each two uvarints: the gap
	// from the last line of the run before (from 0 for the first), and how many lines follow
	// the run's first. A training log's step lines are long runs, broken only by other lines.
	lines    []byte
	prevLine int
	// the run being filled: it will be written at runOff; runPrev is the line before it
	runOff, runPrev, runFirst, runLen int
	blocks                            []byte
	// the block being filled: where its first line is (the run, how many lines of the run
	// come before it, the line before the run), its first line, its occurrences so far
	blockOff, blockSkip, blockPrev int
	blockFirst, blockN             int
	tmin, tmax                     int64
	blockTmax                      int64 // of the last block written
	ranges                         []slotRange
	// seen is, for each slot in turn, the bits of its numbers' values modulo 1024 in the
	// block being filled (see numFilter).
	seen [][filterWords]uint64
	// spans are each slot's values over every block written
	spans []numSpan
}

// numSpan summarises a slot's values over many blocks: the least and greatest number, and
// whether any value was not a number.
type numSpan struct {
	hasNum, hasStr bool
	min, max       uint64
}

func (s *numSpan) add(hasNum, hasStr bool, lo, hi uint64) {
	s.hasStr = s.hasStr || hasStr
	switch {
	case !hasNum:
	case !s.hasNum:
		s.hasNum, s.min, s.max = true, lo, hi
	default:
		s.min, s.max = min(s.min, lo), max(s.max, hi)
	}
}

// mayHold reports whether a slot of the span may hold a word's value.
func (s *numSpan) mayHold(v logscan.Value) bool {
	return s.hasStr || !v.Numeric || s.hasNum && v.Num >= s.min && v.Num <= s.max
}

// docSum summarises the templates of a text, so that a search rules a text out before it
// decodes the templates of its logs: the levels of its templates (bit levelCode(l) for level
// l) and each slot's values over all of them (none when its templates disagree on the slots,
// which a text's never do).
type docSum struct {
	levels byte
	spans  []numSpan
	mixed  bool
}

func (d *docSum) add(t *tmplBuilder) {
	d.levels |= 1 << levelCode(t.level)
	switch {
	case d.mixed:
	case d.spans == nil:
		d.spans = slices.Clone(t.spans)
	case len(d.spans) != len(t.spans):
		d.spans, d.mixed = nil, true
	default:
		for i, s := range t.spans {
			d.spans[i].add(s.hasNum, s.hasStr, s.min, s.max)
		}
	}
}

func (t *tmplBuilder) add(n int, ts int64, vals []logscan.Var, masks []uint64, text []byte) {
	if t.blockN == blockSize || (t.blockN >= minBlock && n-t.blockFirst >= blockSpan) {
		t.flushBlock()
	}
	if t.runLen > 0 && n == t.runFirst+t.runLen {
		t.runLen++
	} else {
		t.flushRun()
		t.runOff, t.runPrev, t.runFirst, t.runLen = len(t.lines), t.prevLine, n, 1
	}
	t.prevLine = n
	if t.blockN == 0 {
		t.blockOff, t.blockSkip, t.blockPrev = t.runOff, t.runLen-1, t.runPrev
		t.blockFirst, t.tmin, t.tmax = n, ts, ts
		for i := range t.ranges {
			t.ranges[i].hasNum, t.ranges[i].hasStr = false, false
			t.seen[i] = [filterWords]uint64{}
		}
	}
	t.blockN++
	if t.count == 0 {
		t.firstLine, t.first = n, ts
	}
	t.count++
	t.lastLine, t.last = n, ts
	if t.first == 0 {
		t.first = ts
	}
	if ts != 0 && (t.tmin == 0 || ts < t.tmin) {
		t.tmin = ts
	}
	if ts > t.tmax {
		t.tmax = ts
	}
	masks = masks[:len(vals)]
	ranges := t.ranges[:len(vals)]
	tmasks := t.masks[:len(vals)]
	seen := t.seen[:len(vals)]
	for i, v := range vals {
		// A value joins its range: a number (see logscan.Var), else the string text[v.Start:v.End].
		// Written out here rather than as a method, which would not be inlined: this runs for
		// every variable word of the logs.
		r := &ranges[i]
		if v.Num != 0 {
			seen[i][v.Num>>6%filterWords] |= 1 << (v.Num % 64)
		}
		switch {
		case v.Num == 0:
			r.addStr(text[v.Start:v.End])
		case !r.hasNum:
			r.hasNum, r.numMin, r.numMax = true, v.Num, v.Num
		case v.Num < r.numMin:
			r.numMin = v.Num
		case v.Num > r.numMax:
			r.numMax = v.Num
		}
		tmasks[i] |= masks[i]
	}
}

func newTmplBuilder(doc int, level string, slots int) *tmplBuilder {
	return &tmplBuilder{doc: doc, level: level, masks: make([]uint64, slots), ranges: make([]slotRange, slots),
		seen: make([][filterWords]uint64, slots), spans: make([]numSpan, slots)}
}

// reuse makes t, a builder of a log whose part of the index is written, a new one as
// newTmplBuilder's, on the memory it has: its slices and each slot's string bounds. The
// filters of the slots' numbers (seen) are cleared as each block begins.
func (t *tmplBuilder) reuse(doc int, level string, slots int) {
	if cap(t.masks) < slots {
		lines, blocks := t.lines[:0], t.blocks[:0]
		*t = *newTmplBuilder(doc, level, slots)
		t.lines, t.blocks = lines, blocks
		return
	}
	ranges := t.ranges[:slots]
	for i := range ranges {
		ranges[i] = slotRange{strMin: ranges[i].strMin[:0], strMax: ranges[i].strMax[:0]}
	}
	masks, spans := t.masks[:slots], t.spans[:slots]
	clear(masks)
	clear(spans)
	*t = tmplBuilder{doc: doc, level: level, masks: masks, ranges: ranges, seen: t.seen[:slots], spans: spans,
		lines: t.lines[:0], blocks: t.blocks[:0]}
}

// flushRun encodes the run being filled, if any.
func (t *tmplBuilder) flushRun() {
	if t.runLen > 0 {
		t.lines = binary.AppendUvarint(t.lines, uint64(t.runFirst-t.runPrev))
		t.lines = binary.AppendUvarint(t.lines, uint64(t.runLen-1))
		t.runLen = 0
	}
}

// flushBlock encodes the block being filled, if any.
func (t *tmplBuilder) flushBlock() {
	if t.blockN == 0 {
		return
	}
	b := t.blocks
	b = binary.AppendUvarint(b, uint64(t.blockOff))
	b = binary.AppendUvarint(b, uint64(t.blockSkip))
	b = binary.AppendUvarint(b, uint64(t.blockPrev))
	b = binary.AppendUvarint(b, uint64(t.blockN))
	t.blockN = 0
	// Times as differences: from the last block's end, and the block's span.
	b = binary.AppendVarint(b, t.tmin-t.blockTmax)
	b = binary.AppendVarint(b, t.tmax-t.tmin)
	t.blockTmax = t.tmax
	for i := range t.ranges {
		r := &t.ranges[i]
		t.spans[i].add(r.hasNum, r.hasStr, r.numMin, r.numMax)
		var flags byte
		var filter []uint64
		if r.hasNum {
			flags |= rangeNum
			if r.numMin>>59 == r.numMax>>59 {
				flags |= rangeSameLen
			}
			if filter = numFilter(r, &t.seen[i]); filter != nil {
				flags |= rangeFilter
			}
		}
		if r.hasStr {
			flags |= rangeStr
		}
		b = append(b, flags)
		if r.hasNum {
			// A number's digit count and value apart (see logscan.NumberValue); the maximum as the
			// difference from the minimum when both have as many digits.
			const lenShift, valMask = 59, 1<<59 - 1
			b = append(b, byte(r.numMin>>lenShift))
			b = binary.AppendUvarint(b, r.numMin&valMask)
			if flags&rangeSameLen != 0 {
				b = binary.AppendUvarint(b, r.numMax-r.numMin)
			} else {
				b = append(b, byte(r.numMax>>lenShift))
				b = binary.AppendUvarint(b, r.numMax&valMask)
			}
			if filter != nil {
				// How many words, then the words, little-endian: bit v mod 64*len of the bytes.
				b = append(b, byte(len(filter)))
				for _, w := range filter {
					b = binary.LittleEndian.AppendUint64(b, w)
				}
			}
		}
		if r.hasStr {
			b = appendBytes(b, r.strMin)
			b = appendBytes(b, r.strMax)
		}
	}
	t.blocks = b
}

// Flags of an encoded slot range.
const (
	rangeNum     = 1
	rangeStr     = 2
	rangeSameLen = 4 // the numbers have as many digits
	rangeFilter  = 8 // a filter of the numbers' values follows their range (see numFilter)
)

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// streamBuilder records one stream's lines as the scan hands them over: a template for each
// of the log's shapes, each with the compact list of its lines and the summaries of its
// blocks; the lines without a shape in the chunks of its worker (see chunkBuilder); and the
// checkpoints of the log.
type streamBuilder struct {
	idx         int
	templates   []*tmplBuilder // in order of first appearance
	byShape     []*tmplBuilder // by logscan.Shape ID
	over        overflowBuilder
	chunk       *chunkBuilder
	checkpoints []checkpoint
	err         error
	words       lineWords
	rank        int            // the first torchrun "[rankN]:" prefix seen, or -1
	unordered   bool           // see Stream.unordered
	spare       []*tmplBuilder // builders of earlier logs' templates, to reuse (see start)
	// body, head and scratch are buffers Done encodes the log's part of the index in
	body, head, scratch []byte
}

// start makes b the builder of log idx, keeping its chunk builder and, for the log's
// templates, the builders of the last log's (see reuse) within bounds: a log's thousands of
// shapes, or a long log's runs and blocks, are not held on to for the next.
func (b *streamBuilder) start(idx int) {
	const maxSpare, maxBytes = 1024, 64 << 10
	for k := len(b.templates) - 1; k >= 0 && len(b.spare) < maxSpare; k-- {
		// the first template on top: a job's logs have their shapes in much the same order,
		// so that a builder goes to a template of as many slots
		t := b.templates[k]
		t.lines, t.blocks = bounded(t.lines, maxBytes), bounded(t.blocks, maxBytes)
		b.spare = append(b.spare, t)
	}
	clear(b.templates)
	clear(b.byShape)
	o := &b.over
	*o = overflowBuilder{lines: bounded(o.lines, maxBytes), segs: bounded(o.segs, maxBytes)}
	cps := b.checkpoints[:0]
	if cap(cps) > maxBytes/16 {
		cps = nil
	}
	*b = streamBuilder{idx: idx, templates: b.templates[:0], byShape: b.byShape[:0], over: *o, chunk: b.chunk,
		checkpoints: cps, words: b.words, rank: -1, spare: b.spare,
		body: bounded(b.body, maxBytes), head: bounded(b.head, maxBytes), scratch: bounded(b.scratch, maxBytes)}
}

// bounded is buf emptied, or nil when it is over max bytes: a long log's buffers are not
// kept for the next.
func bounded(buf []byte, limit int) []byte {
	if cap(buf) > limit {
		return nil
	}
	return buf[:0]
}

// add records a scanned line.
func (b *streamBuilder) add(l *logscan.Scanned) {
	if (l.Number-1)%checkpointEvery == 0 {
		b.checkpoints = append(b.checkpoints, checkpoint{off: l.Offset, time: l.Before})
	}
	if l.Time < l.Before || l.Before == 0 && l.Time != 0 && l.Number > 1 {
		b.unordered = true
	}
	if b.rank < 0 && len(l.Text) > 0 && l.Text[0] == '[' {
		b.rank = logscan.RankPrefix(l.Text)
	}
	var t *tmplBuilder
	switch sh := l.Shape; {
	case sh == nil:
		b.over.add(l.Number, l.Time)
		if b.chunk.addLine(l.Text) {
			b.endSegment()
			if err := b.chunk.close(); err != nil && b.err == nil {
				b.err = err
			}
		}
		return
	case sh.ID < len(b.byShape):
		t = b.byShape[sh.ID]
	default:
		t = b.newTemplate(sh, l.Text)
	}
	t.add(l.Number, l.Time, l.Vars, l.VarClasses, l.Text)
}

// endSegment ends the stream's part of the current chunk.
func (b *streamBuilder) endSegment() {
	if seg, ok := b.over.endSegment(); ok {
		b.chunk.segs = append(b.chunk.segs, chunkSeg{stream: int32(b.idx), seg: int32(seg.idx), n: int32(seg.n), tmin: seg.tmin, tmax: seg.tmax})
	}
}

// finish ends the stream: its last segment stays in the worker's chunk, which goes on with
// the next log.
func (b *streamBuilder) finish() error {
	b.endSegment()
	return b.err
}

// newTemplate starts the template of a shape first seen in line text.
func (b *streamBuilder) newTemplate(sh *logscan.Shape, text []byte) *tmplBuilder {
	b.words.reset(text[:min(len(text), 256)])
	var t *tmplBuilder
	if n := len(b.spare); n > 0 {
		t = b.spare[n-1]
		b.spare[n-1] = nil
		b.spare = b.spare[:n-1]
		t.reuse(sh.Doc, b.words.level(), len(sh.Vars))
	} else {
		t = newTmplBuilder(sh.Doc, b.words.level(), len(sh.Vars))
	}
	b.byShape = append(b.byShape, t)
	b.templates = append(b.templates, t)
	return t
}

// overflowBuilder records the lines of a stream that have no template, as runs (as a
// template's), cut into segments at the ends of chunks.
type overflowBuilder struct {
	count                             int
	lines                             []byte
	prevLine                          int
	runOff, runPrev, runFirst, runLen int
	segs                              []byte
	nsegs                             int
	// the segment being filled (see tmplBuilder's block)
	segOff, segSkip, segPrev, segN int
	tmin, tmax                     int64
}

type segInfo struct {
	idx, n     int
	tmin, tmax int64
}

func (o *overflowBuilder) add(n int, ts int64) {
	if o.runLen > 0 && n == o.runFirst+o.runLen {
		o.runLen++
	} else {
		o.flushRun()
		o.runOff, o.runPrev, o.runFirst, o.runLen = len(o.lines), o.prevLine, n, 1
	}
	o.prevLine = n
	if o.segN == 0 {
		o.segOff, o.segSkip, o.segPrev = o.runOff, o.runLen-1, o.runPrev
		o.tmin, o.tmax = ts, ts
	}
	o.segN++
	o.count++
	if ts != 0 && (o.tmin == 0 || ts < o.tmin) {
		o.tmin = ts
	}
	o.tmax = max(o.tmax, ts)
}

func (o *overflowBuilder) flushRun() {
	if o.runLen > 0 {
		o.lines = binary.AppendUvarint(o.lines, uint64(o.runFirst-o.runPrev))
		o.lines = binary.AppendUvarint(o.lines, uint64(o.runLen-1))
		o.runLen = 0
	}
}

// endSegment closes the segment being filled, if any.
func (o *overflowBuilder) endSegment() (segInfo, bool) {
	if o.segN == 0 {
		return segInfo{}, false
	}
	o.segs = binary.AppendUvarint(o.segs, uint64(o.segOff))
	o.segs = binary.AppendUvarint(o.segs, uint64(o.segSkip))
	o.segs = binary.AppendUvarint(o.segs, uint64(o.segPrev))
	o.segs = binary.AppendUvarint(o.segs, uint64(o.segN))
	info := segInfo{idx: o.nsegs, n: o.segN, tmin: o.tmin, tmax: o.tmax}
	o.nsegs++
	o.segN = 0
	return info, true
}

// levelWords is how many of a line's first words may name its level.
const levelWords = 12

// levelWord is the level a line's folded word names, or "": a level word, glog's "E0314",
// or, for lines without a level word, an exception or error class ("torch.OutOfMemoryError:
// CUDA out of memory", "RuntimeError: ...") or the "most" of "Traceback (most recent call
// last)" (errors), a warning class ("UserWarning: ...", a warning). prev is the word before w
// on the line (nil for the first).
func levelWord(prev, w []byte) string {
	switch string(w) {
	case "fatal", "critical", "panic":
		return "critical"
	case "error", "err":
		return "error"
	case "warning", "warn":
		return "warning"
	case "info":
		return "info"
	case "debug", "trace":
		return "debug"
	case "most":
		if string(prev) == "traceback" {
			return "error"
		}
	}
	if len(w) >= 4 && len(w) <= 5 && allDigits(string(w[1:])) {
		switch w[0] {
		case 'i':
			return "info"
		case 'w':
			return "warning"
		case 'e':
			return "error"
		case 'f':
			return "critical"
		}
	}
	switch n := len(w); {
	case n > 5 && (bytes.HasSuffix(w, []byte("error")) || bytes.HasSuffix(w, []byte("exception"))):
		return "error"
	case n > 7 && bytes.HasSuffix(w, []byte("warning")):
		return "warning"
	}
	return ""
}

// Levels, by code (stored as a byte).
var levels = []string{"", "critical", "error", "warning", "info", "debug"}

func levelCode(l string) byte {
	for i, x := range levels {
		if x == l {
			return byte(i)
		}
	}
	return 0
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Token kinds of a template's words.
const (
	tokConst = 0
	tokWhole = logscan.VarWord
	tokRun   = logscan.VarDigits
)

type token struct {
	shape string // what bleve indexes
	kind  byte
	slot  int // the slot index of a whole or run token
}

// tokensOf reads a template key back into words and slots.
func tokensOf(key string) []token {
	var out []token
	var cur []byte
	kind, slot := byte(tokConst), 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, token{shape: string(cur), kind: kind, slot: slot - 1})
		}
		cur, kind = cur[:0], tokConst
	}
	for i := 0; i < len(key); {
		c := key[i]
		switch {
		case c == 0 && i+1 < len(key):
			cur = append(cur, '0')
			kind = key[i+1]
			slot++
			i += 2
			continue
		case logscan.IsWordByte(c):
			j := i
			for j < len(key) && logscan.IsWordByte(key[j]) {
				j++
			}
			cur = logscan.Fold(cur, []byte(key[i:j]))
			i = j
			continue
		}
		flush()
		i++
	}
	flush()
	return out
}

// display renders a template key for people: every slot is "<*>".
func display(key string) string {
	if strings.IndexByte(key, 0) < 0 {
		return key
	}
	var sb strings.Builder
	for i := 0; i < len(key); i++ {
		if key[i] == 0 && i+1 < len(key) {
			sb.WriteString("<*>")
			i++
			continue
		}
		sb.WriteByte(key[i])
	}
	return sb.String()
}
