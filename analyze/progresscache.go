package analyze

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// A scan worker remembers, across the logs it reads, what the progress patterns said of a
// line with its digits masked (each '0'): the first lines of each shape of every log run the
// patterns (progressOf) and, at 16,384 ranks, the same lines but for their numbers come in
// every log. The memo is exact, so it cannot depend on the order logs are read in: it is used
// only when no progress pattern or literal can tell one digit from another (digitBlind), so a
// line and its masked form match the same pattern at the same places; the step is then read
// from the line itself.

// maxProgressKey bounds the lines the memo keeps, maxProgressMemo its entries.
const (
	maxProgressKey  = 512
	maxProgressMemo = 4096
)

// progressSeen is what the progress patterns said of a masked line: the first that matched
// (-1: none) and its submatches.
type progressSeen struct {
	pat int
	loc []int
}

// matchProgress is the rule set's matchProgress, by the memo when it may (see above).
func (s *logScanner) matchProgress(text []byte) (bool, int64) {
	rs, sc := s.rs, s.sc
	if !rs.progBlind || len(text) > maxProgressKey || sc.progOff {
		return rs.matchProgress(text, sc)
	}
	key := sc.progKey[:0]
	for _, c := range text {
		if c >= '0' && c <= '9' {
			c = '0'
		}
		key = append(key, c)
	}
	sc.progKey = key
	if m, ok := sc.progMemo[string(key)]; ok {
		sc.progAnswered++
		if m.pat < 0 {
			return false, -1
		}
		return true, rs.stepAt(m.pat, m.loc, text)
	}
	i, loc := rs.progressMatch(text, sc)
	switch {
	case len(sc.progMemo) < maxProgressMemo:
		if sc.progMemo == nil {
			sc.progMemo = map[string]progressSeen{}
		}
		sc.progMemo[string(key)] = progressSeen{pat: i, loc: loc}
	case sc.progAnswered < maxProgressMemo:
		// Full, and answered fewer lines than it holds: lines that differ in more than
		// their numbers (distinct lines) pay for the masking and never hit.
		sc.progOff, sc.progMemo = true, nil
	}
	if i < 0 {
		return false, -1
	}
	return true, rs.stepAt(i, loc, text)
}

// digitBlind says whether no match of the expressions and no occurrence of the literals can
// depend on which digits a text holds: no literal holds a digit, and every character class
// holds all ten or none. A text and its copy with every digit '0' then match alike, at the
// same places.
func digitBlind(res []*regexp.Regexp, lits []string) bool {
	for _, l := range lits {
		if strings.ContainsAny(l, "0123456789") {
			return false
		}
	}
	for _, re := range res {
		t, err := syntax.Parse(re.String(), syntax.Perl)
		if err != nil || !blindTree(t) {
			return false
		}
	}
	return true
}

func blindTree(t *syntax.Regexp) bool {
	switch t.Op {
	case syntax.OpLiteral:
		for _, r := range t.Rune {
			if r >= '0' && r <= '9' {
				return false
			}
		}
	case syntax.OpCharClass:
		n := 0
		for d := '0'; d <= '9'; d++ {
			for i := 0; i+1 < len(t.Rune); i += 2 {
				if t.Rune[i] <= d && d <= t.Rune[i+1] {
					n++
					break
				}
			}
		}
		if n != 0 && n != 10 {
			return false
		}
	}
	for _, sub := range t.Sub {
		if !blindTree(sub) {
			return false
		}
	}
	return true
}
