package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gcSettings reads GOGC and the memory limit as the runtime has them (runtime/metrics: setting
// them to read them back would race with deferGC's cleanup).
func gcSettings() (percent, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// TestDeferGCUntilTheBound: a search runs no collection until its memory reaches the bound,
// then the collector is as it was (GOGC, the memory limit); a GOGC or GOMEMLIMIT the user set
// is left alone.
func TestDeferGCUntilTheBound(t *testing.T) {
	settled := func() bool { runtime.GC(); return !gcDeferred.Load() } // an earlier search's
	require.Eventually(t, settled, 5*time.Second, 10*time.Millisecond)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent, limit := gcSettings()
	deferGC(1 << 40)
	p, l := gcSettings()
	require.Equal(t, int64(-1), p, "no collection")
	require.Equal(t, int64(1<<40), l, "until the bound")
	require.Eventually(t, func() bool {
		runtime.GC()
		p, l := gcSettings()
		return p == percent && l == limit && !gcDeferred.Load()
	}, 5*time.Second, 10*time.Millisecond, "as it was after the first collection")

	t.Setenv("GOGC", "100")
	deferGC(1 << 40)
	p, l = gcSettings()
	require.Equal(t, percent, p, "the user's GOGC")
	require.Equal(t, limit, l)
	require.False(t, gcDeferred.Load())
}
