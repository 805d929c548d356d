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
	alphabet := []string{"a", "B", "i", "K", "k", "I", "_", "1", " ", ".", "\u212a", "\u0130", "é", "\u2581"}
	words := []string{"a", "ik", "ki", "bak", "k1_", "i", "ab", "b_a", "kik"}
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 50000 {
		var sb strings.Builder
		for n := rnd.IntN(12); n > 0; n-- {
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
