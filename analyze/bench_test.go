package analyze

import (
	"os"
	"testing"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/parse"
)

// BenchmarkRun analyses the bundle named by $CORONER_BENCH_BUNDLE (e.g. one that make bench
// generated under .cache/bench), building a private index each time, as a first analyze does:
//
//	CORONER_BENCH_BUNDLE=$PWD/.cache/bench/bundle-64-256MiB go test ./analyze -run '^$' -bench Run -cpuprofile cpu.prof
func BenchmarkRun(b *testing.B) {
	dir := os.Getenv("CORONER_BENCH_BUNDLE")
	if dir == "" {
		b.Skip("CORONER_BENCH_BUNDLE names no bundle")
	}
	rules, err := DefaultRules()
	if err != nil {
		b.Fatal(err)
	}
	rs, err := NewRuleSet(rules)
	if err != nil {
		b.Fatal(err)
	}
	bu, err := bundle.Open(b.Context(), dir, bundle.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	defer bu.Close()
	m, err := parse.Load(bu)
	if err != nil {
		b.Fatal(err)
	}
	var bytes int64
	for _, ls := range m.Logs {
		if info, err := os.Stat(dir + "/" + ls.Path); err == nil {
			bytes += info.Size()
		}
	}
	b.SetBytes(bytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, ix, err := analyzeModel(b.Context(), m, rs, index.BuildOptions{}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		ix.Close()
	}
}
