package rules

import (
	"strings"
	"testing"
)

// FuzzDecode: no input makes Decode (or an override's Apply) panic, and every error is one line.
func FuzzDecode(f *testing.F) {
	entries, err := FS.ReadDir(".")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := FS.ReadFile(e.Name())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("apiVersion: coroner.dev/rules/v1\nrules:\n  - {id: a/b, override: {match: append, labels: replace}, match: {patterns: [x]}, labels: {k: v}}\n"))
	f.Add([]byte("apiVersion: coroner.dev/rules/v1\nrules:\n  - {id: a/b, enabled: false}\nprogress:\n  - {id: p, enabled: true}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("an error of more than one line: %q", err)
			}
			return
		}
		base := &Spec{ID: "a/b", Labels: map[string]string{"k": "v"}, Match: Match{Patterns: []string{"y"}}}
		for _, s := range file.Rules {
			if s.IsPatch() {
				_, _ = s.Apply(base)
			}
		}
	})
}
