package logscan

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/literal"
	"github.com/coroner-dev/coroner/internal/samplegen"
)

// tricky lines for the template matcher: words that change kind with one character, cleaning,
// long numbers, non-ASCII, lines that end or start in a variable word.
var trickyLines = []string{
	"[rank5]: step 12 | loss 3.2452 | lr 3.00e-04",
	"[rank5a]: step 12 | loss 3.2452 | lr 3.00e-04",
	"[rank51]: step 0x1f | loss 3.2452 | lr 3.00e-04",
	"[rank5]: step 1a2b | loss 3.2452 | lr 3.00e-04",
	"[rank5]: step 12 | loss 3.2452 | lr 3.00g-04",
	"[rank5]: step 12 | loss 3.2452 | lr 3.00e-04x",
	"[rank5]: step 12 | loss 3.2452 | lr 3.00e-04 ",
	"[rank5]: step 12 | loss 3.2452 | lr 3.00e-04\x1b[0m",
	"[rank5]: step 12 | loss 3.2452\r | lr 3.00e-04",
	"[rank5]: step 12345678901234567890 | loss 3.2452 | lr 3.00e-04",
	"[rank5]: step 1é | loss 3.2452 | lr 3.00e-04",
	"[rank5]: step 1\xff | loss 3.2452 | lr 3.00e-04",
	"[rank5]: step 1\x00 | loss 3.2452 | lr 3.00e-04",
	"[rank5]: step _1 | loss 3.2452 | lr 3.00e-04",
	"[rank5]: step 1_2 | loss 3.2452 | lr 3.00e-04",
	"[rank5]: step abc | loss 3.2452 | lr 3.00e-04",
	"[rank]: step 12 | loss 3.2452 | lr 3.00e-04",
	"12", "a", "", "1 2 3", "1 2 3 4", "x1", "1x", "x1y", "0x", "0xg1", "ab12cd", "ab12cz", "step_0002000",
	"step_0002000x", "mem 63.5GiB", "mem 63.5GiBs", "mem 63.5GB", "mem 63.55GiB", "id 55d5c1a0 ok", "id 55d5c1a0g ok",
	"id 55d5c1a0 ok.", "é 12", "12 é", "exit code 137", "exit code 1a37", "exit code 13 7", "ÿ\xff 12",
}

// corpus returns the cleaned lines of the samples' logs, a generated bundle's and tricky ones.
func corpus(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	add := func(dir string) {
		var files []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".log") {
				files = append(files, p)
			}
			return nil
		})
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for n := 0; sc.Scan() && n < 3000; n++ {
				_, text, _ := SplitTimestamp(sc.Bytes())
				out = append(out, append([]byte(nil), text...))
			}
		}
	}
	add("../samples")
	gen := filepath.Join(t.TempDir(), "gen")
	require.NoError(t, samplegen.Generate(gen, 2, 1<<20, 1))
	add(gen)
	for _, l := range trickyLines {
		out = append(out, []byte(l))
	}
	return out
}

// fullTokens is what tokenize (after cleaning, as the scan does) gives for a line.
type fullTokens struct {
	text  string
	key   string
	vals  []Var
	masks []uint64
}

func tokenizeFully(b *shaper, line []byte) fullTokens {
	text := line
	if b.tokenize(text) {
		text = Clean(nil, text)
		b.tokenize(text)
	}
	return fullTokens{string(text), string(b.key), append([]Var{}, b.vals...), append([]uint64{}, b.masks...)}
}

