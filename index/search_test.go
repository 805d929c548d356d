package index

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/samplegen"
	"github.com/coroner-dev/coroner/logscan"
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
	level string
	rank  int
}

func bruteLines(t *testing.T, b *bundle.Bundle) []bfLine {
	t.Helper()
	logs, _ := bundle.LogStreams(b)
	var out []bfLine
	for _, ls := range logs {
		data, err := os.ReadFile(filepath.Join(dirOf(t, b), filepath.FromSlash(ls.Path)))
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 64<<20)
		var last int64
		for n := 1; sc.Scan(); n++ {
			line := sc.Bytes()
			line = line[:min(len(line), b.Limits.MaxLineBytes)] // as coroner cuts long lines
			line = bytes.TrimRight(line, "\r")
			ts, text, ok := logscan.SplitTimestamp(line)
			if ok {
				last = ts.UnixNano()
			} else if lt, ok := logscan.LeadingTime(line); ok {
				last = lt.UnixNano()
			}
			clean := string(logscan.Clean(nil, text))
			var words []string
			for _, w := range wordRE.FindAllString(clean, -1) {
				words = append(words, strings.ToLower(w))
			}
			out = append(out, bfLine{path: ls.Path, pod: ls.Pod, n: n, time: last, text: clean, words: words, level: bruteLevel(words),
				rank: bruteRank(clean)})
		}
	}
	return out
}

// bruteLevel is the level a line names among its first 12 words: a level word, glog's E0314
// (a letter and four or five digits), a traceback's start or an exception class.
var (
	glogRE = regexp.MustCompile(`^[iwef][0-9]{3,4}$`)
	rankRE = regexp.MustCompile(`^\[rank([0-9]{1,6})\]`)
)

func bruteLevel(words []string) string {
	for i, w := range words {
		if i == 12 {
			break
		}
		switch w {
		case "fatal", "critical", "panic":
			return "critical"
		case "error", "err":
			return "error"
		case "warning", "warn":
			return "warning"
		case "info":
			return "info"
		case "debug", "trace":
			return "debug"
		}
		if glogRE.MatchString(w) {
			return map[byte]string{'i': "info", 'w': "warning", 'e': "error", 'f': "critical"}[w[0]]
		}
		// No level word: "Traceback (most recent call last)", an exception or error class
		// ("torch.OutOfMemoryError:"), a warning class ("UserWarning:").
		switch {
		case w == "most" && i > 0 && words[i-1] == "traceback":
			return "error"
		case len(w) > 5 && (strings.HasSuffix(w, "error") || strings.HasSuffix(w, "exception")):
			return "error"
		case len(w) > 7 && strings.HasSuffix(w, "warning"):
			return "warning"
		}
	}
	return ""
}

// bruteRank is the rank of torchrun's "[rankN]:" line prefix (up to six digits), or -1.
func bruteRank(text string) int {
	m := rankRE.FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
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
	logs, _ := bundle.LogStreams(b)
	ix, err := Build(t.Context(), b, logs, BuildOptions{Version: "test"})
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
			for !utf8.ValidString(p) {
				p = ws[k][:len(p)+1]
			}
			require.Equal(t, bruteSet(lines, prefix(p)), searchSet(t, ix, SearchOptions{Query: p + "*"}), "prefix %s*", p)
		}
	}
}

func TestSearchEqualsBruteForceOnSamples(t *testing.T) {
	// Packs of a few bodies (see packMax): a sample's small logs are in many packs, between
	// the raw bodies of its large ones.
	defer func(n int) { packMax = n }(packMax)
	packMax = 1 << 10
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

func level(l string) pred { return func(b *bfLine) bool { return b.level == l } }

func rank(r int) pred { return func(b *bfLine) bool { return b.rank == r } }

// TestSearchEqualsBruteForceOnEveryKind runs the comparison on small bundles of every kind of
// content make bench measures: lines that never repeat (kept in chunks with filters, several
// batches of them), a number on every line, one huge line (cut at the line limit), and many
// tiny logs, with word, phrase, prefix, number, field and NOT queries and regexes.
func TestSearchEqualsBruteForceOnEveryKind(t *testing.T) {
	if testing.Short() {
		t.Skip("generated bundles searched word by word; skipped with -short")
	}
	defer func(n int) { batchChunks = n }(batchChunks)
	batchChunks = 5
	defer func(n int) { packMax = n }(packMax)
	packMax = 1 << 10
	for _, o := range []samplegen.Options{
		{Kind: samplegen.Distinct, Ranks: 3, Size: 3 << 18},
		{Kind: samplegen.Numbers, Ranks: 2, Size: 1 << 20},
		{Kind: samplegen.HugeLine, Ranks: 1, Size: 5 << 19},
		{Kind: samplegen.TinyFiles, Ranks: 60, Size: 60 * 8 * 80},
	} {
		t.Run(string(o.Kind), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "gen")
			o.Seed = 1
			require.NoError(t, samplegen.GenerateKind(dir, o))
			b, ix := buildIndex(t, dir)
			if o.Kind == samplegen.Distinct {
				require.Greater(t, ix.chunks.chunks(), 2*batchChunks, "the lines that never repeat are in chunks, in several batches")
			}
			if o.Kind == samplegen.TinyFiles {
				packs := 0
				for _, f := range ix.body.frames {
					if f.pack {
						packs++
					}
				}
				require.Greater(t, packs, 10, "the tiny logs' bodies are in packs, many of them")
			}
			lines := bruteLines(t, b)
			checkWords(t, ix, lines, 60)
			for _, c := range []struct {
				q string
				p pred
			}{
				{"NCCL AND timeout", and(has("nccl"), has("timeout"))},
				{"level:error", level("error")},
				{"level:info -nccl", and(level("info"), not(has("nccl")))},
				{"rank:1", rank(1)},
				{"rank:0 OR rank:1", or(rank(0), rank(1))},
				{"rank:1 step", and(rank(1), has("step"))},
				{"step 100", and(has("step"), has("100"))},
				{`"step 100"`, seq("step", "100")},
				{"samples 100", and(has("samples"), has("100"))},
				{"-step", not(has("step"))},
				{"tokens -peda", and(has("tokens"), not(has("peda")))},
				{"request_id OR generation", or(has("request_id"), has("generation"))},
				{"pod:*worker-1 loading", and(has("loading"), func(l *bfLine) bool { return strings.HasSuffix(l.pod, "worker-1") })},
				{"sidecar* exit", and(prefix("sidecar"), has("exit"))},
				{"tensor*", prefix("tensor")},
				{"in*", prefix("in")},
			} {
				require.Equal(t, bruteSet(lines, c.p), searchSet(t, ix, SearchOptions{Query: c.q}), "query %s", c.q)
			}
			for _, expr := range []string{`request_id": "[0-9a-f]{4}`, `\[rank\d+\]: tokens`, `(?i)out of memory`, `status 2$`, `▁pe`, `,  4\d\d,`} {
				re := regexp.MustCompile(expr)
				require.Equal(t, bruteSet(lines, func(l *bfLine) bool { return re.MatchString(l.text) }),
					searchSet(t, ix, SearchOptions{Regex: expr}), "regex %s", expr)
			}
		})
	}
}

