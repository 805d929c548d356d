package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExcerptNeverHalvesAWord: a secret cut by the excerpt bound would show half its
// characters, and half a token no longer looks like a token to the redactor that masks the
// report; the word that crosses the bound is left out whole.
func TestExcerptNeverHalvesAWord(t *testing.T) {
	token := "hf_" + strings.Repeat("AbCdEfGh12", 4)
	tests := []struct {
		name, line string
		gone       string // no part of it is in the excerpt
		kept       string
	}{
		{"a token across the bound", strings.Repeat("x ", 290) + "HF_TOKEN=" + token + " tail", "hf_Ab", "x x"},
		{"a password after a colon", strings.Repeat("y ", 296) + "pass: S3cretPassw0rd!x done", "S3cr", "pass:"},
		{"a URL with credentials", strings.Repeat("z ", 280) + "https://u:" + token + "@host/x", "://u", "z z"},
		{"one long word", strings.Repeat("Q", 700), "Q", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := excerpt([]byte(tt.line))
			body, marker, ok := strings.Cut(out, " … [")
			require.True(t, ok, out)
			require.NotContains(t, body, tt.gone)
			require.Contains(t, body, tt.kept)
			require.LessOrEqual(t, len(body), maxExcerpt)
			require.Equal(t, tt.line[:len(body)], body, "a prefix of the line")
			require.Contains(t, marker, " more bytes]")
		})
	}
	short := "loss=2.34 " + token
	require.Equal(t, short, excerpt([]byte(short)), "a line within the bound is whole")
	// A cut between words stays where it was.
	line := strings.Repeat("abcd ", 200)
	require.True(t, strings.HasPrefix(excerpt([]byte(line)), line[:600]))
}
