package index

import (
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/coroner-dev/coroner/logscan"
)

// TestChunkFilterHoldsTheQueryItems: a chunk's filter holds, for every word of its lines, the
// items a search looks for (itemHash of the folded word, of its prefix, of the line's level
// and rank), and no other bits: addLine folds and hashes a word in one pass, which must agree
// with the search's Fold and itemHash on every kind of word.
func TestChunkFilterHoldsTheQueryItems(t *testing.T) {
	// Random lines of the bytes at the edges of every class a word's bytes are told apart
	// by, eight at a time or one at a time near a line's end.
	const edges = "/09:@AZ[^_`az{ \x7f\x80\xc3\xa9\xff-."
	rng := rand.New(rand.NewPCG(3, 4))
	var random []string
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = edges[rng.IntN(len(edges))]
		}
		random = append(random, string(b))
	}
	lines := []string{
		"[rank12]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
		"ERROR Ünïcödé ÄBC straße İstanbul ǅemal x\xffy café",
		"W1127 06:00:00.000000 1 watchdog.cpp:42] Traceback (most recent call last):",
		"a bb ccc dddd _under_score MiXeD123 0xDEADbeef",
		"",
		"[rank7] no colon but a rank",
		"abcdefg abcdefgh abcdefghi x1234567890abcdefXYZ_0123 SIXTEEN_BYTES_AB Ab",
		"tokens: ['▁Yovisena', '▁senoweha', '▁▁', 'ÉCOLE▁École', '▁x\xe2\x96', 'ẞ▁straße', '▁Ω▁Ω']",
	}
	lines = append(lines, random...)
	for _, line := range lines {
		var got chunkBuilder
		got.addLine([]byte(line))

		var want chunkBuilder
		level := ""
		var prev []byte
		words := logscan.Words([]byte(line))
		for n, w := range words {
			want.add(itemHash(0, []byte(w), nil))
			if len(w) > prefixLen {
				want.add(itemHash(itemPrefix, []byte(w[:prefixLen]), nil))
			}
			if n < levelWords && level == "" {
				level = levelWord(prev, []byte(w))
			}
			prev = nil
			if w == "traceback" {
				prev = tracebackWord
			}
		}
		if level != "" {
			want.add(itemHash(itemLevel, []byte(level), nil))
		}
		if r := logscan.RankPrefix([]byte(line)); r >= 0 {
			want.add(itemHash(itemRank, []byte(strconv.Itoa(r)), nil))
		}
		if got.filter != want.filter || got.fill != want.fill {
			t.Errorf("%q: addLine's filter (%d bits) differs from the query items' (%d bits)", line, got.fill, want.fill)
		}
		set := 0
		for _, x := range got.filter {
			for ; x != 0; x &= x - 1 {
				set++
			}
		}
		if set != got.fill {
			t.Errorf("%q: fill %d, %d bits set", line, got.fill, set)
		}
	}
}

// BenchmarkChunkAddLine is a chunk's filter made of lines that never repeat (no template
// takes them): every word and its prefix hashed, per byte.
func BenchmarkChunkAddLine(b *testing.B) {
	syl := []string{"pe", "da", "mu", "xi", "lo", "ri", "ge", "ba", "zu", "ha", "cu", "vi", "na", "to", "se", "ka"}
	var lines [][]byte
	size := 0
	x := uint32(1)
	for i := 0; i < 2000; i++ {
		line := []byte("[rank37]: generation:")
		for w := 0; w < 20; w++ {
			line = append(line, ' ')
			for s := 0; s < 2+int(x%3); s++ {
				x = x*1664525 + 1013904223
				line = append(line, syl[x>>28]...)
			}
		}
		lines = append(lines, line)
		size += len(line) + 1
	}
	b.SetBytes(int64(size))
	var c chunkBuilder
	for b.Loop() {
		for _, l := range lines {
			c.addLine(l)
		}
		c.filter, c.fill, c.bytes = [filterBits / 64]uint64{}, 0, 0
	}
}

// TestChunkFilterAddSetsTheQueryBits: add sets exactly the bits a search reads for the item
// (filterPos), all in one 64-bit word of the filter, and counts them.
func TestChunkFilterAddSetsTheQueryBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10000 {
		h := rng.Uint64()
		var c chunkBuilder
		c.add(h)
		var want [filterBits / 64]uint64
		for i := range filterK {
			p := filterPos(h, i)
			want[p/64] |= 1 << (p % 64)
			if p/64 != filterPos(h, 0)/64 {
				t.Fatalf("hash %#x: bit %d in word %d, bit 0 in word %d", h, i, p/64, filterPos(h, 0)/64)
			}
		}
		if c.filter != want {
			t.Fatalf("hash %#x: add set other bits than filterPos's", h)
		}
		if set := bits.OnesCount64(want[filterPos(h, 0)/64]); c.fill != set {
			t.Fatalf("hash %#x: fill %d, %d bits set", h, c.fill, set)
		}
	}
}

// TestMayBeLevelRulesOutOnlyWordsWithoutALevel: the one-load check addLine makes before
// levelWord is false only for words levelWord gives no level, whatever the word before.
func TestMayBeLevelRulesOutOnlyWordsWithoutALevel(t *testing.T) {
	words := []string{"", "e", "fatal", "critical", "panic", "error", "err", "warning", "warn", "info",
		"debug", "trace", "most", "e0314", "w1127", "i0101", "f9999", "e123", "e12345", "runtimeerror",
		"torch_outofmemoryerror", "valueexception", "userwarning", "futurewarning", "xerror", "errors"}
	const letters = "abcdefgilmnoprstuwx0123456789_"
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200000 {
		b := make([]byte, rng.IntN(17))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		words = append(words, string(b))
	}
	for _, w := range words {
		for _, prev := range [][]byte{nil, tracebackWord} {
			if level := levelWord(prev, []byte(w)); level != "" && !mayBeLevel([]byte(w)) {
				t.Errorf("mayBeLevel(%q) is false, levelWord gives %q", w, level)
			}
		}
	}
}
