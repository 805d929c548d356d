package literal

import (
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRequired(t *testing.T) {
	tests := []struct {
		pattern string
		want    [][]string
	}{
		{`CUDA out of memory\. Tried to allocate`, [][]string{{"cuda out of memory. tried to allocate"}}},
		{`(?i)no space left on device`, [][]string{{"no space left on device"}}},
		{`No module named '(?P<module>[\w.]+)'`, [][]string{{"no module named '"}}},
		{`(?:ModuleNotFoundError|ImportError): x`, [][]string{{"importerror", "modulenotfounderror"}, {": x"}}},
		{`\bloss[=: ]+nan\b`, [][]string{{"loss"}, {"nan"}}},
		{`\b[Ll]oss: (nan|inf)`, [][]string{{"loss: "}, {"inf", "nan"}}},
		{`Xid \((?P<pci>[^)]*)\): (?P<code>\d+)`, [][]string{{"xid ("}, {"): "}}},
		{`^\d+$`, nil},
		{`a|bc`, nil}, // "a" is too short to be worth it
		{`(?i)größe`, nil},
		{`(unclosed`, nil},
	}
	for _, tt := range tests {
		got := Required(tt.pattern)
		for _, set := range got {
			sort.Strings(set)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Required(%q) (-want +got):\n%s", tt.pattern, diff)
		}
	}
}

// TestRequiredNeverMissesAMatch checks the prefilter's promise on rule-like patterns and
// lines: whenever the regexp matches, every required set has a literal the Matcher finds.
func TestRequiredNeverMissesAMatch(t *testing.T) {
	patterns := []string{
		`CUDA out of memory\. Tried to allocate`, `(?i)no space left on device`, `\bloss[=: ]+nan\b`,
		`Watchdog caught collective operation timeout`, `(?:ModuleNotFoundError|ImportError): No module named`,
		`exited on signal (?P<sig>\d+)`, `\b[Ll]oss: (nan|inf)`,
	}
	lines := []string{
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
		"OSError: [Errno 28] No Space Left On Device",
		"step 12 | LOSS: nan | lr 1e-4", "step 12 | loss 2.3", "step 13 | Loss: inf",
		"[rank3]:[E314 10:12:04.182731 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(...)",
		"ModuleNotFoundError: No module named 'flash_attn'",
		"mpirun noticed that process rank 2 with PID 0 on node w-1 exited on signal 9 (Killed).",
		"", "nothing to see here",
	}
	var lits []string
	type ref struct{ pat, set int }
	var owner []ref
	for pi, p := range patterns {
		for si, set := range Required(p) {
			for _, l := range set {
				lits = append(lits, l)
				owner = append(owner, ref{pi, si})
			}
		}
	}
	m := NewMatcher(lits)
	for _, line := range lines {
		seen := map[ref]bool{}
		for _, h := range Append(m, line, nil) {
			seen[owner[h.ID]] = true
		}
		for pi, p := range patterns {
			if !regexp.MustCompile(p).MatchString(line) {
				continue
			}
			for si := range Required(p) {
				if !seen[ref{pi, si}] {
					t.Errorf("pattern %q matches %q but the matcher found no literal of set %v", p, line, Required(p)[si])
				}
			}
		}
	}
}

func TestMatcherFindsOverlaps(t *testing.T) {
	m := NewMatcher([]string{"he", "she", "his", "hers"})
	got := Append(m, strings.ToUpper("ushers"), nil)
	want := []Hit{{ID: 1, End: 4}, {ID: 0, End: 4}, {ID: 3, End: 6}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := Append(m, []byte("nothing to say"), nil); len(got) != 0 {
		t.Errorf("found %v in a text without literals", got)
	}
}

// naive finds every occurrence of every literal by comparing at each offset, folding ASCII
// case, in the order Append promises: by end offset, then longest first.
func naive(lits []string, text string) []Hit {
	var out []Hit
	lower := Lower(text)
	for end := 1; end <= len(text); end++ {
		var at []Hit
		for id, l := range lits {
			l = Lower(l)
			if l != "" && len(l) <= end && lower[end-len(l):end] == l {
				at = append(at, Hit{ID: int32(id), End: end})
			}
		}
		sort.SliceStable(at, func(i, j int) bool { return len(lits[at[i].ID]) > len(lits[at[j].ID]) })
		out = append(out, at...)
	}
	return out
}

// TestMatcherAgreesWithNaiveSearch compares the automaton with a search at every offset on
// random literals and texts over a small alphabet, where overlaps and shared prefixes and
// suffixes are common, for strings and byte slices alike.
func TestMatcherAgreesWithNaiveSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abAB:x\xff"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := 0; round < 300; round++ {
		// Half the rounds have literals of 3 bytes or more, which the matcher skips to by
		// triples rather than pairs.
		shortest := 1 + 2*(round%2)
		lits := make([]string, 1+rng.IntN(8))
		for i := range lits {
			lits[i] = word(shortest + rng.IntN(4))
		}
		m := NewMatcher(lits)
		for k := 0; k < 20; k++ {
			text := word(rng.IntN(40))
			want := naive(lits, text)
			// Duplicate literals end at the same place with the same length: compare as sets
			// within one end offset by sorting on id too.
			norm := func(hs []Hit) []Hit {
				hs = append([]Hit(nil), hs...)
				sort.SliceStable(hs, func(i, j int) bool {
					if hs[i].End != hs[j].End {
						return hs[i].End < hs[j].End
					}
					return hs[i].ID < hs[j].ID
				})
				return hs
			}
			if diff := cmp.Diff(norm(want), norm(Append(m, text, nil))); diff != "" {
				t.Fatalf("literals %q, text %q (-want +got):\n%s", lits, text, diff)
			}
			if diff := cmp.Diff(norm(want), norm(Append(m, []byte(text), nil))); diff != "" {
				t.Fatalf("[]byte: literals %q, text %q (-want +got):\n%s", lits, text, diff)
			}
		}
	}
}

