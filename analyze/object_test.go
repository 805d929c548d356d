package analyze

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseNumberIsParseFloat: the quick refusal never refuses what strconv.ParseFloat takes.
func TestParseNumberIsParseFloat(t *testing.T) {
	for _, v := range []string{"", "0", "137", "-9", "+1.5", ".5", "1e3", "0x1p-2", "Inf", "-inf", "infinity", "NaN", "nan",
		"OOMKilled", "true", "Error", "8Gi", "1_000", "0b101", " 1", "1 ", "e3", "x1"} {
		want, err := strconv.ParseFloat(v, 64)
		got, ok := parseNumber(v)
		require.Equal(t, err == nil, ok, v)
		if ok && want == want { // NaN is not equal to itself
			require.Equal(t, want, got, v)
		}
	}
}
