package analyze

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/coroner-dev/coroner/internal/literal"
)

// RuleSet is a compiled set of rules: one Aho-Corasick pass over a line finds which patterns
// can match, and only those run their regular expression.
type RuleSet struct {
	rules []*Rule // sorted by id
	byID  map[string]*Rule
	// objects holds the object rules by the kind of fact they match.
	objects map[string][]*Rule
	// stateful are the streak, sequence and silence rules; progress the progress entries.
	stateful []*Rule
	progress []*Rule

	pats []pattern
	lits []string // the literals of the patterns' required sets, by id
	// ac finds the rules' literals (ids below len(lits)) and then the progress literals
	// (see progressLiterals): a line that both look at is read once.
	ac      *literal.Matcher
	litPats [][]patSet // literal id -> the pattern sets it belongs to
	always  []int32    // patterns with no usable literal
	shapes  sync.Map   // shape key -> *shapeFilter, shared by the logs
	// gate finds the literals of each rule's and progress pattern's rarest required set
	// (literal.Rarest), and progGate those of the progress patterns. No pattern can match a
	// line without its rarest set, so on a line where the gate finds none, no pattern is a
	// candidate, and ac (or progAC) reads only the others (see literals). On lines of
	// words that never repeat, the sets of common literals (`": `, "rank", " - ") are what
	// kept ac's automaton away from its root, where it skips.
	gate, progGate *literal.Matcher

	// The progress patterns, in the order they are tried, and their own prefilter (as pats
	// and ac): a log's first lines of each shape run them, and the 250-byte lines of a
	// launcher's banner cost tens of microseconds each in the regexp engine.
	progPats    []pattern
	progAC      *literal.Matcher
	progLitPats [][]patSet
	// progBlind: the progress patterns and literals cannot tell digits apart (digitBlind),
	// so a scan worker may remember their answers by masked line (logScanner.matchProgress).
	progBlind bool
}

type pattern struct {
	rule *Rule
	re   *regexp.Regexp
	// full has one bit per required literal set; the regexp runs only when all are seen.
	full uint8
	kind patKind
}

// patKind says what a pattern's match means.
type patKind uint8

const (
	// kindLine: the line is a finding of the rule.
	kindLine patKind = iota
	// kindStreak: the line shows a streak rule's condition; kindRecover ends a streak.
	kindStreak
	kindRecover
	// kindSequence: the line reports a collective; kindCulprit names the rank behind.
	kindSequence
	kindCulprit
	// kindProgress: the line shows training progress.
	kindProgress
	// kindFact: the line renders an object fact (a container's exit code).
	kindFact
)

type patSet struct {
	pat int32
	bit uint8
}

// NewRuleSet compiles rule lists, joined by Resolve: a later list (a user's directory) can
// add rules, replace, change or turn off a rule of an earlier one by id; within one list ids
// must be unique. Disabled rules are left out.
func NewRuleSet(lists ...[]*Rule) (*RuleSet, error) {
	all, err := Resolve(lists...)
	if err != nil {
		return nil, err
	}
	rs := &RuleSet{byID: map[string]*Rule{}}
	for _, r := range all {
		if !r.Disabled {
			rs.byID[r.ID] = r
			rs.rules = append(rs.rules, r)
		}
	}

	var table litTable
	var rare []string // each pattern's rarest set (see gate)
	rs.objects = map[string][]*Rule{}
	for _, r := range rs.rules {
		switch {
		case r.Match.Object != nil:
			rs.objects[r.Match.Object.Kind] = append(rs.objects[r.Match.Object.Kind], r)
		case r.progress:
			// Progress lines are found per shape (see progressOf), not by the prefilter:
			// step lines are most of a log, and the rules need none of them.
			rs.progress = append(rs.progress, r)
			continue
		case r.Match.Streak != nil || r.Match.Sequence != nil || r.Match.Silence != nil:
			rs.stateful = append(rs.stateful, r)
		}
		for _, cp := range r.res {
			if cp.kind == kindRecover {
				continue // run only while a streak is on (see procState.recover)
			}
			idx := int32(len(rs.pats))
			rs.pats = append(rs.pats, pattern{rule: r, re: cp.re, kind: cp.kind})
			sets := literal.Required(cp.re.String())
			if len(sets) == 0 {
				rs.always = append(rs.always, idx)
				continue
			}
			rs.pats[idx].full = table.add(idx, sets)
			rare = appendRarest(rare, sets)
		}
	}
	rs.lits, rs.litPats = table.lits, table.pats
	rs.compileProgress(rare)
	return rs, nil
}

