package mcpserver

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/samplegen"
)

// TestFoldedFindings: the findings tool lists the timeouts of 63 ranks as one folded finding
// with its count and ranks, a pod glob finds it by any of its pods, and finding shows its
// samples.
func TestFoldedFindings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big")
	require.NoError(t, samplegen.Generate(dir, 64, 64*8<<10, 1))
	c := connect(t, []string{dir}, testOptions(t))

	var page FindingsOut
	c.call("findings", map[string]any{"category": "collective-timeout", "pod": "*worker-50"}, &page)
	var timeout *FindingSummary
	for i, f := range page.Findings {
		if f.RuleID == "collective-timeout/nccl-watchdog" {
			timeout = &page.Findings[i]
		}
	}
	require.NotNil(t, timeout, "a folded finding is found by any of its pods: %+v", page.Findings)
	require.Equal(t, 63, timeout.Folded)
	require.Equal(t, 63, timeout.Processes)
	require.Equal(t, 63, timeout.Count)
	require.Equal(t, "0-36,38-63", timeout.Ranks)
	require.Empty(t, timeout.Pod)

	var one FindingOut
	c.call("finding", map[string]any{"id": timeout.ID}, &one)
	require.Equal(t, "0-36,38-63", one.Finding.Ranks)
	require.NotEmpty(t, one.Finding.Evidence)
	require.LessOrEqual(t, len(one.Finding.Evidence), 3)
	require.NotEmpty(t, one.Finding.FirstTime)
}

// TestTimelineOfPodGroups: the timeline tool gives what each pod of a group had as one entry
// with the group, the exact count and the last time, beside the root cause's pod's own.
func TestTimelineOfPodGroups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big")
	require.NoError(t, samplegen.Generate(dir, 64, 64*8<<10, 1))
	c := connect(t, []string{dir}, testOptions(t))

	var page TimelineOut
	c.call("timeline", map[string]any{"limit": 1000}, &page)
	var started []TimelineEntry
	for _, e := range page.Entries {
		if e.Text == "container started" {
			started = append(started, e)
		}
	}
	require.Len(t, started, 3, "the master's, the group's and the root cause's pod's: %+v", started)
	var group TimelineEntry
	for _, e := range started {
		if e.Group != "" {
			group = e
		}
	}
	require.Equal(t, "Worker/1", group.Group)
	require.Equal(t, 62, group.Count)
	require.Empty(t, group.Pod)
	require.NotEmpty(t, group.LastTime)
}
