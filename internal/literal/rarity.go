package literal

// perMille estimates how often each byte (ASCII letters folded to lower case) occurs in the
// logs of training jobs, in thousandths of the bytes: English letter frequencies scaled to
// the half of log text that is letters, and digits, blanks and punctuation as log lines hold
// them (timestamps, paths, key=value and JSON fields). A byte not listed is rare (0.3).
var perMille = func() (f [256]float64) {
	for i := range f {
		f[i] = 0.3
	}
	for _, e := range []struct {
		bytes string
		v     float64
	}{
		{" ", 120},
		{"0", 35}, {"1", 30}, {"2", 28}, {"3456789", 18},
		{"e", 60}, {"t", 45}, {"a", 42}, {"o", 38}, {"i", 36}, {"n", 35}, {"s", 33},
		{"r", 32}, {"h", 20}, {"l", 22}, {"d", 20}, {"c", 18}, {"u", 15}, {"m", 15},
		{"p", 14}, {"f", 11}, {"g", 10}, {"w", 8}, {"y", 8}, {"b", 7}, {"v", 5}, {"k", 6},
		{"x", 3}, {"j", 1}, {"q", 1}, {"z", 1.5},
		{":", 25}, {".", 25}, {"-", 20}, {"/", 12}, {"_", 10}, {"\"", 15}, {",", 10},
		{"[]", 8}, {"=", 6}, {"'", 5}, {"|", 5}, {"()", 3}, {"{}", 3}, {"\t", 2},
		{"<>", 1}, {"+", 1}, {"*", 1}, {"%", 1}, {"#", 1}, {"@", 0.5},
	} {
		for i := 0; i < len(e.bytes); i++ {
			f[e.bytes[i]] = e.v
		}
	}
	return f
}()

// Estimate is how often a literal is expected at an offset of log text: the product of its
// bytes' frequencies. It is a guess (real bytes are not independent), good for ranking
// literals, not for counting them.
func Estimate(lit string) float64 {
	p := 1.0
	for i := 0; i < len(lit); i++ {
		p *= perMille[fold(lit[i])] / 1000
	}
	return p
}

// Rarest returns the index of the set of sets (each of literals one of which is required, as
// Required returns them) that log text is expected to hold least often: the set whose
// literals' estimates sum to the least. The first such set wins a tie.
func Rarest(sets [][]string) int {
	best, bestP := -1, 0.0
	for i, set := range sets {
		p := 0.0
		for _, l := range set {
			p += Estimate(l)
		}
		if best < 0 || p < bestP {
			best, bestP = i, p
		}
	}
	return best
}
