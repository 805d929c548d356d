package index

import (
	"bytes"
	"context"
	"encoding/binary"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/coroner-dev/coroner/internal/literal"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/search/syntax"
)

// matcher answers whether a template text, a template, a block of one, a chunk segment or a
// line matches. Every answer but line's may be maybe: the lines are then read and checked.
type matcher interface {
	// doc answers for every template of a text, whatever its log (fields are unknown).
	doc(d *doc) tri
	template(s *Stream, t *template, d *doc) tri
	block(s *Stream, t *template, d *doc, bl *block) tri
	// chunks prepares the answers for chunk segments, from the chunks' filters.
	chunks(ix *Index) (func(seg *chunkSeg, s *Stream, chunk int) tri, error)
	line(s *Stream, text []byte) bool
	// filter finds the lines that may match among many (nil: every line may).
	filter() *lineFilter
}

// queryMatch evaluates a parsed query: leaves are answered for template texts by bleve, for
// templates and blocks by what they hold (slot summaries, level, rank), for chunks by their
// filters, and for lines by their words.
type queryMatch struct {
	root   syntax.Node
	leaves []syntax.Node
	sets   map[syntax.Node][]bool // the template texts a text leaf's bleve query finds
	// The leaf answers of the template whose blocks are being checked: a large template has
	// hundreds of blocks, and its leaves answer the same for each.
	leafOf   *template
	leafTmpl map[syntax.Node]tri
	words    lineWords
	lines    *lineFilter
}

