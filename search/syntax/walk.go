package syntax

// Walk calls fn for n and, while fn returns true, for each of its kids, depth first and in
// the query's order (go/ast's Inspect).
func Walk(n Node, fn func(Node) bool) {
	if n == nil || !fn(n) {
		return
	}
	switch n := n.(type) {
	case *Or:
		for _, k := range n.Kids {
			Walk(k, fn)
		}
	case *And:
		for _, k := range n.Kids {
			Walk(k, fn)
		}
	case *Not:
		Walk(n.Kid, fn)
	case *Phrase:
		for _, w := range n.Words {
			Walk(w, fn)
		}
	}
}

// Leaves lists the leaves of a query in its order: words, phrases, prefixes and fields (a
// phrase is one leaf; its words are not listed apart).
func Leaves(n Node) []Node {
	var out []Node
	Walk(n, func(n Node) bool {
		switch n.(type) {
		case *Or, *And, *Not:
			return true
		}
		out = append(out, n)
		return false
	})
	return out
}

// Terms are the words a query looks for in a line's text, folded: its words and the words of
// its phrases, and its prefixes; not what it excludes (under NOT or -), not field clauses.
// A highlighter marks these.
type Terms struct {
	Words    map[string]bool
	Prefixes []string
}

// TermsOf collects a query's terms.
func TermsOf(n Node) Terms {
	t := Terms{Words: map[string]bool{}}
	Walk(n, func(n Node) bool {
		switch n := n.(type) {
		case *Not, *Field:
			return false
		case *Word:
			t.Words[n.Word] = true
		case *Prefix:
			t.Prefixes = append(t.Prefixes, n.Prefix)
		}
		return true
	})
	return t
}

// Match says whether a folded word is one of the terms or starts with one of the prefixes.
func (t Terms) Match(folded string) bool {
	if t.Words[folded] {
		return true
	}
	for _, p := range t.Prefixes {
		if len(folded) >= len(p) && folded[:len(p)] == p {
			return true
		}
	}
	return false
}

// Empty says whether there is nothing to mark.
func (t Terms) Empty() bool { return len(t.Words)+len(t.Prefixes) == 0 }
