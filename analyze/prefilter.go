package analyze

import (
	"regexp/syntax"
	"sort"
	"strings"
	"unicode/utf8"
)

// minLiteral is the shortest literal worth prefiltering on: shorter ones match nearly every
// line and only cost time.
const minLiteral = 3

// requiredLiterals returns a set of lower-cased literals such that every match of re contains
// at least one of them, or nil when no such set can be derived (the pattern then runs on every
// line). This is ripgrep's idea, on Go's regexp/syntax tree.
func requiredLiterals(pattern string) []string {
	sets := requiredSets(pattern)
	if len(sets) == 0 {
		return nil
	}
	return sets[0]
}

// maxSets bounds how many literal sets one pattern requires together.
const maxSets = 8

// requiredSets returns literal sets that a match must ALL satisfy (one literal of each set),
// best first. "\b[Ll]oss: (nan|inf)" requires {"oss"} and {"nan", "inf"}: a training log's
// thousands of "loss 2.31" lines have the first but not the second, so the regexp never runs
// on them.
func requiredSets(pattern string) [][]string {
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
		return []string{asciiLower(s)}
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
			run.WriteString(asciiLower(string(sub.Rune)))
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
		if len(l) < minLiteral {
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

var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if i >= 'A' && i <= 'Z' {
			t[i] = byte(i + 'a' - 'A')
		}
	}
	return t
}()

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lowerTable[c]
	}
	return string(b)
}

// acMatcher is an Aho-Corasick automaton over lower-cased literals, compiled to a dense DFA:
// one table lookup per input byte, ASCII case folded on the fly.
type acMatcher struct {
	delta []int32   // state*256 + byte -> state
	out   [][]int32 // state -> ids of the literals that end here (fail chain merged)
}

func newACMatcher(literals []string) *acMatcher {
	type node struct {
		next map[byte]int32
		fail int32
		out  []int32
	}
	nodes := []node{{next: map[byte]int32{}}}
	for id, lit := range literals {
		s := int32(0)
		for i := 0; i < len(lit); i++ {
			c := lit[i]
			n, ok := nodes[s].next[c]
			if !ok {
				n = int32(len(nodes))
				nodes = append(nodes, node{next: map[byte]int32{}})
				nodes[s].next[c] = n
			}
			s = n
		}
		nodes[s].out = append(nodes[s].out, int32(id))
	}
	m := &acMatcher{delta: make([]int32, len(nodes)*256), out: make([][]int32, len(nodes))}
	// Breadth-first: a state's fail target is complete before the state is.
	queue := []int32{}
	for c := 0; c < 256; c++ {
		if n, ok := nodes[0].next[byte(c)]; ok {
			m.delta[c] = n
			nodes[n].fail = 0
			queue = append(queue, n)
		}
	}
	m.out[0] = nodes[0].out
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := nodes[s].fail
		m.out[s] = append(append([]int32(nil), nodes[s].out...), m.out[f]...)
		for c := 0; c < 256; c++ {
			if n, ok := nodes[s].next[byte(c)]; ok {
				nodes[n].fail = m.delta[int(f)*256+c]
				m.delta[int(s)*256+c] = n
				queue = append(queue, n)
			} else {
				m.delta[int(s)*256+c] = m.delta[int(f)*256+c]
			}
		}
	}
	// Fold upper-case ASCII input onto the lower-case transitions.
	for s := 0; s < len(nodes); s++ {
		for c := 'A'; c <= 'Z'; c++ {
			m.delta[s*256+int(c)] = m.delta[s*256+int(c-'A'+'a')]
		}
	}
	return m
}

// scan calls hit for every literal id found in text (possibly more than once per id).
func (m *acMatcher) scan(text []byte, hit func(id int32)) {
	s := int32(0)
	delta := m.delta
	for _, c := range text {
		s = delta[int(s)<<8|int(c)]
		if out := m.out[s]; out != nil {
			for _, id := range out {
				hit(id)
			}
		}
	}
}
