package narrate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseAnswer(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		raw  string
		want Answer
	}{
		{"schema json", `{"healthy":"No","error":"Rank 5 ran out of GPU memory.","analysis":"Worker 4 OOMed first; the others timed out.","solution":["Lower the batch size","Enable activation checkpointing"]}`,
			Answer{Healthy: &no, Error: "Rank 5 ran out of GPU memory.", Analysis: "Worker 4 OOMed first; the others timed out.",
				Solution: []string{"Lower the batch size", "Enable activation checkpointing"}, Format: "json"}},
		{"json in a fence after chatter", "Here is my diagnosis:\n```json\n{\"healthy\": true, \"error\": \"\", \"analysis\": \"All ranks finished.\", \"solution\": \"1. Nothing to do\\n2. Keep the checkpoint\"}\n```",
			Answer{Healthy: &yes, Analysis: "All ranks finished.", Solution: []string{"Nothing to do", "Keep the checkpoint"}, Format: "json"}},
		{"numbered steps inside the json list", `{"healthy":"No","error":"e","analysis":"a","solution":["1. first","2) second"]}`,
			Answer{Healthy: &no, Error: "e", Analysis: "a", Solution: []string{"first", "second"}, Format: "json"}},
		{"seed text form", "Healthy: No\nError: The master was OOM-killed.\nAnalysis: The master pod hit its 16Gi limit\nwhile tokenising; workers lost the store.\nSolution:\n1. Raise the master's memory limit.\n2. Stream the dataset\n   instead of loading it whole.\n",
			Answer{Healthy: &no, Error: "The master was OOM-killed.", Analysis: "The master pod hit its 16Gi limit\nwhile tokenising; workers lost the store.",
				Solution: []string{"Raise the master's memory limit.", "Stream the dataset instead of loading it whole."}, Format: "text"}},
		{"markdown dress", "**Healthy:** Yes\n**Error:** none\n## Analysis\nThe job succeeded.\n- **Solution:**\n- nothing\n",
			Answer{Healthy: &yes, Error: "none", Analysis: "The job succeeded.", Solution: []string{"nothing"}, Format: "text"}},
		{"neither form", "I cannot tell from this data.", Answer{}},
		{"json cut at the token limit", `{"healthy": "Yes","error": "|&>LJ]J`, Answer{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, ParseAnswer(tt.raw))
		})
	}
}
