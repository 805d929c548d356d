package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStuckAfterFlag: --stuck-after decides when a job that waits to start is unhealthy. The
// image-pull sample's pods have been pending for 22 minutes when it was collected.
func TestStuckAfterFlag(t *testing.T) {
	dir := filepath.Join(samplesDir, "pytorchjob-image-pull")
	verdict := func(args ...string) (string, string) {
		out := requireExit(t, exitOK, "", append([]string{"analyze", dir, "--format", "json", "--no-cache"}, args...)...)
		var r struct{ Verdict, VerdictReason string }
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		return r.Verdict, r.VerdictReason
	}
	v, why := verdict()
	require.Equal(t, "unhealthy", v)
	require.Contains(t, why, "pending for 21 min")
	v, why = verdict("--stuck-after", "30m")
	require.Equal(t, "unknown", v)
	require.Contains(t, why, "pending for 21 min, below the 30 min threshold; so far: image-pull: Image not found")
	v, _ = verdict("--stuck-after", "0")
	require.Equal(t, "unhealthy", v)
}