func (ix *Index) queryMatcher(ctx context.Context, q string) (*queryMatch, error) {
	root, err := syntax.Parse(q)
	if err != nil {
		return nil, &QueryError{err}
	}
	m := &queryMatch{root: root, leaves: syntax.Leaves(root), sets: map[syntax.Node][]bool{}, leafTmpl: map[syntax.Node]tri{},
		lines: newLineFilter(needs(root), true)}
	for _, l := range m.leaves {
		var bq query.Query
		switch n := l.(type) {
		case *syntax.Word:
			tq := bleve.NewTermQuery(bleveTerm(n.Shape))
			tq.SetField("text")
			bq = tq
		case *syntax.Phrase:
			terms := make([]string, len(n.Words))
			for i, w := range n.Words {
				terms[i] = bleveTerm(w.Shape)
			}
			bq = bleve.NewPhraseQuery(terms, "text")
		case *syntax.Prefix:
			pq := bleve.NewPrefixQuery(bleveTerm(n.Prefix))
			pq.SetField("text")
			bq = pq
		default:
			continue // fields: answered from the templates and lines
		}
		if m.sets[l], err = ix.docsMatching(ctx, bq); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *queryMatch) doc(d *doc) tri {
	return eval(m.root, func(l syntax.Node) tri {
		if f, ok := l.(*syntax.Field); ok {
			return docField(f, d)
		}
		return m.leafText(l, d)
	})
}

// docField answers a field clause for every template of a text, as leafTemplate would for
// each: a level from the levels of its templates, a rank for a text without one.
func docField(f *syntax.Field, d *doc) tri {
	switch f.Field {
	case "level":
		if levelVaries(d) {
			return maybe
		}
		code := slices.Index(levels, f.Value)
		switch {
		case code < 0 || d.levels&(1<<code) == 0:
			return no
		case d.levels == 1<<code:
			return yes
		}
	case "rank":
		if !d.rankSlot {
			return no
		}
	}
	return maybe
}

// leafText answers a word, phrase or prefix leaf for every line of a template text.
func (m *queryMatch) leafText(l syntax.Node, d *doc) tri {
	in := m.sets[l][d.idx]
	switch n := l.(type) {
	case *syntax.Word:
		switch {
		case !in || n.Digit && !spansMayHold(d, n):
			return no
		case n.Digit:
			return maybe
		}
		return yes
	case *syntax.Phrase:
		if !in {
			return no
		}
		v := yes
		for _, w := range n.Words {
			if w.Digit {
				if !spansMayHold(d, w) {
					return no
				}
				v = maybe
			}
		}
		return v
	case *syntax.Prefix:
		// Without digits, a shape starting with the prefix means every word there does (digits
		// only replace digits); with digits, any variable word may.
		digits := logscan.HasDigit(n.Prefix)
		if in && !digits {
			return yes
		}
		for _, tok := range d.toks() {
			if tok.kind == tokWhole || (tok.kind == tokRun && digits) {
				return maybe
			}
		}
		return no
	}
	return maybe
}

func (m *queryMatch) template(s *Stream, t *template, d *doc) tri {
	return eval(m.root, func(l syntax.Node) tri { return m.leafTemplate(l, s, t, d) })
}

func (m *queryMatch) leafTemplate(l syntax.Node, s *Stream, t *template, d *doc) tri {
	f, ok := l.(*syntax.Field)
	if !ok {
		return m.leafText(l, d)
	}
	switch f.Field {
	case "level":
		if levelVaries(d) {
			return maybe
		}
		if f.Value == levels[t.level] {
			return yes
		}
		return no
	case "rank":
		if d.rankSlot {
			return maybe
		}
		return no
	}
	if streamField(f, s) {
		return yes
	}
	return no
}

// levelVaries reports whether the lines of a template text may name different levels: only a
// glog prefix ("E0314", a digit run) among the first words can (see levelWord).
func levelVaries(d *doc) bool {
	for i, tok := range d.toks() {
		if i == levelWords {
			break
		}
		if tok.kind == tokRun && len(tok.shape) == 2 && strings.IndexByte("iwef", tok.shape[0]) >= 0 {
			return true
		}
	}
	return false
}

func (m *queryMatch) block(s *Stream, t *template, d *doc, bl *block) tri {
	if m.leafOf != t {
		m.leafOf = t
		for _, l := range m.leaves {
			m.leafTmpl[l] = m.leafTemplate(l, s, t, d)
		}
	}
	return eval(m.root, func(l syntax.Node) tri {
		v := m.leafTmpl[l]
		if v != maybe {
			return v
		}
		switch n := l.(type) {
		case *syntax.Word:
			return slotMayHold(d, bl, n)
		case *syntax.Phrase:
			for _, w := range n.Words {
				if w.Digit && slotMayHold(d, bl, w) == no {
					return no
				}
			}
			if phrasePinned(d, bl, n.Words) {
				return yes
			}
		case *syntax.Prefix:
			if logscan.HasDigit(n.Prefix) {
				return maybe
			}
			for _, tok := range d.toks() {
				if tok.kind == tokWhole && bl.ranges[tok.slot].mayStartWith(n.Prefix) {
					return maybe
				}
			}
			return no
		case *syntax.Field:
			if n.Field == "rank" && d.rankSlot {
				return rankInRange(&bl.ranges[0], n.Rank)
			}
		}
		return v
	})
}

// rankInRange answers a rank clause for a block of a template whose first slot is the rank
// of "[rankN]:" (written with any number of digits, up to six).
func rankInRange(r *slotRange, rank int) tri {
	if !r.hasNum {
		return no
	}
	may := false
	for n := len(strconv.Itoa(rank)); n <= 6; n++ {
		v := logscan.NumberValue(n, uint64(rank))
		if v >= r.numMin && v <= r.numMax {
			may = true
		}
	}
	switch {
	case !may:
		return no
	case r.numMin == r.numMax && !r.hasStr:
		return yes
	}
	return maybe
}

// spansMayHold: could a slot of the word's shape hold the word's value in some template of
// the text (see docSum)?
func spansMayHold(d *doc, w *syntax.Word) bool {
	if d.spans == nil {
		return true
	}
	for _, tok := range d.toks() {
		if tok.kind != tokConst && tok.shape == w.Shape && (tok.slot >= len(d.spans) || d.spans[tok.slot].mayHold(w.Value)) {
			return true
		}
	}
	return false
}

// slotMayHold: could a slot of the word's shape hold the word's value in this block? It
// does in every line when the slot holds that one number throughout (see pinned).
func slotMayHold(d *doc, bl *block, w *syntax.Word) tri {
	v := no
	for _, tok := range d.toks() {
		if tok.kind != tokConst && tok.shape == w.Shape && bl.ranges[tok.slot].mayHold(w.Value) {
			if pinned(&bl.ranges[tok.slot], w.Value) {
				return yes
			}
			v = maybe
		}
	}
	return v
}

// pinned reports whether every value of a slot in a block is the number v: every line of the
// block then holds the word that v is the varying part of, since the slot's shape is the
// word's (an NCCL watchdog's "SeqNum=48120", one line a log).
func pinned(r *slotRange, v logscan.Value) bool {
	return v.Numeric && r.hasNum && !r.hasStr && r.numMin == v.Num && r.numMax == v.Num
}

// phrasePinned reports whether every line of a block holds a phrase: its words are, in a row,
// words of the template, each constant word the template's own and each word with digits in
// a slot of its shape pinned to its value.
func phrasePinned(d *doc, bl *block, ws []*syntax.Word) bool {
	toks := d.toks()
	for i := 0; i+len(ws) <= len(toks); i++ {
		k := 0
		for ; k < len(ws); k++ {
			tok, w := toks[i+k], ws[k]
			if tok.shape != w.Shape || (tok.kind == tokConst) == w.Digit ||
				w.Digit && !pinned(&bl.ranges[tok.slot], w.Value) {
				break
			}
		}
		if k == len(ws) {
			return true
		}
	}
	return false
}

func (m *queryMatch) chunks(ix *Index) (func(*chunkSeg, *Stream, int) tri, error) {
	bits := map[syntax.Node][]byte{}
	for _, l := range m.leaves {
		var items []uint64
		switch n := l.(type) {
		case *syntax.Word:
			items = append(items, itemHash(0, []byte(n.Word), nil))
		case *syntax.Phrase:
			for _, w := range n.Words {
				items = append(items, itemHash(0, []byte(w.Word), nil))
			}
		case *syntax.Prefix:
			if len(n.Prefix) >= prefixLen {
				items = append(items, itemHash(itemPrefix, []byte(n.Prefix[:prefixLen]), nil))
			}
		case *syntax.Field:
			switch n.Field {
			case "level":
				items = append(items, itemHash(itemLevel, []byte(n.Value), nil))
			case "rank":
				items = append(items, itemHash(itemRank, []byte(strconv.Itoa(n.Rank)), nil))
			}
		}
		if len(items) > 0 {
			b, err := ix.chunksHolding(items)
			if err != nil {
				return nil, err
			}
			bits[l] = b
		}
	}
	return func(seg *chunkSeg, s *Stream, c int) tri {
		return eval(m.root, func(l syntax.Node) tri {
			if f, ok := l.(*syntax.Field); ok && (f.Field == "pod" || f.Field == "container") {
				if streamField(f, s) {
					return yes
				}
				return no
			}
			if b, ok := bits[l]; ok && b[c/8]&(1<<(c%8)) == 0 {
				return no
			}
			return maybe
		})
	}, nil
}

// chunksHolding returns one bit per chunk: whether its filter may hold every item.
func (ix *Index) chunksHolding(items []uint64) ([]byte, error) {
	t := ix.chunks
	out := make([]byte, (t.chunks()+7)/8+1)
	fr := &filterReader{r: ix.filters}
	for bi := range t.batches {
		bt := &t.batches[bi]
		bits := make([]byte, (bt.n+7)/8)
		for i := range bits {
			bits[i] = 0xff
		}
		for _, h := range items {
			if err := fr.mayHold(bt, h, bits); err != nil {
				return nil, err
			}
		}
		for c := 0; c < bt.n; c++ {
			if bits[c/8]&(1<<(c%8)) != 0 {
				k := bt.first + c
				out[k/8] |= 1 << (k % 8)
			}
		}
	}
	return out, nil
}

func (m *queryMatch) filter() *lineFilter { return m.lines }

func (m *queryMatch) line(s *Stream, text []byte) bool {
	// A line without a word's longest digit run cannot hold the word, and digits have no case,
	// so that is settled before the line is split into words; so is a line that does not hold
	// an ASCII word's letters in any case (see mayHoldFolded).
	quick := eval(m.root, func(l syntax.Node) tri {
		switch n := l.(type) {
		case *syntax.Word:
			if n.Digit && !bytes.Contains(text, n.Run) || !mayHoldFolded(text, n.Word) {
				return no
			}
		case *syntax.Phrase:
			for _, w := range n.Words {
				if w.Digit && !bytes.Contains(text, w.Run) || !mayHoldFolded(text, w.Word) {
					return no
				}
			}
		case *syntax.Prefix:
			if !mayHoldFolded(text, n.Prefix) {
				return no
			}
		case *syntax.Field:
			switch n.Field {
			case "pod", "container":
				if streamField(n, s) {
					return yes
				}
				return no
			case "rank":
				if logscan.RankPrefix(text) == n.Rank {
					return yes
				}
				return no
			}
		}
		return maybe
	})
	if quick != maybe {
		return quick == yes
	}
	m.words.reset(text)
	return matchLine(m.root, &m.words, s, text)
}

// regexMatch runs a regular expression on the lines of the templates and chunks that could
// hold a match: every literal set the expression requires must have a literal that occurs in
// the template's constant text or could overlap one of its variable words, or whose whole
// words the chunk's filter may hold.
type regexMatch struct {
	re    *regexp.Regexp
	sets  [][]string
	lines *lineFilter
}

func (ix *Index) regexMatcher(expr string) (*regexMatch, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, &QueryError{&RegexError{err}}
	}
	sets := literal.Required(expr)
	return &regexMatch{re: re, sets: sets, lines: newLineFilter(sets, false)}, nil
}

