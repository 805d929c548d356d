package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/index"
)

func TestSearchPrintsHitsByTime(t *testing.T) {
	code, out, stderr := run(t, "search", filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "NCCL AND timeout", "--cache-dir", t.TempDir())
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 8)
	require.True(t, strings.HasPrefix(lines[0], "train-job-master-0/pytorch:105 2026-03-14T10:12:11.532Z [rank0]:"), lines[0])
	require.Equal(t, "7 matching lines, 7 hits shown", lines[7])
}

func TestSearchFiltersContextAndJSON(t *testing.T) {
	tgz := tarSample(t, filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"))
	code, out, stderr := run(t, "search", tgz, "out of memory", "--pod", "*worker-*", "--container", "pytorch",
		"--since", "10:02", "--until", "10:05", "-C", "2", "--format", "json", "--no-cache")
	require.Equal(t, 0, code, stderr)
	var res index.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Hits, 1)
	h := res.Hits[0]
	require.Equal(t, "train-job-worker-4", h.Pod)
	require.Equal(t, 56, h.Number)
	require.Contains(t, h.Text, "CUDA out of memory")
	require.Len(t, h.Before, 2)
	require.Len(t, h.After, 2)
}

// TestAnalyzeWarmsTheSearchCache: analyze stores the index of the logs that search then
// opens; search adds the (small) index of the events and objects beside it.
func TestAnalyzeWarmsTheSearchCache(t *testing.T) {
	cache := t.TempDir()
	sample := filepath.Join(samplesDir, "pytorchjob-nan-loss")
	code, _, stderr := run(t, "analyze", sample, "-q", "--cache-dir", cache)
	require.Equal(t, 0, code, stderr)
	keys := func() []string {
		entries, err := os.ReadDir(cache)
		require.NoError(t, err)
		var keys []string
		for _, e := range entries {
			if len(e.Name()) == 64 {
				keys = append(keys, e.Name())
			}
		}
		return keys
	}
	analyzed := keys()
	require.Len(t, analyzed, 1, "one index for the bundle's logs")
	code, out, stderr := run(t, "search", sample, `"loss nan"`, "--cache-dir", cache)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "loss nan")
	searched := keys()
	require.Len(t, searched, 2, "the logs' index reused, the objects' added")
	require.Contains(t, searched, analyzed[0])
	code, _, stderr = run(t, "search", sample, "nan", "--cache-dir", cache)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, searched, keys(), "a second search builds nothing")
}

func TestSearchExitCodes(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-nan-loss")
	for _, tt := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"search", sample, `"unclosed`}, 2, "closing quote"},
		{[]string{"search", sample, "(a OR"}, 2, "query"},
		{[]string{"search", sample, "--regex", "("}, 2, "--regex"},
		{[]string{"search", sample}, 2, "QUERY or --regex"},
		{[]string{"search", sample, "x", "--since", "yesterday"}, 2, "--since"},
		{[]string{"search", "/nonexistent/b.tgz", "x"}, 1, "/nonexistent/b.tgz"},
	} {
		code, _, stderr := run(t, append(tt.args, "--no-cache")...)
		require.Equal(t, tt.code, code, "%v: %s", tt.args, stderr)
		require.Contains(t, stderr, tt.stderr)
	}
}

func TestTerminalSafe(t *testing.T) {
	require.Equal(t, "a\uFFFD[31mred\uFFFDb\tc", terminalSafe("a\x1b[31mred\x07b\tc"))
}
