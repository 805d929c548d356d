package diagnose

import (
	"os"
	"testing"
)

// BenchmarkRun is the whole pipeline of `coroner analyze --no-cache` but the writing of the
// report on the bundle named by $CORONER_BENCH_BUNDLE (make bench generates them under
// .cache/bench): open, parse, scan and index, analyze, build and redact the report.
//
//	CORONER_BENCH_BUNDLE=$PWD/.cache/bench/... go test ./diagnose -run '^$' -bench Run -benchtime 1x -cpuprofile cpu.prof
func BenchmarkRun(b *testing.B) {
	dir := os.Getenv("CORONER_BENCH_BUNDLE")
	if dir == "" {
		b.Skip("CORONER_BENCH_BUNDLE names no bundle")
	}
	opts := DefaultOptions()
	for b.Loop() {
		d, err := Run(b.Context(), Input{Paths: []string{dir}}, opts)
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}