func (m *regexMatch) doc(d *doc) tri {
	return m.text(d, ^uint64(0))
}

// text answers from a template text's constant parts and its slots' character classes.
func (m *regexMatch) text(d *doc, slots uint64) tri {
	consts := literal.Lower(d.key)
	if strings.IndexByte(d.key, 0) < 0 {
		slots = 0
	}
	for _, set := range m.sets {
		found := false
		for _, lit := range set {
			if strings.Contains(consts, lit) || logscan.Classes([]byte(lit))&slots != 0 {
				found = true
				break
			}
		}
		if !found {
			return no
		}
	}
	return maybe
}

func (m *regexMatch) template(s *Stream, t *template, d *doc) tri {
	return m.text(d, t.classes())
}

func (m *regexMatch) block(*Stream, *template, *doc, *block) tri { return maybe }

func (m *regexMatch) chunks(ix *Index) (func(*chunkSeg, *Stream, int) tri, error) {
	// A set holds in a chunk when one of its literals may: when the filter may hold every
	// whole word inside the literal (words at its ends may be parts of longer ones).
	var sets [][][]byte
	for _, set := range m.sets {
		var lits [][]byte
		for _, lit := range set {
			items := innerWords(lit)
			if len(items) == 0 {
				lits = nil
				break // this literal may occur anywhere: the set says nothing
			}
			b, err := ix.chunksHolding(items)
			if err != nil {
				return nil, err
			}
			lits = append(lits, b)
		}
		if lits != nil {
			sets = append(sets, lits)
		}
	}
	return func(_ *chunkSeg, _ *Stream, c int) tri {
		for _, lits := range sets {
			found := false
			for _, b := range lits {
				if b[c/8]&(1<<(c%8)) != 0 {
					found = true
					break
				}
			}
			if !found {
				return no
			}
		}
		return maybe
	}, nil
}

