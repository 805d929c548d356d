package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRenderJSONStreams: the report written one list entry at a time is byte for byte what
// json.Encoder writes of it whole: with text that JSON escapes, HTML characters, lists empty,
// nil and long, and a root cause with its own MarshalJSON.
func TestRenderJSONStreams(t *testing.T) {
	empty := &Report{Findings: []*Finding{}, Warnings: []string{}}
	for name, r := range map[string]*Report{
		"hostile":  hostileReport("<script>&amp;\u2028", "\"quoted\"\n\ttab", "ü \x01 </b>"),
		"ranks":    manyRanks(50),
		"zero":     {},
		"empty":    empty,
		"verbatim": hostileReport("a", "b", "c"),
	} {
		t.Run(name, func(t *testing.T) {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(r))
			var got bytes.Buffer
			require.NoError(t, RenderJSON(&got, r))
			require.Equal(t, want.String(), got.String())
		})
	}
}
