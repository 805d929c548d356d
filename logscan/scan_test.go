package logscan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/stretchr/testify/require"
)

func TestClean(t *testing.T) {
	tests := map[string]string{
		"plain":                       "plain",
		"\x1b[1;32mgreen\x1b[0m text": "green text",
		"a\rb\rfinal":                 "final",
		"progress 100%\r":             "progress 100%",
		"nul\x00byte":                 "nulbyte",
		"bad\xffutf8":                 "bad\uFFFDutf8",
	}
	for in, want := range tests {
		require.Equal(t, want, string(Clean(nil, []byte(in))), "%q", in)
		require.Equal(t, in != want, NeedsClean([]byte(in)), "%q", in)
		require.Equal(t, in != want, cleanChanges([]byte(in)), "%q", in)
	}
	for _, in := range []string{"café ▁tokens 12", "ok", "", "\r", "x\ry", "a\x00", "é\xc3"} {
		require.Equal(t, in != string(Clean(nil, []byte(in))), cleanChanges([]byte(in)), "%q", in)
	}
}

// TestShaperSkipsCleaningWhatCleanKeeps: a non-ASCII line that cleaning keeps as it is gets
// the key and values of its cleaned copy, read once.
func TestShaperSkipsCleaningWhatCleanKeeps(t *testing.T) {
	for _, line := range []string{"tokens: ['▁peda', '▁x1'] step 42 0xfe", "Ünï 7 \x1b[1mbold\x1b[0m 8", "bad\xff 9", "a\rframe 10"} {
		s := newShaper()
		var clean []byte
		text := s.line([]byte(line), &clean)
		want := Clean(nil, []byte(line))
		require.Equal(t, string(want), string(text), "%q", line)
		var k Keyer
		require.Equal(t, string(k.Key(want)), string(s.key), "%q", line)
		require.NotNil(t, s.cur, "%q", line)
		require.Equal(t, s.cur.Key, string(s.key), "%q", line)
		require.Len(t, s.vals, len(s.cur.Vars), "%q", line)
	}
}

// trainingLog is n lines of a training log with kubelet timestamps.
func trainingLog(n int) []byte {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "2026-03-14T10:%02d:%02d.%09dZ [rank3] step=%d loss=%.4f lr=1.0e-04\n", i/3600%60, i/60%60, i, i, 2.5-float64(i%1000)/1000)
	}
	return []byte(b.String())
}

func TestScanReadsEveryLine(t *testing.T) {
	fsys := fstest.MapFS{"logs/ns/p/c.log": {Data: append(trainingLog(1000), "last line without a newline"...)}}
	var n, shaped int
	st, err := Scan(t.Context(), fsys, bundle.LogStream{Path: "logs/ns/p/c.log"}, 1<<20, func(l *Scanned) {
		n++
		require.Equal(t, n, l.Number)
		if l.Shape != nil {
			shaped++
			require.Len(t, l.Vars, len(l.Shape.Vars))
		}
	})
	require.NoError(t, err)
	require.NoError(t, st.Err)
	require.Equal(t, 1001, n)
	require.Equal(t, 1001, st.Lines)
	require.Equal(t, 1001, shaped)
	require.Equal(t, int64(len(fsys["logs/ns/p/c.log"].Data)), st.Bytes)
	size, sum, err := Checksum(t.Context(), fsys, "logs/ns/p/c.log")
	require.NoError(t, err)
	require.Equal(t, st.Bytes, size)
	require.Equal(t, sha256.Sum256(fsys["logs/ns/p/c.log"].Data), sum)
	all, err := ScanAll(t.Context(), fsys, []bundle.LogStream{{Path: "logs/ns/p/c.log"}}, AllOptions{MaxLine: 1 << 20, Hash: true})
	require.NoError(t, err)
	require.Equal(t, sum, all[0].Sum, "Checksum reads as a scan does")
}

