package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestNamesWithEscapesStayText: a job and a pod named with escape sequences (a window title,
// a colour, clearing the screen) reach report.md and --dry-run-prompt as visible escapes,
// never as control characters.
func TestNamesWithEscapesStayText(t *testing.T) {
	sample := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, os.CopyFS(sample, os.DirFS(filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"))))
	for file, names := range map[string][2]string{
		"resources/kubeflow.org/PyTorchJob/ml/train-job.yaml": {"  name: train-job\n", "  name: \"train-job\\e]2;pwned\\a\\e[31mRED\"\n"},
		"resources/core/Pod/ml/train-job-worker-4.yaml":       {"  name: train-job-worker-4\n", "  name: \"train-job-worker-4\\e[2J\"\n"},
	} {
		p := filepath.Join(sample, file)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(data), names[0])
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(data), names[0], names[1], 1)), 0o644))
	}
	controls := func(s string) []string {
		var found []string
		for i, line := range strings.Split(s, "\n") {
			if strings.ContainsFunc(line, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
				found = append(found, fmt.Sprintf("%d: %q", i+1, line))
			}
		}
		return found
	}
	md := filepath.Join(t.TempDir(), "report.md")
	code, _, stderr := run(t, "analyze", sample, "--no-cache", "-q", "-o", md)
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(md)
	require.NoError(t, err)
	require.Contains(t, string(data), `x1b`, "the name is there, escaped")
	require.Empty(t, controls(string(data)))
	page := filepath.Join(t.TempDir(), "report.html")
	code, _, stderr = run(t, "analyze", sample, "--no-cache", "-q", "-o", page)
	require.Equal(t, 0, code, stderr)
	data, err = os.ReadFile(page)
	require.NoError(t, err)
	require.Contains(t, string(data), `train-job\x1b]2;pwned\a\x1b[31mRED`, "the name is there, escaped")
	require.Empty(t, controls(string(data)), "cat report.html must not drive the terminal")
	code, out, stderr := run(t, "analyze", sample, "--no-cache", "--dry-run-prompt")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, `train-job\x1b]2;pwned`)
	require.Empty(t, controls(out))
}

// TestFIFOWithoutWriterStopsOnFirstSignal: a FIFO given as a log whose writer never comes
// leaves coroner waiting to open it; the first SIGTERM ends it (the open used to happen where
// no signal could reach it, and only a second signal or SIGKILL did).
func TestFIFOWithoutWriterStopsOnFirstSignal(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("needs /proc to see where the process waits")
	}
	for _, args := range [][]string{{"analyze", "FIFO"}, {"search", "FIFO", "loss"}} {
		t.Run(args[0], func(t *testing.T) {
			tmp := t.TempDir()
			fifo := filepath.Join(t.TempDir(), "train.log")
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			argv := append([]string{}, args...)
			argv[1] = fifo
			s := start(t, tmp, nil, argv...)
			pollUntil(t, "the open of the FIFO", func() bool {
				waits, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", s.cmd.Process.Pid))
				for _, w := range waits {
					if data, err := os.ReadFile(w); err == nil && strings.Contains(string(data), "wait_for_partner") {
						return true
					}
				}
				return false
			})
			require.Equal(t, 143, s.exit(t, syscall.SIGTERM), s.stderr.String())
			require.Equal(t, "coroner: terminated; nothing written\n", s.stderr.String())
			require.Empty(t, scratchFiles(t, tmp))
		})
	}
}

// holdsSpool reports whether the process has one of redact's entry spools open (they have no
// name in the temporary directory: /proc shows them as deleted files).
func holdsSpool(pid int) bool {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		// Open and already without a name: the kernel shows the target as "... (deleted)". (A
		// kill between the create and the remove, microseconds apart, leaves the file for the
		// next writer to sweep; the test waits past that window.)
		if target, err := os.Readlink(fd); err == nil && strings.Contains(filepath.Base(target), "coroner-entry-") && strings.HasSuffix(target, " (deleted)") {
			return true
		}
	}
	return false
}

// TestRedactSpoolDoesNotOutliveSIGKILL: redact killed outright while it spools a file of the
// bundle leaves no coroner-entry-* file in the temporary directory.
func TestRedactSpoolDoesNotOutliveSIGKILL(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc to see the open spool")
	}
	tmp, outDir := t.TempDir(), t.TempDir()
	fifo := filepath.Join(t.TempDir(), "slow.tar.gz")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	feedTarball(t, fifo)
	s := start(t, tmp, nil, "redact", fifo, "-o", filepath.Join(outDir, "redacted.tar.gz"))
	pollUntil(t, "the spool of the first file", func() bool { return holdsSpool(s.cmd.Process.Pid) })
	require.NoError(t, s.cmd.Process.Kill())
	<-s.done
	spools, err := filepath.Glob(filepath.Join(tmp, "coroner-entry-*"))
	require.NoError(t, err)
	require.Empty(t, spools)
}

// TestAnalyzeRebuildsADamagedCacheEntry: analyze, which reads every log anyway, checks a
// cached index whole and rebuilds a damaged one with one warning, instead of failing on the
// first evidence window it reads from it.
func TestAnalyzeRebuildsADamagedCacheEntry(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	cache := t.TempDir()
	report := filepath.Join(t.TempDir(), "report.json")
	code, _, stderr := run(t, "analyze", sample, "--cache-dir", cache, "-o", report)
	require.Equal(t, 0, code, stderr)
	want, err := os.ReadFile(report)
	require.NoError(t, err)
	flipCachedBodies(t, cache)
	code, _, stderr = run(t, "analyze", sample, "--cache-dir", cache, "-o", report)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 1, strings.Count(stderr, "rebuilding it"), stderr)
	got, err := os.ReadFile(report)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	code, _, stderr = run(t, "analyze", sample, "--cache-dir", cache, "-o", report)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stderr, "rebuilding it", "the rebuilt entry is sound")
}
