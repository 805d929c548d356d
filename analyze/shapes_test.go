package analyze

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/internal/samplegen"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

// checkShapeFilter scans every log of a bundle as Run does and checks that each line the
// shape filters rule out is one the rules do not match, and that each line the tail filters
// call quiet holds no tail word. It returns how many lines were ruled out, and of how many.
func checkShapeFilter(t *testing.T, b *bundle.Bundle, logs []bundle.LogStream, rs *RuleSet) (skipped, lines int) {
	skipped, _, lines = checkShapeFilters(t, b, logs, rs)
	return skipped, lines
}

func checkShapeFilters(t *testing.T, b *bundle.Bundle, logs []bundle.LogStream, rs *RuleSet) (skipped, quiet, lines int) {
	t.Helper()
	scanners := make([]*logScanner, len(logs))
	counts := make([][3]int, len(logs))
	errs := make([]string, len(logs))
	ix, _, err := scanWith(t.Context(), b, logs, index.BuildOptions{}, logscan.LogFunc(func(i int) func(*logscan.Scanned) {
		scanners[i] = newLogScanner(logs[i], rs, rs.NewScratch())
		sc := rs.NewScratch()
		return func(l *logscan.Scanned) {
			counts[i][1]++
			may := scanners[i].mayMatch(l)
			if scanners[i].tailQuiet(l) {
				counts[i][2]++
				text, _ := splitPrefix(l.Text)
				if w := tailWordsOf(text); w != 0 && errs[i] == "" {
					errs[i] = fmt.Sprintf("%s:%d %q: called quiet, but holds tail words %b", logs[i].Path, l.Number, l.Text, w)
				}
			}
			if may {
				return
			}
			counts[i][0]++
			if hits := rs.Match(l.Text, sc); len(hits) > 0 && errs[i] == "" {
				errs[i] = fmt.Sprintf("%s:%d %q: ruled out, but %s matches", logs[i].Path, l.Number, l.Text, hits[0].Rule.ID)
			}
		}
	}))
	require.NoError(t, err)
	ix.Close()
	for i := range logs {
		require.Empty(t, errs[i])
		skipped += counts[i][0]
		lines += counts[i][1]
		quiet += counts[i][2]
	}
	return skipped, quiet, lines
}

func defaultRuleSet(t testing.TB) *RuleSet {
	rs, err := BuiltinRuleSet()
	require.NoError(t, err)
	return rs
}

// TestShapeFilterRulesOutOnlyLinesNoRuleMatches runs the filter on the samples, on a
// generated training bundle (where it must rule out nearly every line), and on a log made of
// every rule's examples with their numbers varied, where the numbers decide the match.
func TestShapeFilterRulesOutOnlyLinesNoRuleMatches(t *testing.T) {
	rs := defaultRuleSet(t)
	entries, err := os.ReadDir("../samples")
	require.NoError(t, err)
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join("../samples", e.Name(), "logs")); !e.IsDir() || err != nil {
			continue
		}
		b, err := bundle.Open(t.Context(), filepath.Join("../samples", e.Name()), bundle.DefaultLimits())
		require.NoError(t, err)
		logs, _ := bundle.LogStreams(b)
		checkShapeFilter(t, b, logs, rs)
		b.Close()
	}

	gen := filepath.Join(t.TempDir(), "gen")
	require.NoError(t, samplegen.Generate(gen, 2, 2<<20, 1))
	b, err := bundle.Open(t.Context(), gen, bundle.DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	logs, _ := bundle.LogStreams(b)
	skipped, quiet, lines := checkShapeFilters(t, b, logs, rs)
	require.Greater(t, skipped, lines*9/10, "the step lines need no rule")
	require.Greater(t, quiet, lines*9/10, "the step lines need no pass for their terminal failure")

	// Every rule example, each 40 times with its numbers changed, between step lines: the
	// shapes of the examples get filters, and lines whose numbers make them match (exit code
	// 137, Xid 79) must still be seen.
	rng := rand.New(rand.NewSource(7))
	digits := regexp.MustCompile(`[0-9]+`)
	var log strings.Builder
	examples := 0
	for _, r := range rs.Rules() {
		if r.Kind() != "patterns" && r.Kind() != "progress" {
			continue
		}
		for _, ex := range r.Examples.Match {
			examples++
			for k := 0; k < 40; k++ {
				line := ex.Text
				if k > 0 {
					line = digits.ReplaceAllStringFunc(ex.Text, func(d string) string {
						if rng.Intn(3) == 0 {
							return d
						}
						return fmt.Sprint(rng.Intn(200))
					})
				}
				fmt.Fprintf(&log, "2026-03-14T10:00:%02d.000000000Z %s\n", k%60, line)
				fmt.Fprintf(&log, "2026-03-14T10:00:%02d.500000000Z [rank3]: step %d | loss 2.%04d\n", k%60, k, rng.Intn(10000))
			}
		}
	}
	fsys := fstest.MapFS{"logs/ml/p/c.log": {Data: []byte(log.String())}}
	logs = []bundle.LogStream{{Path: "logs/ml/p/c.log", Namespace: "ml", Pod: "p", Container: "c"}}
	skipped, lines = checkShapeFilter(t, &bundle.Bundle{FS: fsys, Limits: bundle.DefaultLimits()}, logs, rs)
	require.GreaterOrEqual(t, lines, 2*40*examples)
	require.Greater(t, skipped, lines/3)

	// The real logs of the corpus, when it is beside the repository, each a log.
	real, err := filepath.Glob("../../shared/corpus/real/*.log")
	require.NoError(t, err)
	fsys, logs = fstest.MapFS{}, nil
	for _, f := range real {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		name := strings.TrimSuffix(filepath.Base(f), ".log")
		p := "logs/ml/" + name + "/c.log"
		fsys[p] = &fstest.MapFile{Data: data}
		logs = append(logs, bundle.LogStream{Path: p, Namespace: "ml", Pod: name, Container: "c"})
	}
	if len(logs) > 0 {
		checkShapeFilter(t, &bundle.Bundle{FS: fsys, Limits: bundle.DefaultLimits()}, logs, rs)
	}
}

