package index

import (
	"bytes"
	"unicode/utf8"
)

// Words. Search, templates and the brute-force tests share one definition: a word is a maximal
// run of ASCII letters, digits, underscores and non-ASCII characters; words compare without
// case. A word that contains an ASCII digit is variable: templates mask it, keeping its shape.

// Byte classes of the scanner's single pass over a line.
const (
	cSep     = 0      // separator: space, punctuation, other control characters
	cWord    = 1 << 0 // letter or underscore
	cDigit   = 1 << 1 // ASCII digit
	cHex     = 1 << 2 // [0-9a-fA-F]
	cSpecial = 1 << 3 // needs cleaning first: ESC, NUL, CR, or a non-ASCII byte
)

var class = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= '0' && c <= '9':
			t[c] = cWord | cDigit | cHex
		case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			t[c] = cWord | cHex
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
			t[c] = cWord
		case c >= utf8.RuneSelf:
			t[c] = cWord | cSpecial
		case c == 0x1b, c == 0, c == '\r':
			t[c] = cSpecial
		}
	}
	return t
}()

var lower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if i >= 'A' && i <= 'Z' {
			t[i] = byte(i + 'a' - 'A')
		}
	}
	return t
}()

// Charset bits: which kinds of characters a slot's values hold, so a literal that shares none
// of them cannot overlap the slot (the --regex prefilter).
const (
	maskDigit    = uint64(1) << 26
	maskUnder    = uint64(1) << 27
	maskNonASCII = uint64(1) << 28
)

func charBit(c byte) uint64 {
	c = lower[c]
	switch {
	case c >= 'a' && c <= 'z':
		return 1 << (c - 'a')
	case c >= '0' && c <= '9':
		return maskDigit
	case c == '_':
		return maskUnder
	case c >= utf8.RuneSelf:
		return maskNonASCII
	}
	return 0
}

func charMask(s []byte) uint64 {
	var m uint64
	for _, c := range s {
		m |= charBit(c)
	}
	return m
}

// isWordByte reports whether c belongs to a word.
func isWordByte(c byte) bool { return class[c]&cWord != 0 }

// fold lower-cases a word the way every part of search does.
func fold(dst, w []byte) []byte {
	for _, c := range w {
		if c >= utf8.RuneSelf {
			return append(dst, bytes.ToLower(w)...)
		}
	}
	for _, c := range w {
		dst = append(dst, lower[c])
	}
	return dst
}

// splitWords returns the folded words of s.
func splitWords(s []byte) []string {
	var out []string
	for i := 0; i < len(s); {
		if !isWordByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isWordByte(s[j]) {
			j++
		}
		out = append(out, string(fold(nil, s[i:j])))
		i = j
	}
	return out
}

// Slot kinds.
const (
	slotWhole = 'w' // the whole word varies: numbers, hex, ids with several digit runs
	slotRun   = 'd' // one digit run varies inside constant letters: rank5, step_0002000, 2GiB
)

// wordShape classifies a word: whole-word slots are words of hex digits with at least one
// digit, or words with more than one digit run; a single digit run inside other characters
// keeps them ("rank5" has the shape "rank0"). start and end delimit the varying digits of a
// run slot.
func wordShape(w []byte) (kind byte, start, end int) {
	runs, hex, first, last := 0, true, -1, -1
	for i := 0; i < len(w); i++ {
		c := class[w[i]]
		if c&cDigit != 0 {
			if i == 0 || class[w[i-1]]&cDigit == 0 {
				runs++
				first = i
			}
			last = i + 1
		}
		if c&cHex == 0 {
			hex = false
		}
	}
	switch {
	case runs == 0:
		return 0, 0, 0
	case hex || runs > 1 || (len(w) > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X')):
		return slotWhole, 0, len(w)
	}
	return slotRun, first, last
}

// shapeOf is the word bleve indexes for a folded word: the word itself when constant, "0"
// for a whole-word slot, the constant letters around a "0" for a run slot.
func shapeOf(w string) string {
	kind, start, end := wordShape([]byte(w))
	switch kind {
	case slotWhole:
		return "0"
	case slotRun:
		return w[:start] + "0" + w[end:]
	}
	return w
}

// slotValue is the varying part of a word: numeric when it is all digits and short enough to
// order as a number (digit strings order by length, then value, which is also how equal
// strings compare), otherwise a string, compared folded.
type slotValue struct {
	num     uint64
	str     []byte // not folded
	numeric bool
}

const maxNumDigits = 17

func valueOf(v []byte) slotValue {
	if len(v) <= maxNumDigits {
		var n uint64
		for _, c := range v {
			if c-'0' > 9 {
				return slotValue{str: v}
			}
			n = n*10 + uint64(c-'0')
		}
		return slotValue{num: uint64(len(v))<<59 | n, numeric: true}
	}
	return slotValue{str: v}
}

// cmpFold compares a folded string with one not yet folded.
func cmpFold(folded, raw []byte) int {
	if !isASCIIBytes(raw) {
		return bytes.Compare(folded, bytes.ToLower(raw))
	}
	for i := 0; i < len(folded) && i < len(raw); i++ {
		if c := lower[raw[i]]; folded[i] != c {
			if folded[i] < c {
				return -1
			}
			return 1
		}
	}
	return len(folded) - len(raw)
}

func isASCIIBytes(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// queryValue is the slot value a folded query word with digits must find.
func queryValue(w string) (shape string, v slotValue) {
	kind, start, end := wordShape([]byte(w))
	if kind == 0 {
		return w, slotValue{}
	}
	return shapeOf(w), valueOf([]byte(w[start:end]))
}

func hasDigit(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= '0' && w[i] <= '9' {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiLower lower-cases the ASCII letters of s, as the prefilters compare.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lower[c]
	}
	return string(b)
}
