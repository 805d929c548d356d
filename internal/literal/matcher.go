package literal

// Matcher is an Aho-Corasick automaton over literals compared without ASCII case, compiled
// to a dense DFA over byte classes: bytes that no literal holds share one class, and an
// upper-case ASCII letter is in its lower-case letter's class, so case folds for free. The
// table is small enough to stay in cache: one class lookup and one transition per input
// byte. A Matcher is immutable and safe for concurrent use.
type Matcher struct {
	classes [256]uint16
	// starts marks the bytes that begin a literal: the last byte of a text, where no pair
	// is whole, is looked up here.
	starts [256]bool
	// grams marks where a literal can begin, by the first gram bytes at an offset (2, or 3
	// when every literal has 3 or more): a bit for each literal's first bytes in either case
	// (pairs by their two bytes, triples by a hash of them), and for a literal of one byte a
	// bit for every pair it begins. Text of common letters begins few literals at most
	// offsets though every letter begins one, so the scan from the root skips by grams and
	// runs the automaton only from offsets where a literal may begin.
	grams  [1 << 16 / 64]uint64
	gram   int
	stride uint32
	// delta[state+class] is the next state, pre-multiplied by stride and shifted left by one;
	// the low bit says the next state ends a literal.
	delta []uint32
	out   [][]int32 // state index -> ids of the literals that end there (fail chain merged)
}

// Hit is a literal found in a text: its id (its index in the list given to NewMatcher) and
// the offset just after it.
type Hit struct {
	ID  int32
	End int
}