// TestScanMakesShapesThatRepeat: past EagerShapes, a shape is made at its second line (the
// first has none), and a Budget numbers shapes across logs and stops making new ones when
// spent, while shapes other logs have are still made.
func TestScanMakesShapesThatRepeat(t *testing.T) {
	var b strings.Builder
	for i := 0; i < EagerShapes+10; i++ {
		fmt.Fprintf(&b, "one-off line %s\n", strings.Repeat("x", i+1))
	}
	b.WriteString("repeated line\nrepeated line\nrepeated line\n")
	fsys := fstest.MapFS{"a.log": {Data: []byte(b.String())}, "b.log": {Data: []byte("repeated line\nother line\n")}}
	budget := &Budget{Max: EagerShapes + 1}
	shaped := map[string][]bool{}
	docs := map[string]int{}
	_, err := ScanAll(t.Context(), fsys, []bundle.LogStream{{Path: "a.log"}, {Path: "b.log"}}, AllOptions{MaxLine: 1 << 20, Budget: budget, Workers: 1,
		Visitors: []Visitor{LogFunc(func(i int) func(*Scanned) {
			name := []string{"a", "b"}[i]
			return func(l *Scanned) {
				shaped[name] = append(shaped[name], l.Shape != nil)
				if l.Shape != nil {
					docs[string(l.Text)] = l.Shape.Doc
					require.Equal(t, budget.Keys()[l.Shape.Doc], l.Shape.Key)
				}
			}
		})}})
	require.NoError(t, err)
	a := shaped["a"]
	for i := 0; i < EagerShapes; i++ {
		require.True(t, a[i], "eager shape %d", i)
	}
	for i := EagerShapes; i < EagerShapes+10; i++ {
		require.False(t, a[i], "a one-off line past the eager shapes gets none")
	}
	require.Equal(t, []bool{false, true, true}, a[EagerShapes+10:], "a shape is made at its second line")
	require.Equal(t, []bool{true, false}, shaped["b"], "b shares a's shape; its own finds the budget spent")
	require.Len(t, budget.Keys(), EagerShapes+1)
}

