package analyze

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPeriodIsTheMedianOfTheLastGaps: a process that logged progress every 10 s for a while
// and then every second has a period of a second once most of the gaps kept (the last
// maxIntervals) are of a second, however many lines came before.
func TestPeriodIsTheMedianOfTheLastGaps(t *testing.T) {
	p := newProcState("logs/w0", "rank 0", "w0", "train", 0)
	at := int64(0)
	line := 0
	see := func(gap time.Duration) {
		at += int64(gap)
		line++
		p.sawProgress(mark{line: line, time: at, step: int64(line)}, []byte("step"))
	}
	see(0)
	for range 200 {
		see(10 * time.Second)
	}
	require.Equal(t, 10*time.Second, p.period())
	for range 150 { // the last 256 gaps: 106 of 10 s, 150 of 1 s
		see(time.Second)
	}
	require.Equal(t, time.Second, p.period())
	require.Len(t, p.intervals, maxIntervals)
}
