package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSniffDump(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       dumpForm
	}{
		{"kubectl --prefix --timestamps", "[pod/train-worker-0/pytorch] 2026-03-14T10:01:01.000000000Z step 1\n[pod/train-worker-1/pytorch] 2026-03-14T10:01:01.000000000Z step 1\n", dumpKubectl},
		{"kubectl --prefix, an empty line", "[pod/train-worker-0/pytorch] step 1\n[pod/train-worker-0/pytorch]\n[pod/train-worker-1/pytorch] step 2\n", dumpKubectl},
		{"stern --timestamps", "+ train-worker-0 › pytorch\ntrain-worker-0 pytorch 2026-03-14T10:01:01.000000000+09:00 step 1\ntrain-worker-1 pytorch 2026-03-14T10:01:01.000000000+09:00 step 1\n", dumpStern},
		{"stern, coloured", "\x1b[32mtrain-worker-0\x1b[0m \x1b[33mpytorch\x1b[0m a\n\x1b[32mtrain-worker-0\x1b[0m \x1b[33mpytorch\x1b[0m b\n\x1b[32mtrain-worker-0\x1b[0m \x1b[33mpytorch\x1b[0m c\n\x1b[32mtrain-worker-0\x1b[0m \x1b[33mpytorch\x1b[0m d\n", dumpStern},
		{"stern of several namespaces", "ml train-worker-0 pytorch 2026-03-14T10:01:01Z step 1\nml train-worker-1 pytorch 2026-03-14T10:01:01Z step 1\n", dumpSternNS},
		{"a plain log", "2026-03-14T10:01:01.000000000Z step 1 loss 2.3\n2026-03-14T10:01:02.000000000Z step 2 loss 2.2\n", dumpNone},
		{"a log of words", "loading data from disk\nepoch-1 started now\nepoch-2 started now\n", dumpNone},
		{"one line", "[pod/a-0/c] x\n", dumpNone},
		{"a mix", "[pod/train-worker-0/pytorch] x\nTraceback (most recent call last):\n", dumpNone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, sniffDump([]byte(tt.text)))
		})
	}
}

// TestSamplesAreNotDumps: no log of the samples, plain or in a bundle, is taken for a dump.
func TestSamplesAreNotDumps(t *testing.T) {
	files, err := filepath.Glob("../samples/*/logs/*/*/*.log")
	require.NoError(t, err)
	plain, err := filepath.Glob("../samples/logs/*.log")
	require.NoError(t, err)
	files = append(files, plain...)
	require.NotEmpty(t, files)
	for _, f := range files {
		head, err := readDumpHead(f)
		require.NoError(t, err)
		require.Equal(t, dumpNone, sniffDump(head), f)
	}
}

func TestSplitDump(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "dump.log")
	long := strings.Repeat("x", 100<<10)
	text := "kubectl: warming up\n" +
		"[pod/train-worker-1/pytorch] 2026-03-14T10:00:01Z a\r\n" +
		"[pod/train-worker-0/pytorch] 2026-03-14T10:00:02Z " + long + "\n" +
		"  continued without a prefix\n" +
		"[pod/train-worker-1/pytorch] 2026-03-14T10:00:03Z b"
	require.NoError(t, os.WriteFile(in, []byte(text), 0o600))
	streams, err := splitDump(t.Context(), in, dumpKubectl, dir)
	require.NoError(t, err)
	require.Len(t, streams, 3)
	read := func(s *dumpStream) string {
		data, err := os.ReadFile(s.Real)
		require.NoError(t, err)
		require.Equal(t, int64(len(data)), s.Size)
		return string(data)
	}
	require.Equal(t, "", streams[0].Pod, "the lines before the first prefix")
	require.Equal(t, "kubectl: warming up\n", read(streams[0]))
	require.Equal(t, "train-worker-0", streams[1].Pod)
	require.Equal(t, "2026-03-14T10:00:02Z "+long+"\n  continued without a prefix\n", read(streams[1]))
	require.Equal(t, 2, streams[1].Lines)
	require.Equal(t, "2026-03-14T10:00:01Z a\n2026-03-14T10:00:03Z b", read(streams[2]))
}
