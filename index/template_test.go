package index

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/logscan"
)

// TestLineRunsAndBlocks: a template's lines come back from its runs, whole and block by
// block, whatever mix of runs, gaps and far-apart lines they were.
func TestLineRunsAndBlocks(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 200; trial++ {
		tb := &tmplBuilder{}
		var want []int
		n := 0
		for k := rng.Intn(3000); k >= 0; k-- {
			switch rng.Intn(4) {
			case 0:
				n++ // a run goes on
			case 1:
				n += 2 + rng.Intn(5)
			case 2:
				n += rng.Intn(3 * blockSpan)
			default:
				n++
			}
			n = max(n, 1)
			if len(want) > 0 && n <= want[len(want)-1] {
				n = want[len(want)-1] + 1
			}
			want = append(want, n)
			tb.add(n, int64(n), nil, nil, nil)
		}
		tb.flushRun()
		tb.flushBlock()
		tmpl := &template{count: int32(tb.count), lines: tb.lines, blob: tb.blocks}
		all, err := tmpl.allLines()
		require.NoError(t, err)
		require.Equal(t, want, all)
		var got []int
		blocks := 0
		require.NoError(t, tmpl.eachBlock(&block{}, func(bl *block) error {
			blocks++
			lines, err := tmpl.blockLines(bl, nil)
			require.Len(t, lines, bl.n)
			require.Equal(t, int64(lines[0]), bl.tmin)
			require.Equal(t, int64(lines[len(lines)-1]), bl.tmax)
			require.True(t, bl.n == blockSize || lines[len(lines)-1]-lines[0] < blockSpan || bl.n <= minBlock ||
				len(got)+bl.n == len(want), "a block spans at most blockSpan lines once it has minBlock")
			got = append(got, lines...)
			return err
		}))
		require.Equal(t, want, got)
	}
	// A step template of 100k consecutive lines takes a few bytes, not one per line.
	tb := &tmplBuilder{}
	for n := 1; n <= 100_000; n++ {
		if n%1000 != 0 {
			tb.add(n, 0, nil, nil, nil)
		}
	}
	tb.flushRun()
	require.Less(t, len(tb.lines), 500)
}

// TestBlockFilterRulesOutAbsentNumbers: a block keeps, for a slot whose numbers spread over a
// range far wider than the block (a loss's or a gradient norm's last digits), a filter that
// rules out most numbers of the range that no line of the block has, and never one it has; a
// slot of consecutive numbers (a step counter) keeps none, its range being exact.
func TestBlockFilterRulesOutAbsentNumbers(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for _, n := range []int{8, 40, 100, blockSize} {
		tb := newTmplBuilder(0, "", 2)
		had := map[uint64]bool{}
		for i := 1; i <= n; i++ {
			frac := logscan.NumberValue(3, uint64(rng.Intn(1000)))
			had[frac] = true
			vals := []logscan.Var{{Num: logscan.NumberValue(4, uint64(1000+i))}, {Num: frac}}
			tb.add(i, int64(i), vals, make([]uint64, 2), nil)
		}
		tb.flushRun()
		tb.flushBlock()
		tmpl := &template{count: int32(tb.count), slots: int32(len(tb.masks)), lines: tb.lines, blob: tb.blocks}
		blocks := 0
		require.NoError(t, tmpl.eachBlock(&block{}, func(bl *block) error {
			blocks++
			require.Nil(t, bl.ranges[0].filter, "%d steps: consecutive numbers keep no filter", n)
			require.NotNil(t, bl.ranges[1].filter, "%d fractions", n)
			ruledOut, absent := 0, 0
			for v := range uint64(1000) {
				num := logscan.NumberValue(3, v)
				in := bl.ranges[1].mayHold(logscan.Value{Num: num, Numeric: true})
				switch {
				case had[num]:
					require.True(t, in, "%d fractions: %03d is in the block", n, v)
				case num >= bl.ranges[1].numMin && num <= bl.ranges[1].numMax:
					absent++
					if !in {
						ruledOut++
					}
				}
			}
			require.Greater(t, ruledOut*2, absent, "%d fractions: most absent numbers within the range are ruled out", n)
			return nil
		}))
		require.Equal(t, 1, blocks)
	}
}

// TestSkipUvarintsReadsAsUvarint: a template's masks, kept encoded when its head is decoded,
// are passed over by the same rules that reading them takes (a bad or overlong varint is a
// corrupt index either way).
func TestSkipUvarintsReadsAsUvarint(t *testing.T) {
	inputs := [][]byte{
		binary.AppendUvarint(binary.AppendUvarint(nil, 5), math.MaxUint64),
		{0x80, 0x80},                                // cut short
		bytes.Repeat([]byte{0xff}, 10),              // too long
		append(bytes.Repeat([]byte{0xff}, 9), 0x02), // overflows 64 bits
		append(bytes.Repeat([]byte{0xff}, 9), 0x01),
		{1, 2, 3},
	}
	for _, in := range inputs {
		for n := 0; n <= 3; n++ {
			read := &decoder{b: in}
			for range n {
				read.uvarint()
			}
			skip := &decoder{b: in}
			got := skip.skipUvarints(n)
			require.Equal(t, read.err != nil, skip.err != nil, "%x, %d", in, n)
			if read.err == nil {
				require.Equal(t, read.b, skip.b, "%x, %d", in, n)
				require.Equal(t, in[:len(in)-len(read.b)], got)
			}
		}
	}
}
