package analyze

import "github.com/coroner-dev/coroner/index"

// minLiteral is the shortest literal worth prefiltering on (index.MinLiteral).
const minLiteral = index.MinLiteral

// requiredLiterals returns a set of lower-cased literals such that every match of the pattern
// contains at least one of them, or nil when no such set can be derived (the pattern then runs
// on every line).
func requiredLiterals(pattern string) []string {
	sets := index.RequiredLiterals(pattern)
	if len(sets) == 0 {
		return nil
	}
	return sets[0]
}

// acMatcher is an Aho-Corasick automaton over lower-cased literals, compiled to a dense DFA
// over byte classes: bytes that no literal holds share one class, and an upper-case ASCII
// letter is in its lower-case letter's class, so case folds for free. The table is small
// enough to stay in cache: one class lookup and one transition per input byte.
type acMatcher struct {
	classes [256]uint16
	// starts marks the bytes that begin a literal: from the root state, a scan skips the
	// others in a tight loop with no dependency between bytes.
	starts [256]bool
	stride uint32
	// delta[state+class] is the next state, pre-multiplied by stride and shifted left by one;
	// the low bit says the next state ends a literal.
	delta []uint32
	out   [][]int32 // state index -> ids of the literals that end there (fail chain merged)
}

func newACMatcher(literals []string) *acMatcher {
	m := &acMatcher{}
	nclass := 1
	for _, lit := range literals {
		for i := 0; i < len(lit); i++ {
			if c := lit[i]; m.classes[c] == 0 {
				m.classes[c] = uint16(nclass)
				nclass++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		m.classes[c] = m.classes[c-'A'+'a']
	}
	m.stride = uint32(nclass)
	// The trie, as a dense table of transitions by state and class (-1: none).
	most := 1
	for _, lit := range literals {
		most += len(lit)
	}
	trie := make([]int32, most*nclass)
	for i := range trie {
		trie[i] = -1
	}
	outs := make([][]int32, 1, most)
	for id, lit := range literals {
		s := int32(0)
		for i := 0; i < len(lit); i++ {
			c := int(m.classes[lit[i]])
			n := trie[int(s)*nclass+c]
			if n < 0 {
				n = int32(len(outs))
				outs = append(outs, nil)
				trie[int(s)*nclass+c] = n
			}
			s = n
		}
		outs[s] = append(outs[s], int32(id))
	}
	nodes := len(outs)
	next := make([]int32, nodes*nclass) // plain transitions, by state and class
	fail := make([]int32, nodes)
	m.out = make([][]int32, nodes)
	// Breadth-first: a state's fail target is complete before the state is.
	queue := []int32{}
	for c := 0; c < nclass; c++ {
		if n := trie[c]; n >= 0 {
			next[c] = n
			queue = append(queue, n)
		}
	}
	m.out[0] = outs[0]
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := fail[s]
		if len(outs[s]) == 0 {
			m.out[s] = m.out[f]
		} else {
			m.out[s] = append(append([]int32(nil), outs[s]...), m.out[f]...)
		}
		for c := 0; c < nclass; c++ {
			if n := trie[int(s)*nclass+c]; n >= 0 {
				fail[n] = next[int(f)*nclass+c]
				next[int(s)*nclass+c] = n
				queue = append(queue, n)
			} else {
				next[int(s)*nclass+c] = next[int(f)*nclass+c]
			}
		}
	}
	// Number the states breadth-first, so the shallow states that most bytes visit share
	// cache lines.
	order := []int32{0}
	renum := make([]int32, nodes)
	seen := make([]bool, nodes)
	seen[0] = true
	for k := 0; k < len(order); k++ {
		s := order[k]
		for c := 0; c < nclass; c++ {
			if n := next[int(s)*nclass+c]; !seen[n] {
				seen[n] = true
				renum[n] = int32(len(order))
				order = append(order, n)
			}
		}
	}
	m.delta = make([]uint32, len(order)*nclass)
	out := make([][]int32, len(order))
	for newS, oldS := range order {
		out[newS] = m.out[oldS]
		for c := 0; c < nclass; c++ {
			n := next[int(oldS)*nclass+c]
			v := uint32(renum[n]) * m.stride << 1
			if len(m.out[n]) > 0 {
				v |= 1
			}
			m.delta[newS*nclass+c] = v
		}
	}
	m.out = out
	for c := 0; c < 256; c++ {
		m.starts[c] = m.delta[m.classes[c]] != 0
	}
	return m
}

// scan calls hit for every literal id found in text (possibly more than once per id).
func (m *acMatcher) scan(text []byte, hit func(id int32)) {
	s := uint32(0)
	delta, classes, starts := m.delta, &m.classes, &m.starts
	for i := 0; i < len(text); i++ {
		if s == 0 {
			for i < len(text) && !starts[text[i]] {
				i++
			}
			if i == len(text) {
				return
			}
		}
		v := delta[s+uint32(classes[text[i]])]
		s = v >> 1
		if v&1 != 0 {
			for _, id := range m.out[s/m.stride] {
				hit(id)
			}
		}
	}
}
