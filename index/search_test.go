package index

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/samplegen"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

// The brute force: every line of every log, cleaned as coroner cleans it, split into words
// by a regular expression (not by the index's own code), and queries as Go predicates.

var wordRE = regexp.MustCompile(`[0-9A-Za-z_\x{80}-\x{10FFFF}]+`)

type bfLine struct {
	path  string
	pod   string
	n     int
	time  int64
	text  string
	words []string
}

func bruteLines(t *testing.T, b *bundle.Bundle) []bfLine {
	t.Helper()
	logs, _ := parse.LogStreams(b)
	var out []bfLine
	for _, ls := range logs {
		data, err := os.ReadFile(filepath.Join(dirOf(t, b), filepath.FromSlash(ls.Path)))
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 64<<20)
		var last int64
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimRight(sc.Bytes(), "\r")
			ts, text, ok := parse.SplitTimestamp(line)
			if ok {
				last = ts.UnixNano()
			} else if lt, ok := parse.LeadingTime(line); ok {
				last = lt.UnixNano()
			}
			clean := string(logscan.Clean(nil, text))
			var words []string
			for _, w := range wordRE.FindAllString(clean, -1) {
				words = append(words, strings.ToLower(w))
			}
			out = append(out, bfLine{path: ls.Path, pod: ls.Pod, n: n, time: last, text: clean, words: words})
		}
	}
	return out
}

func dirOf(t *testing.T, b *bundle.Bundle) string {
	st, err := os.Stat(b.Source)
	require.NoError(t, err)
	require.True(t, st.IsDir())
	return b.Source
}

type pred func(l *bfLine) bool

func has(w string) pred {
	return func(l *bfLine) bool {
		for _, x := range l.words {
			if x == w {
				return true
			}
		}
		return false
	}
}

func seq(ws ...string) pred {
	return func(l *bfLine) bool {
		for i := 0; i+len(ws) <= len(l.words); i++ {
			ok := true
			for k, w := range ws {
				if l.words[i+k] != w {
					ok = false
					break
				}
			}
			if ok {
				return true
			}
		}
		return false
	}
}

func prefix(p string) pred {
	return func(l *bfLine) bool {
		for _, x := range l.words {
			if strings.HasPrefix(x, p) {
				return true
			}
		}
		return false
	}
}

func and(ps ...pred) pred {
	return func(l *bfLine) bool {
		for _, p := range ps {
			if !p(l) {
				return false
			}
		}
		return true
	}
}

func or(ps ...pred) pred {
	return func(l *bfLine) bool {
		for _, p := range ps {
			if p(l) {
				return true
			}
		}
		return false
	}
}

func not(p pred) pred { return func(l *bfLine) bool { return !p(l) } }

// searchSet runs a search listing every line and returns "path:line" of each hit.
func searchSet(t *testing.T, ix *Index, opts SearchOptions) []string {
	t.Helper()
	opts.All, opts.Limit = true, 1<<30
	res, err := ix.Search(t.Context(), opts)
	require.NoError(t, err, "%+v", opts)
	var got []string
	for _, h := range res.Hits {
		require.Equal(t, 1, h.Count)
		got = append(got, fmt.Sprintf("%s:%d", h.Path, h.Number))
	}
	require.Equal(t, len(got), res.Lines, "every matching line is listed")
	sort.Strings(got)
	return got
}

func bruteSet(lines []bfLine, p pred) []string {
	var want []string
	for i := range lines {
		if p(&lines[i]) {
			want = append(want, fmt.Sprintf("%s:%d", lines[i].path, lines[i].n))
		}
	}
	sort.Strings(want)
	return want
}

func buildIndex(t *testing.T, dir string) (*bundle.Bundle, *Index) {
	t.Helper()
	b, err := bundle.Open(t.Context(), dir, bundle.DefaultLimits())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	logs, _ := parse.LogStreams(b)
	ix, _, err := Build(t.Context(), b, logs, BuildOptions{Version: "test"})
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	return b, ix
}