// TestMatchAgreesWithTokenize: a line that matches a shape is a line tokenize gives that
// shape's key, with the same values; every shape is tried on every line.
func TestMatchAgreesWithTokenize(t *testing.T) {
	lines := corpus(t)
	b := newShaper()
	full := make([]fullTokens, len(lines))
	var shapes []*Shape
	for i, l := range lines {
		full[i] = tokenizeFully(b, l)
		if b.byKey[full[i].key] == nil {
			if sh := b.newShape(); sh != nil {
				shapes = append(shapes, sh)
			}
		}
	}
	require.Greater(t, len(shapes), 100)
	// Each line with the next one past its length in its array: match reads a part's words
	// from there (see partAt), which must not change what matches.
	roomy := make([][]byte, len(lines))
	for i, l := range lines {
		roomy[i] = append(append([]byte{}, l...), lines[(i+1)%len(lines)]...)[:len(l)]
	}
	matched := 0
	for _, sh := range shapes {
		if !sh.ascii {
			continue
		}
		cuts := 0
		for i, l := range lines {
			ok := b.match(sh, l[:len(l):len(l)])
			if ok != b.match(sh, roomy[i]) {
				t.Fatalf("line %q with the next line past it: match %v, without %v", l, !ok, ok)
			}
			if !ok {
				continue
			}
			matched++
			// Cut short with the rest of the line past its length, a line matches as it would
			// with nothing past it.
			for k := len(l) - 1; cuts < 3 && k > len(l)-24 && k > 0; k-- {
				require.Equal(t, b.match(sh, l[:k:k]), b.match(sh, l[:k]), "line %q cut at %d", l, k)
			}
			cuts++
			require.True(t, b.match(sh, l))
			f := full[i]
			require.Equal(t, f.key, sh.Key, "line %q matched the shape of another", l)
			require.Equal(t, f.text, string(l), "line %q matched but needs cleaning", l)
			require.Equal(t, f.vals, append([]Var{}, b.vals...), "line %q", l)
			require.Equal(t, f.masks, append([]uint64{}, b.masks...), "line %q", l)
		}
	}
	require.Greater(t, matched, len(lines)/2)
}

// TestLineFindsTheShapeTokenizeWould: the scan gives each line of a log the shape tokenize
// and the key lookup give it, with the same character classes.
func TestLineFindsTheShapeTokenizeWould(t *testing.T) {
	lines := corpus(t)
	b, ref := newShaper(), newShaper()
	var clean []byte
	for _, l := range lines {
		want := tokenizeFully(ref, l)
		text := b.line(l, &clean)
		require.Equal(t, want.text, string(text))
		require.NotNil(t, b.cur, "line %q has no shape", l)
		require.Equal(t, want.key, b.cur.Key, "line %q", l)
		require.Equal(t, want.masks, append([]uint64{}, b.masks...), "line %q", l)
	}
}

