package logscan

import (
	"encoding/binary"
	"sync"
)

const (
	// MaxShapes bounds one log's shapes; lines of further shapes get none (Scanned.Shape is
	// nil), and an index keeps them in a bounded form (see package index).
	MaxShapes = 4096
	// EagerShapes is how many shapes a log gets at the first line of each; past them a shape
	// is made at its second line, so that lines that never repeat (printed samples, JSON
	// with ids) do not use up MaxShapes.
	EagerShapes = 16
	// MaxKeyBytes bounds a shape's key; longer lines get no shape either.
	MaxKeyBytes = 4096
	// seenOnce bounds the keys (as hashes) of lines whose shape was seen once and not made.
	seenOnce = 1 << 15
)

// Budget bounds the distinct shapes of all the logs of a scan: each gets a number, the same
// for the same shape in any log (Shape.Doc), and past Max no new shape is made in any log. A
// shape that another log already has is always made: ranks of a job log the same shapes.
// It is safe for concurrent use.
type Budget struct {
	Max  int
	mu   sync.Mutex
	ids  map[string]int
	keys []string
}

// admit returns the number of a shape's key, or false when the budget is spent.
func (b *Budget) admit(key string) (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id, ok := b.ids[key]; ok {
		return id, true
	}
	if len(b.keys) >= b.Max {
		return 0, false
	}
	if b.ids == nil {
		b.ids = map[string]int{}
	}
	id := len(b.keys)
	b.ids[key] = id
	b.keys = append(b.keys, key)
	return id, true
}

// Keys returns the keys of the shapes made, by number.
func (b *Budget) Keys() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.keys[:len(b.keys):len(b.keys)]
}

// shaper gives each line of one log its shape: variable words masked, identical shapes kept
// once, with the values and character classes of the line's variable words.
type shaper struct {
	byKey  map[string]*Shape
	shapes int
	// eager shapes are made at their first line, the others at their second; seen holds the
	// hashes of the keys seen once; max bounds the shapes; budget, when set, numbers them
	// across logs.
	eager, max int
	seen       onceSet
	budget     *Budget
	// recent holds the last two shapes (of ASCII text) seen, tried first on a new line.
	recent [2]*Shape
	// known holds the shapes made in the earlier logs of the same scan worker, by key: the
	// ranks of a job log the same shapes, so a log's shape is mostly a copy of one of these
	// (with its own ID) rather than parsed and compiled again. Bounded by maxKnown.
	known map[string]*Shape
	// copies are the copies of known shapes the logs of the worker took (newShape), and
	// copied how many of them this log took: the next log takes them again, as no reader
	// keeps a line's shape past its log (at 16,384 ranks a copy of each of a dozen shapes
	// per log was 42 MB to allocate and collect).
	copies []*Shape
	copied int
	// per-line results
	cur   *Shape // the line's shape, nil when it has none
	ascii bool   // the line is all ASCII
	key   []byte
	vals  []Var
	masks []uint64
}

// newShaper makes every shape at its first line, up to MaxShapes.
func newShaper() *shaper {
	return &shaper{byKey: map[string]*Shape{}, eager: MaxShapes, max: MaxShapes}
}

// newScanShaper makes shapes as a scan does (see EagerShapes), counting them against budget.
func newScanShaper(budget *Budget) *shaper {
	return &shaper{byKey: map[string]*Shape{}, eager: EagerShapes, max: MaxShapes, budget: budget,
		known: map[string]*Shape{}}
}

// maxKnown bounds the shapes a scan worker remembers across its logs (see shaper.known).
const maxKnown = 1 << 14

// reset readies a scan shaper for the next log of the same worker: the log's shapes are
// forgotten (they are numbered from 0 again), the shapes known from earlier logs are kept.
func (b *shaper) reset() {
	clear(b.byKey)
	b.shapes = 0
	b.seen.reset()
	b.recent = [2]*Shape{}
	b.cur = nil
	b.copied = 0
}

// line finds the shape of a line (b.cur, b.vals, b.masks), cleaning the line first when it
// must (into *clean), and returns the text to record. A line is first matched against the
// shapes of the lines before it, which reads its variable words without building its key;
// else it is tokenized.
func (b *shaper) line(text []byte, clean *[]byte) []byte {
	b.cur, b.ascii = nil, true // match fails on any byte that is not ASCII
	for _, sh := range b.recent {
		if sh != nil && b.match(sh, text) {
			b.cur = sh
			break
		}
	}
	if b.cur == nil {
		if b.tokenize(text) {
			b.ascii = false
			if cleanChanges(text) { // else the line's key and values are read already
				*clean = Clean((*clean)[:0], text)
				text = *clean
				b.tokenize(text)
			}
		}
		if b.cur = b.byKey[string(b.key)]; b.cur == nil {
			b.cur = b.newShape()
		}
	}
	if sh := b.cur; sh != nil && sh != b.recent[0] && sh.ascii {
		b.recent[0], b.recent[1] = sh, b.recent[0]
	}
	return text
}

