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

// TestOutputIsNeverTheInput: -o (and --llm-record) naming the input tarball or log, a file in
// the input directory, or a link to one of them, is refused with one line, and the input is
// left as it was: nothing replaced, nothing added (redact used to pack its own temporary file).
func TestOutputIsNeverTheInput(t *testing.T) {
	dir := t.TempDir()
	sample := filepath.Join(dir, "bundle")
	require.NoError(t, os.CopyFS(sample, os.DirFS(filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"))))
	tgz := tarSample(t, sample)
	plain := filepath.Join(dir, "plain.log")
	require.NoError(t, os.WriteFile(plain, []byte("2026-03-14T10:00:00Z RuntimeError: CUDA error: out of memory\n"), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(sample, link))
	log := filepath.Join(sample, "logs/ml/train-job-worker-4/pytorch.log")
	snapshot := func() map[string]string {
		files := map[string]string{}
		for _, root := range []string{sample, tgz, plain} {
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				require.NoError(t, err)
				if !d.IsDir() {
					data, err := os.ReadFile(p)
					require.NoError(t, err)
					files[p] = string(data)
				}
				return nil
			})
		}
		return files
	}
	before := snapshot()
	for _, args := range [][]string{
		{"analyze", tgz, "-o", tgz, "--format", "json"},
		{"analyze", sample, "-o", log, "--format", "md"},
		{"analyze", sample, "-o", filepath.Join(sample, "report.md")},
		{"analyze", sample, "-o", filepath.Join(link, "logs", "report.md")},
		{"analyze", plain, "-o", plain, "--format", "json"},
		{"analyze", sample, "--llm-record", filepath.Join(sample, "answers.json"), "--dry-run-prompt"},
		{"redact", sample, "-o", filepath.Join(sample, "redacted.tar.gz")},
		{"redact", link, "-o", filepath.Join(sample, "redacted.tar.gz")},
		{"redact", tgz, "-o", tgz},
		{"search", sample, "NCCL", "--no-cache", "-o", filepath.Join(sample, "hits.txt")},
		{"search", tgz, "NCCL", "--no-cache", "-o", tgz, "--format", "text"},
	} {
		code, out, stderr := run(t, args...)
		require.Equal(t, 1, code, "%v: %s%s", args, out, stderr)
		require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		require.Contains(t, stderr, "write it elsewhere", args)
		require.Equal(t, before, snapshot(), "%v left the input as it was", args)
	}
	// Beside the input is fine.
	code, _, stderr := run(t, "redact", sample, "-o", filepath.Join(dir, "redacted.tar.gz"))
	require.Equal(t, 0, code, stderr)
}

// TestLLMRecordRefusesALink: --llm-record naming a symbolic link is refused with one line
// before any work, and the link stays.
func TestLLMRecordRefusesALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	require.NoError(t, os.WriteFile(target, []byte("keep me\n"), 0o644))
	link := filepath.Join(dir, "answers.json")
	require.NoError(t, os.Symlink(target, link))
	code, _, stderr := run(t, "analyze", filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "--dry-run-prompt", "--llm-record", link, "--no-cache")
	require.Equal(t, 1, code, stderr)
	require.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
	require.Contains(t, stderr, "is a symbolic link")
	st, err := os.Lstat(link)
	require.NoError(t, err)
	require.NotZero(t, st.Mode()&os.ModeSymlink)
	data, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "keep me\n", string(data))
}
