package index

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClean(t *testing.T) {
	tests := map[string]string{
		"plain":                       "plain",
		"\x1b[1;32mgreen\x1b[0m text": "green text",
		"a\rb\rfinal":                 "final",
		"progress 100%\r":             "progress 100%",
		"nul\x00byte":                 "nulbyte",
		"bad\xffutf8":                 "bad\uFFFDutf8",
	}
	for in, want := range tests {
		require.Equal(t, want, string(Clean(nil, []byte(in))), "%q", in)
		require.Equal(t, in != want, needsClean([]byte(in)), "%q", in)
	}
}
