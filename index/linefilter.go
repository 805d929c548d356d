package index

import (
	"bytes"
	"slices"
	"strings"

	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/search/syntax"
)

// lineFilter finds, in many lines read back at once, the few that may match a query, so that
// the others are skipped without being split, timed or cleaned one by one (ripgrep's literal
// search of the read buffer). Every line that matches holds, in some case, a word of each
// clause: the words the per-line check (queryMatch.line) asks for first. A line the filter
// passes is checked whole, as before.
type lineFilter struct {
	clauses [][]*foldedWord
	// special are the runes that fold into a letter the words hold: U+0130 into 'i', U+212A
	// into 'k' and U+017F into 's' (the last two as a case-insensitive regular expression
	// folds). A region of lines that holds any of them is read line by line.
	special []string
}

// foldsInto is the ASCII letter each rune of lineFilter.special folds into.
var foldsInto = map[string]byte{"\u0130": 'i', "\u212a": 'k', "\u017f": 's'}

// foldedWord finds a folded ASCII word in text in any case, from its rarest byte (as
// mayHoldFolded). lo and up are, within one region, the next places of that byte in each case
// at or after the place last asked from; -1 when there is none left.
type foldedWord struct {
	w      string
	anchor int
	lo, up byte
	pl, pu int
	from   int // the place pl and pu were found from; -1 before the region's first search
	// starts: only a place where a word starts (after a byte that is not a word byte, or at
	// the start of the text) is found. A line matches a word, a phrase or a prefix only where
	// a run of word bytes starts with it (lineWords), and the text checked has the same byte
	// before that place as the raw lines the filter looks at, or none: the time split ends
	// after a space, Clean cuts at a carriage return, turns an invalid byte into U+FFFD (word
	// bytes both) and removes escapes and NULs only from regions read line by line.
	starts bool
}

// newFoldedWord returns the finder of a folded ASCII word.
func newFoldedWord(w string) *foldedWord {
	fw := &foldedWord{w: w, from: -1}
	for i := 0; i < len(w); i++ {
		if byteRank[w[i]] > byteRank[w[fw.anchor]] {
			fw.anchor = i
		}
	}
	fw.lo, fw.up = w[fw.anchor], w[fw.anchor]
	if fw.lo >= 'a' && fw.lo <= 'z' {
		fw.up = fw.lo - 'a' + 'A'
	}
	return fw
}

// newLineFilter returns the filter of clauses (see needs), nil when there are none: a line may
// match without holding any word it can look for (a clause of fields alone, a negation, a
// word with non-ASCII letters). A clause with a word that is not plain lower-case ASCII is
// left out. With words, each word is found only where a word starts (a query's words; a
// regular expression's literals are found anywhere).
func newLineFilter(clauses [][]string, words bool) *lineFilter {
	f := &lineFilter{}
next:
	for _, c := range clauses {
		for _, w := range c {
			if len(foldedClause(w)) == 0 {
				continue next
			}
		}
		var clause []*foldedWord
		for _, w := range c {
			fw := newFoldedWord(w)
			fw.starts = words && logscan.IsWordByte(w[0])
			for _, r := range [...]string{"\u0130", "\u212a", "\u017f"} {
				if l := string(foldsInto[r]); strings.Contains(w, l) && !slices.Contains(f.special, r) {
					f.special = append(f.special, r)
				}
			}
			clause = append(clause, fw)
		}
		f.clauses = append(f.clauses, clause)
	}
	if len(f.clauses) == 0 {
		return nil
	}
	return f
}

// needs returns what a line matching n holds: clauses, each a list of folded ASCII words of
// which the line holds one (in any case); none when nothing is known.
func needs(n syntax.Node) [][]string {
	switch n := n.(type) {
	case *syntax.And:
		var out [][]string
		for _, k := range n.Kids {
			out = append(out, needs(k)...)
		}
		return out
	case *syntax.Or:
		// A line holds a word of one clause of the kid it matches: of each kid's first clause.
		var clause []string
		for _, k := range n.Kids {
			kn := needs(k)
			if len(kn) == 0 {
				return nil
			}
			clause = append(clause, kn[0]...)
		}
		return [][]string{clause}
	case *syntax.Word:
		return foldedClause(n.Word)
	case *syntax.Phrase:
		var out [][]string
		for _, w := range n.Words {
			out = append(out, foldedClause(w.Word)...)
		}
		return out
	case *syntax.Prefix:
		return foldedClause(n.Prefix)
	}
	return nil // a negation or a field
}