// litTable numbers the literals the patterns of a prefilter require and lists, for each, the
// patterns (and which of their literal sets) it serves.
type litTable struct {
	lits  []string
	index map[string]int32
	pats  [][]patSet
}

// add records that pattern idx requires a literal of each of sets, and returns the bits of its
// sets.
func (t *litTable) add(idx int32, sets [][]string) (full uint8) {
	if t.index == nil {
		t.index = map[string]int32{}
	}
	for si, set := range sets {
		bit := uint8(1) << si
		full |= bit
		for _, l := range set {
			id, ok := t.index[l]
			if !ok {
				id = int32(len(t.lits))
				t.index[l] = id
				t.lits = append(t.lits, l)
				t.pats = append(t.pats, nil)
			}
			t.pats[id] = append(t.pats[id], patSet{pat: idx, bit: bit})
		}
	}
	return full
}

// compileProgress builds the progress patterns' prefilter: a pattern runs only on a line
// that holds one literal of each set it requires (see literal.Required), which every line it
// matches does.
func (rs *RuleSet) compileProgress(rare []string) {
	var table litTable
	var progRare []string
	for _, r := range rs.progress {
		for _, cp := range r.res {
			idx := int32(len(rs.progPats))
			p := pattern{rule: r, re: cp.re, kind: cp.kind}
			sets := literal.Required(cp.re.String())
			p.full = table.add(idx, sets)
			progRare = appendRarest(progRare, sets)
			rs.progPats = append(rs.progPats, p)
		}
	}
	rs.progLitPats = table.pats
	rs.progAC = literal.NewMatcher(table.lits)
	res := make([]*regexp.Regexp, len(rs.progPats))
	for i, p := range rs.progPats {
		res[i] = p.re
	}
	rs.progBlind = digitBlind(res, table.lits)
	rs.ac = literal.NewMatcher(append(slices.Clip(rs.lits), table.lits...))
	rs.gate = literal.NewMatcher(gateLiterals(append(slices.Clip(rare), progRare...)))
	rs.progGate = literal.NewMatcher(gateLiterals(progRare))
}

// gateMax is the longest literal a gate holds: a line that holds a literal holds its first
// gateMax bytes, and a gate only says whether a line may hold one (see gate); its automaton
// is the smaller for it.
const gateMax = 8

// gateLiterals returns lits cut to gateMax bytes, without duplicates and without those that
// hold another (the line holds that one too), in their order.
func gateLiterals(lits []string) []string {
	firstAt := make(map[string]int, len(lits)) // each literal's first index
	for i, l := range lits {
		lits[i] = l[:min(len(l), gateMax)]
		if _, ok := firstAt[lits[i]]; !ok {
			firstAt[lits[i]] = i
		}
	}
	var out []string
	for i, l := range lits {
		// Every part of a literal of gateMax bytes at most is looked up: another literal
		// that is a shorter part of it, or the same literal earlier, makes it redundant.
		redundant := firstAt[l] < i
		for a := 0; a <= len(l) && !redundant; a++ {
			for b := a; b <= len(l) && b-a < len(l); b++ {
				if _, ok := firstAt[l[a:b]]; ok {
					redundant = true
					break
				}
			}
		}
		if !redundant {
			out = append(out, l)
		}
	}
	return out
}

