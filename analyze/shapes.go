package analyze

import (
	"slices"

	"github.com/coroner-dev/coroner/internal/literal"

	"github.com/coroner-dev/coroner/logscan"
)

// A log is mostly a few line shapes repeated with different numbers. Whether the rules can
// match a line of a shape is decided once per shape, from the literals every matching line
// must hold: a shape where no pattern can have all its literals needs no scan of its lines,
// unless its variable words could put the missing literals there ("exit code 137": the digits
// vary), which is checked per line from the characters those words hold.

// shapeFilter says which lines of one shape the rules must look at.
type shapeFilter struct {
	// all: every line (some pattern's literals are all in the constant text, or some pattern
	// has no literal).
	all bool
	// needs: otherwise, only the lines that meet one of these (none: no line).
	needs []logscan.Need
}

// shapeMemo is one log's view of a shape's filter: the lines of a shape mostly put the same
// classes of characters in each variable word (digits), so each word with needs remembers the
// classes it last held and whether a need held for them.
type shapeMemo struct {
	all  bool
	vars []varMemo // in variable word order
}

type varMemo struct {
	v     int
	last  uint64
	met   bool
	needs []uint64
}

func newShapeMemo(f *shapeFilter) *shapeMemo {
	m := &shapeMemo{all: f.all}
	for _, n := range f.needs {
		i := slices.IndexFunc(m.vars, func(vm varMemo) bool { return vm.v == n.Var })
		if i < 0 {
			i = len(m.vars)
			m.vars = append(m.vars, varMemo{v: n.Var})
		}
		m.vars[i].needs = append(m.vars[i].needs, n.Classes)
	}
	slices.SortFunc(m.vars, func(a, b varMemo) int { return a.v - b.v })
	for i := range m.vars {
		m.vars[i].met = m.vars[i].meets(0)
	}
	return m
}

func (vm *varMemo) meets(classes uint64) bool {
	for _, need := range vm.needs {
		if classes&need == need {
			return true
		}
	}
	return false
}

// mayMatch reports whether the rules could match a line of the shape whose variable words
// hold these character classes.
func (m *shapeMemo) mayMatch(classes []uint64) bool {
	if m.all {
		return true
	}
	for i := range m.vars {
		vm := &m.vars[i]
		if vm.v >= len(classes) {
			return true // not a line of this shape: let the rules see it
		}
		if c := classes[vm.v]; c != vm.last {
			vm.last, vm.met = c, vm.meets(c)
		}
		if vm.met {
			return true
		}
	}
	return false
}

// shapeFilter returns the filter of a shape, computed once per shape key for all logs.
func (rs *RuleSet) shapeFilter(sh *logscan.Shape) *shapeFilter {
	if f, ok := rs.shapes.Load(sh.Key); ok {
		return f.(*shapeFilter)
	}
	f := rs.newShapeFilter(sh)
	rs.shapes.Store(sh.Key, f)
	return f
}

func (rs *RuleSet) newShapeFilter(sh *logscan.Shape) *shapeFilter {
	if len(rs.always) > 0 || rs.fixedMatch(sh) {
		return &shapeFilter{all: true}
	}
	always := make([]bool, len(rs.lits))
	needs := make([][]logscan.Need, len(rs.lits))
	possible := make([]uint8, len(rs.pats)) // the literal sets of each pattern a line could hold
	fixed := make([]uint8, len(rs.pats))    // those every line holds
	for id, lit := range rs.lits {
		a, nd := sh.Literal(lit)
		if !a && len(nd) == 0 {
			continue
		}
		always[id], needs[id] = a, nd
		for _, ps := range rs.litPats[id] {
			possible[ps.pat] |= ps.bit
			if a {
				fixed[ps.pat] |= ps.bit
			}
		}
	}
	f := &shapeFilter{}
	for p := range rs.pats {
		if fixed[p] == rs.pats[p].full {
			return &shapeFilter{all: true}
		}
	}
	for id, nd := range needs {
		if len(nd) == 0 {
			continue
		}
		for _, ps := range rs.litPats[id] {
			if possible[ps.pat] == rs.pats[ps.pat].full {
				for _, n := range nd {
					f.needs = logscan.AddNeed(f.needs, n)
				}
				break
			}
		}
	}
	return f
}

// fixedMatch says whether the constant text of a shape holds every literal set of some
// pattern, from one pass of the rules' automaton over each constant part: the filter of such
// a shape is all, as newShapeFilter would find asking Shape.Literal of each of the rules'
// literals, which costs about 10M instructions for a shape of a dozen variable words.
func (rs *RuleSet) fixedMatch(sh *logscan.Shape) bool {
	fixed := make([]uint8, len(rs.pats))
	var hits []literal.Hit
	n := int32(len(rs.lits))
	for _, part := range sh.Parts {
		hits = literal.Append(rs.ac, part, hits[:0])
		for _, h := range hits {
			if h.ID >= n {
				continue // a progress literal
			}
			for _, ps := range rs.litPats[h.ID] {
				if fixed[ps.pat] |= ps.bit; fixed[ps.pat] == rs.pats[ps.pat].full {
					return true
				}
			}
		}
	}
	return false
}

// maxKeptMemos bounds each of Scratch's memos by shape key: logs of distinct lines make
// shapes without end.
const maxKeptMemos = 4096

// recurs counts a log that shows the shape of key before the rules' filter of the shape is
// made, and says whether filterAfter logs of the scratch space's did.
func (sc *Scratch) recurs(key string) bool {
	if sc.shapeLogs == nil || len(sc.shapeLogs) >= maxKeptMemos {
		sc.shapeLogs = map[string]int{}
	}
	n := sc.shapeLogs[key] + 1
	sc.shapeLogs[key] = n
	return n > filterAfter
}

// keepMemo keeps m as the memo of shape key in memos, for the next logs the scratch space
// serves (one log at a time: a memo's state is a cache of its answers, whichever log asks),
// and returns it.
func (sc *Scratch) keepMemo(memos *map[string]*shapeMemo, key string, m *shapeMemo) *shapeMemo {
	if *memos == nil || len(*memos) >= maxKeptMemos {
		*memos = map[string]*shapeMemo{}
	}
	(*memos)[key] = m
	return m
}
