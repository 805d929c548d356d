package index

import (
	"encoding/binary"
	"strings"
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
	// maxTemplates bounds one stream's templates; lines of further shapes go to an overflow
	// template that search always verifies line by line.
	maxTemplates = 20_000
	// maxKeyBytes bounds a template's text; longer lines share the overflow template too.
	maxKeyBytes = 4096
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
}

// addStr adds a value that is not a number (numbers are added in tmplBuilder.add).
func (r *slotRange) addStr(str []byte) {
	if !r.hasStr {
		r.hasStr = true
		r.strMin, r.strMax = fold(r.strMin[:0], str), fold(r.strMax[:0], str)
		return
	}
	switch c := cmpFold(r.strMin, str); {
	case c > 0:
		r.strMin = fold(r.strMin[:0], str)
	case c < 0 && cmpFold(r.strMax, str) < 0:
		r.strMax = fold(r.strMax[:0], str)
	}
}

// lineVal is a variable word's value in the line being scanned: num is its slotValue number
// when it is one, else 0 and the value is the string at [s, e) of the line. It holds no
// pointer, so the scan's per-word writes cost the garbage collector nothing.
type lineVal struct {
	num  uint64
	s, e int32
}

// numValue returns the slotValue number of a word of n digits (n <= maxNumDigits) worth v.
func numValue(n int, v uint64) uint64 { return uint64(n)<<59 | v }

// lineValOf returns the value of text[s:e].
func lineValOf(text []byte, s, e int) lineVal {
	v := valueOf(text[s:e])
	if v.numeric {
		return lineVal{num: v.num}
	}
	return lineVal{s: int32(s), e: int32(e)}
}

// mayHold reports whether a value could be in the range.
func (r *slotRange) mayHold(v slotValue) bool {
	if v.numeric {
		return r.hasNum && v.num >= r.numMin && v.num <= r.numMax
	}
	return r.hasStr && cmpFold(r.strMin, v.str) <= 0 && cmpFold(r.strMax, v.str) >= 0
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
	key                 string
	level               string
	rank                int
	count               int
	first, last         int64
	firstLine, lastLine int
	overflow            bool
	shape               *Shape
	ascii               bool // the key is ASCII: lines can be matched against it (see match)
	prog                partProg
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
}