// appendRarest appends the literals of the rarest of sets (a pattern's required sets, see
// literal.Rarest) to lits.
func appendRarest(lits []string, sets [][]string) []string {
	if i := literal.Rarest(sets); i >= 0 {
		lits = append(lits, sets[i]...)
	}
	return lits
}

// literals appends to hits[:0] the literals m finds in text when gate finds one of its own,
// and returns them; else none, as then no pattern m serves has every set it requires.
func literals(gate, m *literal.Matcher, text []byte, hits []literal.Hit) []literal.Hit {
	if !literal.Any(gate, text) {
		return hits[:0]
	}
	return literal.Append(m, text, hits[:0])
}

// progressLiterals puts the progress literals of text in sc.progHits; when sc.both is set,
// the rules' literals too, in sc.hits, in the same pass, for the Match that follows.
func (rs *RuleSet) progressLiterals(text []byte, sc *Scratch) {
	if !sc.both {
		sc.progHits = literals(rs.progGate, rs.progAC, text, sc.progHits)
		return
	}
	sc.both, sc.found = false, true
	sc.progHits = literals(rs.gate, rs.ac, text, sc.progHits)
	n := int32(len(rs.lits))
	sc.hits = sc.hits[:0]
	rest := sc.progHits[:0] // filtered in place
	for _, h := range sc.progHits {
		if h.ID < n {
			sc.hits = append(sc.hits, h)
		} else {
			h.ID -= n
			rest = append(rest, h)
		}
	}
	sc.progHits = rest
}

// matchProgress says whether a line shows training progress, and its step when the
// pattern has a step group (-1 otherwise).
func (rs *RuleSet) matchProgress(text []byte, sc *Scratch) (ok bool, step int64) {
	i, loc := rs.progressMatch(text, sc)
	if i < 0 {
		return false, -1
	}
	return true, rs.stepAt(i, loc, text)
}

// stepAt is the step progress pattern i shows in text, which it matched at loc (-1: none).
func (rs *RuleSet) stepAt(i int, loc []int, text []byte) int64 {
	step := int64(-1)
	for g, name := range rs.progPats[i].re.SubexpNames() {
		if name == "step" && loc[2*g] >= 0 {
			if n, ok := atoi(text[loc[2*g]:loc[2*g+1]]); ok {
				step = int64(n)
			}
		}
	}
	return step
}

// progressMatch returns the first progress pattern that matches text and where (its
// submatches), or -1.
func (rs *RuleSet) progressMatch(text []byte, sc *Scratch) (int, []int) {
	rs.progressLiterals(text, sc)
	seen := sc.progSeen[:0]
	for range rs.progPats {
		seen = append(seen, 0)
	}
	sc.progSeen = seen
	for _, h := range sc.progHits {
		for _, ps := range rs.progLitPats[h.ID] {
			seen[ps.pat] |= ps.bit
		}
	}
	for i, p := range rs.progPats {
		if seen[i] != p.full {
			continue
		}
		if loc := p.re.FindSubmatchIndex(text); loc != nil {
			return i, loc
		}
	}
	return -1, nil
}

// Rules returns the rules sorted by id.
func (rs *RuleSet) Rules() []*Rule { return rs.rules }

// Rule returns the rule with that id, or nil.
func (rs *RuleSet) Rule(id string) *Rule { return rs.byID[id] }

// Hit is one rule matching one message.
type Hit struct {
	Rule   *Rule
	Groups map[string]string
}

