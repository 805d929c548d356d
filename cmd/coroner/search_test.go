package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/search"
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
// opens, and the index of the events and objects and the walk's listing beside it, so that
// the first search after it builds nothing (it built the objects' index: at 16,384 pods three
// times a warm search's CPU) and finds what a search without a cache finds.
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
	require.Len(t, analyzed, 2, "the logs' index and the events' and objects'")
	trees, err := filepath.Glob(filepath.Join(cache, "stat", "*.tree"))
	require.NoError(t, err)
	require.Len(t, trees, 1, "the walk's listing")
	for _, q := range []string{`"loss nan"`, "Normal AND Started", "restartPolicy"} {
		want := requireExit(t, exitOK, "", "search", sample, q, "--no-cache")
		code, out, stderr := run(t, "search", sample, q, "--cache-dir", cache)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, want, out, q)
		require.Equal(t, analyzed, keys(), "%s: the search after analyze builds nothing", q)
	}
	require.Contains(t, requireExit(t, exitOK, "", "search", sample, "restartPolicy", "--cache-dir", cache), "resources/")

	// --no-cache, a tarball and plain logs keep nothing for a search.
	other := t.TempDir()
	requireExit(t, exitOK, "", "analyze", sample, "-q", "--no-cache", "--cache-dir", other)
	requireExit(t, exitOK, "", "analyze", tarSample(t, sample), "-q", "--cache-dir", other)
	requireExit(t, exitOK, "", "analyze", filepath.Join(samplesDir, "logs", "train-plain.log"), "-q", "--cache-dir", other)
	trees, err = filepath.Glob(filepath.Join(other, "stat", "*.tree"))
	require.NoError(t, err)
	require.Empty(t, trees)

	// A cache that cannot be written is said so once, by the logs' index.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	code, _, stderr = run(t, "analyze", sample, "--format", "json", "--cache-dir", file)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 1, strings.Count(stderr, "cannot be written"), stderr)
}

// TestAnalyzeKeepsTheLogsIndexFirst: with a --cache-max smaller than both indexes analyze
// keeps, the objects' index, built after the logs', must not evict the logs' one (the least
// recently used then): it is not kept instead.
func TestAnalyzeKeepsTheLogsIndexFirst(t *testing.T) {
	cache := t.TempDir()
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	code, _, stderr := run(t, "analyze", sample, "-q", "--cache-dir", cache, "--cache-max", "64Ki")
	require.Equal(t, 0, code, stderr)
	kept := func() []string {
		metas, err := filepath.Glob(filepath.Join(cache, strings.Repeat("?", 64), "meta.json"))
		require.NoError(t, err)
		return metas
	}
	metas := kept()
	require.Len(t, metas, 1, "one index fits, the logs'")
	data, err := os.ReadFile(metas[0])
	require.NoError(t, err)
	require.Contains(t, string(data), `"streams": 8,`, "the 8 pods' logs, not the events and objects")

	// Nor does a search: it builds the objects' index for itself alone, and every search
	// after it finds the logs' index where analyze left it.
	for range 2 {
		code, stdout, stderr := run(t, "search", sample, "CUDA out of memory", "--cache-dir", cache, "--cache-max", "64Ki")
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, "CUDA out of memory")
		require.Equal(t, metas, kept(), "the logs' index is still the one kept")
	}
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

// TestSearchTakesWhatAnalyzeTakes: plain log files and standard input are searched like a
// bundle's logs, named by their files.
func TestSearchTakesWhatAnalyzeTakes(t *testing.T) {
	log := filepath.Join(samplesDir, "logs", "train-plain.log")
	out := requireExit(t, exitOK, "", "search", log, "out of memory", "--no-cache")
	require.True(t, strings.HasPrefix(out, "train-plain.log:170 - [rank2]: torch.OutOfMemoryError: CUDA out of memory."), out)
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	var stdout, stderr strings.Builder
	code := Main(t.Context(), []string{"search", "-", "out", "of", "memory", "--no-cache"}, &IOStreams{In: strings.NewReader(string(data)), Out: &stdout, ErrOut: &stderr})
	require.Equal(t, 0, code, stderr.String())
	require.True(t, strings.HasPrefix(stdout.String(), "stdin:170 - [rank2]: torch.OutOfMemoryError"), stdout.String())

	// Two files: the leading arguments that name files are the inputs, the rest the query.
	other := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank", "logs", "ml", "train-job-worker-4", "pytorch.log")
	out = requireExit(t, exitOK, "", "search", log, other, "out", "of", "memory", "--no-cache")
	require.Contains(t, out, "train-plain.log:170 ")
	require.Contains(t, out, "pytorch.log:56 2026-03-14T10:02:11.496Z")
	require.Contains(t, out, "2 matching lines, 2 hits shown")
}

