package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSearchFitsKubectlHabits: -c is --container; -n, -l and -f (kubectl's and stern's) are
// refused with a way to search for the word, never read as "NOT n"; --since takes a duration
// (the last minutes of the logs) as kubectl's and stern's do, and --since-time a time.
func TestSearchFitsKubectlHabits(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-nan-loss")
	long := requireExit(t, exitOK, "", "search", sample, "nan", "--container", "pytorch", "--no-cache")
	short := requireExit(t, exitOK, "", "search", sample, "nan", "-c", "pytorch", "--no-cache")
	require.Equal(t, long, short)
	requireExit(t, exitError, `--container "sidecar" matches none of the 2 containers`, "search", sample, "nan", "-c", "sidecar", "--no-cache")
	for _, f := range []string{"-n", "-l", "-f"} {
		requireExit(t, exitUsage, `unknown shorthand flag: "`+f+`" (search has no `+f+`; a query word that starts with - goes after --: -- `+f+`)`,
			"search", sample, f, "ml", "nan", "--no-cache")
	}
	requireExit(t, exitOK, "", "search", sample, "nan", "--", "-l", "--no-cache")

	all := requireExit(t, exitOK, "", "search", sample, "step", "--all", "--no-cache")
	last := requireExit(t, exitOK, "", "search", sample, "step", "--all", "--since", "1m", "--no-cache")
	sinceTime := requireExit(t, exitOK, "", "search", sample, "step", "--all", "--since-time", "14:57:34", "--no-cache")
	require.Less(t, len(last), len(all), "a duration keeps the end of the logs")
	require.Contains(t, last, "loss nan")
	require.NotContains(t, last, "step 10 ")
	require.Contains(t, sinceTime, "loss nan")
	requireExit(t, exitUsage, "--since-time 5m is a duration: use --since 5m", "search", sample, "nan", "--since-time", "5m")
}