// TestEscapedRecordMatchesInEveryLog: a JSON record whose message holds an escaped quote
// (`persistentvolumeclaim \"data-07\" not found`) matches a rule only once decoded, while the
// shape filters are made of the raw line; a Docker json-file record, whose only escape is the
// line end, is left to its shape's filter like a plain line (TestRecordEscaped holds which
// records are), so that filter must let its failing line through. Every log of many, scanned
// by two workers or one, with the filters an earlier analysis made or none, keeps its finding.
func TestEscapedRecordMatchesInEveryLog(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	rs, err := NewRuleSet(all)
	require.NoError(t, err)
	for _, form := range []struct {
		name        string
		step, fault string // fmt formats of a progress record and the failing one
	}{
		{"logger", "step %d loss 0.0%d\n", `{"level":"info","ts":"2024-01-01T00:00:01Z","msg":"persistentvolumeclaim \"data-%02d\" not found"}` + "\n"},
		{"json-file", `{"log":"step %d loss 0.0%d\n","stream":"stdout","time":"2024-01-01T00:00:00.1Z"}` + "\n",
			`{"log":"RuntimeError: CUDA error: an illegal memory access was encountered (device %02d)\n","stream":"stderr","time":"2024-01-01T00:00:01.1Z"}` + "\n"},
	} {
		dir := t.TempDir()
		const logs = 80
		var paths []string
		for i := range logs {
			var b strings.Builder
			for s := 1; s <= 50; s++ {
				fmt.Fprintf(&b, form.step, s, s)
			}
			fmt.Fprintf(&b, form.fault, i)
			p := filepath.Join(dir, fmt.Sprintf("w%02d.log", i))
			require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
			paths = append(paths, p)
		}
		for _, procs := range []int{2, 2, 2, 1} {
			prev := runtime.GOMAXPROCS(procs)
			b, err := bundle.OpenLogs(t.Context(), paths, nil, bundle.DefaultLimits())
			require.NoError(t, err)
			m, err := parse.Load(b)
			require.NoError(t, err)
			res, ix, err := analyzeModel(t.Context(), m, rs, index.BuildOptions{}, Options{})
			runtime.GOMAXPROCS(prev)
			require.NoError(t, err)
			ix.Close()
			b.Close()
			require.NotNil(t, res.RootCause, res.VerdictReason)
			found := map[string]bool{}
			for _, f := range res.Findings {
				if f.RuleID == res.RootCause.RuleID {
					found[f.log] = true
				}
			}
			require.Len(t, found, logs, "%s, GOMAXPROCS=%d", form.name, procs)
		}
	}
}
