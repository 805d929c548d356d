package logscan

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/coroner-dev/coroner/bundle"
)

// metricsLog is a training log as the repetitive benchmark bundle has it: kubelet timestamps
// of nine fraction digits, a launcher's rank prefix and a step line of a dozen numbers.
func metricsLog(n int) []byte {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "2026-03-14T08:%02d:%02d.%09dZ [rank37]: step %d | loss %.4f | lr 3.00e-04 | grad_norm %.3f | tokens/s %d | mem %.1fGiB\n",
			i/3600%60, i/60%60, (i*192747263)%1_000_000_000, i, 3.1-float64(i%1000)/10000, 0.6+float64(i%900)/1000, 40000+i*37%2000, 60+float64(i%90)/10)
	}
	return []byte(b.String())
}

// BenchmarkScanRepetitive is the scan alone (time, shape, values) of lines of one shape, per
// byte: what every visitor of a repetitive log pays before it looks at a line.
func BenchmarkScanRepetitive(b *testing.B) {
	benchScan(b, metricsLog(20000))
}

// benchScan scans log as a scan worker does, with no visitor, per byte.
func benchScan(b *testing.B, log []byte) {
	fsys := fstest.MapFS{"a.log": {Data: log}}
	lr := NewLineReader(nil, 0, 1<<20, readBuffer)
	shapes := newScanShaper(nil)
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		if _, err := scan(b.Context(), fsys, bundle.LogStream{Path: "a.log"}, AllOptions{MaxLine: 1 << 20}, nil, lr, shapes); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanDistinct is the scan alone of lines that never repeat, half of them with
// non-ASCII words (a tokenizer's pieces) that need no cleaning.
func BenchmarkScanDistinct(b *testing.B) {
	syl := []string{"pe", "da", "mu", "xi", "lo", "ri", "ge", "ba", "zu", "ha", "cu", "vi", "na", "to", "se", "ka"}
	var log strings.Builder
	x := uint32(1)
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&log, "2026-03-14T08:13:%02d.%09dZ [rank37]: ", i%60, (i*830368300)%1_000_000_000)
		tokens := i%2 == 0
		if tokens {
			log.WriteString("tokens: [")
		} else {
			log.WriteString("generation:")
		}
		for w := 0; w < 16; w++ {
			if tokens {
				log.WriteString("'▁")
			} else {
				log.WriteByte(' ')
			}
			for s := 0; s < 2+int(x%3); s++ {
				x = x*1664525 + 1013904223
				log.WriteString(syl[x>>28])
			}
			if tokens {
				log.WriteString("', ")
			}
		}
		log.WriteString("\n")
	}
	benchScan(b, []byte(log.String()))
}