// Scratch is per-goroutine state that keeps Match from allocating on lines that match nothing.
type Scratch struct {
	mark  []uint32 // generation in which a pattern was last touched
	seen  []uint8  // literal sets of a pattern seen on this line
	gen   uint32
	touch []int32
	cands []int32
	hits  []literal.Hit
	// state holds the stateful matches of the last Match (streak, sequence, progress lines).
	state []stateHit
	// progHits and progSeen are matchProgress's hits and sets seen by pattern.
	progHits []literal.Hit
	progSeen []uint8
	// progMemo, progKey, progAnswered and progOff are the memo of the progress patterns'
	// answers by masked line, its key's buffer, the lines it answered and whether it gave
	// up (logScanner.matchProgress).
	progMemo     map[string]progressSeen
	progKey      []byte
	progAnswered int
	progOff      bool
	// both asks matchProgress to find the rules' literals of the line too, for the Match
	// that follows it; found says hits holds them.
	both, found bool
	// tail, shapes and progress are a log scan's buffers, handed from one log to the next
	// (logScanner.release): the lines of a 16 KiB log cost less than making them anew.
	tail     tailBuf
	shapes   []shapeSeen
	progress []progressMemo
	// rings are progress rings and gap buffers the processes of earlier logs let go
	// (procState.settle), lent to the next process that shows progress (procState.lend): a
	// ring grown by append in every log was most of what a scan of many small logs allocated.
	rings []progressBufs
	// byRule and procs are the maps of the last log's scan, emptied, for the next
	// (logScanner.scanned).
	byRule map[*Rule]*Finding
	procs  map[string]*procState
	// scanner is the last log's scanner once what it found was taken (Scan.Done): no one
	// holds it, and a new one a log (about 900 bytes) was 5% of what an analysis of 4,096
	// ranks allocated.
	scanner *logScanner
	// rules and tails are the memos of the rules' and the tail filters of the shapes the
	// logs it served showed, by shape key (keepMemo).
	rules, tails map[string]*shapeMemo
	// shapeLogs counts, by shape key, the logs that showed a shape the rules' filter of which
	// is not made yet (recurs).
	shapeLogs map[string]int
}

// stateHit is a pattern of a stateful kind matching a line.
type stateHit struct {
	rule   *Rule
	kind   patKind
	groups map[string]string
}

// NewScratch returns scratch space sized for rs.
func (rs *RuleSet) NewScratch() *Scratch {
	return &Scratch{mark: make([]uint32, len(rs.pats)), seen: make([]uint8, len(rs.pats))}
}

// Match returns the rules whose patterns match text, in rule-id order; fallback rules only
// when nothing else matched. Rules that match events by reason alone are not considered.
func (rs *RuleSet) Match(text []byte, sc *Scratch) []Hit {
	sc.gen++
	if sc.gen == 0 { // wrapped: clear the marks once every 4 billion lines
		clear(sc.mark)
		sc.gen = 1
	}
	sc.cands, sc.touch, sc.state = sc.cands[:0], sc.touch[:0], sc.state[:0]
	gen := sc.gen
	if !sc.found {
		sc.hits = literals(rs.gate, rs.ac, text, sc.hits)
	}
	sc.found = false
	n := int32(len(rs.lits))
	for _, h := range sc.hits {
		if h.ID >= n {
			continue // a progress literal
		}
		for _, ps := range rs.litPats[h.ID] {
			if sc.mark[ps.pat] != gen {
				sc.mark[ps.pat] = gen
				sc.seen[ps.pat] = 0
				sc.touch = append(sc.touch, ps.pat)
			}
			sc.seen[ps.pat] |= ps.bit
		}
	}
	for _, p := range sc.touch {
		if sc.seen[p] == rs.pats[p].full {
			sc.cands = append(sc.cands, p)
		}
	}
	if len(sc.cands) == 0 && len(rs.always) == 0 {
		return nil
	}
	sc.cands = append(sc.cands, rs.always...)
	return rs.confirm(text, sc)
}

// MatchString is Match for a message that is not on the hot path.
func (rs *RuleSet) MatchString(text string) []Hit {
	return rs.Match([]byte(text), rs.NewScratch())
}

