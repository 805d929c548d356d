package analyze

import (
	"testing"

	"github.com/coroner-dev/coroner/rules"
)

// The start-up cost every `coroner analyze` pays before it reads a byte of the input.

func BenchmarkLoadRules(b *testing.B) {
	for b.Loop() {
		if _, err := LoadRules(rules.FS, "."); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewRuleSet(b *testing.B) {
	list, err := DefaultRules()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := NewRuleSet(list); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuiltinRules(b *testing.B) {
	for b.Loop() {
		if _, err := builtinRules(); err != nil {
			b.Fatal(err)
		}
	}
}
