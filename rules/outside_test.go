package rules

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// fewSourcesFile lists the specific rules whose must-match examples do not yet cite two
// outside sources: the debt TestSpecificRulesCiteTwoSources keeps from growing.
var fewSourcesFile = filepath.Join("testdata", "fewer-than-two-sources.txt")

// specificSources reads a rule file and returns, for each rule that names a specific cause
// (what `analyze --tiers fallback` turns off: not generic, not a catch-all, not of category
// unknown, and not turned off), the distinct sources its must-match examples cite: the URLs
// in the comments among examples.match, one per thread or page (sourceKey).
func specificSources(data []byte) (map[string][]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	if len(doc.Content) == 0 {
		return out, nil
	}
	root := doc.Content[0]
	defRole := scalar(mapValue(mapValue(root, "defaults"), "role"))
	list := mapValue(root, "rules")
	if list == nil {
		return out, nil
	}
	for _, r := range list.Content {
		id := scalar(mapValue(r, "id"))
		if mapValue(r, "match") == nil || scalar(mapValue(r, "enabled")) == "false" {
			continue
		}
		role := scalar(mapValue(r, "role"))
		if role == "" {
			role = defRole
		}
		category := scalar(mapValue(r, "category"))
		if category == "" {
			category, _, _ = strings.Cut(id, "/")
		}
		if strings.Contains(role, "generic") || strings.Contains(role, "fallback") || category == "unknown" {
			continue
		}
		keys := []string{}
		ex := mapValue(r, "examples")
		for i := 0; ex != nil && ex.Kind == yaml.MappingNode && i+1 < len(ex.Content); i += 2 {
			if ex.Content[i].Value != "match" {
				continue
			}
			for _, n := range []*yaml.Node{ex.Content[i], ex.Content[i+1]} {
				eachComment(n, func(c string) {
					for _, u := range urlRE.FindAllString(c, -1) {
						if k := sourceKey(u); !slices.Contains(keys, k) {
							keys = append(keys, k)
						}
					}
				})
			}
		}
		out[id] = keys
	}
	return out, nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// eachComment calls fn with every comment of n and the nodes under it.
func eachComment(n *yaml.Node, fn func(string)) {
	for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
		if c != "" {
			fn(c)
		}
	}
	for _, c := range n.Content {
		eachComment(c, fn)
	}
}

// TestSpecificRulesCiteTwoSources: every specific rule needs must-match examples from at
// least two independent sources outside the corpus (issue 20), each cited by a comment URL
// above its example. The rules that do not yet are listed in fewSourcesFile; a rule missing
// there fails, and so does a listed rule that now cites two (take it off: the list only
// shrinks).
func TestSpecificRulesCiteTwoSources(t *testing.T) {
	listed := map[string]bool{}
	f, err := os.Open(fewSourcesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if id := strings.TrimSpace(line); id != "" {
			listed[id] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	specific := 0
	eachYAML(t, FS, func(path string, data []byte) error {
		srcs, err := specificSources(data)
		if err != nil {
			return err
		}
		for id, keys := range srcs {
			specific++
			switch {
			case len(keys) < 2 && !listed[id]:
				t.Errorf("%s: %s: its must-match examples cite %d outside source(s) %v: cite a second real one (a comment URL above an example) from a thread that is no corpus excerpt's source", path, id, len(keys), keys)
			case len(keys) >= 2 && listed[id]:
				t.Errorf("%s: %s cites %d outside sources now: take it off %s", path, id, len(keys), fewSourcesFile)
			}
			delete(listed, id)
		}
		return nil
	})
	if specific < 50 {
		t.Fatalf("read %d specific rules: the walk missed them", specific)
	}
	for id := range listed {
		t.Errorf("%s lists %s, which is no specific rule", fewSourcesFile, id)
	}
}

func TestSpecificSources(t *testing.T) {
	srcs, err := specificSources([]byte(`
defaults: {role: primary}
rules:
  - id: cuda-oom/two
    match: {patterns: [x]}
    examples:
      match:
        # https://github.com/microsoft/DeepSpeed/issues/1
        - a
        # https://github.com/deepspeedai/DeepSpeed/issues/1#issuecomment-2 (the same thread)
        - b
        - c  # https://example.org/page
      notMatch:
        # https://example.org/other
        - d
  - id: cuda-oom/none
    match: {patterns: [x]}
    examples:
      notMatch:
        # https://example.org/other
        - d
  - id: user-code-error/catch-all
    role: fallback
    match: {patterns: [x]}
  - id: unknown/exit
    match: {patterns: [x]}
  - id: cuda-oom/off
    enabled: false
  - id: cuda-oom/disabled
    enabled: false
    match: {patterns: [x]}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"cuda-oom/two":  {"github:deepspeed#1", "example.org/page"},
		"cuda-oom/none": {},
	}
	if len(srcs) != len(want) {
		t.Fatalf("specific rules %v, want %v", srcs, want)
	}
	for id, keys := range want {
		if !slices.Equal(srcs[id], keys) {
			t.Errorf("%s cites %v, want %v", id, srcs[id], keys)
		}
	}
}
