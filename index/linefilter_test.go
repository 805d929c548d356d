package index

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/search/syntax"
)

// TestLineFilterFindsWhatLinesHold: the lines a search skips unread in bulk (lineFilter) are
// only those that cannot match. Lines that never repeat (read back from chunks) hold the
// query's words in any case, split by an escape or a NUL that cleaning removes, as a rune that
// folds into them, or not at all; some have no time of their own and take the time of a line
// before them that was skipped. Every hit and its time is the brute force's.
func TestLineFilterFindsWhatLinesHold(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "filter")
	r := rand.New(rand.NewPCG(1, 2))
	filler := []string{"alpha", "gamma", "loss", "grad", "norm", "Epoch", "SHARD", "worker", "retry"}
	word := func(special int) string {
		k := r.IntN(60)
		if k >= 4 && k <= 6 && k != special {
			k = 0
		}
		switch k {
		case 0:
			return "tokens"
		case 1:
			return "TOKENS"
		case 2:
			return "peda"
		case 3:
			return "PeDa"
		case 4:
			return "pe\x1b[1mda" // an escape inside the word: cleaned, it is "peda"
		case 5:
			return "tok\x00ens"
		case 6:
			return "to\u212aens" // the Kelvin sign folds to k
		case 7:
			return "pedagogy"
		case 8:
			return "\u2581peda" // a SentencePiece piece: one run of word bytes, not the word
		case 9:
			return "x_tokens"
		case 10:
			return "\xfftokens" // an invalid byte (U+FFFD once cleaned) starts the run
		case 11:
			return "[peda]"
		case 12:
			return "tokens\u2581peda"
		case 13:
			return "x\rpeda" // the progress bar's last frame starts at the word
		case 14:
			return "9PEDA"
		}
		return fmt.Sprintf("%s%x", filler[r.IntN(len(filler))], r.Uint32())
	}
	var log strings.Builder
	for i := range 6000 {
		if i%7 != 3 && i%7 != 4 { // else a line without a time of its own
			fmt.Fprintf(&log, "2026-03-14T10:%02d:%02d.%06dZ ", i/3600%60, i/60%60, i)
		}
		// Escapes, NULs and Kelvin signs each in a few stretches only: the lines around them
		// are read one by one, the others in bulk.
		special := 0
		if j := i % 3000; j%1000 >= 100 && j%1000 < 120 {
			special = 4 + j/1000
		}
		for range 3 + r.IntN(12) {
			log.WriteString(word(special) + " ")
		}
		log.WriteString("\n")
	}
	// A log of lines that never repeat but for a few far apart that hold the word cut by a
	// NUL or an escape, in capitals, as a Kelvin sign, or after lines without a time.
	var edge strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&edge, "2026-03-14T10:%02d:%02d.%06dZ w%x alpha%d x\n", i/3600%60, i/60%60, i, i*7919, i*31)
		switch i {
		case 700:
			edge.WriteString("2026-03-14T11:00:00Z hello tok\x00ens there\n")
		case 1400:
			edge.WriteString("2026-03-14T11:00:01Z hello to\x1b[1mkens there\n")
		case 2100:
			edge.WriteString("2026-03-14T11:00:02Z hello to\u212aens there\n")
		case 2800:
			edge.WriteString("no time of its own\nTOKENS nor this one\n")
		}
	}
	for name, text := range map[string]string{"main.log": log.String(), "edge.log": edge.String()} {
		p := filepath.Join(dir, "logs", "ml", "job-0", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	b, ix := buildIndex(t, dir)
	lines := bruteLines(t, b)
	for _, c := range []struct {
		q string
		p pred
	}{
		{"tokens AND peda", and(has("tokens"), has("peda"))},
		{"peda", has("peda")},
		{"tokens", has("tokens")},
		{"tokens OR pedagogy", func(l *bfLine) bool { return has("tokens")(l) || has("pedagogy")(l) }},
		{"tokens AND NOT peda", func(l *bfLine) bool { return has("tokens")(l) && !has("peda")(l) }},
		{"ped*", prefix("ped")},
		{`"tokens peda"`, seq("tokens", "peda")},
	} {
		var want, got []string
		for i := range lines {
			if c.p(&lines[i]) {
				want = append(want, fmt.Sprintf("%s:%d@%d", lines[i].path, lines[i].n, lines[i].time))
			}
		}
		res, err := ix.Search(t.Context(), SearchOptions{Query: c.q, All: true, Limit: 1 << 30})
		require.NoError(t, err)
		for _, h := range res.Hits {
			got = append(got, fmt.Sprintf("%s:%d@%d", h.Path, h.Number, h.Time.UnixNano()))
		}
		sort.Strings(want)
		sort.Strings(got)
		require.NotEmpty(t, want, c.q)
		require.Equal(t, want, got, c.q)
	}
}

// TestLineFilterSkipsWordsInsideRuns: a line holds a word, a phrase's word or a prefix only
// where a run of word bytes starts, so a line that holds the letters only inside runs (the
// pieces of a tokenizer's dump, "▁peda") is skipped in bulk, not checked line by line:
// a query over a log of such pieces reads no line it cannot match.
func TestLineFilterSkipsWordsInsideRuns(t *testing.T) {
	buf := []byte("tokens: ['▁peda', '▁zuxire']\n" +
		"x_tokens peda\n" +
		"Tokens: peda\n" +
		"\xfftokens [peda]\n" +
		"TOKENS 9PEDA\n" +
		"tokens\rpeda\n")
	starts := func(ls []int) (out []string) {
		for _, l := range ls {
			out = append(out, string(buf[l:l+bytes.IndexByte(buf[l:], '\n')]))
		}
		return out
	}
	filter := func(q string) *lineFilter {
		n, err := syntax.Parse(q)
		require.NoError(t, err)
		return newLineFilter(needs(n), true)
	}
	f := filter("tokens AND peda")
	got, all := f.candidates(nil, buf)
	require.False(t, all)
	require.Equal(t, []string{"Tokens: peda", "tokens\rpeda"}, starts(got))
	f = filter("ped*")
	got, _ = f.candidates(nil, buf)
	require.Equal(t, []string{"x_tokens peda", "Tokens: peda", "\xfftokens [peda]", "tokens\rpeda"}, starts(got))
}

// TestFilteredReadEqualsFullRead: reading every line of each log with a query's filter (or a
// regular expression's) gives the lines that match, and their times, that reading them all
// and checking each gives.
func TestFilteredReadEqualsFullRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "read")
	var log strings.Builder
	// Each line that holds the word unusually is far (more than a buffer) from the others.
	for i := range 15000 {
		if i%5 != 1 && i%5 != 2 { // else a line without a time of its own
			fmt.Fprintf(&log, "2026-03-14T10:%02d:%02d.%06dZ ", i/3600%60, i/60%60, i)
		}
		fmt.Fprintf(&log, "w%x alpha%d x\n", i*7919, i*31)
		switch i {
		case 1000:
			log.WriteString("hello tok\x00ens there\n")
		case 4000:
			log.WriteString("hello to\x1b[1mkens there\n")
		case 7000:
			log.WriteString("hello to\u212aens there\n")
		case 10000:
			log.WriteString("TOKENS peda Peda\n")
		case 12000:
			// The long s: a case-insensitive regular expression folds it into 's'.
			log.WriteString("hello token\u017f there\n")
		case 13000:
			// The words inside runs of word bytes, then as words.
			log.WriteString("\u2581tokens x_peda \xffTOKENS peda9\n[tokens] (peda)\n")
		}
		if i%1000 == 501 {
			log.WriteString("tokens\n")
		}
	}
	p := filepath.Join(dir, "logs", "ml", "job-0", "main.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(log.String()), 0o644))
	_, ix := buildIndex(t, dir)
	var ms []matcher
	for _, q := range []string{"tokens", "tokens AND peda", "peda OR tokens", "tok*", `"tokens peda"`, "alpha* AND NOT tokens"} {
		m, err := ix.queryMatcher(t.Context(), q)
		require.NoError(t, err)
		ms = append(ms, m)
	}
	for _, expr := range []string{`tokens`, `(?i)tokens\b`, `TOKENS.*[Pp]eda`, `to[kK]ens`, `(?i)tokens there`} {
		m, err := ix.regexMatcher(expr)
		require.NoError(t, err)
		ms = append(ms, m)
	}
	for q, m := range ms {
		require.NotNil(t, m.filter(), q)
		for _, s := range ix.streams {
			all := make([]int, s.Lines)
			for i := range all {
				all[i] = i + 1
			}
			read := func(f *lineFilter) []string {
				src, err := ix.source(s, len(all))
				require.NoError(t, err)
				defer src.close()
				var got []string
				require.NoError(t, src.read(t.Context(), all, f, func(n int, ts int64, text []byte) error {
					if m.line(s, text) {
						got = append(got, fmt.Sprintf("%d@%d", n, ts))
					}
					return nil
				}))
				return got
			}
			want := read(nil)
			require.NotEmpty(t, want, q)
			require.Equal(t, want, read(m.filter()), q)
		}
	}
}