// innerWords returns the filter items of the whole words inside a literal: those with a
// separator on both sides within it, all ASCII.
func innerWords(lit string) []uint64 {
	var out []uint64
	for i := 0; i < len(lit); {
		if !logscan.IsWordByte(lit[i]) {
			i++
			continue
		}
		j := i
		ascii := true
		for j < len(lit) && logscan.IsWordByte(lit[j]) {
			ascii = ascii && lit[j] < 0x80
			j++
		}
		if i > 0 && j < len(lit) && ascii {
			out = append(out, itemHash(0, logscan.Fold(nil, []byte(lit[i:j])), nil))
		}
		i = j
	}
	return out
}

func (m *regexMatch) line(_ *Stream, text []byte) bool { return m.re.Match(text) }

func (m *regexMatch) filter() *lineFilter { return m.lines }

// mayHoldFolded reports whether text may hold a word (or a word starting with w) that folds to
// w: false when w is ASCII and text holds no run of bytes equal to w in any case. Only two
// runes outside ASCII fold into it (U+0130 to "i", U+212A, the Kelvin sign, to "k"): a line
// holding one of those may.
func mayHoldFolded(text []byte, w string) bool {
	if w == "" || bytes.Contains(text, unsafe.Slice(unsafe.StringData(w), len(w))) {
		return true
	}
	letters := false
	for i := 0; i < len(w); i++ {
		if w[i] >= 0x80 {
			return true
		}
		letters = letters || w[i] >= 'a' && w[i] <= 'z'
	}
	if !letters {
		return false // no other case to look for
	}
	if strings.IndexByte(w, 'i') >= 0 && hasRune(text, "\u0130") || strings.IndexByte(w, 'k') >= 0 && hasRune(text, "\u212a") {
		return true
	}
	// Not there in lower case: in any other only if the line has a capital.
	return hasUpperASCII(text) && newFoldedWord(w).next(text, 0, true) >= 0
}