// foldedClause is the clause of one word, none when the word is not plain ASCII without
// capitals (mayHoldFolded looks no further for those either).
func foldedClause(w string) [][]string {
	if w == "" {
		return nil
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= 0x80 || c == '\n' || c >= 'A' && c <= 'Z' {
			return nil
		}
	}
	return [][]string{{w}}
}

// candidates appends to dst the starts of the lines of buf (whole lines, each ending with
// '\n') that may match, in order; all when buf holds what could fold into a word or a byte
// that cleaning removes from within a line (an escape, a NUL), which the caller then reads
// line by line.
func (f *lineFilter) candidates(dst []int, buf []byte) (_ []int, all bool) {
	for _, r := range f.special {
		if hasRune(buf, r) { // by its last byte, rarer than its first beside runes of its block
			return dst, true
		}
	}
	if bytes.IndexByte(buf, 0x1b) >= 0 || bytes.IndexByte(buf, 0) >= 0 {
		return dst, true
	}
	upper := hasUpperASCII(buf)
	// The clause whose words' rarest bytes the region holds least often is looked for; the
	// others are checked in the lines that hold it.
	lead, least := 0, -1
	for i, c := range f.clauses {
		n := 0
		for _, w := range c {
			w.from = -1
			n += bytes.Count(buf, []byte{w.lo})
			if upper && w.up != w.lo {
				n += bytes.Count(buf, []byte{w.up})
			}
		}
		if least < 0 || n < least {
			lead, least = i, n
		}
	}
	for ls := 0; ls < len(buf); {
		p := -1
		for _, w := range f.clauses[lead] {
			if q := w.next(buf, ls, upper); q >= 0 && (p < 0 || q < p) {
				p = q
			}
		}
		if p < 0 {
			break
		}
		ls = bytes.LastIndexByte(buf[:p], '\n') + 1
		le := p + bytes.IndexByte(buf[p:], '\n') + 1
		if f.holds(buf[ls:le], lead) {
			dst = append(dst, ls)
		}
		ls = le
	}
	return dst, false
}

// holds reports whether line holds a word of each clause but skip, in some case.
func (f *lineFilter) holds(line []byte, skip int) bool {
	for i, c := range f.clauses {
		if i == skip {
			continue
		}
		found := false
		for _, w := range c {
			if w.in(line) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// in reports whether line holds w in any case (where a word starts, as next), leaving w's
// place in its region as it was.
func (w *foldedWord) in(line []byte) bool {
	if !w.starts {
		return mayHoldFolded(line, w.w)
	}
	lw := *w
	lw.from = -1
	return lw.next(line, 0, true) >= 0
}

// next returns the first place at or after from where text holds w in any case (only in
// lower case when text has no capital), -1 when none. Within one region, from never decreases.
func (w *foldedWord) next(text []byte, from int, upper bool) int {
	end := len(text) - (len(w.w) - 1 - w.anchor)
	find := func(c byte, at int) int {
		if at >= end {
			return -1
		}
		if j := bytes.IndexByte(text[at:end], c); j >= 0 {
			return at + j
		}
		return -1
	}
	at := from + w.anchor
	if w.from < 0 || w.pl >= 0 && w.pl < at {
		w.pl = find(w.lo, at)
	}
	if w.up == w.lo || !upper {
		w.pu = -1
	} else if w.from < 0 || w.pu >= 0 && w.pu < at {
		w.pu = find(w.up, at)
	}
	w.from = from
	for w.pl >= 0 || w.pu >= 0 {
		p := w.pl
		if p < 0 || (w.pu >= 0 && w.pu < p) {
			p = w.pu
		}
		if s := p - w.anchor; equalFoldASCII(text[s:s+len(w.w)], w.w) && (!w.starts || s == 0 || !logscan.IsWordByte(text[s-1])) {
			return s
		}
		if p == w.pl {
			w.pl = find(w.lo, p+1)
		} else {
			w.pu = find(w.up, p+1)
		}
	}
	return -1
}
