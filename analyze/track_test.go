package analyze

import (
	"strconv"
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

// TestSettledProcessReadsAsBefore: once its log's scan has ended a process keeps its period,
// its last progress line and the ring of recent marks in a smaller form; everything analyze
// reads afterwards is what it read before, for a ring that fits the packed form and one whose
// lines or steps do not (a log past 4G lines, a step past 2^31).
func TestSettledProcessReadsAsBefore(t *testing.T) {
	type read struct {
		period time.Duration
		last   mark
		back   []mark
		text   string
	}
	readOf := func(p *procState) read {
		r := read{period: p.period(), last: p.lastProgress(), text: string(p.lastText)}
		for k := range maxPeriods + 1 {
			m, ok := p.progressBack(k)
			if !ok {
				break
			}
			r.back = append(r.back, m)
		}
		return r
	}
	for _, c := range []struct {
		name       string
		lines      int
		first      int
		step       int64
		wantPacked bool
	}{
		{"a few lines", 5, 1, 10, true},
		{"a full ring", 300, 1, 10, true},
		{"steps past 2^31", 100, 1, 1 << 40, false},
		{"lines past 4G", 100, 1 << 33, 10, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProcState("logs/w0", "", "w0", "train", 0)
			at := int64(time.Hour)
			for i := range c.lines {
				at += int64(time.Second) * int64(1+i%3)
				p.sawProgress(mark{line: c.first + 2*i, time: at, step: c.step * int64(i)}, []byte("step "+strconv.Itoa(i)))
			}
			before := readOf(p)
			p.settle()
			require.Equal(t, before, readOf(p))
			require.Nil(t, p.intervals)
			require.Equal(t, c.wantPacked, p.packed != nil)
		})
	}
}
