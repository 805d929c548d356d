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

func (r *slotRange) add(v slotValue) {
	if v.numeric {
		if !r.hasNum {
			r.hasNum, r.numMin, r.numMax = true, v.num, v.num
		} else if v.num < r.numMin {
			r.numMin = v.num
		} else if v.num > r.numMax {
			r.numMax = v.num
		}
		return
	}
	if !r.hasStr {
		r.hasStr = true
		r.strMin, r.strMax = fold(r.strMin[:0], v.str), fold(r.strMax[:0], v.str)
	} else if cmpFold(r.strMin, v.str) > 0 {
		r.strMin = fold(r.strMin[:0], v.str)
	} else if cmpFold(r.strMax, v.str) < 0 {
		r.strMax = fold(r.strMax[:0], v.str)
	}
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
	masks               []uint64
	lines               []byte // line numbers, delta-encoded uvarints
	prevLine            int
	blocks              []byte
	// the block being filled
	blockPrev, blockOff int
	tmin, tmax          int64
	ranges              []slotRange
}

func (t *tmplBuilder) add(n int, ts int64, vals []slotValue, masks []uint64) {
	if t.count%blockSize == 0 {
		if t.count > 0 {
			t.flushBlock()
		}
		t.blockPrev, t.blockOff, t.tmin, t.tmax = t.prevLine, len(t.lines), ts, ts
		for i := range t.ranges {
			t.ranges[i].hasNum, t.ranges[i].hasStr = false, false
		}
	}
	t.lines = binary.AppendUvarint(t.lines, uint64(n-t.prevLine))
	t.prevLine = n
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
	for i := range vals {
		t.ranges[i].add(vals[i])
		t.masks[i] |= masks[i]
	}
}

func (t *tmplBuilder) flushBlock() {
	b := t.blocks
	b = binary.AppendUvarint(b, uint64(t.blockPrev))
	b = binary.AppendUvarint(b, uint64(t.blockOff))
	b = binary.AppendVarint(b, t.tmin)
	b = binary.AppendVarint(b, t.tmax)
	for i := range t.ranges {
		r := &t.ranges[i]
		var flags byte
		if r.hasNum {
			flags |= 1
		}
		if r.hasStr {
			flags |= 2
		}
		b = append(b, flags)
		if r.hasNum {
			b = binary.AppendUvarint(b, r.numMin)
			b = binary.AppendUvarint(b, r.numMax)
		}
		if r.hasStr {
			b = appendBytes(b, r.strMin)
			b = appendBytes(b, r.strMax)
		}
	}
	t.blocks = b
}

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
	// per-line scratch
	key   []byte
	vals  []slotValue
	masks []uint64
}

func newStreamBuilder() *streamBuilder {
	return &streamBuilder{byKey: map[string]*tmplBuilder{}, rank: -1}
}

// add records one tokenized line (see tokenize).
func (b *streamBuilder) add(n int, off, before, ts int64, text []byte) {
	if (n-1)%checkpointEvery == 0 {
		b.checkpoints = append(b.checkpoints, checkpoint{off: off, time: before})
	}
	t := b.byKey[string(b.key)]
	if t == nil {
		t = b.newTemplate(text)
	}
	t.add(n, ts, b.vals, b.masks)
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
			vals = append(vals, valueOf(v))
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
