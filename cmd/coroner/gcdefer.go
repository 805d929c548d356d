package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// searchGCBound is the memory a search allocates before its first collection. A warm search
// keeps most of what it allocates (the walk's signatures, the index's heads and streams): at
// 16,384 ranks about 67 MB, of which the collector, its goal doubling from 4 MB, marked what
// was live eight times over (5-9% of the search's CPU, `perf record -g`). Up to the bound none
// runs; past it the collector works as the environment had it, so the heap is at most the
// bound or what GOGC would allow, whichever is more: a search whose live heap is under half
// the bound peaks at the bound rather than twice its live heap (128 MiB: far under the
// search's 300 MB target).
const searchGCBound = 128 << 20

// gcDeferred is set while a deferGC waits for its first collection (tests run many searches in
// one process: a second deferGC then would take "off" for the setting to go back to).
var gcDeferred atomic.Bool

// deferGC turns the collector off until the process's memory reaches bound (a memory limit)
// and puts GOGC and the memory limit back after that first collection. A GOGC or GOMEMLIMIT
// the user set is left as it is.
func deferGC(bound int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" || !gcDeferred.CompareAndSwap(false, true) {
		return
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(bound)
	// A cleanup runs after the collection that finds its object unreachable: the first one.
	// (Not a tiny allocation: those may share a block with live objects and never be freed.)
	runtime.AddCleanup(new([64]byte), func(struct{}) {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(percent)
		gcDeferred.Store(false)
	}, struct{}{})
}
