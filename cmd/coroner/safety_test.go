package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// flipCachedBodies flips one byte in the middle of every cached index's bodies file.
func flipCachedBodies(t *testing.T, cache string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cache, "*", "bodies.bin"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, p := range files {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		data[len(data)/2] ^= 0x01
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
}

// TestSearchRebuildsADamagedCacheEntry: one flipped byte in a cached index fails no search:
// the entry is dropped and rebuilt with one warning, and the searches after it are quiet.
func TestSearchRebuildsADamagedCacheEntry(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	for name, input := range map[string]string{"directory": sample, "tarball": tarSample(t, sample)} {
		t.Run(name, func(t *testing.T) {
			cache := t.TempDir()
			code, want, stderr := run(t, "search", input, "NCCL", "--cache-dir", cache)
			require.Equal(t, 0, code, stderr)
			flipCachedBodies(t, cache)
			code, out, stderr := run(t, "search", input, "NCCL", "--cache-dir", cache)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, want, out)
			warnings := strings.Split(strings.TrimSpace(stderr), "\n")
			require.Len(t, warnings, 1, stderr)
			require.Contains(t, warnings[0], "bodies.bin no longer matches meta.json; rebuilding it")
			code, out, stderr = run(t, "search", input, "NCCL", "--cache-dir", cache)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, want, out)
			require.Empty(t, stderr, "the rebuilt entry is sound")
		})
	}
}

// TestSearchContextIsCapped: a context no search can hold (-C 30000 on a large log used to
// run out of memory) is refused as a usage error naming the bound.
func TestSearchContextIsCapped(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	code, _, stderr := run(t, "search", sample, "NCCL", "-C", "30000", "--no-cache")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "--context 30000: at most 1000 lines before and after each hit")
	code, out, stderr := run(t, "search", sample, "NCCL AND timeout", "-C", "1000", "--no-cache")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "7 matching lines")
}
