package search

import (
	"os"
	"strings"
	"testing"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
)

// BenchmarkSearch is a warm `coroner search` of the bundle named by $CORONER_BENCH_BUNDLE
// (make bench generates them under .cache/bench), with a query of $CORONER_BENCH_QUERY
// (default "NCCL AND timeout"): the index is built into a cache once, before the timer, and
// each iteration opens the bundle against that cache, searches and closes it, as the command
// does. $CORONER_BENCH_CACHE names a cache directory to keep between runs (a bundle of 200,000
// files takes minutes to index); $CORONER_BENCH_VERSION, the version of the coroner that built
// it, when `coroner analyze --cache-dir` did (its version is in the cache's stat/*.json).
//
//	CORONER_BENCH_BUNDLE=$PWD/.cache/bench/... go test ./search -run '^$' -bench Search -benchtime 3x -cpuprofile cpu.prof
func BenchmarkSearch(b *testing.B) {
	dir := os.Getenv("CORONER_BENCH_BUNDLE")
	if dir == "" {
		b.Skip("CORONER_BENCH_BUNDLE names no bundle")
	}
	query := os.Getenv("CORONER_BENCH_QUERY")
	if query == "" {
		query = "NCCL AND timeout"
	}
	cache := os.Getenv("CORONER_BENCH_CACHE") // a cache kept between runs: no build before the timer
	if cache == "" {
		cache = b.TempDir()
	}
	version := os.Getenv("CORONER_BENCH_VERSION") // the version of the coroner that built the kept cache
	if version == "" {
		version = "bench"
	}
	opts := Options{Cache: &index.Cache{Dir: cache}, Version: version, Limits: bundle.DefaultLimits()}
	opts.Limits.MaxEntries = 1_000_000
	search := func() {
		src, err := Open(b.Context(), []string{dir}, strings.NewReader(""), opts)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := src.Search(b.Context(), Query{Query: query}); err != nil {
			b.Fatal(err)
		}
		if err := src.Close(); err != nil {
			b.Fatal(err)
		}
	}
	search() // builds the index
	for b.Loop() {
		search()
	}
}
