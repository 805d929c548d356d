package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite docs/mcp-transcript.md")

const transcriptFile = "../docs/mcp-transcript.md"

// TestTranscript: docs/mcp-transcript.md is a real session, the SDK's client driving the tools
// on a sample as an agent would, and stays one: the answers are compared with the session
// the test runs (long answers cut in the document; -update rewrites it).
func TestTranscript(t *testing.T) {
	c := connect(t, []string{sample}, testOptions(t))
	ctx := context.Background()
	var b strings.Builder
	b.WriteString(`# A coroner mcp session

This is a real session, kept true by a test (mcpserver/transcript_test.go, ` + "`go test ./mcpserver -run TestTranscript -update`" + ` rewrites it): the MCP SDK's client
driving ` + "`coroner mcp samples/pytorchjob-cuda-oom-rank`" + ` as an agent would. Each call shows the arguments sent and
the structured answer; long answers are cut here (the cut says how many lines), never by the server, which pages them.
See [mcp.md](mcp.md) for the tools and the clients' configuration.
`)
	init := c.cs.InitializeResult()
	fmt.Fprintf(&b, "\n## initialize\n\nThe server says who it is and how to start:\n\n> %s\n", init.Instructions)
	tools, err := c.cs.ListTools(ctx, nil)
	require.NoError(t, err)
	b.WriteString("\n## tools/list\n\n| tool | title |\n|---|---|\n")
	for _, tool := range tools.Tools {
		fmt.Fprintf(&b, "| `%s` | %s |\n", tool.Name, tool.Title)
	}
	step := func(why, name string, args map[string]any, lines int) map[string]any {
		var out map[string]any
		text := c.call(name, args, &out)
		a, err := json.Marshal(args)
		require.NoError(t, err)
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, []byte(text), "", "  "))
		ls := strings.Split(strings.TrimRight(pretty.String(), "\n"), "\n")
		if len(ls) > lines {
			ls = append(ls[:lines], fmt.Sprintf("  … (%d more lines)", len(ls)-lines))
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n```json\n→ %s\n%s\n```\n", name, why, a, strings.Join(ls, "\n"))
		return out
	}
	step("What is open, and what could be:", "list_bundles", map[string]any{}, 40)
	d := step("The diagnosis: the verdict, the root cause with its evidence and what to do.", "diagnosis", map[string]any{}, 60)
	id := d["rootCause"].(map[string]any)["findingId"]
	step("The root cause's evidence windows:", "finding", map[string]any{"id": id}, 50)
	step("What errors do the logs show? A search, a page of 3:", "search", map[string]any{"query": "level:error", "limit": 3}, 60)
	step("Around the evidence line:", "log_window", map[string]any{"pod": "train-job-worker-4", "line": 56, "before": 3, "after": 2}, 50)
	step("How the failing pod ended, from 10:02 on:", "timeline", map[string]any{"pod": "*worker-4", "from": "10:02", "limit": 6}, 60)
	got := b.String()
	if *update {
		require.NoError(t, os.WriteFile(transcriptFile, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(transcriptFile)
	require.NoError(t, err)
	require.Equal(t, string(want), got, "docs/mcp-transcript.md is not this session: run go test ./mcpserver -run TestTranscript -update and read the diff")
}