// TestScanStopsWhenCancelled: a cancel in the middle of a log stops its scan within the read
// buffer (64 KiB), and the error says why; a scan of a cancelled context reads nothing.
func TestScanStopsWhenCancelled(t *testing.T) {
	log := trainingLog(200_000) // about 15 MiB
	fsys := fstest.MapFS{"a.log": {Data: log}, "b.log": {Data: log}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	seen := 0
	_, err := Scan(ctx, fsys, bundle.LogStream{Path: "a.log"}, 1<<20, func(l *Scanned) {
		seen++
		if l.Number == 1000 {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "a.log")
	require.Less(t, seen, 1000+2000, "lines after the cancel are at most one read buffer's")

	seen = 0
	_, err = ScanAll(ctx, fsys, []bundle.LogStream{{Path: "a.log"}, {Path: "b.log"}}, AllOptions{MaxLine: 1 << 20,
		Visitors: []Visitor{LogFunc(func(int) func(*Scanned) { return func(*Scanned) { seen++ } })}})
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, seen)
}

// TestScanAllStopsEveryWorker: a cancel while several logs are being scanned stops them all.
func TestScanAllStopsEveryWorker(t *testing.T) {
	log := trainingLog(100_000)
	fsys := fstest.MapFS{}
	var logs []bundle.LogStream
	for i := range 8 {
		p := fmt.Sprintf("%d.log", i)
		fsys[p] = &fstest.MapFile{Data: log}
		logs = append(logs, bundle.LogStream{Path: p})
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var lines atomic.Int64
	_, err := ScanAll(ctx, fsys, logs, AllOptions{MaxLine: 1 << 20, Workers: 4, Visitors: []Visitor{LogFunc(func(int) func(*Scanned) {
		return func(l *Scanned) {
			if lines.Add(1) == 5000 {
				cancel()
			}
		}
	})}})
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, lines.Load(), int64(len(logs)*100_000/2), "the scan stopped early")
}

// TestFoldIsToLower: Fold lowers words as bytes.ToLower does, invalid bytes included.
func TestFoldIsToLower(t *testing.T) {
	for _, w := range []string{"", "abc", "ABC_12", "Größe", "ÉCOLE", "x\xffY", "\xc3", "İstanbul", "ΣΑΣ", "▁The"} {
		require.Equal(t, string(bytes.ToLower([]byte(w))), string(Fold([]byte("p:"), []byte(w))[2:]), "%q", w)
	}
}

// recorder is a Visitor that records what it saw of each log.
type recorder struct {
	mu    sync.Mutex
	lines map[int][]string
	done  map[int]Stats
	errs  map[int]error
}

func (r *recorder) Log(i int) func(*Scanned) {
	return func(l *Scanned) {
		r.mu.Lock()
		r.lines[i] = append(r.lines[i], string(l.Text))
		r.mu.Unlock()
	}
}

func (r *recorder) Done(i int, st Stats, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs[i] = err
		return
	}
	r.done[i] = st
}

// TestScanAllVisitors: every visitor sees every line of every log in the one read, in order,
// and hears once per log when it is done, with the stats ScanAll returns; a cancelled scan
// tells them why instead.
func TestScanAllVisitors(t *testing.T) {
	fsys := fstest.MapFS{
		"a.log": {Data: []byte("2026-03-14T10:00:00Z one\n2026-03-14T10:00:01Z \x1b[31mtwo\x1b[0m\n")},
		"b.log": {Data: []byte("three\n")},
	}
	logs := []bundle.LogStream{{Path: "a.log"}, {Path: "b.log"}}
	newRecorder := func() *recorder {
		return &recorder{lines: map[int][]string{}, done: map[int]Stats{}, errs: map[int]error{}}
	}
	x, y := newRecorder(), newRecorder()
	stats, err := ScanAll(t.Context(), fsys, logs, AllOptions{MaxLine: 1 << 20, Workers: 2, Visitors: []Visitor{x, y}})
	require.NoError(t, err)
	want := map[int][]string{0: {"one", "two"}, 1: {"three"}}
	for _, r := range []*recorder{x, y} {
		require.Equal(t, want, r.lines)
		require.Equal(t, map[int]Stats{0: stats[0], 1: stats[1]}, r.done)
		require.Empty(t, r.errs)
	}
	require.Equal(t, 2, stats[0].Lines)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	z := newRecorder()
	_, err = ScanAll(ctx, fsys, logs[:1], AllOptions{MaxLine: 1 << 20, Workers: 1, Visitors: []Visitor{z}})
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, z.done)
	for _, e := range z.errs {
		require.ErrorIs(t, e, context.Canceled)
	}
}

// TestScanSaysWhichLinesAreASCII: a line's ASCII flag, which lets a visitor take its length
// for its width, is set only for lines of ASCII bytes, whether the line is matched against an
// earlier shape or tokenized.
func TestScanSaysWhichLinesAreASCII(t *testing.T) {
	lines := []string{"step 1 loss 2.5", "step 2 loss 2.4", "step 3 loss 2.3 é", "step 4 loss 2.2",
		"\x1b[1mbold\x1b[0m", "naïve 5", "plain 6", "plain 7"}
	fsys := fstest.MapFS{"c.log": {Data: []byte(strings.Join(lines, "\n"))}}
	var got []bool
	_, err := Scan(t.Context(), fsys, bundle.LogStream{Path: "c.log"}, 1<<20, func(l *Scanned) {
		got = append(got, l.ASCII)
		if l.ASCII {
			require.Equal(t, len(l.Text), len([]rune(string(l.Text))), "%q", l.Text)
		}
	})
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, false, true, false, false, true, true}, got)
}

// TestHashIn: the hash of a word read with one load past it is Hash's, for every length.
func TestHashIn(t *testing.T) {
	buf := []byte("The_quick_brown_fox_jumps_over_the_lazy_dog_0123456789abcdefgh")
	for n := 0; n+8 <= len(buf); n++ {
		require.Equal(t, Hash(buf[:n]), HashIn(buf, n), "%d bytes", n)
		if n < 8 {
			var v uint64
			for i := n - 1; i >= 0; i-- {
				v = v<<8 | uint64(buf[i])
			}
			require.Equal(t, Hash(buf[:n]), HashShort(v, n), "%d bytes", n)
		}
	}
}
