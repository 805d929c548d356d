package analyze

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// TestBuiltinRuleExamples is the table test of every rule: its must-match lines match it
// through the compiled rule set (prefilter included), its must-not-match lines do not.
func TestBuiltinRuleExamples(t *testing.T) {
	rules, err := DefaultRules()
	require.NoError(t, err)
	rs, err := NewRuleSet(rules)
	require.NoError(t, err)
	sc := rs.NewScratch()
	for _, r := range rs.Rules() {
		t.Run(r.ID, func(t *testing.T) {
			require.Empty(t, r.Lint())
			if r.Kind() != "patterns" {
				return // Lint ran the other kinds' examples through the same engine
			}
			for _, ex := range r.Examples.Match {
				got := false
				for _, h := range rs.Match([]byte(ex.Text), sc) {
					got = got || h.Rule == r
				}
				// A fallback rule yields to specific ones on the same line; it must at least match alone.
				if !got && r.Fallback {
					_, got = r.matchText(ex.Text)
				}
				require.True(t, got, "rule %s does not match its example through the rule set: %q", r.ID, ex.Text)
			}
			for _, ex := range r.Examples.NotMatch {
				for _, h := range rs.Match([]byte(ex.Text), sc) {
					require.NotEqual(t, r.ID, h.Rule.ID, "matches its counter-example %q", ex.Text)
				}
			}
		})
	}
}

func TestEveryCategoryHasARule(t *testing.T) {
	rules, err := DefaultRules()
	require.NoError(t, err)
	have := map[Category]bool{}
	for _, r := range rules {
		have[r.Category] = true
	}
	for _, c := range Categories {
		require.True(t, have[c], "no rule for category %s", c)
	}
}

