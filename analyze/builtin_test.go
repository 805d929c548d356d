package analyze

import (
	"reflect"
	"testing"

	"github.com/coroner-dev/coroner/rules"
)

// TestBuiltinRulesAreTheDecodedFiles: the rules made from the values decoded at build time
// are those decoding the embedded files makes, field by field (patterns compiled alike).
func TestBuiltinRulesAreTheDecodedFiles(t *testing.T) {
	if _, ok := rules.Builtin(); !ok {
		t.Fatal("rules.Builtin declines the embedded files: run go generate ./rules")
	}
	got, err := builtinRules()
	if err != nil {
		t.Fatal(err)
	}
	want, err := LoadRules(rules.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rules, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(want[i], got[i]) {
			t.Errorf("rule %d (%s) differs from the decoded file's", i, want[i].ID)
		}
	}
}