func (t *tmplBuilder) add(n int, ts int64, vals []lineVal, masks []uint64, text []byte) {
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
	if t.overflow {
		return
	}
	masks = masks[:len(vals)]
	ranges := t.ranges[:len(vals)]
	tmasks := t.masks[:len(vals)]
	for i, v := range vals {
		// A value joins its range: a number (see lineVal), else the string text[v.s:v.e].
		// Written out here rather than as a method, which would not be inlined: this runs for
		// every variable word of the logs.
		r := &ranges[i]
		switch {
		case v.num == 0:
			r.addStr(text[v.s:v.e])
		case !r.hasNum:
			r.hasNum, r.numMin, r.numMax = true, v.num, v.num
		case v.num < r.numMin:
			r.numMin = v.num
		case v.num > r.numMax:
			r.numMax = v.num
		}
		tmasks[i] |= masks[i]
	}
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
		var flags byte
		if r.hasNum {
			flags |= rangeNum
			if r.numMin>>59 == r.numMax>>59 {
				flags |= rangeSameLen
			}
		}
		if r.hasStr {
			flags |= rangeStr
		}
		b = append(b, flags)
		if r.hasNum {
			// A number's digit count and value apart (see valueOf); the maximum as the
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
)

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// streamBuilder turns one stream's lines into templates: variable words masked, identical
// shapes deduplicated, each with the compact list of its lines.
type streamBuilder struct {
	byKey       map[string]*tmplBuilder
	templates   []*tmplBuilder
	overflow    *tmplBuilder
	checkpoints []checkpoint
	rank        int
	// recent holds the last two templates (of ASCII text) seen, tried first on a new line.
	recent [2]*tmplBuilder
	// per-line scratch
	cur   *tmplBuilder // the line's template when match found it
	key   []byte
	vals  []lineVal
	masks []uint64
}

func newStreamBuilder() *streamBuilder {
	return &streamBuilder{byKey: map[string]*tmplBuilder{}, rank: -1}
}

// line tokenizes a line, cleaning it first when it must (into *clean), and returns the text
// to record. A line is first matched against the templates of the lines before it, which
// reads its variable words without building its key; else it is tokenized.
func (b *streamBuilder) line(text []byte, clean *[]byte) []byte {
	for _, t := range b.recent {
		if t != nil && b.match(t, text) {
			b.cur = t
			return text
		}
	}
	b.cur = nil
	if b.tokenize(text) {
		*clean = Clean((*clean)[:0], text)
		text = *clean
		b.tokenize(text)
	}
	return text
}

// add records the line line() returned and returns its template.
func (b *streamBuilder) add(n int, off, before, ts int64, text []byte) *tmplBuilder {
	if (n-1)%checkpointEvery == 0 {
		b.checkpoints = append(b.checkpoints, checkpoint{off: off, time: before})
	}
	t := b.cur
	if t == nil {
		if t = b.byKey[string(b.key)]; t == nil {
			t = b.newTemplate(text)
		}
	}
	if t != b.recent[0] && t.shape != nil && t.ascii {
		b.recent[0], b.recent[1] = t, b.recent[0]
	}
	t.add(n, ts, b.vals, b.masks, text)
	return t
}

// match reads text as a line of template t: the same constant parts, and in between variable
// words of the same kinds. It is exact: it succeeds only when tokenize would give t's key,
// which holds for templates of ASCII text whose lines need no cleaning: the parts are compared
// byte for byte, a word of digits ends where the next part starts with a non-digit (as it did
// in the line that made the template), a whole word is read to its end and must still be
// shaped as one, and any byte that cleaning could change fails the match.
func (b *streamBuilder) match(t *tmplBuilder, text []byte) bool {
	parts, kinds := t.shape.Parts, t.shape.Vars
	if !t.prog.partAt(0, parts[0], text, 0) {
		return false
	}
	pos := len(parts[0])
	vals, masks := grow(b.vals, len(kinds)), grow(b.masks, len(kinds))
	for v, kind := range kinds {
		start := pos
		var num uint64
		for pos < len(text) && text[pos]-'0' <= 9 {
			num = num*10 + uint64(text[pos]-'0')
			pos++
		}
		switch {
		case pos == start && kind == slotRun:
			return false
		case kind == slotRun || pos < len(text) && class[text[pos]]&cWord == 0 || pos == len(text):
			// A digit run, or a whole word of digits: a number.
			if pos == start {
				return false
			}
			if pos-start <= maxNumDigits {
				vals[v] = lineVal{num: numValue(pos-start, num)}
			} else {
				vals[v] = lineVal{s: int32(start), e: int32(pos)}
			}
			masks[v] = maskDigit
		default:
			// A whole word with more than digits: read to its end.
			var seen uint8
			for pos < len(text) {
				c := class[text[pos]]
				if c&cWord == 0 {
					break
				}
				seen |= c
				pos++
			}
			w := text[start:pos]
			if seen&cSpecial != 0 {
				return false
			}
			if kind, _, _ := wordShape(w); kind != slotWhole {
				return false
			}
			vals[v] = lineVal{s: int32(start), e: int32(pos)}
			masks[v] = charMask(w)
		}
		p := parts[v+1]
		if !t.prog.partAt(v+1, p, text, pos) {
			return false
		}
		pos += len(p)
	}
	if pos != len(text) {
		return false
	}
	b.vals, b.masks = vals, masks
	return true
}

// grow returns s resized to n elements, reusing its array when it can.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// partProg holds each constant part of a template of up to 8 bytes as a word and a mask,
// so that match compares it with one load instead of a call.
type partProg struct {
	words, masks []uint64
}

func newPartProg(parts []string) partProg {
	p := partProg{words: make([]uint64, len(parts)), masks: make([]uint64, len(parts))}
	for i, s := range parts {
		if len(s) <= 8 {
			for k := len(s) - 1; k >= 0; k-- {
				p.words[i] = p.words[i]<<8 | uint64(s[k])
				p.masks[i] = p.masks[i]<<8 | 0xff
			}
		}
	}
	return p
}

// partAt reports whether part i, s, is at text[pos:].
func (p *partProg) partAt(i int, s string, text []byte, pos int) bool {
	if len(s) <= 8 && pos+8 <= len(text) {
		return (binary.LittleEndian.Uint64(text[pos:])^p.words[i])&p.masks[i] == 0
	}
	return len(text)-pos >= len(s) && string(text[pos:pos+len(s)]) == s
}

// tokenize masks the variable words of text into b.key, collecting their values. The key
// keeps every other byte; a slot is the byte 0 (which cleaned text never holds) and its kind.
// It reports whether text holds a byte that cleaning could change (the caller then cleans and
// tokenizes again): the scan looks at every byte once for both.
func (b *streamBuilder) tokenize(text []byte) (special bool) {
	key, vals, masks := b.key[:0], b.vals[:0], b.masks[:0]
	var seen uint8
	constStart := 0
	for i := 0; i < len(text); {
		c := class[text[i]]
		seen |= c
		if c&cWord == 0 {
			i++
			continue
		}
		j, digits := i+1, c&cDigit
		for ; j < len(text); j++ {
			c = class[text[j]]
			if c&cWord == 0 {
				break
			}
			digits |= c
		}
		seen |= digits
		if digits&cDigit != 0 {
			kind, s, e := wordShape(text[i:j])
			s, e = i+s, i+e
			key = append(key, text[constStart:s]...)
			key = append(key, 0, kind)
			constStart = e
			v := text[s:e]
			vals = append(vals, lineValOf(text, s, e))
			if kind == slotRun {
				masks = append(masks, maskDigit)
			} else {
				masks = append(masks, charMask(v))
			}
		}
		i = j
	}
	key = append(key, text[constStart:]...)
	b.key, b.vals, b.masks = key, vals, masks
	return seen&cSpecial != 0
}

func (b *streamBuilder) newTemplate(text []byte) *tmplBuilder {
	if len(b.templates) >= maxTemplates || len(b.key) > maxKeyBytes {
		if b.overflow == nil {
			b.overflow = &tmplBuilder{overflow: true, rank: -1}
			b.templates = append(b.templates, b.overflow)
		}
		return b.overflow
	}
	words := splitWords(text[:min(len(text), 256)])
	t := &tmplBuilder{
		key: string(b.key), level: levelOf(words), rank: rankOf(text),
		masks: make([]uint64, len(b.vals)), ranges: make([]slotRange, len(b.vals)),
	}
	t.shape = newShape(len(b.templates), t.key)
	if t.ascii = isASCII(t.key); t.ascii {
		t.prog = newPartProg(t.shape.Parts)
	}
	if b.rank < 0 {
		b.rank = t.rank
	}
	b.byKey[t.key] = t
	b.templates = append(b.templates, t)
	return t
}

// levelOf finds a log level among a line's first words: a level word, or glog's "E0314".
func levelOf(words []string) string {
	for i, w := range words {
		if i == 12 {
			break
		}
		switch w {
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
		}
		if len(w) >= 4 && len(w) <= 5 && strings.IndexByte("iwef", w[0]) >= 0 && allDigits(w[1:]) {
			return map[byte]string{'i': "info", 'w': "warning", 'e': "error", 'f': "critical"}[w[0]]
		}
	}
	return ""
}

// rankOf reads torchrun's "[rank5]:" line prefix, or returns -1.
func rankOf(text []byte) int {
	const p = "[rank"
	if len(text) < len(p)+2 || string(text[:len(p)]) != p {
		return -1
	}
	n, i := 0, len(p)
	for ; i < len(text) && i < len(p)+6 && text[i] >= '0' && text[i] <= '9'; i++ {
		n = n*10 + int(text[i]-'0')
	}
	if i == len(p) || i >= len(text) || text[i] != ']' {
		return -1
	}
	return n
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
	tokWhole = slotWhole
	tokRun   = slotRun
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
		case isWordByte(c):
			j := i
			for j < len(key) && isWordByte(key[j]) {
				j++
			}
			cur = fold(cur, []byte(key[i:j]))
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