// TestAnyAgreesWithNaiveSearch: Any finds a literal exactly when the search at every offset
// does, with literals of 3 bytes or more (skipped to by triples) and shorter ones, near the
// text's end too.
func TestAnyAgreesWithNaiveSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = "abAB:x\xff\x00Zz[@"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := 0; round < 2000; round++ {
		lits := make([]string, 1+rng.IntN(12))
		for i := range lits {
			lits[i] = word(3 + rng.IntN(6))
			if round%3 == 0 {
				lits[i] = word(1 + rng.IntN(11))
			}
		}
		m := NewMatcher(lits)
		for k := 0; k < 20; k++ {
			text := word(rng.IntN(24))
			if want := len(naive(lits, text)) > 0; Any(m, text) != want || Any(m, []byte(text)) != want {
				t.Fatalf("literals %q, text %q: Any says %v", lits, text, !want)
			}
		}
	}
}

func TestMatcherWithoutLiterals(t *testing.T) {
	for _, lits := range [][]string{nil, {""}} {
		m := NewMatcher(lits)
		if got := Append(m, "anything at all", nil); len(got) != 0 {
			t.Errorf("NewMatcher(%q) found %v", lits, got)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	var lits []string
	for _, p := range []string{`CUDA out of memory\. Tried to allocate`, `(?i)no space left on device`, `\bloss[=: ]+nan\b`,
		`Watchdog caught collective operation timeout`, `(?:ModuleNotFoundError|ImportError): No module named`} {
		for _, set := range Required(p) {
			lits = append(lits, set...)
		}
	}
	m := NewMatcher(lits)
	line := []byte("2026-03-14T10:00:01.123456789Z [rank3] step=1200 loss=2.3456 lr=1.0e-04 grad_norm=0.87 tokens_per_sec=31000")
	b.SetBytes(int64(len(line)))
	var hits []Hit
	for range b.N {
		hits = Append(m, line, hits[:0])
	}
}

func TestRarest(t *testing.T) {
	tests := []struct {
		sets [][]string
		want int
	}{
		{[][]string{{"rank"}, {"failed to pass monitored barrier"}}, 1},
		{[][]string{{"failed to pull image \""}, {"\": "}}, 0},
		{[][]string{{"nan", "inf"}, {"found "}, {"in local grad norm"}}, 2},
		{[][]string{{"abc"}, {"abc"}}, 0}, // a tie: the first
		{nil, -1},
	}
	for _, tt := range tests {
		if got := Rarest(tt.sets); got != tt.want {
			t.Errorf("Rarest(%q) = %d, want %d", tt.sets, got, tt.want)
		}
	}
}