// queriesFromWords checks single words, digit words, phrases and prefixes taken from the
// bundle's own lines: every distinct word when there are few, an even spread otherwise.
func checkWords(t *testing.T, ix *Index, lines []bfLine, maxWords int) {
	seen := map[string]bool{}
	var words []string
	for _, l := range lines {
		for _, w := range l.words {
			if !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	sort.Strings(words)
	step := max(1, len(words)/maxWords)
	for i := 0; i < len(words); i += step {
		w := words[i]
		require.Equal(t, bruteSet(lines, has(w)), searchSet(t, ix, SearchOptions{Query: w}), "word %q", w)
	}
	// Phrases of two and three words from spread-out lines, and prefixes of their words.
	for i := 0; i < len(lines); i += max(1, len(lines)/40) {
		ws := lines[i].words
		if len(ws) >= 3 {
			k := len(ws) / 3
			q := `"` + strings.Join(ws[k:k+2], " ") + `"`
			require.Equal(t, bruteSet(lines, seq(ws[k:k+2]...)), searchSet(t, ix, SearchOptions{Query: q}), "phrase %s", q)
			q = `"` + strings.Join(ws[:3], " ") + `"`
			require.Equal(t, bruteSet(lines, seq(ws[:3]...)), searchSet(t, ix, SearchOptions{Query: q}), "phrase %s", q)
			p := ws[k][:max(1, len(ws[k])/2)]
			require.Equal(t, bruteSet(lines, prefix(p)), searchSet(t, ix, SearchOptions{Query: p + "*"}), "prefix %s*", p)
		}
	}
}

func TestSearchEqualsBruteForceOnSamples(t *testing.T) {
	entries, err := os.ReadDir("../samples")
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		dir := filepath.Join("../samples", e.Name())
		if _, err := os.Stat(filepath.Join(dir, "logs")); !e.IsDir() || err != nil {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			b, ix := buildIndex(t, dir)
			lines := bruteLines(t, b)
			checkWords(t, ix, lines, 80)
			for _, c := range []struct {
				q string
				p pred
			}{
				{"NCCL AND timeout", and(has("nccl"), has("timeout"))},
				{"nccl timeout", and(has("nccl"), has("timeout"))},
				{"error OR warning", or(has("error"), has("warning"))},
				{"rank AND NOT error", and(has("rank"), not(has("error")))},
				{"-info", not(has("info"))},
				{"(cuda OR nccl) -error", and(or(has("cuda"), has("nccl")), not(has("error")))},
				{`"out of memory" OR "no space left"`, or(seq("out", "of", "memory"), seq("no", "space", "left"))},
				{"ProcessGroupNCCL.cpp", seq("processgroupnccl", "cpp")},
				{"exitcode 1", and(has("exitcode"), has("1"))},
			} {
				require.Equal(t, bruteSet(lines, c.p), searchSet(t, ix, SearchOptions{Query: c.q}), "query %s", c.q)
			}
			for _, expr := range []string{`loss[=:] *nan`, `(?i)out of memory`, `exit(code)?[:=]? *\d+`, `\[rank\d+\]`, `No module named`} {
				re := regexp.MustCompile(expr)
				require.Equal(t, bruteSet(lines, func(l *bfLine) bool { return re.MatchString(l.text) }),
					searchSet(t, ix, SearchOptions{Regex: expr}), "regex %s", expr)
			}
		})
	}
	require.GreaterOrEqual(t, n, 12)
}

// TestSearchEqualsBruteForceOnGeneratedBundle runs the same comparison on a generated
// training bundle, whose step lines make large templates: numbers, phrases with numbers,
// pods, and time windows.
func TestSearchEqualsBruteForceOnGeneratedBundle(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 MiB generated bundle searched word by word; skipped with -short")
	}
	dir := filepath.Join(t.TempDir(), "gen")
	require.NoError(t, samplegen.Generate(dir, 2, 2<<20, 1))
	b, ix := buildIndex(t, dir)
	lines := bruteLines(t, b)
	checkWords(t, ix, lines, 40)
	t0 := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	t1 := time.Date(2026, 3, 14, 11, 30, 0, 0, time.UTC)
	inWindow := func(l *bfLine) bool { return l.time != 0 && l.time >= t0.UnixNano() && l.time <= t1.UnixNano() }
	for _, c := range []struct {
		opts SearchOptions
		p    pred
	}{
		{SearchOptions{Query: "step 1234"}, and(has("step"), has("1234"))},
		{SearchOptions{Query: `"step 1234"`}, seq("step", "1234")},
		{SearchOptions{Query: "SeqNum=48120"}, seq("seqnum", "48120")},
		{SearchOptions{Query: "rank1 AND eval"}, and(has("rank1"), has("eval"))},
		{SearchOptions{Query: "step_0002000"}, has("step_0002000")},
		{SearchOptions{Query: "0x55d5c1a0"}, has("0x55d5c1a0")},
		{SearchOptions{Query: "step -eval"}, and(has("step"), not(has("eval")))},
		{SearchOptions{Query: "step", Since: t0, Until: t1}, and(has("step"), inWindow)},
		{SearchOptions{Query: "checkpoint", Pods: []string{"*-worker-0"}}, and(has("checkpoint"), func(l *bfLine) bool { return l.pod == "big-train-worker-0" })},
		{SearchOptions{Query: "pod:*master* AND NCCL"}, and(has("nccl"), func(l *bfLine) bool { return strings.Contains(l.pod, "master") })},
		{SearchOptions{Regex: `loss 3\.1\d+`}, func(l *bfLine) bool { return regexp.MustCompile(`loss 3\.1\d+`).MatchString(l.text) }},
	} {
		require.Equal(t, bruteSet(lines, c.p), searchSet(t, ix, c.opts), "%+v", c.opts)
	}

	// A query that hits a repetitive line gives one hit per log with the count and the span,
	// sorted by time across logs.
	res, err := ix.Search(t.Context(), SearchOptions{Query: "grad_norm", Context: 1})
	require.NoError(t, err)
	require.Len(t, res.Hits, 2, "one hit per log")
	total := 0
	for i, h := range res.Hits {
		total += h.Count
		require.Greater(t, h.Count, CollapseAt)
		require.Equal(t, "[rank<*>]: step <*> | loss <*>.<*> | lr <*>.<*>-<*> | grad_norm <*>.<*> | tokens/s <*> | mem <*>.<*>GiB", h.Template)
		require.Greater(t, h.LastLine, h.Number)
		require.True(t, h.LastTime.After(*h.Time))
		require.Len(t, h.After, 1)
		require.Equal(t, h.Number+1, h.After[0].Number)
		if i > 0 {
			require.False(t, h.Time.Before(*res.Hits[i-1].Time), "sorted by time")
		}
	}
	require.Equal(t, len(bruteSet(lines, has("grad_norm"))), total)
	require.Equal(t, total, res.Lines)
}
