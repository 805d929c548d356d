package index

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/coroner-dev/coroner/logscan"
)

// TestMayHoldFolded: the quick look for a word's letters in any case never says no to a line
// whose folded words hold it (the Kelvin sign and dotted I fold into ASCII too), and says no
// when the line's folded text does not hold it.
func TestMayHoldFolded(t *testing.T) {
	alphabet := []string{"a", "B", "i", "K", "k", "I", "_", "1", " ", ".", "\u212a", "\u0130", "é", "\u2581", "@", "[", "Z", "`", "{", "\xaa", "\xb0"}
	words := []string{"a", "ik", "ki", "bak", "k1_", "i", "ab", "b_a", "kik", "z"}
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		var sb strings.Builder
		for n := rnd.IntN(30); n > 0; n-- {
			sb.WriteString(alphabet[rnd.IntN(len(alphabet))])
		}
		text := sb.String()
		folded := string(logscan.Fold(nil, []byte(text)))
		for _, w := range words {
			got := mayHoldFolded([]byte(text), w)
			if strings.Contains(folded, w) && !got {
				t.Fatalf("%q (folded %q): no for %q", text, folded, w)
			}
			if !strings.Contains(folded, w) && got && !strings.ContainsAny(text, "\u212a\u0130") {
				t.Fatalf("%q (folded %q): maybe for %q", text, folded, w)
			}
		}
	}
}

func TestHasUpperASCII(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 11; pos++ {
			text := []byte(strings.Repeat("a", 11))
			text[pos] = byte(c)
			want := c >= 'A' && c <= 'Z'
			if hasUpperASCII(text) != want {
				t.Fatalf("%q: %v", text, !want)
			}
		}
	}
}