func FuzzMatch(f *testing.F) {
	for i := 0; i+1 < len(trickyLines); i++ {
		f.Add(trickyLines[i], trickyLines[i+1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		sb := newShaper()
		tokenizeFully(sb, []byte(a))
		sh := sb.newShape()
		if sh == nil || !sh.ascii {
			return
		}
		// b's array goes on with a's bytes, which match may read (see partAt).
		roomy := []byte(b + a)[:len(b)]
		if ok := sb.match(sh, []byte(b)); ok != sb.match(sh, roomy) {
			t.Fatalf("%q matched the template of %q with %q past it: %v, without: %v", b, a, a, !ok, ok)
		} else if !ok {
			return
		}
		vals, masks := append([]Var(nil), sb.vals...), append([]uint64(nil), sb.masks...)
		fb := tokenizeFully(sb, []byte(b))
		if fb.key != sh.Key || fb.text != b || fmt.Sprint(fb.vals) != fmt.Sprint(vals) || fmt.Sprint(fb.masks) != fmt.Sprint(masks) {
			t.Fatalf("%q matched the template of %q: tokenize gives %q %v %v, match %v %v", b, a, fb.key, fb.vals, fb.masks, vals, masks)
		}
	})
}

// TestShapeLiteral compares Literal with lines made from shapes: whenever a literal occurs in
// a line, Literal said it always does or the line meets one of its needs.
func TestShapeLiteral(t *testing.T) {
	shapes := []string{
		"[rank\x00d]: step \x00w | loss \x00w.\x00w | lr \x00w.\x00w-\x00w | tokens/s \x00w | mem \x00w.\x00dGiB",
		"process exited with exit code \x00w",
		"Xid \x00w: \x00w",
		"\x00w",
		"\x00w \x00w",
		"rank\x00d",
		"NCCL WARN \x00w:\x00w NET/IB : Got completion",
		"",
	}
	lits := []string{"exit code 1", "code 137", "137", "xid 79", "d: 7", "nccl", "oom", "0x", "e-0", "rank1", "k1]",
		"step 4", "4 | l", "tokens/s 1", "gib", "5gib", "abc", ": 1", "1: 2", " 1 ", "1 2", "_", "a1b", "ab", "nan", "é"}
	rng := rand.New(rand.NewSource(1))
	word := func(kind byte) string {
		const digits, chars = "0123456789", "0123456789abcdefxyzABCXé_"
		for {
			n := 1 + rng.Intn(5)
			var sb strings.Builder
			for i := 0; i < n; i++ {
				if kind == VarDigits {
					sb.WriteByte(digits[rng.Intn(len(digits))])
				} else if c := chars[rng.Intn(len(chars))]; c < 0x80 {
					sb.WriteByte(c)
				} else {
					sb.WriteString("é")
				}
			}
			w := sb.String()
			if k, _, _ := WordShape([]byte(w)); kind == VarDigits || k == VarWord {
				return w
			}
		}
	}
	for _, key := range shapes {
		sh := newShape(0, key)
		for _, lit := range lits {
			always, needs := sh.Literal(lit)
			for i := 0; i < 3000; i++ {
				var sb strings.Builder
				classes := make([]uint64, len(sh.Vars))
				sb.WriteString(sh.Parts[0])
				for v, kind := range sh.Vars {
					w := word(kind)
					classes[v] = Classes([]byte(w))
					sb.WriteString(w)
					sb.WriteString(sh.Parts[v+1])
				}
				line := sb.String()
				if !strings.Contains(literal.Lower(line), lit) {
					continue
				}
				met := always
				for _, n := range needs {
					met = met || classes[n.Var]&n.Classes == n.Classes
				}
				require.True(t, met, "%q holds %q, but Literal says %v %v", line, lit, always, needs)
			}
		}
	}
	// And it rules lines out: digits cannot make "nan" or "oom", and "exit code" is always there.
	sh := newShape(0, "[rank\x00d]: step \x00w | loss \x00w.\x00w")
	always, needs := sh.Literal("nan")
	require.False(t, always)
	for _, n := range needs {
		require.NotZero(t, n.Classes&^maskDigit, "digits alone cannot spell nan")
	}
	always, _ = newShape(0, "exit code \x00w").Literal("exit code")
	require.True(t, always)
	always, needs = newShape(0, "exit code \x00w").Literal("code 137")
	require.False(t, always)
	require.Equal(t, []Need{{Var: 0, Classes: maskDigit}}, needs)
	always, needs = newShape(0, "loss \x00w").Literal("loss: nan")
	require.False(t, always)
	require.Empty(t, needs)
}

// TestOnceSetIsASet: the shaper's set of hashes seen once answers as a Go map does, through
// additions, removals that move entries back over a wrapped probe, growth, the hash 0, and
// emptying; hashes drawn from a small range collide in their home slots.
func TestOnceSetIsASet(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, span := range []int64{3, 50, 5000, 1 << 40} {
		var s onceSet
		want := map[uint64]bool{}
		for step := range 200000 {
			h := uint64(rng.Int63n(span))
			if rng.Intn(4) == 0 {
				h = h<<10 | uint64(onceMinSlots-1) // the last home slots: probes wrap
			}
			if got := s.take(h); got != want[h] {
				t.Fatalf("span %d, step %d: take(%#x) = %v, want %v", span, step, h, got, want[h])
			}
			if want[h] {
				delete(want, h)
			} else {
				s.add(h)
				want[h] = true
			}
			if s.n != len(want) {
				t.Fatalf("span %d, step %d: %d entries, want %d", span, step, s.n, len(want))
			}
			switch rng.Intn(20000) {
			case 0:
				s.empty()
				clear(want)
			case 1:
				s.reset()
				clear(want)
			}
		}
	}
}
