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
