package analyze

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRequiredLiterals(t *testing.T) {
	tests := []struct {
		pattern string
		want    []string
	}{
		{`CUDA out of memory\. Tried to allocate`, []string{"cuda out of memory. tried to allocate"}},
		{`(?i)no space left on device`, []string{"no space left on device"}},
		{`No module named '(?P<module>[\w.]+)'`, []string{"no module named '"}},
		{`(?:ModuleNotFoundError|ImportError): x`, []string{"modulenotfounderror", "importerror"}},
		{`\bloss[=: ]+nan\b`, []string{"loss"}},
		{`Xid \((?P<pci>[^)]*)\): (?P<code>\d+)`, []string{"xid ("}},
		{`^\d+$`, nil},
		{`a|bc`, nil}, // "a" is too short to be worth it
		{`(?i)größe`, nil},
	}
	for _, tt := range tests {
		got := requiredLiterals(tt.pattern)
		sort.Strings(got)
		sort.Strings(tt.want)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("requiredLiterals(%q) (-want +got):\n%s", tt.pattern, diff)
		}
	}
}

// TestPrefilterNeverMissesAMatch checks the prefilter's promise on a set of patterns and
// lines: whenever the regexp matches, one of its required literals is found by the automaton.
func TestPrefilterNeverMissesAMatch(t *testing.T) {
	patterns := []string{
		`CUDA out of memory\. Tried to allocate`, `(?i)no space left on device`, `\bloss[=: ]+nan\b`,
		`Watchdog caught collective operation timeout`, `(?:ModuleNotFoundError|ImportError): No module named`,
		`exited on signal (?P<sig>\d+)`,
	}
	lines := []string{
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
		"OSError: [Errno 28] No Space Left On Device",
		"step 12 | LOSS: nan | lr 1e-4", "step 12 | loss 2.3",
		"[rank3]:[E314 10:12:04.182731 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(...)",
		"ModuleNotFoundError: No module named 'flash_attn'",
		"mpirun noticed that process rank 2 with PID 0 on node w-1 exited on signal 9 (Killed).",
		"", "nothing to see here",
	}
	var lits []string
	owner := []int{}
	for i, p := range patterns {
		for _, l := range requiredLiterals(p) {
			lits = append(lits, l)
			owner = append(owner, i)
		}
	}
	ac := newACMatcher(lits)
	for _, line := range lines {
		found := map[int]bool{}
		ac.scan([]byte(line), func(id int32) { found[owner[id]] = true })
		for i, p := range patterns {
			if regexp.MustCompile(p).MatchString(line) && !found[i] {
				t.Errorf("pattern %q matches %q but the prefilter found none of %q", p, line, requiredLiterals(p))
			}
		}
	}
}

func TestACMatcherFindsOverlaps(t *testing.T) {
	ac := newACMatcher([]string{"he", "she", "his", "hers"})
	var got []int32
	ac.scan([]byte(strings.ToUpper("ushers")), func(id int32) { got = append(got, id) })
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if diff := cmp.Diff([]int32{0, 1, 3}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestTitleFor(t *testing.T) {
	r := &Rule{Title: "Training process failed (exit code {code})"}
	if got := r.TitleFor(map[string]string{"code": "1"}); got != "Training process failed (exit code 1)" {
		t.Errorf("got %q", got)
	}
	if got := r.TitleFor(nil); got != "Training process failed" {
		t.Errorf("got %q", got)
	}
	r = &Rule{Title: "{role}: {created} of {expected} pods created"}
	if got := r.TitleFor(map[string]string{"role": "Worker", "created": "1", "expected": "3"}); got != "Worker: 1 of 3 pods created" {
		t.Errorf("got %q", got)
	}
	r = &Rule{Title: "Insufficient {resource}"}
	if got := r.TitleFor(map[string]string{"resource": "{x}"}); got != "Insufficient {x}" {
		t.Errorf("a value with braces must not be re-expanded: got %q", got)
	}
}
