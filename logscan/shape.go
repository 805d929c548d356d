package logscan

import (
	"strings"

	"github.com/coroner-dev/coroner/internal/literal"
)

// Shape is a line template of one log as the scan hands it to a visitor: the lines of one
// shape differ only in their variable words (words holding a digit). A visitor that decides
// something from the text of a line can decide it once per shape when the decision cannot
// depend on the variable words (see Literal).
type Shape struct {
	// ID numbers the shapes of one log from 0, in order of first appearance.
	ID int
	// Doc numbers the shape across the logs of a scan with a Budget (see Budget); -1 without.
	Doc int
	// Key is the same for the same shape in any log: the line with each variable word (or
	// digit run, for VarDigits) replaced by the byte 0 and the word's kind.
	Key string
	// Parts are the constant texts around the variable words: len(Vars)+1 of them.
	Parts []string
	// Vars are the kinds of the variable words: VarWord or VarDigits.
	Vars  []byte
	lower []string
	// ascii: the key is ASCII, so lines can be matched against the shape (see shaper.match).
	ascii bool
	prog  partProg
}

func newShape(id int, key string) *Shape {
	sh := &Shape{ID: id, Key: key}
	start := 0
	for i := 0; i < len(key); i++ {
		if key[i] == 0 && i+1 < len(key) {
			sh.Parts = append(sh.Parts, key[start:i])
			sh.Vars = append(sh.Vars, key[i+1])
			i++
			start = i + 1
		}
	}
	sh.Parts = append(sh.Parts, key[start:])
	sh.lower = make([]string, len(sh.Parts))
	for i, p := range sh.Parts {
		sh.lower[i] = literal.Lower(p)
	}
	return sh
}

// Need is a condition on one line of a shape: its variable word number Var holds every
// character class of Classes (see Classes and Scanned.VarClasses).
type Need struct {
	Var     int
	Classes uint64
}

// Classes returns the character classes of a word: one per ASCII letter (without case), one
// for digits, one for the underscore, one for any non-ASCII character.
func Classes(w []byte) uint64 { return charMask(w) }

// Literal says where a literal (lower-case, compared without ASCII case as a prefilter
// compares) can occur in the lines of the shape: in every line (always) when it is inside
// the constant text; otherwise only in a line that meets one of needs, and with no needs in
// none. The answer errs only on the side of "can occur": a literal that overlaps a variable
// word needs the characters it would put there, and one spanning several variable words is
// judged by each of them alone.
func (sh *Shape) Literal(lit string) (always bool, needs []Need) {
	if lit == "" {
		return true, nil
	}
	for _, p := range sh.lower {
		if strings.Contains(p, lit) {
			return true, nil
		}
	}
	for v, kind := range sh.Vars {
		before, after := sh.lower[v], sh.lower[v+1]
		for a := 0; a < len(lit); a++ {
			// lit[:a] lies before the variable word: the end of the part before it, or, past
			// that part, earlier variable words too.
			pre := lit[:a]
			if a <= len(before) {
				if !strings.HasSuffix(before, pre) {
					continue
				}
			} else if v == 0 || !strings.HasSuffix(pre, before) {
				continue
			}
			// lit[a:b] lies in the variable word, lit[b:] after it.
			for b := a + 1; b <= len(lit) && varHolds(kind, lit[b-1]); b++ {
				rest := lit[b:]
				switch {
				case len(rest) <= len(after):
					if !strings.HasPrefix(after, rest) {
						continue
					}
				case v+1 == len(sh.Vars) || !strings.HasPrefix(rest, after):
					continue
				}
				needs = AddNeed(needs, Need{Var: v, Classes: charMask([]byte(lit[a:b]))})
			}
		}
	}
	return false, needs
}

// varHolds reports whether a variable word of the kind can hold the (lower-case) byte.
func varHolds(kind byte, c byte) bool {
	if kind == VarDigits {
		return c >= '0' && c <= '9'
	}
	return class[c]&cWord != 0
}

// AddNeed adds n to needs unless a weaker need is there (one that holds whenever n does),
// and drops the needs n is weaker than: the set stays the smallest that holds for the same
// lines.
func AddNeed(needs []Need, n Need) []Need {
	for _, m := range needs {
		if m.Var == n.Var && m.Classes&n.Classes == m.Classes {
			return needs // m is weaker: it holds whenever n does
		}
	}
	out := needs[:0]
	for _, m := range needs {
		if m.Var != n.Var || m.Classes&n.Classes != n.Classes { // else n is weaker than m
			out = append(out, m)
		}
	}
	return append(out, n)
}
