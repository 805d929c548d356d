package literal

import (
	"regexp/syntax"
	"sort"
	"strings"
	"unicode/utf8"
)

// MinLen is the shortest literal worth prefiltering on: shorter ones match nearly every line
// and only cost time.
const MinLen = 3

// maxSets bounds how many literal sets one pattern requires together.
const maxSets = 8

// Required returns lower-cased literal sets that every match of a pattern satisfies
// ALL of (one literal of each set), best first; none when no usable set can be derived. This
// is ripgrep's idea, on Go's regexp/syntax tree. "\b[Ll]oss: (nan|inf)" requires {"oss"}
// and {"nan", "inf"}: a training log's thousands of "loss 2.31" lines have the first but not
// the second, so the regexp never runs on them.
func Required(pattern string) [][]string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	var sets [][]string
	if re.Op == syntax.OpConcat {
		sets = concatSets(re.Sub)
	} else if set := literalsOf(re); usable(set) {
		sets = append(sets, set)
	}
	sort.SliceStable(sets, func(i, j int) bool { return shortest(sets[i]) > shortest(sets[j]) })
	if len(sets) > maxSets {
		sets = sets[:maxSets]
	}
	return sets
}

func literalsOf(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		s := string(re.Rune)
		if re.Flags&syntax.FoldCase != 0 && !isASCII(s) {
			return nil // ASCII-only case folding in the prefilter would miss matches
		}
		return []string{Lower(s)}
	case syntax.OpCapture:
		return literalsOf(re.Sub[0])
	case syntax.OpPlus:
		return literalsOf(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return literalsOf(re.Sub[0])
		}
		return nil
	case syntax.OpConcat:
		// Every part's set is required; one set is enough here: the one whose shortest
		// literal is longest.
		var best []string
		for _, set := range concatSets(re.Sub) {
			if best == nil || shortest(set) > shortest(best) {
				best = set
			}
		}
		return best
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			set := literalsOf(sub)
			if set == nil {
				return nil
			}
			out = append(out, set...)
		}
		return dedupe(out)
	}
	return nil
}

// concatSets returns the usable literal sets of the parts of a concatenation, adjacent
// literals joined first so "CUDA" + "out of memory" becomes one literal.
func concatSets(subs []*syntax.Regexp) [][]string {
	var sets [][]string
	var run strings.Builder
	flush := func() {
		if run.Len() > 0 {
			if set := []string{run.String()}; usable(set) {
				sets = append(sets, set)
			}
			run.Reset()
		}
	}
	for _, sub := range subs {
		if sub.Op == syntax.OpLiteral && !(sub.Flags&syntax.FoldCase != 0 && !isASCII(string(sub.Rune))) {
			run.WriteString(Lower(string(sub.Rune)))
			continue
		}
		flush()
		if set := literalsOf(sub); usable(set) {
			sets = append(sets, set)
		}
	}
	flush()
	return sets
}

// usable reports whether a literal set can prefilter: every literal long enough.
func usable(set []string) bool {
	if set == nil {
		return false
	}
	for _, l := range set {
		if len(l) < MinLen {
			return false
		}
	}
	return true
}

func shortest(set []string) int {
	n := -1
	for _, s := range set {
		if n < 0 || len(s) < n {
			n = len(s)
		}
	}
	return n
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Lower lower-cases the ASCII letters of s, as literals are compared: a text lowered so
// holds a literal of Required where the Matcher would find it.
func Lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = fold(c)
	}
	return string(b)
}