// TestSearchEventsAndObjects: a bundle's events are lines of their own, timed like the logs,
// and its objects' YAML is searchable; a bundle with no logs is still searched.
func TestSearchEventsAndObjects(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-no-gpu") // pods that never started: no logs
	out := requireExit(t, exitOK, "", "search", sample, "FailedScheduling", "Insufficient", "--no-cache")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.True(t, strings.HasPrefix(lines[0], "events/Pod/ml/train-job-master-0:1 2026-03-14T08:00:01.000Z Warning FailedScheduling: 0/3 nodes are available"), lines[0])
	require.Equal(t, "3 matching lines, 3 hits shown", lines[len(lines)-1])

	// The same line in many objects is one hit naming the others.
	out = requireExit(t, exitOK, "", "search", sample, `"nvidia.com/gpu: 8"`, "--no-cache")
	require.Contains(t, out, "resources/core/Pod/ml/train-job-master-0.yaml:64 -         nvidia.com/gpu: '8'\n"+
		"    … the same line 5 times more, in 2 other files: resources/core/Pod/ml/train-job-worker-0.yaml, resources/core/Pod/ml/train-job-worker-1.yaml\n")

	// Events sort among log lines by time.
	out = requireExit(t, exitOK, "", "search", filepath.Join(samplesDir, "pytorchjob-evicted"), "Evicted", "--no-cache", "--since", "12:00")
	require.Contains(t, out, "events/Pod/ml/")
	require.NotContains(t, out, "resources/", "--since keeps only timed lines")
}

// TestSearchQueryWordsAndGlobs: a query word starting with - is the query's NOT, not a flag;
// a --pod glob that matches no pod is an error listing the pods; level:error finds
// tracebacks and exception lines.
func TestSearchQueryWordsAndGlobs(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	cache := t.TempDir()
	search := func(args ...string) string {
		return requireExit(t, exitOK, "", append([]string{"search", "--cache-dir", cache, sample}, args...)...)
	}
	last := func(out string) string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}
	all := search("NCCL")
	words := search("NCCL", "-info")
	require.Equal(t, last(search("NCCL -info")), last(words), "separate words are one query")
	require.Equal(t, last(search("--", "NCCL", "-info")), last(words))
	require.NotEqual(t, last(all), last(words), "-info left lines out")
	require.NotContains(t, words, " INFO ")
	require.Equal(t, last(search("NCCL", "-C2", "-info")), last(words), "-C2 is still a flag")

	requireExit(t, exitError, `coroner: --pod "worker-3" matches none of the 8 pods: train-job-master-0, train-job-worker-[0-6] (a glob matches the whole name: try '*worker-3*')`,
		"search", sample, "oom", "--pod", "worker-3", "--cache-dir", cache)
	requireExit(t, exitError, `--container "torch" matches none of the 2 containers`, "search", sample, "oom", "--container", "torch", "--cache-dir", cache)
	requireExit(t, exitUsage, "unknown flag: --bogus", "search", sample, "oom", "--bogus")

	errs := search("level:error", "--pod", "*worker-4")
	require.Contains(t, errs, "train-job-worker-4/pytorch:56 2026-03-14T10:02:11.496Z [rank5]: torch.OutOfMemoryError: CUDA out of memory")
	require.Contains(t, errs, "Traceback (most recent call last):")
}

