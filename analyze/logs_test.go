package analyze

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/logscan"
)

// scanned is what scanning one log produced.
type scanned struct {
	findings  []*Finding
	lines     int
	longLines int
	bytes     int64
	err       error
}

// scan runs one log through the index's scanner and the rules, as Run does.
func scan(t *testing.T, log string, maxLine int) scanned {
	t.Helper()
	rs := defaultRuleSet(t)
	b := &bundle.Bundle{FS: fstest.MapFS{"logs/ml/p/c.log": {Data: []byte(log)}}, Limits: bundle.Limits{MaxLineBytes: maxLine}}
	ls := bundle.LogStream{Path: "logs/ml/p/c.log", Pod: "p", Container: "c"}
	sc := newLogScanner(ls, rs, rs.NewScratch())
	ix, stats, err := scanWith(t.Context(), b, []bundle.LogStream{ls}, index.BuildOptions{}, logscan.LogFunc(func(int) func(*logscan.Scanned) { return sc.visit }))
	require.NoError(t, err)
	defer ix.Close()
	for _, f := range sc.findings {
		require.NoError(t, addContext(windowLines(ix), f))
	}
	return scanned{findings: sc.findings, lines: stats[0].Lines, longLines: stats[0].LongLines, bytes: stats[0].Bytes, err: stats[0].Err}
}

func TestScanLogEvidenceAndContext(t *testing.T) {
	log := "2026-03-14T10:00:00Z starting\n" +
		"2026-03-14T10:00:01Z Traceback (most recent call last):\n" +
		"2026-03-14T10:00:01Z   File \"/workspace/train.py\", line 3, in <module>\n" +
		"2026-03-14T10:00:01Z     import flash_attn\n" +
		"2026-03-14T10:00:01.5Z ModuleNotFoundError: No module named 'flash_attn'\n" +
		"2026-03-14T10:00:02Z done\n"
	res := scan(t, log, 1<<20)
	require.NoError(t, res.err)
	require.Equal(t, 6, res.lines)
	require.Len(t, res.findings, 1)
	f := res.findings[0]
	require.Equal(t, CategoryModuleNotFound, f.Category)
	require.Equal(t, "2026-03-14T10:00:01.5Z", f.Time.Format("2006-01-02T15:04:05.999Z07:00"))
	ev := f.Evidence[0]
	require.Equal(t, 5, ev.Line)
	require.Equal(t, "ModuleNotFoundError: No module named 'flash_attn'", ev.Text, "the kubelet timestamp is not part of the excerpt")
	require.Equal(t, []ContextLine{{1, "starting"}, {2, "Traceback (most recent call last):"}, {3, "  File \"/workspace/train.py\", line 3, in <module>"}, {4, "    import flash_attn"}}, ev.Before)
	require.Equal(t, []ContextLine{{6, "done"}}, ev.After)
}

func TestScanLogRepeatedLinesCountOnce(t *testing.T) {
	line := "[rank3]:[E314 10:12:04.182731 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.\n"
	res := scan(t, strings.Repeat(line, 5), 1<<20)
	var f *Finding
	for _, g := range res.findings {
		if g.Category == "collective-timeout" {
			f = g
		}
	}
	require.NotNil(t, f)
	require.Equal(t, 5, f.Count)
	require.Equal(t, 1, f.Evidence[0].Line)
	require.Equal(t, 5, f.Evidence[0].LastLine)
}

// TestScanLogDirtyInput: ANSI colours, carriage-return progress bars, CRLF, NUL bytes and
// invalid UTF-8 are cleaned for matching; a line longer than the limit is cut and counted.
func TestScanLogDirtyInput(t *testing.T) {
	log := "\x1b[31mtorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\x1b[0m\r\n" +
		"epoch 1:  10%|#         | 10/100\repoch 1:  20%|##        | 20/100\rOSError: [Errno 28] No space left on device\n" +
		"bad \xff\xfe bytes and a NUL \x00 here\n" +
		strings.Repeat("x", 5000) + " ModuleNotFoundError: No module named 'lost'\n" +
		"tail line\n"
	res := scan(t, log, 1024)
	require.NoError(t, res.err)
	require.Equal(t, 5, res.lines)
	require.Equal(t, 1, res.longLines)
	var cats []Category
	for _, f := range res.findings {
		cats = append(cats, f.Category)
		require.NotContains(t, f.Evidence[0].Text, "\x1b")
	}
	require.Contains(t, cats, CategoryCUDAOOM)
	require.Contains(t, cats, CategoryDiskFull)
	require.NotContains(t, cats, CategoryModuleNotFound, "the part of a line past the limit is not read")
	require.Equal(t, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", res.findings[0].Evidence[0].Text)
}

func TestScanLogHugeLine(t *testing.T) {
	// A 50 MB line without a newline: read with bounded memory, cut, counted.
	res := scan(t, strings.Repeat("A", 50<<20), 1<<20)
	require.NoError(t, res.err)
	require.Equal(t, 1, res.lines)
	require.Equal(t, 1, res.longLines)
	require.Equal(t, int64(50<<20), res.bytes, "every byte is read once")
}
