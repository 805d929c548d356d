package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The sample runs of package compare: a healthy run, another of the same spec, and one that
// failed (a new image tag, a new env var, nan loss from step 60).
var (
	diffGood  = filepath.Join("..", "..", "compare", "testdata", "good")
	diffGood2 = filepath.Join("..", "..", "compare", "testdata", "good2")
	diffBad   = filepath.Join("..", "..", "compare", "testdata", "bad")
)

func TestDiffSummary(t *testing.T) {
	out := requireExit(t, 0, "", "diff", "--no-cache", diffGood, diffBad)
	lines := strings.Split(out, "\n")
	require.Equal(t, "GOOD:        good (PyTorchJob ml/alpaca-sft-0313)", lines[0])
	require.Equal(t, "BAD:         bad (PyTorchJob ml/alpaca-sft-0314)", lines[2])
	require.Contains(t, lines[3], "unhealthy: Gradient norm nan")
	require.Equal(t, "Most likely: Master/pytorch image: registry.local/ml/trainer:v2.3.1-hf → registry.local/ml/trainer:v2.4.0-hf", lines[4])
	require.Contains(t, out, "env NCCL_ALGO only in BAD: Tree")
	require.Contains(t, out, "BAD diverges first at logs/ml/alpaca-sft-0314-master-0/pytorch.log:305")
}

func TestDiffExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"fail-on met", []string{"diff", diffGood, diffBad, "-q", "--fail-on", "error"}, 3, ""},
		{"fail-on not met", []string{"diff", diffGood, diffBad, "-q", "--fail-on", "critical"}, 0, ""},
		{"fail-on any, no difference", []string{"diff", diffGood, diffGood2, "-q", "--fail-on", "any"}, 0, ""},
		{"fail-on any, a difference", []string{"diff", diffGood, diffBad, "-q", "--fail-on", "any"}, 3, ""},
		{"bad severity", []string{"diff", diffGood, diffBad, "--fail-on", "fatal"}, 2, "--fail-on"},
		{"one input", []string{"diff", diffGood}, 2, "accepts 2 arg(s)"},
		{"stdin", []string{"diff", diffGood, "-"}, 2, "standard input"},
		{"bad format", []string{"diff", diffGood, diffBad, "--format", "pdf"}, 2, "unknown --format"},
		{"missing input", []string{"diff", diffGood, "/nonexistent/bundle.tar.gz"}, 1, "/nonexistent/bundle.tar.gz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireExit(t, tt.code, tt.stderr, append(tt.args, "--no-cache")...) })
	}
}

func TestDiffWritesReportByExtension(t *testing.T) {
	dir := t.TempDir()
	for ext, prefix := range map[string]string{".html": "<!DOCTYPE html>", ".md": "# coroner diff", ".json": "{\n  \"formatVersion\": 1"} {
		p := filepath.Join(dir, "diff"+ext)
		out := requireExit(t, 0, "", "diff", "--no-cache", diffGood, diffBad, "-o", p)
		require.Contains(t, out, "Report:      "+p)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(data), prefix), "%s starts with %q", ext, prefix)
		if ext == ".json" {
			var v struct {
				Changes []struct{ Section, Kind string } `json:"changes"`
			}
			require.NoError(t, json.Unmarshal(data, &v))
			require.NotEmpty(t, v.Changes)
		}
	}
}