// newShape records the shape of b.key, or returns nil when the log has too many shapes, the
// key is too long, the shape is seen for the first time past the eager ones, or the budget is
// spent.
func (b *shaper) newShape() *Shape {
	if b.shapes >= b.max || len(b.key) > MaxKeyBytes {
		return nil
	}
	if b.shapes >= b.eager {
		h := Hash(b.key)
		if !b.seen.take(h) {
			if b.seen.n >= seenOnce {
				b.seen.empty()
			}
			b.seen.add(h)
			return nil
		}
	}
	if k := b.known[string(b.key)]; k != nil {
		// Made in an earlier log: the same parts, kinds and number across logs (a budget
		// gives a key the same number for good); only the ID is this log's.
		if b.copied == len(b.copies) {
			b.copies = append(b.copies, new(Shape))
		}
		sh := b.copies[b.copied]
		b.copied++
		*sh = *k
		sh.ID = b.shapes
		b.shapes++
		b.byKey[sh.Key] = sh
		return sh
	}
	doc := -1
	if b.budget != nil {
		id, ok := b.budget.admit(string(b.key))
		if !ok {
			return nil
		}
		doc = id
	}
	sh := newShape(b.shapes, string(b.key))
	sh.Doc = doc
	b.shapes++
	if sh.ascii = isASCII(sh.Key); sh.ascii {
		sh.prog = newPartProg(sh.Parts)
	}
	if b.known != nil {
		if len(b.known) >= maxKnown {
			clear(b.known)
		}
		k := *sh
		b.known[sh.Key] = &k
	}
	b.byKey[sh.Key] = sh
	return sh
}

