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
	type node struct {
		next map[uint16]int32
		fail int32
		out  []int32
	}
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
	nodes := []node{{next: map[uint16]int32{}}}
	for id, lit := range literals {
		s := int32(0)
		for i := 0; i < len(lit); i++ {
			c := m.classes[lit[i]]
			n, ok := nodes[s].next[c]
			if !ok {
				n = int32(len(nodes))
				nodes = append(nodes, node{next: map[uint16]int32{}})
				nodes[s].next[c] = n
			}
			s = n
		}
		nodes[s].out = append(nodes[s].out, int32(id))
	}
	next := make([]int32, len(nodes)*nclass) // plain transitions, by state and class
	m.out = make([][]int32, len(nodes))
	// Breadth-first: a state's fail target is complete before the state is.
	queue := []int32{}
	for c := 0; c < nclass; c++ {
		if n, ok := nodes[0].next[uint16(c)]; ok {
			next[c] = n
			queue = append(queue, n)
		}
	}
	m.out[0] = nodes[0].out
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := nodes[s].fail
		m.out[s] = append(append([]int32(nil), nodes[s].out...), m.out[f]...)
		for c := 0; c < nclass; c++ {
			if n, ok := nodes[s].next[uint16(c)]; ok {
				nodes[n].fail = next[int(f)*nclass+c]
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
	renum := make([]int32, len(nodes))
	seen := make([]bool, len(nodes))
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
