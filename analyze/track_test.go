package analyze

import (
	"slices"
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
		r := read{period: p.period(), last: p.lastProgress()}
		if p.progressMarks != nil { // made at the first progress line
			r.text = string(p.lastText)
		}
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
		{"steps past 2^31", 100, 1, 1 << 40, true},
		{"lines past 4G", 100, 1 << 33, 10, true},
		{"steps going back", 100, 1, -(1 << 62), true},
		{"no progress", 0, 1, 10, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			saw := func(sc *Scratch) *procState {
				p := newProcState("logs/w0", "", "w0", "train", 0)
				p.lend(sc)
				at := int64(time.Hour)
				for i := range c.lines {
					at += int64(time.Second) * int64(1+i%3)
					p.sawProgress(mark{line: c.first + 2*i, time: at, step: c.step * int64(i)}, []byte("step "+strconv.Itoa(i)))
				}
				return p
			}
			p := saw(nil)
			before := readOf(p)
			p.settle(nil)
			require.Equal(t, before, readOf(p))
			// A process lent the ring and gaps of one that settled before it reads the same.
			sc := &Scratch{}
			other := newProcState("logs/w1", "", "w1", "train", 1)
			for i := range 2 * maxIntervals {
				other.sawProgress(mark{line: 7 * i, time: int64(i) * 3, step: int64(i)}, []byte("step"))
			}
			other.settle(sc)
			require.Len(t, sc.rings, 1, "a full ring is kept for the next process")
			lent := saw(sc)
			require.Equal(t, before, readOf(lent))
			lent.settle(sc)
			require.Equal(t, before, readOf(lent))
			if c.lines == 0 {
				require.Nil(t, p.progressMarks, "a process without progress has no marks")
				return
			}
			require.Nil(t, p.intervals)
			require.Equal(t, c.wantPacked, p.packed != nil)
		})
	}
}

// TestMergeProcsKeepsEveryProgressLine: the lines of a log without a prefix and those with
// its only prefix are one process: their progress lines merge in line order, the ring keeps
// the last maxPeriods of them and the last is the later of the two, however few lines each
// had (a ring shorter than maxPeriods was once indexed past its end).
func TestMergeProcsKeepsEveryProgressLine(t *testing.T) {
	for _, c := range []struct {
		name         string
		plain, ranks []int // the lines of each side's progress
	}{
		{"few, plain last", []int{4, 5}, []int{1, 2, 3}},
		{"few, prefixed last", []int{1, 2}, []int{3, 4, 5}},
		{"one each", []int{2}, []int{1}},
		{"many interleaved", seq(1, 2, 100), seq(2, 2, 70)},
		{"many after few", seq(1, 1, 3), seq(4, 1, 90)},
	} {
		t.Run(c.name, func(t *testing.T) {
			mk := func(lines []int, rank int) *procState {
				p := newProcState("logs/w0", "", "w0", "train", rank)
				for _, l := range lines {
					p.sawProgress(mark{line: l, time: int64(l) * int64(time.Second), step: int64(l)}, []byte("step "+strconv.Itoa(l)))
				}
				return p
			}
			m := mergeProcs(mk(c.plain, -1), mk(c.ranks, 0))
			all := append(append([]int{}, c.plain...), c.ranks...)
			slices.Sort(all)
			require.Equal(t, len(all), m.progress)
			last := all[len(all)-1]
			require.Equal(t, last, m.lastProgress().line)
			require.Equal(t, int64(last), m.step)
			require.Equal(t, "step "+strconv.Itoa(last), string(m.lastText))
			require.Equal(t, all[0], m.first.line)
			var got []int
			for _, mk := range m.ring() {
				got = append(got, mk.line)
			}
			require.Equal(t, all[max(0, len(all)-maxPeriods):], got)
		})
	}
}

func seq(from, step, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i*step
	}
	return out
}

// TestMixedPrefixLogReadsItsLastStep: a log whose progress lines come with a rank prefix and
// then without one is read to its last step.
func TestMixedPrefixLogReadsItsLastStep(t *testing.T) {
	log := "2024-05-01T10:00:01Z [rank0]: step 1 loss 2.5\n2024-05-01T10:00:02Z [rank0]: step 2 loss 2.4\n" +
		"2024-05-01T10:00:03Z [rank0]: step 3 loss 2.3\n2024-05-01T10:00:04Z step 4 loss 2.2\n2024-05-01T10:00:05Z step 5 loss 2.1\n"
	all, err := DefaultRules()
	require.NoError(t, err)
	res := analyzeLogs(t, all, log)
	require.Len(t, res.Logs, 1)
	require.NotNil(t, res.Logs[0].LastProgress)
	require.Equal(t, "2024-05-01T10:00:05Z", res.Logs[0].LastProgress.UTC().Format(time.RFC3339))
}
