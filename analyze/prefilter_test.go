package analyze

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coroner-dev/coroner/internal/literal"
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

// TestGateFindsEveryExample: the gates (each pattern's rarest literal set) find a literal
// in every must-match example of every rule and progress entry that one of its patterns
// matches, so the prefilter never drops a line a pattern matches.
func TestGateFindsEveryExample(t *testing.T) {
	rs := defaultRuleSet(t)
	checked := 0
	check := func(p pattern, gates ...*literal.Matcher) {
		for _, ex := range p.rule.Examples.Match {
			if !p.re.MatchString(ex.Text) {
				continue
			}
			checked++
			for _, g := range gates {
				if !literal.Any(g, ex.Text) {
					t.Errorf("%s: %q matches %q, but a gate finds none of its literals", p.rule.ID, p.re, ex.Text)
				}
			}
		}
	}
	for _, p := range rs.pats {
		check(p, rs.gate)
	}
	for _, p := range rs.progPats {
		if p.full != 0 {
			check(p, rs.gate, rs.progGate)
		}
	}
	if checked < 300 {
		t.Fatalf("only %d examples checked", checked)
	}
}

func TestGateLiterals(t *testing.T) {
	got := gateLiterals([]string{"nccl info ", "processgroupnccl's watchdog", "nccl", "loss", "loss", "grad_norm"})
	want := []string{"processg", "nccl", "loss", "grad_nor"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gateLiterals (-want +got):\n%s", diff)
	}
}
