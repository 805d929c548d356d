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
	rs := defaultRuleSet(t)
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
				if !got && r.Role.Fallback() {
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

// TestInvalidRuleFiles: each file of testdata/invalid is wrong in one way, and the error
// it gives, loaded as a --rules directory's file beside the built-in rules, is exactly this
// one line: the file, the entry, the problem.
func TestInvalidRuleFiles(t *testing.T) {
	want := map[string]string{
		"bad-category.yaml":              "bad-category.yaml: rule \"site/oom\": category \"oom\" is not one of cuda-oom, host-oom, nan-loss, module-not-found, collective-timeout, collective-error, rendezvous-failure, shm-bus-error, cuda-error, gpu-hardware, scheduling, image-pull, disk-full, file-not-found, permission-denied, hub-offline, config-error, crash-signal, preempted-evicted, user-code-error, hang, storage-error, data-error, unknown",
		"bad-condition.yaml":             "bad-condition.yaml: rule \"cuda-oom/site\": exitCode: object kind container-terminated has no field \"x\" to compare with",
		"bad-regexp.yaml":                "bad-regexp.yaml: rule \"cuda-oom/site\": pattern \"(?<=x)abc\": error parsing regexp: invalid named capture: `(?<=x)abc`",
		"bad-role.yaml":                  "bad-role.yaml: rule \"cuda-oom/site\": role \"symptom\" is not one of primary, secondary, generic, fallback, secondary-fallback, generic-fallback",
		"bad-severity.yaml":              "bad-severity.yaml: rule \"cuda-oom/site\": severity \"fatal\" is not one of info, warning, error, critical",
		"defaults-unknown-field.yaml":    "defaults-unknown-field.yaml: defaults: unknown field \"title\"",
		"duplicate-key.yaml":             "duplicate-key.yaml: yaml: unmarshal errors: line 4: key \"id\" already set in map",
		"empty-entry.yaml":               "empty-entry.yaml: rule 1 is null, not an object",
		"label-not-a-string.yaml":        "label-not-a-string.yaml: rule \"cuda-oom/site\": labels: ticket is a number, not a string",
		"missing-severity.yaml":          "missing-severity.yaml: rule \"cuda-oom/site\": severity is missing (info, warning, error, critical)",
		"names-no-cause-primary.yaml":    "names-no-cause-primary.yaml: rule \"collective-error/site\": namesNoCause is for a symptom: set role secondary or secondary-fallback",
		"no-api-version.yaml":            "no-api-version.yaml: no apiVersion: a rule file of schema v1 starts with \"apiVersion: coroner.dev/rules/v1\" (docs/rules.md, \"Migrating to v1\")",
		"no-id.yaml":                     "no-id.yaml: rule 1: id is missing",
		"no-match.yaml":                  "no-match.yaml: rule \"cuda-oom/site\": match has no patterns, eventReasons, object, streak, sequence or silence",
		"object-field.yaml":              "object-field.yaml: rule \"cuda-oom/site\": object kind container-terminated has no field \"exitcode\" (fields: container, reason, exitCode, signal, signalName, last, waiting, restarts, message)",
		"object-kind.yaml":               "object-kind.yaml: rule \"cuda-oom/site\": object kind \"podd\" is not one of container-restarts, container-terminated, container-waiting, dev-shm, flight-recorder, gpu-request, job-condition, log-decides, node-condition, node-gpus, node-selector, pod, pod-condition, replicas, role-logs, runtime",
		"old-boolean.yaml":               "old-boolean.yaml: rule \"cuda-oom/site\": unknown field \"secondary\"",
		"other-api-version.yaml":         "other-api-version.yaml: apiVersion \"coroner.dev/rules/v2\" is not coroner.dev/rules/v1",
		"override-append-object.yaml":    "override-append-object.yaml: rule \"host-oom/oomkilled\": override: match can be appended to only with patterns and eventReasons, on a rule that matches patterns",
		"override-append-title.yaml":     "override-append-title.yaml: rule \"cuda-oom/torch-alloc\": override: title can be replaced, not appended to",
		"override-makes-it-invalid.yaml": "override-makes-it-invalid.yaml: rule \"cuda-oom/torch-alloc\": pattern \"(?<=x)abc\": error parsing regexp: invalid named capture: `(?<=x)abc`",
		"override-no-such-rule.yaml":     "override-no-such-rule.yaml: rule \"cuda-oom/site-typo\": no rule of that id is read before this file to change (the built-in rules, then each earlier directory)",
		"override-progress.yaml":         "override-progress.yaml: rule \"progress/bar\": override: \"progress/bar\" is a progress entry, not a rule",
		"override-unknown-field.yaml":    "override-unknown-field.yaml: rule \"cuda-oom/torch-alloc\": override: unknown field \"id\"",
		"override-unnamed-field.yaml":    "override-unnamed-field.yaml: rule \"cuda-oom/torch-alloc\": title is set but override does not name it (replace or append)",
		"override-unset-field.yaml":      "override-unset-field.yaml: rule \"cuda-oom/torch-alloc\": override names title but the entry does not set it",
		"override-word.yaml":             "override-word.yaml: rule \"cuda-oom/torch-alloc\": override: severity \"merge\" is not one of replace, append",
		"patterns-not-a-list.yaml":       "patterns-not-a-list.yaml: rule \"cuda-oom/site\": match: patterns is a string, not an array",
		"prefix-not-a-category.yaml":     "prefix-not-a-category.yaml: rule \"site/quota\": category is missing and the id's prefix \"site\" is not a category: name one with category (one of cuda-oom, host-oom, nan-loss, module-not-found, collective-timeout, collective-error, rendezvous-failure, shm-bus-error, cuda-error, gpu-hardware, scheduling, image-pull, disk-full, file-not-found, permission-denied, hub-offline, config-error, crash-signal, preempted-evicted, user-code-error, hang, storage-error, data-error, unknown)",
		"root-only-if-field.yaml":        "root-only-if-field.yaml: rule \"scheduling/site\": rootOnlyIf: object kind pod has no field \"ran\" (fields: phase, reason, message, scheduled, imagesPulled, started)",
		"sequence-groups.yaml":           "sequence-groups.yaml: rule \"hang/site\": sequence pattern \"abcd\" has no (?P<seq>...) group",
		"silence-scope.yaml":             "silence-scope.yaml: rule \"hang/site\": silence scope \"pod\" is not rank or job",
		"streak-of-one.yaml":             "streak-of-one.yaml: rule \"nan-loss/site\": streak min must be at least 2 (one line is not a streak), or 1 with recover patterns (a condition that lasts until they match) or last conditions (a line that counts for itself)",
		"toggle-no-such-rule.yaml":       "toggle-no-such-rule.yaml: rule \"cuda-oom/torch-aloc\": no rule of that id is read before this file to change (the built-in rules, then each earlier directory)",
		"two-kinds.yaml":                 "two-kinds.yaml: rule \"cuda-oom/site\": match has more than one kind (patterns/eventReasons, object, streak, sequence, silence): write one rule for each",
		"unless-without-patterns.yaml":   "unless-without-patterns.yaml: rule \"cuda-oom/site\": unless needs patterns: it only excludes lines they match",
		"unknown-field.yaml":             "unknown-field.yaml: rule \"cuda-oom/site\": unknown field \"categry\"",
		"unknown-match-field.yaml":       "unknown-match-field.yaml: rule \"cuda-oom/site\": match: unknown field \"paterns\"",
		"vocabulary-in-rules.yaml":       "vocabulary-in-rules.yaml: apiVersion \"coroner.dev/vocabulary/v1\" is not coroner.dev/rules/v1",
	}
	builtin, err := DefaultRules()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, len(want), "a fixture without its error, or an error without its fixture")
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			site, err := LoadRules(fstest.MapFS{name: {Data: data}}, ".")
			if err == nil {
				_, err = NewRuleSet(builtin, site)
			}
			require.Error(t, err)
			require.Equal(t, want[name], err.Error())
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestUserRuleOverridesBuiltin(t *testing.T) {
	builtin, err := DefaultRules()
	require.NoError(t, err)
	user, err := LoadRules(fstest.MapFS{"mine.yaml": {Data: []byte(`apiVersion: coroner.dev/rules/v1
rules:
- id: cuda-oom/torch-alloc
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
	rs := defaultRuleSet(t)
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
	rs := defaultRuleSet(t)
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

// TestUnlessLeavesALineToAMoreSpecificRule: a line a rule's pattern matches but one of its
// unless expressions also matches is no finding of it, on the scan's path (the prefilter and
// confirm) as in lint; the more specific rule names it, and a near miss stays the rule's.
func TestUnlessLeavesALineToAMoreSpecificRule(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	rs, err := NewRuleSet(all)
	require.NoError(t, err)
	ids := func(line string) []string {
		var out []string
		for _, h := range rs.MatchString(line) {
			out = append(out, h.Rule.ID)
		}
		return out
	}
	// https://github.com/t-vi/pytorch-tvmisc/issues/6 (ninja missing: a toolchain, not a file)
	got := ids("FileNotFoundError: [Errno 2] No such file or directory: 'ninja': 'ninja'")
	require.Contains(t, got, "module-not-found/build-toolchain-missing")
	require.NotContains(t, got, "file-not-found/no-such-file")
	got = ids("FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc': '/usr/local/cuda/bin/nvcc'")
	require.NotContains(t, got, "file-not-found/no-such-file")
	// A script, a tool's name inside a longer one, a build tool's name in a directory not
	// named bin: missing files.
	for _, line := range []string{
		"FileNotFoundError: [Errno 2] No such file or directory: '/workspace/scripts/preprocess.sh': '/workspace/scripts/preprocess.sh'",
		"FileNotFoundError: [Errno 2] No such file or directory: '/opt/tools/ninja-build': '/opt/tools/ninja-build'",
		"FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/cc': '/ckpt/cc'",
	} {
		require.Contains(t, ids(line), "file-not-found/no-such-file", line)
	}
}
