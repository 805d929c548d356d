package analyze

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/logscan"
)

func sampleLines(f testing.TB, every int) []string {
	logs, _ := filepath.Glob("../samples/*/logs/*/*/*.log")
	var out []string
	for i, p := range logs {
		if i%every != 0 {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		out = append(out, lines[len(lines)/2:min(len(lines), len(lines)/2+10)]...)
		out = append(out, lines[max(0, len(lines)-12):]...)
	}
	return out
}

// FuzzCleanLine: what matching sees has no escape sequences, NUL bytes or invalid UTF-8.
func FuzzCleanLine(f *testing.F) {
	for _, l := range sampleLines(f, 6) {
		f.Add([]byte(l))
	}
	for _, s := range []string{"\x1b[31mred\x1b[0m", "10%|█\r 20%|██\r", "a\x00b", "\xff\xfe", "\x1b[", "\x1b", "x\r\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		out := logscan.Clean(nil, line)
		if !utf8.Valid(out) || bytes.IndexByte(out, 0x1b) >= 0 || bytes.IndexByte(out, 0) >= 0 {
			t.Fatalf("logscan.Clean(%q) = %q", line, out)
		}
		excerpt(out)
	})
}

// FuzzRuleSet: the rule engine never panics, and its prefilter never hides a match: every
// non-fallback rule whose regular expression matches a cleaned line, and no unless expression of
// it, is reported by Match.
func FuzzRuleSet(f *testing.F) {
	rules, err := DefaultRules()
	if err != nil {
		f.Fatal(err)
	}
	rs, err := NewRuleSet(rules)
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range sampleLines(f, 3) {
		f.Add(l)
	}
	for _, r := range rules {
		for _, ex := range r.Examples.Match {
			f.Add(ex.Text)
		}
	}
	sc := rs.NewScratch()
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 4096 {
			return // longer lines only cost time: every regexp runs in the check below
		}
		clean := logscan.Clean(nil, []byte(line))
		got := map[string]bool{}
		for _, h := range rs.Match(clean, sc) {
			got[h.Rule.ID] = true
			h.Rule.TitleFor(h.Groups)
		}
		for _, r := range rs.Rules() {
			if r.Role.Fallback() || got[r.ID] {
				continue
			}
			for _, cp := range r.res {
				if cp.kind == kindLine && cp.re.Match(clean) && !r.excluded(clean) {
					t.Fatalf("rule %s matches %q but Match did not report it", r.ID, clean)
				}
			}
		}
		rs.MatchEvent("Failed", line)
	})
}

// FuzzAnalyzeLogs: analyzing plain logs never panics, whatever the lines: the fuzzer shuffles,
// cuts and mixes lines of the samples' logs (rank prefixes, progress lines, NCCL and Python
// failures, collector times) into one or two logs. A log whose progress lines lost their rank
// prefix half-way once indexed a progress ring past its end.
func FuzzAnalyzeLogs(f *testing.F) {
	lines := sampleLines(f, 3)
	for i := 0; i+8 <= len(lines); i += 8 {
		f.Add(strings.Join(lines[i:i+8], "\n"), strings.Join(lines[len(lines)-8-i:len(lines)-i], "\n"))
	}
	f.Add("[rank0]: step 1 loss 2.5\n[rank0]: step 2 loss 2.4\nstep 3 loss 2.3\nstep 4 loss 2.2\n", "")
	// A '>' without NCCL's " -> " once sliced past a line's start in the check for NCCL's
	// error trace.
	f.Add("step 1 loss 2.5\nRuntimeError: boom\n=>\n", "epoch 3 top5 acc >90%\n>\n")
	f.Add("2024-05-01T10:00:01Z [1,0]<stdout>:step 1\n2024-05-01T10:00:02Z step 2\n[rank1]: Traceback (most recent call last):\n", "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
	all, err := DefaultRules()
	if err != nil {
		f.Fatal(err)
	}
	rs, err := NewRuleSet(all)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a)+len(b) > 1<<16 {
			return
		}
		logs := []string{a}
		if b != "" {
			logs = append(logs, b)
		}
		analyzeLogsWith(t, rs, logs...)
	})
}