// hasRune reports whether text holds r (encoded, two or three bytes), looking for its last
// byte, rarer than its first in text with other runes of its block.
func hasRune(text []byte, r string) bool {
	last := r[len(r)-1]
	for i := len(r) - 1; i < len(text); i++ {
		j := bytes.IndexByte(text[i:], last)
		if j < 0 {
			return false
		}
		i += j
		if string(text[i+1-len(r):i+1]) == r {
			return true
		}
	}
	return false
}

// hasUpperASCII reports whether text holds a capital ASCII letter, eight bytes at a time.
func hasUpperASCII(text []byte) bool {
	const ones = 0x0101010101010101
	i := 0
	for ; i+8 <= len(text); i += 8 {
		x := binary.LittleEndian.Uint64(text[i:])
		y := x & (0x7f * ones)
		// The high bit of each byte: set when the byte is ASCII (x), at most 'Z' (0xda - y)
		// and at least 'A' (y + 0x3f); no byte borrows or carries into the next.
		if (0xda*ones-y)&^x&(y+0x3f*ones)&(0x80*ones) != 0 {
			return true
		}
	}
	for ; i < len(text); i++ {
		if text[i] >= 'A' && text[i] <= 'Z' {
			return true
		}
	}
	return false
}

// equalFoldASCII compares b with w (lower-case ASCII) whatever the case of b's letters.
func equalFoldASCII(b []byte, w string) bool {
	for i := 0; i < len(w); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// byteRank ranks bytes by how rare they are in logs (higher is rarer): the rarest byte of a
// word is the one looked for first.
var byteRank = func() (r [256]byte) {
	for i := range r {
		r[i] = 255
	}
	// From most to least common in English and log text.
	common := " etaoinsrlhdcu0mp1f2g.y:w3b5v4k=_6987x-/jqz"
	for i := 0; i < len(common); i++ {
		r[common[i]] = byte(i)
	}
	return r
}()