// NewMatcher compiles literals; a literal's id is its index. Upper-case ASCII letters in a
// literal match either case, as lower-case ones do. An empty literal is never found.
func NewMatcher(literals []string) *Matcher {
	m := &Matcher{}
	nclass := 1
	for _, lit := range literals {
		for i := 0; i < len(lit); i++ {
			if c := fold(lit[i]); m.classes[c] == 0 {
				m.classes[c] = uint16(nclass)
				nclass++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		m.classes[c] = m.classes[c-'A'+'a']
	}
	m.stride = uint32(nclass)
	// The trie: each node's children in a list sorted by class (most nodes have one; a dense
	// table of every node by every class cost more to clear and scan than the rest of the
	// build).
	most := 1
	for _, lit := range literals {
		most += len(lit)
	}
	outs := make([][]int32, 1, most)
	first := make([]int32, 1, most) // a node's first child edge, -1: none
	first[0] = -1
	edges := make([]edge, 0, most)
	for id, lit := range literals {
		if lit == "" {
			continue
		}
		s := int32(0)
		for i := 0; i < len(lit); i++ {
			c := m.classes[lit[i]]
			// e: the first child whose class is not below c; prev: the edge before it, -1
			// when e is the first.
			prev, e := int32(-1), first[s]
			for e >= 0 && edges[e].class < c {
				prev, e = e, edges[e].next
			}
			if e >= 0 && edges[e].class == c {
				s = edges[e].child
				continue
			}
			n := int32(len(outs))
			outs, first = append(outs, nil), append(first, -1)
			edges = append(edges, edge{class: c, child: n, next: e})
			if prev < 0 {
				first[s] = int32(len(edges) - 1)
			} else {
				edges[prev].next = int32(len(edges) - 1)
			}
			s = n
		}
		outs[s] = append(outs[s], int32(id))
	}
	nodes := len(outs)
	// Breadth-first over the trie, the root first: the queue is also the states' numbering,
	// by depth, so that the shallow states most bytes visit share cache lines. A state's row
	// is its fail state's row (complete: that state is shallower) with its own trie edges
	// written over it; a state's fail state and literals are set as it is queued.
	queue := make([]int32, 1, nodes) // trie nodes, by state
	fail := make([]int32, nodes)     // by state
	m.delta = make([]uint32, nodes*nclass)
	m.out = make([][]int32, nodes)
	for k := 0; k < len(queue); k++ {
		row, f := m.delta[k*nclass:(k+1)*nclass], int(fail[k])
		if k > 0 {
			copy(row, m.delta[f*nclass:(f+1)*nclass])
		}
		for e := first[queue[k]]; e >= 0; e = edges[e].next {
			c, n := int(edges[e].class), edges[e].child
			kn := int32(len(queue))
			queue = append(queue, n)
			fn := int32(0) // the root's children fail to the root
			if k > 0 {
				fn = int32(m.delta[f*nclass+c] >> 1 / m.stride)
			}
			fail[kn] = fn
			if len(outs[n]) == 0 {
				m.out[kn] = m.out[fn]
			} else {
				m.out[kn] = append(append([]int32(nil), outs[n]...), m.out[fn]...)
			}
			v := uint32(kn) * m.stride << 1
			if len(m.out[kn]) > 0 {
				v |= 1
			}
			row[c] = v
		}
	}
	for c := 0; c < 256; c++ {
		m.starts[c] = m.delta[m.classes[c]] != 0
	}
	m.gram = 3
	for _, lit := range literals {
		if len(lit) > 0 && len(lit) < 3 {
			m.gram = 2
		}
	}
	for _, lit := range literals {
		switch {
		case lit == "":
		case m.gram == 3:
			for _, a := range cases(lit[0]) {
				for _, b := range cases(lit[1]) {
					for _, c := range cases(lit[2]) {
						m.set(triple(uint32(a) | uint32(b)<<8 | uint32(c)<<16))
					}
				}
			}
		case len(lit) == 1:
			for _, a := range cases(lit[0]) {
				for b := 0; b < 256; b++ {
					m.set(uint(a)<<8 | uint(b))
				}
			}
		default:
			for _, a := range cases(lit[0]) {
				for _, b := range cases(lit[1]) {
					m.set(uint(a)<<8 | uint(b))
				}
			}
		}
	}
	return m
}

// edge is a trie edge: its class, the node it leads to and the parent's next edge (-1: none).
type edge struct {
	class       uint16
	child, next int32
}

// cases returns the bytes that fold to c's case: both cases of an ASCII letter, else c.
func cases(c byte) []byte {
	if l := fold(c); l >= 'a' && l <= 'z' {
		return []byte{l, l - 'a' + 'A'}
	}
	return []byte{c}
}

func (m *Matcher) set(p uint) { m.grams[p/64] |= 1 << (p % 64) }

func (m *Matcher) has(p uint) bool { return m.grams[p/64]&(1<<(p%64)) != 0 }

// triple hashes three bytes (first in the low byte) to a bit of grams.
func triple(x uint32) uint { return uint((x * 0x9e3779b1) >> 16) }

// skip returns the first offset from i where a literal may begin (see grams), or len(text).
func skip[T string | []byte](m *Matcher, text T, i int) int {
	if m.gram == 3 {
		if i+2 >= len(text) {
			return len(text)
		}
		x := uint32(text[i]) | uint32(text[i+1])<<8
		for ; i+2 < len(text); i++ {
			x = x&0xffff | uint32(text[i+2])<<16
			if m.has(triple(x)) {
				return i
			}
			x >>= 8
		}
		return len(text)
	}
	for ; i+1 < len(text); i++ {
		if m.has(uint(text[i])<<8 | uint(text[i+1])) {
			return i
		}
	}
	if i < len(text) && m.starts[text[i]] {
		return i
	}
	return len(text)
}

// Append appends every occurrence of a literal in text to hits, in the order they end
// (literals ending at the same byte: longest first), and returns the extended slice. A text
// with no literal costs no allocation.
func Append[T string | []byte](m *Matcher, text T, hits []Hit) []Hit {
	s := uint32(0)
	delta, classes := m.delta, &m.classes
	for i := 0; i < len(text); i++ {
		if s == 0 {
			if i = skip(m, text, i); i == len(text) {
				return hits
			}
		}
		v := delta[s+uint32(classes[text[i]])]
		s = v >> 1
		if v&1 != 0 {
			for _, id := range m.out[s/m.stride] {
				hits = append(hits, Hit{ID: id, End: i + 1})
			}
		}
	}
	return hits
}

// Any says whether text holds any of the literals; it stops at the first.
func Any[T string | []byte](m *Matcher, text T) bool {
	s := uint32(0)
	delta, classes := m.delta, &m.classes
	for i := 0; i < len(text); i++ {
		if s == 0 {
			if i = skip(m, text, i); i == len(text) {
				return false
			}
		}
		v := delta[s+uint32(classes[text[i]])]
		s = v >> 1
		if v&1 != 0 {
			return true
		}
	}
	return false
}

func fold(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
