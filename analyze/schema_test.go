package analyze

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/rules"
)

// siteRules loads one site file beside the built-in rules, as analyze --rules DIR does.
func siteRules(t *testing.T, yaml string) *RuleSet {
	t.Helper()
	builtin, err := DefaultRules()
	require.NoError(t, err)
	site, err := LoadRules(fstest.MapFS{"site.yaml": {Data: []byte(yaml)}}, ".")
	require.NoError(t, err)
	rs, err := NewRuleSet(builtin, site)
	require.NoError(t, err)
	return rs
}

// matched lists the ids of the rules a line is a finding of.
func matched(rs *RuleSet, line string) []string {
	var ids []string
	for _, h := range rs.MatchString(line) {
		ids = append(ids, h.Rule.ID)
	}
	return ids
}

const torchOOMLine = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB"

// TestDefaultsAndCategoryFromID: a rule takes what it does not set from the file's defaults
// (labels merged, its own winning), and its category from its id's prefix unless it names one.
func TestDefaultsAndCategoryFromID(t *testing.T) {
	rs := siteRules(t, `apiVersion: coroner.dev/rules/v1
defaults: {severity: warning, layer: execution, fault: platform, retry: transient, labels: {team: infra, source: site}}
rules:
  - id: disk-full/lustre-quota
    title: Lustre quota exceeded
    labels: {source: runbook-12}
    match: {patterns: ['LustreError: .*quota exceeded']}
  - id: site/stale-nfs
    category: storage-error
    severity: error
    role: secondary
    title: Stale NFS handle
    match: {patterns: ['Stale NFS file handle on /mnt/site']}
`)
	q := rs.Rule("disk-full/lustre-quota")
	require.NotNil(t, q)
	require.Equal(t, CategoryDiskFull, q.Category)
	require.Equal(t, SeverityWarning, q.Severity)
	require.Equal(t, FaultPlatform, q.Fault)
	require.Equal(t, RolePrimary, q.Role)
	require.Equal(t, map[string]string{"team": "infra", "source": "runbook-12"}, q.Labels)
	s := rs.Rule("site/stale-nfs")
	require.Equal(t, CategoryStorageError, s.Category)
	require.Equal(t, SeverityError, s.Severity)
	require.Equal(t, RoleSecondary, s.Role)
	require.True(t, s.Role.Secondary())
}

// TestToggleTurnsABuiltinRuleOff: an entry of only id and enabled: false takes the built-in
// rule out (its line is no finding of it), and a later directory can turn it on again.
func TestToggleTurnsABuiltinRuleOff(t *testing.T) {
	require.Contains(t, matched(siteRules(t, "apiVersion: coroner.dev/rules/v1\nrules: []\n"), torchOOMLine), "cuda-oom/torch-alloc")
	off := siteRules(t, "apiVersion: coroner.dev/rules/v1\nrules:\n  - {id: cuda-oom/torch-alloc, enabled: false}\n")
	require.Nil(t, off.Rule("cuda-oom/torch-alloc"))
	require.NotContains(t, matched(off, torchOOMLine), "cuda-oom/torch-alloc")

	builtin, err := DefaultRules()
	require.NoError(t, err)
	load := func(y string) []*Rule {
		r, err := LoadRules(fstest.MapFS{"x.yaml": {Data: []byte(y)}}, ".")
		require.NoError(t, err)
		return r
	}
	rs, err := NewRuleSet(builtin,
		load("apiVersion: coroner.dev/rules/v1\nrules:\n  - {id: cuda-oom/torch-alloc, enabled: false}\n"),
		load("apiVersion: coroner.dev/rules/v1\nrules:\n  - {id: cuda-oom/torch-alloc, enabled: true}\n"))
	require.NoError(t, err)
	require.Contains(t, matched(rs, torchOOMLine), "cuda-oom/torch-alloc")

	// A full rule with enabled: false is checked but left out, and so are progress entries.
	rs = siteRules(t, `apiVersion: coroner.dev/rules/v1
defaults: {enabled: false}
rules:
  - {id: cuda-oom/site, severity: error, layer: execution, title: t, fault: user, retry: permanent, match: {patterns: ['CUDA out of memory']}}
progress:
  - {id: progress/bar, enabled: false}
`)
	require.Nil(t, rs.Rule("cuda-oom/site"))
	require.Nil(t, rs.Rule("progress/bar"))
	require.NotNil(t, rs.Rule("progress/step-and-loss"))
}

