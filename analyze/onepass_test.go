package analyze

import (
	"slices"
	"testing"

	"github.com/coroner-dev/coroner/internal/literal"
	"github.com/coroner-dev/coroner/logscan"
)

// alone are matchers of the rules' literals alone and of the progress literals alone.
type alone struct{ rules, progress *literal.Matcher }

func aloneOf(rs *RuleSet) alone { return alone{literal.NewMatcher(rs.lits), rs.progAC} }

// candidates are the patterns (pats, whose sets litPats numbers) whose required sets hits
// all hold, in order.
func candidates(pats []pattern, litPats [][]patSet, hits []literal.Hit) []int32 {
	seen := map[int32]uint8{}
	for _, h := range hits {
		for _, ps := range litPats[h.ID] {
			seen[ps.pat] |= ps.bit
		}
	}
	var out []int32
	for p, bits := range seen {
		if bits == pats[p].full {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// checkOnePass: the one pass over the rules' and the progress literals finds, for each, what
// its own pass finds, and Match and matchProgress after it answer as they do alone.
func checkOnePass(t *testing.T, rs *RuleSet, a alone, sc *Scratch, raw []byte) {
	t.Helper()
	line := logscan.Clean(nil, raw)
	wantHits := literal.Append(a.rules, line, nil)
	wantProg := literal.Append(a.progress, line, nil)
	alone := rs.NewScratch()
	wantOK, wantStep := rs.matchProgress(line, alone)
	wantMatch := rs.Match(line, alone)

	sc.both, sc.found = true, false
	rs.progressLiterals(line, sc)
	if sc.both || !sc.found {
		t.Fatalf("%q: the one pass left both %v, found %v", line, sc.both, sc.found)
	}
	// The literals are read only past the gate (RuleSet.gate): what they must give is the
	// same candidates.
	if !slices.Equal(candidates(rs.pats, rs.litPats, wantHits), candidates(rs.pats, rs.litPats, sc.hits)) ||
		!slices.Equal(candidates(rs.progPats, rs.progLitPats, wantProg), candidates(rs.progPats, rs.progLitPats, sc.progHits)) {
		t.Fatalf("%q: one pass found rules' %v and progress %v, each alone %v and %v", line, sc.hits, sc.progHits, wantHits, wantProg)
	}
	sc.both, sc.found = true, false
	ok, step := rs.matchProgress(line, sc)
	got := rs.Match(line, sc)
	if ok != wantOK || step != wantStep {
		t.Fatalf("%q: progress %v step %d in one pass, %v %d alone", line, ok, step, wantOK, wantStep)
	}
	if sc.found {
		t.Fatalf("%q: Match left found set", line)
	}
	if len(got) != len(wantMatch) {
		t.Fatalf("%q: %d hits in one pass, %d alone", line, len(got), len(wantMatch))
	}
	for i := range got {
		if got[i].Rule != wantMatch[i].Rule {
			t.Fatalf("%q: hit %d is %s in one pass, %s alone", line, i, got[i].Rule.ID, wantMatch[i].Rule.ID)
		}
	}
}

// onePassSeeds are lines of the samples' logs, every rule's examples and lines of mixed case
// with literals of both sets.
func onePassSeeds(t testing.TB, rs *RuleSet) []string {
	lines := sampleLines(t, 1)
	for _, r := range rs.Rules() {
		for _, ex := range r.Examples.Match {
			lines = append(lines, ex.Text)
		}
		for _, ex := range r.Examples.NotMatch {
			lines = append(lines, ex.Text)
		}
	}
	for _, r := range rs.progress {
		for _, ex := range r.Examples.Match {
			lines = append(lines, ex.Text)
		}
	}
	return append(lines, "", "s", "STEP 12 | LOSS 3.2 | CUDA OUT OF MEMORY", "[rank3]: step 7 loss nan NCCL WARN Watchdog caught collective operation timeout")
}

func TestOnePassFindsWhatEachPassFinds(t *testing.T) {
	rs := defaultRuleSet(t)
	sc, a := rs.NewScratch(), aloneOf(rs)
	seeds := onePassSeeds(t, rs)
	if len(seeds) < 1000 {
		t.Fatalf("only %d lines to check", len(seeds))
	}
	for _, l := range seeds {
		checkOnePass(t, rs, a, sc, []byte(l))
	}
}

// FuzzOnePass: the one pass over both sets of literals agrees with each set's own pass.
func FuzzOnePass(f *testing.F) {
	rs := defaultRuleSet(f)
	for _, l := range onePassSeeds(f, rs) {
		f.Add([]byte(l))
	}
	sc, a := rs.NewScratch(), aloneOf(rs)
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) > 4096 {
			return
		}
		checkOnePass(t, rs, a, sc, line)
	})
}