// TestSearchHighlightsHits: on a terminal (or --color always) the words the query found are
// marked; NO_COLOR, --color never and a pipe leave the text as it is.
func TestSearchHighlightsHits(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	searchOn := func(ios *IOStreams, args ...string) string {
		var out, errOut strings.Builder
		ios.In, ios.Out, ios.ErrOut = strings.NewReader(""), &out, &errOut
		code := Main(t.Context(), append([]string{"search", sample, "--no-cache"}, args...), ios)
		require.Equal(t, 0, code, errOut.String())
		return out.String()
	}
	const on, off = "\x1b[1;30;43m", "\x1b[0m"
	tty := searchOn(&IOStreams{OutTerminal: true}, "out", "of", "memory", "-oom")
	require.Contains(t, tty, "CUDA "+on+"out"+off+" "+on+"of"+off+" "+on+"memory"+off+".")
	require.True(t, strings.HasSuffix(tty, "\n1 matching line, 1 hit shown\n"), "-oom is NOT oom, not -o om: %s", tty)
	regex := searchOn(&IOStreams{}, "--regex", "Tried to allocate [0-9.]+ GiB", "--color", "always")
	require.Contains(t, regex, on+"Tried to allocate 1.95 GiB"+off)
	for _, ios := range []*IOStreams{{}, {OutTerminal: true, NoColor: true}} {
		require.NotContains(t, searchOn(ios, "out", "of", "memory"), "\x1b[")
	}
	require.NotContains(t, searchOn(&IOStreams{OutTerminal: true}, "memory", "--color", "never"), "\x1b[")
}

// TestTarballSearchAfterAnalyze: a .tar.gz searched after analyze filled the cache (its logs
// read through the index's access points, its events and objects as the tarball streams by,
// nothing extracted) gives the hits the directory gives, log lines, events and objects alike.
func TestTarballSearchAfterAnalyze(t *testing.T) {
	dir := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	tgz := tarSample(t, dir)
	cache := t.TempDir()
	code, _, stderr := run(t, "analyze", tgz, "--cache-dir", cache, "-q")
	require.Equal(t, 0, code, stderr)
	queries := []string{"CUDA out of memory", "Scheduled", "rank:5 level:error", "nvidia.com/gpu"}
	want := map[string]string{}
	for _, q := range queries {
		code, out, stderr := run(t, "search", dir, q, "--no-cache")
		require.Equal(t, 0, code, stderr)
		require.NotContains(t, out, "0 matching lines", q)
		want[q] = out
	}
	// Extracting needs a temporary directory: with none, only the warm path can succeed.
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "none"))
	for _, q := range queries {
		code, got, stderr := run(t, "search", tgz, q, "--cache-dir", cache)
		require.Equal(t, 0, code, stderr)
		require.Equal(t, want[q], got, q)
	}
	// Past what the index keeps, the resources are read as the tarball streams by: the same files.
	sb, err := search.StreamResources(t.Context(), tgz, bundle.DefaultLimits())
	require.NoError(t, err)
	require.NotEmpty(t, sb.Files)
	for _, f := range sb.Files {
		want, err := os.ReadFile(filepath.Join(dir, f.Path))
		require.NoError(t, err)
		got, err := fs.ReadFile(sb.FS, f.Path)
		require.NoError(t, err)
		require.Equal(t, want, got, f.Path)
	}
}

// TestMergedResultsStayPartial: a search of the logs that stopped early stays marked so when
// merged with the events' and objects' results, so its counts read as lower bounds.
func TestMergedResultsStayPartial(t *testing.T) {
	logs := &index.Result{Hits: []index.Hit{}, Lines: 5, Omitted: 5, Partial: true}
	objects := &index.Result{Hits: []index.Hit{}, Lines: 0}
	res := search.Merge([]*index.Result{objects, logs}, 1)
	require.True(t, res.Partial)
	require.Equal(t, 5, res.Lines)
	var out strings.Builder
	hitPrinter{}.print(&out, res)
	require.Contains(t, out.String(), "at least 5 matching lines, 0 hits shown")
}

// TestSearchShowsControlsAsAnalyzeDoes: a hit's line cannot drive the terminal (an escape
// sequence, a bell, a right-to-left override): search writes each as its Go escape, the same
// way every other command shows bundle text.
func TestSearchShowsControlsAsAnalyzeDoes(t *testing.T) {
	log := filepath.Join(t.TempDir(), "train.log")
	require.NoError(t, os.WriteFile(log, []byte("NCCL error \x1b]0;pwned\x07 on rank 3 \u202eevil\n"), 0o644))
	code, stdout, stderr := run(t, "search", log, "NCCL", "--no-cache")
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stdout, "\x1b")
	require.NotContains(t, stdout, "\u202e")
	require.Contains(t, stdout, `pwned\a on rank 3 \u202eevil`)
}