// match reads text as a line of shape sh: the same constant parts, and in between variable
// words of the same kinds. It is exact: it succeeds only when tokenize would give sh's key,
// which holds for shapes of ASCII text whose lines need no cleaning: the parts are compared
// byte for byte, a word of digits ends where the next part starts with a non-digit (as it did
// in the line that made the shape), a whole word is read to its end and must still be shaped
// as one, and any byte that cleaning could change fails the match.
func (b *shaper) match(sh *Shape, text []byte) bool {
	parts, kinds := sh.Parts, sh.Vars
	if !sh.prog.partAt(0, parts[0], text, 0) {
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
		case pos == start && kind == VarDigits:
			return false
		case kind == VarDigits || pos < len(text) && class[text[pos]]&cWord == 0 || pos == len(text):
			// A digit run, or a whole word of digits: a number.
			if pos == start {
				return false
			}
			if pos-start <= MaxNumDigits {
				vals[v] = Var{Num: NumberValue(pos-start, num)}
			} else {
				vals[v] = Var{Start: int32(start), End: int32(pos)}
			}
			masks[v] = maskDigit
		default:
			// A whole word with more than digits: read to its end.
			// Its classes and character mask in the same read (the digits before it are
			// in the mask too: maskDigit).
			var seen uint8
			mask := uint64(0)
			if pos > start {
				mask = maskDigit
			}
			for pos < len(text) {
				c := class[text[pos]]
				if c&cWord == 0 {
					break
				}
				seen |= c
				mask |= charBits[text[pos]]
				pos++
			}
			w := text[start:pos]
			if seen&cSpecial != 0 {
				return false
			}
			if kind, _, _ := WordShape(w); kind != VarWord {
				return false
			}
			vals[v] = Var{Start: int32(start), End: int32(pos)}
			masks[v] = mask
		}
		p := parts[v+1]
		if !sh.prog.partAt(v+1, p, text, pos) {
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

// partProg holds each constant part of a shape of up to 16 bytes as two words and their
// masks, so that match compares it with two loads instead of a call (a step line's
// " | grad_norm " and " | tokens/s " are longer than 8 bytes).
type partProg struct {
	parts []partWords
}

// partWords is a part's bytes as two little-endian words under their masks (zero for a part
// longer than the 16 bytes they hold, which partAt compares as bytes).
type partWords struct {
	w0, w1, m0, m1 uint64
}

func newPartProg(parts []string) partProg {
	p := partProg{parts: make([]partWords, len(parts))}
	for i, s := range parts {
		pw := &p.parts[i]
		if len(s) > 16 {
			continue
		}
		for k := len(s) - 1; k >= 0; k-- {
			if k >= 8 {
				pw.w1, pw.m1 = pw.w1<<8|uint64(s[k]), pw.m1<<8|0xff
			} else {
				pw.w0, pw.m0 = pw.w0<<8|uint64(s[k]), pw.m0<<8|0xff
			}
		}
	}
	return p
}

// partAt reports whether part i, s, is at text[pos:]. The two words are read from text's
// array past its length when it has room (a line is mostly a slice of the reader's buffer):
// the masks leave out every byte past the part, which ends within the line.
func (p *partProg) partAt(i int, s string, text []byte, pos int) bool {
	if w := &p.parts[i]; len(s) <= 16 && pos+len(s) <= len(text) && pos+16 <= cap(text) {
		t := text[pos : pos+16]
		return (binary.LittleEndian.Uint64(t)^w.w0)&w.m0|(binary.LittleEndian.Uint64(t[8:])^w.w1)&w.m1 == 0
	}
	return len(text)-pos >= len(s) && string(text[pos:pos+len(s)]) == s
}

// tokenize masks the variable words of text into b.key, collecting their values. The key
// keeps every other byte; a variable word is the byte 0 (which cleaned text never holds) and
// its kind. It reports whether text holds a byte that cleaning could change (the caller then
// cleans and tokenizes again): the scan looks at every byte once for both.
func (b *shaper) tokenize(text []byte) (special bool) {
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
			kind, s, e := WordShape(text[i:j])
			s, e = i+s, i+e
			key = append(key, text[constStart:s]...)
			key = append(key, 0, kind)
			constStart = e
			v := text[s:e]
			vals = append(vals, varOf(text, s, e))
			if kind == VarDigits {
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

// varOf returns the value of text[s:e].
func varOf(text []byte, s, e int) Var {
	v := ValueOf(text[s:e])
	if v.Numeric {
		return Var{Num: v.Num}
	}
	return Var{Start: int32(s), End: int32(e)}
}

// Keyer gives cleaned lines the shape key a scan gives them (Shape.Key), whether or not the
// scan made their shape.
type Keyer struct {
	s shaper
}

// Key returns the shape key of a cleaned line; it is valid until the next call.
func (k *Keyer) Key(text []byte) []byte {
	k.s.tokenize(text)
	return k.s.key
}

// onceSet is a set of hashes (those of the keys of lines seen once), open-addressed with
// linear probing and a load of at most a half: on lines that never repeat every line looks a
// hash up and adds it, which a Go map of up to seenOnce hashes did with more probes. Its
// slots start small, so that the many small logs of a job clear little.
type onceSet struct {
	slots []uint64 // 0 is an empty slot; the hash 0 is kept in zero
	n     int
	zero  bool
}

const onceMinSlots = 1 << 10

// take removes h and reports whether it was in the set.
func (s *onceSet) take(h uint64) bool {
	if h == 0 {
		had := s.zero
		if had {
			s.zero = false
			s.n--
		}
		return had
	}
	if s.n == 0 {
		return false
	}
	mask := uint64(len(s.slots) - 1)
	i := h & mask
	for {
		switch s.slots[i] {
		case 0:
			return false
		case h:
			s.remove(i, mask)
			s.n--
			return true
		}
		i = (i + 1) & mask
	}
}

// remove empties slot i and moves back the entries after it that their probe reached past
// it, so that every entry stays reachable from its home slot without tombstones.
func (s *onceSet) remove(i, mask uint64) {
	for j := i; ; {
		s.slots[i] = 0
		for {
			j = (j + 1) & mask
			x := s.slots[j]
			if x == 0 {
				return
			}
			// x stays when its home slot k lies cyclically in (i, j].
			k := x & mask
			if i <= j && i < k && k <= j || i > j && (i < k || k <= j) {
				continue
			}
			s.slots[i] = x
			i = j
			break
		}
	}
}

// add puts h, which is not in the set, in it.
func (s *onceSet) add(h uint64) {
	s.n++
	if h == 0 {
		s.zero = true
		return
	}
	if 2*s.n > len(s.slots) {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	i := h & mask
	for s.slots[i] != 0 {
		i = (i + 1) & mask
	}
	s.slots[i] = h
}

// grow doubles the slots (makes the first ones) and puts the entries back.
func (s *onceSet) grow() {
	old := s.slots
	s.slots = make([]uint64, max(onceMinSlots, 2*len(old)))
	mask := uint64(len(s.slots) - 1)
	for _, x := range old {
		if x != 0 {
			i := x & mask
			for s.slots[i] != 0 {
				i = (i + 1) & mask
			}
			s.slots[i] = x
		}
	}
}

// empty empties the set, keeping its slots.
func (s *onceSet) empty() {
	if s.n > 0 {
		clear(s.slots)
		s.n, s.zero = 0, false
	}
}

// reset empties the set for the next log; slots grown past their first size are let go.
func (s *onceSet) reset() {
	if s.n > 0 && len(s.slots) > onceMinSlots {
		s.slots, s.n, s.zero = nil, 0, false
	}
	s.empty()
}