// TestOverrideChangesNamedFields: an override replaces the fields it names and appends to
// lists, keeping the rest of the built-in rule.
func TestOverrideChangesNamedFields(t *testing.T) {
	builtin, err := DefaultRules()
	require.NoError(t, err)
	var base *Rule
	for _, r := range builtin {
		if r.ID == "cuda-oom/torch-alloc" {
			base = r
		}
	}
	require.NotNil(t, base)
	rs := siteRules(t, `apiVersion: coroner.dev/rules/v1
rules:
  - id: cuda-oom/torch-alloc
    override: {severity: replace, fault: replace, labels: append, match: append, examples: append}
    severity: critical
    fault: platform
    labels: {pager: gpu-oncall}
    match: {patterns: ['GPU memory exhausted on device \d+']}
    examples: {match: ['GPU memory exhausted on device 3'], notMatch: ['GPU memory: 3 GiB free']}
`)
	r := rs.Rule("cuda-oom/torch-alloc")
	require.Equal(t, SeverityCritical, r.Severity)
	require.Equal(t, FaultPlatform, r.Fault)
	require.Equal(t, base.Retry, r.Retry)
	require.Equal(t, base.Title, r.Title)
	require.Equal(t, base.Explanation, r.Explanation)
	require.Equal(t, map[string]string{"pager": "gpu-oncall"}, r.Labels)
	require.Equal(t, append(slices.Clone(base.Match.Patterns), `GPU memory exhausted on device \d+`), r.Match.Patterns)
	require.Len(t, r.Examples.Match, len(base.Examples.Match)+1)
	require.Equal(t, "site.yaml", r.Source)
	require.Empty(t, r.Lint())
	require.Contains(t, matched(rs, "GPU memory exhausted on device 3"), "cuda-oom/torch-alloc")
	require.Contains(t, matched(rs, torchOOMLine), "cuda-oom/torch-alloc")
	// The built-in rule itself is untouched.
	require.Equal(t, SeverityError, base.Severity)
}

// TestSchemaAndStructAgree: the published schema, rules.Schema and the Go types describe the
// same file. Every field of the Go types is a property of the schema (a field the schema
// lacked would be refused in every file), the schema's words are analyze's words, and
// docs/rules.schema.json is the embedded schema.
func TestSchemaAndStructAgree(t *testing.T) {
	docs, err := os.ReadFile(filepath.Join("..", "docs", "rules.schema.json"))
	require.NoError(t, err)
	require.Equal(t, string(rules.Schema), string(docs), "docs/rules.schema.json is a copy of rules/rules.schema.json")

	var schema struct {
		Properties map[string]any `json:"properties"`
		Defs       map[string]struct {
			Enum       []string       `json:"enum"`
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(rules.Schema, &schema))
	words := func(def string) []string { return schema.Defs[def].Enum }
	require.Equal(t, joinWords(Categories), joinWords(words("category")))
	require.Equal(t, joinWords(Layers), joinWords(words("layer")))
	require.Equal(t, joinWords(Faults), joinWords(words("fault")))
	require.Equal(t, joinWords(Retries), joinWords(words("retry")))
	require.Equal(t, joinWords(Roles), joinWords(words("role")))
	require.Equal(t, "info, warning, error, critical", joinWords(words("severity")))

	props := func(def string) []string {
		p := schema.Defs[def].Properties
		if def == "" {
			p = schema.Properties
		}
		return slices.Sorted(maps.Keys(p))
	}
	for def, v := range map[string]any{"": rules.File{}, "defaults": rules.Defaults{}, "rule": rules.Spec{},
		"match": rules.Match{}, "progress": rules.Progress{}, "fact": rules.TextFact{}, "examples": rules.Examples{}, "example": rules.Example{}} {
		require.Equal(t, jsonFields(t, v), props(def), "the schema's %q and %T have the same fields", def, v)
	}
}

// jsonFields lists the JSON names of a struct's exported fields, sorted.
func jsonFields(t *testing.T, v any) []string {
	t.Helper()
	var names []string
	typ := reflect.TypeOf(v)
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "" && name != "-" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
