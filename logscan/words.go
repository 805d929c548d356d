package logscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode"
	"unicode/utf8"
)

// Words. Shapes, the index's search and its brute-force tests share one definition: a word is
// a maximal run of ASCII letters, digits, underscores and non-ASCII characters; words compare
// without case. A word that contains an ASCII digit is variable: shapes mask it, keeping its
// shape (see WordShape).

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

// Character classes (see Classes): which kinds of characters a variable word's values hold, so
// a literal that shares none of them cannot overlap the word. One bit per ASCII letter
// without case (a = 1), then these.
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
		m |= charBits[c]
	}
	return m
}

// charBits is charBit of every byte: the scan masks each variable word of every line.
var charBits = func() (t [256]uint64) {
	for c := range t {
		t[c] = charBit(byte(c))
	}
	return t
}()

// IsWordByte reports whether c belongs to a word.
func IsWordByte(c byte) bool { return class[c]&cWord != 0 }

// Fold appends w lower-cased the way every part of search compares words: rune by rune
// with unicode.ToLower (as bytes.ToLower does, an invalid byte becoming U+FFFD).
func Fold(dst, w []byte) []byte {
	for i, c := range w {
		if c >= utf8.RuneSelf {
			for _, c := range w[:i] {
				dst = append(dst, lower[c])
			}
			for w = w[i:]; len(w) > 0; {
				r, n := utf8.DecodeRune(w)
				if r < utf8.RuneSelf {
					dst = append(dst, lower[byte(r)])
				} else {
					dst = utf8.AppendRune(dst, unicode.ToLower(r))
				}
				w = w[n:]
			}
			return dst
		}
	}
	for _, c := range w {
		dst = append(dst, lower[c])
	}
	return dst
}

// Words returns the folded words of s.
func Words(s []byte) []string { return AppendWords(nil, s) }

// AppendWords appends the folded words of s to out.
func AppendWords(out []string, s []byte) []string {
	for i := 0; i < len(s); {
		if !IsWordByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && IsWordByte(s[j]) {
			j++
		}
		out = append(out, string(Fold(nil, s[i:j])))
		i = j
	}
	return out
}

// Kinds of variable words.
const (
	// VarWord: the whole word varies: a number, a hex word, an id with several digit runs.
	VarWord byte = 'w'
	// VarDigits: one digit run varies inside constant characters ("rank5", "step_0002000",
	// "2GiB").
	VarDigits byte = 'd'
)

// WordShape classifies a word: VarWord for a word of hex digits with at least one digit, or
// with more than one digit run; VarDigits for a single digit run inside other characters,
// which keep the shape ("rank5" has the shape "rank0"), start and end delimiting the digits;
// 0 for a word without digits.
func WordShape(w []byte) (kind byte, start, end int) {
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
		return VarWord, 0, len(w)
	}
	return VarDigits, first, last
}

// ShapeOf is the shape of a folded word: the word itself when constant, "0" when the whole
// word varies, the constant characters around a "0" for a digit run.
func ShapeOf(w string) string {
	kind, start, end := WordShape([]byte(w))
	switch kind {
	case VarWord:
		return "0"
	case VarDigits:
		return w[:start] + "0" + w[end:]
	}
	return w
}

// Value is the varying part of a word: numeric when it is all digits and short enough to
// order as a number (digit strings order by length, then value, which is also how equal
// strings compare), otherwise a string, compared folded.
type Value struct {
	// Num is NumberValue of the digits when Numeric.
	Num uint64
	// Str is the text (not folded) when not Numeric.
	Str     []byte
	Numeric bool
}

// MaxNumDigits is the most digits a numeric Value holds.
const MaxNumDigits = 17

// NumberValue is the Num of a Value of n digits (n <= MaxNumDigits) worth v: the digit count
// in the top bits, so that numbers order by length, then value.
func NumberValue(n int, v uint64) uint64 { return uint64(n)<<59 | v }

// ValueOf reads the varying part of a word.
func ValueOf(v []byte) Value {
	if len(v) <= MaxNumDigits {
		var n uint64
		for _, c := range v {
			if c-'0' > 9 {
				return Value{Str: v}
			}
			n = n*10 + uint64(c-'0')
		}
		return Value{Num: NumberValue(len(v), n), Numeric: true}
	}
	return Value{Str: v}
}

// CompareFolded compares a folded string with one not yet folded.
func CompareFolded(folded, raw []byte) int {
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

// ShapeValue returns the shape of a folded word and the value its variable part holds (none
// for a constant word).
func ShapeValue(w string) (shape string, v Value) {
	kind, start, end := WordShape([]byte(w))
	if kind == 0 {
		return w, Value{}
	}
	return ShapeOf(w), ValueOf([]byte(w[start:end]))
}

// HasDigit reports whether w holds an ASCII digit.
func HasDigit(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= '0' && w[i] <= '9' {
			return true
		}
	}
	return false
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Hash is a fast 64-bit hash of b, the same in every process: an index stores filters of the
// hashes of folded words.
func Hash(b []byte) uint64 {
	h := hashWords(b)
	var t uint64
	for i, c := range b[len(b)&^7:] {
		t |= uint64(c) << (8 * i)
	}
	return hashEnd(h, t)
}

const hashM1, hashM2 = 0xa0761d6478bd642f, 0xe7037ed1a0b428db

// hashWords is Hash of b up to its last whole 8 bytes.
func hashWords(b []byte) uint64 {
	h := uint64(len(b))*hashM1 ^ hashM2
	for ; len(b) >= 8; b = b[8:] {
		h = mix(h^binary.LittleEndian.Uint64(b), hashM2)
	}
	return h
}

// hashEnd ends Hash with t, the bytes past the last whole 8, little endian.
func hashEnd(h, t uint64) uint64 { return mix(mix(h^t, hashM1), hashM2) }

// HashIn is Hash(buf[:n]) for a buf that holds 8 bytes or more past n: the bytes past the
// last whole 8 are read with one load (the index hashes every word of the lines it keeps).
func HashIn(buf []byte, n int) uint64 {
	h := hashWords(buf[:n])
	end := n &^ 7
	return hashEnd(h, binary.LittleEndian.Uint64(buf[end:end+8])&(1<<(8*(n&7))-1))
}

// HashShort is Hash of the n bytes (at most 7) whose little-endian value is t.
func HashShort(t uint64, n int) uint64 {
	return hashEnd(uint64(n)*hashM1^hashM2, t)
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