// MatchEvent matches a Kubernetes event: rules restricted to event reasons match when the
// reason is theirs (and their patterns, if any, match the message); other pattern rules match
// the message.
func (rs *RuleSet) MatchEvent(reason, message string) []Hit {
	var hits []Hit
	for _, h := range rs.MatchString(message) {
		if len(h.Rule.Match.EventReasons) == 0 || slices.Contains(h.Rule.Match.EventReasons, reason) {
			hits = append(hits, h)
		}
	}
	for _, r := range rs.rules {
		if len(r.Match.Patterns) == 0 && slices.Contains(r.Match.EventReasons, reason) {
			hits = append(hits, Hit{Rule: r})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Rule.ID < hits[j].Rule.ID })
	return dropFallbacks(hits)
}

// confirm runs the candidate patterns' regular expressions. Matches of stateful patterns go
// to sc.state, one per rule and kind.
func (rs *RuleSet) confirm(text []byte, sc *Scratch) []Hit {
	var hits []Hit
	cands := sc.cands
	slices.Sort(cands) // not sort.Slice, whose reflection was an eighth of confirm at 16,384 ranks
	var last *Rule
	var lastKind patKind
	for _, p := range cands {
		pat := rs.pats[p]
		if pat.rule == last && pat.kind == lastKind {
			continue // this rule already matched through an earlier pattern
		}
		if pat.kind != kindLine {
			loc := pat.re.FindSubmatchIndex(text)
			if loc == nil {
				continue
			}
			last, lastKind = pat.rule, pat.kind
			sc.state = append(sc.state, stateHit{rule: pat.rule, kind: pat.kind, groups: groupsAt(pat.re, text, loc)})
			continue
		}
		g, ok := trainingMatch(pat.re, text)
		if !ok || pat.rule.excluded(text) {
			continue
		}
		last, lastKind = pat.rule, pat.kind
		hits = append(hits, Hit{Rule: pat.rule, Groups: g})
	}
	return dropFallbacks(hits)
}

// trainingMatch returns the groups of the first match of re in text whose group metric
// names no evaluation metric: "val_loss=nan, train_loss=nan" is found by its training
// loss, whichever column comes first.
func trainingMatch(re *regexp.Regexp, text []byte) (map[string]string, bool) {
	loc := re.FindSubmatchIndex(text)
	if loc == nil {
		return nil, false
	}
	if g := groupsAt(re, text, loc); !evaluationMetric(g["metric"]) {
		return g, true
	}
	for _, loc := range re.FindAllSubmatchIndex(text, -1)[1:] {
		if g := groupsAt(re, text, loc); !evaluationMetric(g["metric"]) {
			return g, true
		}
	}
	return nil, false
}

// evaluationMetric says whether a pattern's group metric names a metric of an evaluation
// split ("eval_loss", "val_loss", "test_loss"): such a line is no finding, since an
// evaluation can be non-finite (an empty or padded batch) while training is fine.
func evaluationMetric(metric string) bool {
	split, _, found := strings.Cut(strings.ToLower(metric), "_")
	if !found {
		return false
	}
	switch split {
	case "eval", "evaluation", "val", "valid", "validation", "test", "dev":
		return true
	}
	return false
}

func groupsAt(re *regexp.Regexp, text []byte, loc []int) map[string]string {
	var g map[string]string
	for i, name := range re.SubexpNames() {
		if name == "" || 2*i+1 >= len(loc) || loc[2*i] < 0 {
			continue
		}
		if g == nil {
			g = map[string]string{}
		}
		g[name] = string(text[loc[2*i]:loc[2*i+1]])
	}
	return g
}

// dropFallbacks leaves out the catch-all hits of a line another rule matched. Across lines,
// a catch-all exception yields to a specific line of its own failure in correlation
// (failureUnit).
func dropFallbacks(hits []Hit) []Hit {
	specific := false
	for _, h := range hits {
		if !h.Rule.Role.Fallback() {
			specific = true
		}
	}
	if !specific {
		return hits
	}
	out := hits[:0]
	for _, h := range hits {
		if !h.Rule.Role.Fallback() {
			out = append(out, h)
		}
	}
	return out
}
