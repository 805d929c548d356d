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

// TestDecodeErrors: what the schema refuses is said in one line, at its place.
func TestDecodeErrors(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"- a\n", `no apiVersion: a rule file of schema v1 starts with "apiVersion: coroner.dev/rules/v1" (docs/rules.md, "Migrating to v1")`},
		{"apiVersion: coroner.dev/rules/v1\nrules: {}\n", "rules is an object, not an array"},
		{"apiVersion: coroner.dev/rules/v1\ndefaults: {severity: fatal}\n", `defaults: severity "fatal" is not one of info, warning, error, critical`},
		{"apiVersion: coroner.dev/rules/v1\nrules:\n  - {id: a/b, explainsOnNode: [hang, gpu]}\n", `rule "a/b": explainsOnNode[1] "gpu" is not one of cuda-oom, host-oom, nan-loss, module-not-found, collective-timeout, collective-error, rendezvous-failure, shm-bus-error, cuda-error, gpu-hardware, scheduling, image-pull, disk-full, file-not-found, permission-denied, hub-offline, config-error, crash-signal, preempted-evicted, user-code-error, hang, storage-error, data-error, unknown`},
		{"apiVersion: coroner.dev/rules/v1\nprogress:\n  - {id: p, patterns: [a], examples: {match: [{line: x}]}}\n", `progress "p": examples.match[0]: unknown field "line"`},
	} {
		_, err := Decode([]byte(tt.yaml))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q:\n got %v\nwant %s", tt.yaml, err, tt.want)
		}
	}
}
