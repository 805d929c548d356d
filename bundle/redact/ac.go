package redact

// acAuto is an Aho-Corasick automaton over ASCII-case-folded bytes, compiled into a dense
// DFA over byte classes. It is the prefilter: one table lookup per byte finds every trigger
// (a literal that a rule needs) in a line, so most lines never reach a regular expression.
type acAuto struct {
	class  [256]uint16 // byte -> class; 0 is "no trigger has this byte"
	nclass int
	// delta maps state*nclass + class to the next state, premultiplied by nclass, with
	// hasOut set when triggers end in that state.
	delta []int32
	out   [][]int32 // state -> triggers that end here
}

const hasOut = int32(-1 << 31)

func fold(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

func newAC(triggers []string) *acAuto {
	a := &acAuto{nclass: 1}
	for _, t := range triggers {
		for i := 0; i < len(t); i++ {
			c := fold(t[i])
			if a.class[c] == 0 {
				a.class[c] = uint16(a.nclass)
				a.nclass++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		a.class[c] = a.class[c+('a'-'A')]
	}
	n := a.nclass
	// The trie, with -1 for "no edge".
	next := []int32{}
	newState := func() int32 {
		for i := 0; i < n; i++ {
			next = append(next, -1)
		}
		a.out = append(a.out, nil)
		return int32(len(a.out) - 1)
	}
	newState()
	for id, t := range triggers {
		s := int32(0)
		for i := 0; i < len(t); i++ {
			c := int32(a.class[fold(t[i])])
			if next[s*int32(n)+c] < 0 {
				ns := newState()
				next[s*int32(n)+c] = ns
			}
			s = next[s*int32(n)+c]
		}
		a.out[s] = append(a.out[s], int32(id))
	}
	// Breadth-first: failure links, and the full transition table.
	states := len(a.out)
	a.delta = make([]int32, states*n)
	fail := make([]int32, states)
	queue := make([]int32, 0, states)
	for c := 1; c < n; c++ {
		if s := next[c]; s >= 0 {
			a.delta[c] = s
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		a.out[s] = append(a.out[s], a.out[fail[s]]...)
		for c := 1; c < n; c++ {
			t := next[int(s)*n+c]
			if t < 0 {
				a.delta[int(s)*n+c] = a.delta[int(fail[s])*n+c]
				continue
			}
			a.delta[int(s)*n+c] = t
			fail[t] = a.delta[int(fail[s])*n+c]
			queue = append(queue, t)
		}
	}
	// Premultiply and flag, so the scan loop does one load and one test per byte.
	for i, t := range a.delta {
		v := t * int32(n)
		if len(a.out[t]) > 0 {
			v |= hasOut
		}
		a.delta[i] = v
	}
	return a
}

// hit is a trigger found in a line: which one, and the offset just after it.
type hit struct {
	trigger int32
	end     int
}

// scan appends every trigger occurrence in b to hits.
func scan[T string | []byte](a *acAuto, b T, hits []hit) []hit {
	n := int32(a.nclass)
	delta, class := a.delta, &a.class
	s := int32(0)
	for i := 0; i < len(b); i++ {
		if s == 0 && class[b[i]] == 0 {
			continue
		}
		v := delta[s+int32(class[b[i]])]
		if v < 0 {
			v &^= hasOut
			for _, t := range a.out[v/n] {
				hits = append(hits, hit{t, i + 1})
			}
		}
		s = v
	}
	return hits
}