// TestLimitedSearchStopsEarly: past the verify budget a search reads lines in time order and
// stops: its hits are lines that match, its first hit is the earliest matching line, counts
// are lower bounds, and a repeated line's last line is the real last one.
func TestLimitedSearchStopsEarly(t *testing.T) {
	defer func(n int) { verifyBudget = n }(verifyBudget)
	verifyBudget = 200
	dir := filepath.Join(t.TempDir(), "gen")
	require.NoError(t, samplegen.GenerateKind(dir, samplegen.Options{Kind: samplegen.Numbers, Ranks: 3, Size: 3 << 20, Seed: 1}))
	b, ix := buildIndex(t, dir)
	lines := bruteLines(t, b)
	for _, c := range []struct {
		q string
		p pred
	}{
		{"step 100", and(has("step"), has("100"))},
		{"samples 17", and(has("samples"), has("17"))},
		{"grad_norm 1", and(has("grad_norm"), has("1"))},
	} {
		for _, limit := range []int{1, 5, 200} {
			res, err := ix.Search(t.Context(), SearchOptions{Query: c.q, Limit: limit})
			require.NoError(t, err)
			require.True(t, res.Partial, "%s: more candidates than the budget", c.q)
			var matches []*bfLine
			byPlace := map[string]*bfLine{}
			for i := range lines {
				if c.p(&lines[i]) {
					matches = append(matches, &lines[i])
					byPlace[fmt.Sprintf("%s:%d", lines[i].path, lines[i].n)] = &lines[i]
				}
			}
			require.NotEmpty(t, res.Hits)
			require.LessOrEqual(t, len(res.Hits), limit)
			require.LessOrEqual(t, res.Lines, len(matches))
			for _, h := range res.Hits {
				l := byPlace[fmt.Sprintf("%s:%d", h.Path, h.Number)]
				require.NotNil(t, l, "%s: hit %s:%d does not match", c.q, h.Path, h.Number)
				require.Equal(t, l.text, h.Text)
				if h.Count > 1 {
					last := byPlace[fmt.Sprintf("%s:%d", h.Path, h.LastLine)]
					require.NotNil(t, last, "%s: the last line of a repeated hit matches", c.q)
					same := 0
					for _, m := range matches {
						if m.path == h.Path && m.n > h.LastLine && shapeKey(m.text) == shapeKey(l.text) {
							same++
						}
					}
					require.Zero(t, same, "%s: %s:%d is the last line of its shape that matches", c.q, h.Path, h.LastLine)
				}
			}
			// The earliest match by time, then path and line, is the first hit.
			first := matches[0]
			for _, m := range matches[1:] {
				if m.time < first.time || (m.time == first.time && (m.path < first.path || (m.path == first.path && m.n < first.n))) {
					first = m
				}
			}
			require.Equal(t, fmt.Sprintf("%s:%d", first.path, first.n), fmt.Sprintf("%s:%d", res.Hits[0].Path, res.Hits[0].Number), "%s --limit %d", c.q, limit)
		}
	}
	// A number that every line of its blocks holds ("loss 3.xxxx": the slot is 3 throughout)
	// needs no line read to be counted: exact, whatever the budget.
	res, err := ix.Search(t.Context(), SearchOptions{Query: "loss 3", Limit: 5})
	require.NoError(t, err)
	require.False(t, res.Partial)
	require.Len(t, bruteSet(lines, and(has("loss"), has("3"))), res.Lines)
	// Listing every line reads everything: exact again.
	require.Equal(t, bruteSet(lines, and(has("step"), has("100"))), searchSet(t, ix, SearchOptions{Query: "step 100"}))
}

func shapeKey(text string) string {
	var k logscan.Keyer
	return string(k.Key([]byte(text)))
}