func TestLoadRulesStrict(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "rules:\n- id: x\n  categry: cuda-oom\n", `unknown field "categry"`},
		{"bad category", "rules:\n- {id: x, category: oom, severity: error, layer: execution, title: t, fault: user, retry: permanent, match: {patterns: [abcd]}}\n", `category "oom" is not one of`},
		{"bad regexp", "rules:\n- {id: x, category: cuda-oom, severity: error, layer: execution, title: t, fault: user, retry: permanent, match: {patterns: ['(?<=x)abc']}}\n", "pattern"},
		{"bad severity", "rules:\n- {id: x, category: cuda-oom, severity: fatal, layer: execution, title: t, fault: user, retry: permanent, match: {patterns: [abcd]}}\n", "severity"},
		{"no match", "rules:\n- {id: x, category: cuda-oom, severity: error, layer: execution, title: t, fault: user, retry: permanent}\n", "match has no patterns"},
		{"two kinds", "rules:\n- {id: x, category: cuda-oom, severity: error, layer: execution, title: t, fault: user, retry: permanent, match: {patterns: [abcd], object: {kind: pod}}}\n", "more than one kind"},
		{"object kind", "rules:\n- {id: x, category: cuda-oom, severity: error, layer: control, title: t, fault: user, retry: permanent, match: {object: {kind: podd}}}\n", `object kind "podd" is not one of`},
		{"object field", "rules:\n- {id: x, category: cuda-oom, severity: error, layer: control, title: t, fault: user, retry: permanent, match: {object: {kind: container-terminated, where: {exitcode: 137}}}}\n", `has no field "exitcode"`},
		{"bad condition", "rules:\n- {id: x, category: cuda-oom, severity: error, layer: control, title: t, fault: user, retry: permanent, match: {object: {kind: container-terminated, where: {exitCode: '>=x'}}}}\n", "needs a number"},
		{"streak of one", "rules:\n- {id: x, category: nan-loss, severity: error, layer: execution, title: t, fault: user, retry: permanent, match: {streak: {patterns: [abcd], min: 1}}}\n", "at least 2"},
		{"silence scope", "rules:\n- {id: x, category: hang, severity: error, layer: execution, title: t, fault: user, retry: permanent, match: {silence: {scope: pod, periods: 5}}}\n", "scope"},
		{"sequence groups", "rules:\n- {id: x, category: hang, severity: error, layer: execution, title: t, fault: user, retry: permanent, match: {sequence: {patterns: [abcd]}}}\n", "no (?P<seq>"},
		{"rootOnlyIf field", "rules:\n- {id: x, category: scheduling, severity: error, layer: control, title: t, fault: user, retry: permanent, rootOnlyIf: {ran: false}, match: {patterns: [abcd]}}\n", `has no field "ran"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadRules(fstest.MapFS{"my.yaml": {Data: []byte(tt.yaml)}}, ".")
			require.Error(t, err)
			require.Contains(t, err.Error(), "my.yaml")
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestUserRuleOverridesBuiltin(t *testing.T) {
	builtin, err := DefaultRules()
	require.NoError(t, err)
	user, err := LoadRules(fstest.MapFS{"mine.yaml": {Data: []byte(`rules:
- id: cuda-oom/torch-alloc
  category: cuda-oom
  severity: critical
  layer: execution
  title: Our GPUs are full again
  fault: platform
  retry: transient
  match: {patterns: ['CUDA out of memory']}
  examples: {match: ['CUDA out of memory'], notMatch: ['all good']}
- id: site/quota-exceeded
  category: disk-full
  severity: error
  layer: execution
  title: Team quota exceeded on /mnt/shared
  fault: user
  retry: permanent
  match: {patterns: ['Disk quota exceeded']}
  examples: {match: ['OSError: [Errno 122] Disk quota exceeded'], notMatch: ['quota ok']}
`)}}, ".")
	require.NoError(t, err)
	rs, err := NewRuleSet(builtin, user)
	require.NoError(t, err)
	require.Equal(t, "Our GPUs are full again", rs.Rule("cuda-oom/torch-alloc").Title)
	hits := rs.MatchString("OSError: [Errno 122] Disk quota exceeded: '/mnt/shared/ckpt'")
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.Rule.ID)
	}
	require.Contains(t, ids, "site/quota-exceeded")

	_, err = NewRuleSet(append(user, user[0]))
	require.ErrorContains(t, err, "also defined")
}

func TestFallbackYieldsToSpecificRules(t *testing.T) {
	rules, err := DefaultRules()
	require.NoError(t, err)
	rs, err := NewRuleSet(rules)
	require.NoError(t, err)
	ids := func(line string) string {
		var out []string
		for _, h := range rs.MatchString(line) {
			out = append(out, string(h.Rule.Category))
		}
		return strings.Join(out, ",")
	}
	require.Equal(t, "module-not-found", ids("ModuleNotFoundError: No module named 'flash_attn'"))
	require.Equal(t, "user-code-error", ids("KeyError: 'input_ids'"))
	require.Equal(t, "", ids("step 1200 | loss 2.3412 | lr 3.0e-04 | grad_norm 0.812"))
}

// TestNoRuleIDInCode: rules are data. The engine's Go code names no built-in rule by its id
// (a rule the code reaches for by name could not be replaced or removed by a user's rule
// file); facts and match kinds are the interface.
func TestNoRuleIDInCode(t *testing.T) {
	rules, err := DefaultRules()
	require.NoError(t, err)
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, r := range rules {
			require.NotContains(t, string(data), `"`+r.ID+`"`, "%s names rule %s", f, r.ID)
		}
	}
}

// TestMatchProgressPrefilter: the progress prefilter only skips regexps that cannot match:
// on every progress example, its counter-examples and their upper-cased forms, matchProgress
// says what running every progress regexp in order says.
func TestMatchProgressPrefilter(t *testing.T) {
	rules, err := DefaultRules()
	require.NoError(t, err)
	rs, err := NewRuleSet(rules)
	require.NoError(t, err)
	sc := rs.NewScratch()
	var lines []string
	for _, r := range rs.progress {
		for _, ex := range append(r.Examples.Match, r.Examples.NotMatch...) {
			lines = append(lines, ex.Text, strings.ToUpper(ex.Text), "x "+ex.Text+" y")
		}
	}
	require.NotEmpty(t, lines)
	matched := 0
	for _, line := range lines {
		wantOK, wantStep := false, int64(-1)
	all:
		for _, r := range rs.progress {
			for _, cp := range r.res {
				if loc := cp.re.FindStringSubmatchIndex(line); loc != nil {
					wantOK = true
					for i, name := range cp.re.SubexpNames() {
						if name == "step" && loc[2*i] >= 0 {
							n, err := strconv.ParseInt(line[loc[2*i]:loc[2*i+1]], 10, 64)
							require.NoError(t, err)
							wantStep = n
						}
					}
					break all
				}
			}
		}
		ok, step := rs.matchProgress([]byte(line), sc)
		require.Equal(t, wantOK, ok, "%q", line)
		require.Equal(t, wantStep, step, "%q", line)
		if ok {
			matched++
		}
	}
	require.Greater(t, matched, len(lines)/4, "the examples match")
}
