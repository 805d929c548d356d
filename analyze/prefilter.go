package analyze

import "github.com/coroner-dev/coroner/internal/literal"

// minLiteral is the shortest literal worth prefiltering on (literal.MinLen).
const minLiteral = literal.MinLen

// requiredLiterals returns a set of lower-cased literals such that every match of the pattern
// contains at least one of them, or nil when no such set can be derived (the pattern then runs
// on every line).
func requiredLiterals(pattern string) []string {
	sets := literal.Required(pattern)
	if len(sets) == 0 {
		return nil
	}
	return sets[0]
}
