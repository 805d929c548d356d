package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeSampleOutput keeps the README honest: the summary it shows for the sample is what
// coroner prints today, line for line.
func TestReadmeSampleOutput(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	const cmd = "$ coroner analyze samples/pytorchjob-cuda-oom-rank\n"
	_, block, ok := strings.Cut(string(data), cmd)
	require.True(t, ok, "the README shows %q", cmd)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	out := requireExit(t, exitOK, "", "analyze", filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "--no-cache")
	require.Equal(t, out, block, "README.md's sample output differs from what coroner prints: paste the new output")
}
