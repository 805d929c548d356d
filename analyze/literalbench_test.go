package analyze

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/coroner-dev/coroner/internal/literal"
)

// distinctText is lines of made-up words that never repeat, as the distinct-lines benchmark
// bundle has them (generated text, no log of the corpus): what the rules' literal pass reads
// when no shape spares it.
func distinctText(lines int) [][]byte {
	syl := []string{"pe", "da", "mu", "xi", "lo", "ri", "ge", "ba", "zu", "ha", "cu", "vi", "na", "to", "se", "ka"}
	out := make([][]byte, 0, lines)
	x := uint32(1)
	for i := 0; i < lines; i++ {
		var b bytes.Buffer
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, `{"time": "2026-03-14T08:27:%02d.%dZ", "level": "info", "event": "request", "request_id": "%016x", "user": "`, i%60, i*7919, uint64(x)*2654435761)
		case 1:
			b.WriteString("[rank37]: generation:")
		default:
			b.WriteString("[rank37]: tokens: [")
		}
		for w := 0; w < 12; w++ {
			b.WriteByte(' ')
			for s := 0; s < 2+int(x%3); s++ {
				x = x*1664525 + 1013904223
				b.WriteString(syl[x>>28])
			}
		}
		if i%3 == 0 {
			b.WriteString(`"}`)
		}
		out = append(out, b.Bytes())
	}
	return out
}

// distinctBench is the rule set and 4,000 lines that never repeat, their bytes set as b's.
func distinctBench(b *testing.B) (*RuleSet, [][]byte) {
	rs := defaultRuleSet(b)
	lines := distinctText(4000)
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	b.SetBytes(int64(n))
	return rs, lines
}

// BenchmarkLiteralsDistinct is the one literal pass of the rules and the progress patterns
// (RuleSet.ac) over lines that never repeat, per byte. Its automaton has 11,607 states of 63
// byte classes, 2.9 MB of transitions: the profile's time is mostly the loads of the steps
// past a literal's first bytes, outside the processor's nearer caches.
func BenchmarkLiteralsDistinct(b *testing.B) {
	rs, lines := distinctBench(b)
	var hits []literal.Hit
	for b.Loop() {
		for _, l := range lines {
			hits = literal.Append(rs.ac, l, hits[:0])
		}
	}
}

// BenchmarkGateDistinct is what the rules' literal pass costs those lines now: the gate
// (each pattern's rarest required set) and, on the lines where it finds one, ac.
func BenchmarkGateDistinct(b *testing.B) {
	rs, lines := distinctBench(b)
	var hits []literal.Hit
	for b.Loop() {
		for _, l := range lines {
			hits = literals(rs.gate, rs.ac, l, hits)
		}
	}
}
