package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// siteDir writes one rule file into a new directory.
func siteDir(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "site.yaml"), []byte(yaml), 0o644))
	return dir
}

// TestSiteRulesTurnOffABuiltinRule: a site directory's `{id, enabled: false}` takes a built-in
// rule out of analyze: the sample's root cause is no longer that rule's.
func TestSiteRulesTurnOffABuiltinRule(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-module-not-found")
	root := func(args ...string) string {
		out := requireExit(t, exitOK, "", append([]string{"analyze", sample, "--no-cache", "--format", "json"}, args...)...)
		var rep struct {
			RootCause struct {
				RuleID string `json:"ruleId"`
			} `json:"rootCause"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		return rep.RootCause.RuleID
	}
	require.Equal(t, "module-not-found/no-module", root())
	off := siteDir(t, "apiVersion: coroner.dev/rules/v1\nrules:\n  - {id: module-not-found/no-module, enabled: false}\n")
	require.NotEqual(t, "module-not-found/no-module", root("--rules", off))
	out := requireExit(t, exitError, "", "rules", "show", "module-not-found/no-module", "--rules", off)
	require.Empty(t, out)
}

// TestRulesLintSiteOverride: lint applies a directory's override to the built-in rule and
// runs the resulting rule's examples, the built-in ones and the override's; a file of before
// schema v1 is refused with the migration named.
func TestRulesLintSiteOverride(t *testing.T) {
	override := `apiVersion: coroner.dev/rules/v1
rules:
  - id: cuda-oom/torch-alloc
    override: {severity: replace, labels: append, match: append, examples: append}
    severity: critical
    labels: {pager: gpu-oncall}
    match: {patterns: ['GPU memory exhausted on device \d+']}
    examples: {match: ['GPU memory exhausted on device 3'], notMatch: ['GPU memory: 3 GiB free']}
`
	dir := siteDir(t, override)
	out := requireExit(t, exitOK, "", "rules", "lint", dir)
	require.Contains(t, out, ": 1 rules, ")
	show := requireExit(t, exitOK, "", "rules", "show", "cuda-oom/torch-alloc", "--rules", dir)
	require.Contains(t, show, "Severity:    critical\n")
	require.Contains(t, show, "Labels:      pager=gpu-oncall\n")
	require.Contains(t, show, "  GPU memory exhausted on device \\d+\n")
	require.Contains(t, show, "Source:      "+filepath.Join(dir, "site.yaml")+"\n")

	// An appended example the rule does not match is the rule's problem, named by file and id.
	bad := siteDir(t, `apiVersion: coroner.dev/rules/v1
rules:
  - id: cuda-oom/torch-alloc
    override: {examples: append}
    examples: {match: ['GPU 3 is full']}
`)
	code, out, stderr := run(t, "rules", "lint", bad)
	require.Equal(t, exitError, code)
	require.Equal(t, "site.yaml: cuda-oom/torch-alloc: does not match its example \"GPU 3 is full\"\n", out)
	require.Contains(t, stderr, "1 problem(s) in 1 rules")

	old := siteDir(t, "rules:\n  - id: mine/oops\n    category: cuda-oom\n    secondary: true\n")
	requireExit(t, exitError, `coroner: `+old+`: site.yaml: no apiVersion: a rule file of schema v1 starts with "apiVersion: coroner.dev/rules/v1" (docs/rules.md, "Migrating to v1")`,
		"rules", "lint", old)
	requireExit(t, exitError, `coroner: --rules `+old+`: site.yaml: no apiVersion`, "analyze", filepath.Join(samplesDir, "pytorchjob-module-not-found"), "--rules", old)
}
