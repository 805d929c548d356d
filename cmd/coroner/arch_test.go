package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOfflinePackagesNeverImportClientGo keeps DESIGN.md's arrows: nothing that reads or
// analyzes a bundle may reach a cluster. Only bundle/collect may import client-go.
func TestOfflinePackagesNeverImportClientGo(t *testing.T) {
	pkgs := []string{"../../bundle", "../../bundle/redact", "../../parse", "../../index", "../../analyze", "../../narrate", "../../narrate/ollama", "../../report", "../../templates", "../../rules"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		require.False(t, strings.HasPrefix(dep, "k8s.io/client-go"), "an offline package depends on %s", dep)
		require.False(t, strings.HasSuffix(dep, "/bundle/collect"), "an offline package depends on %s", dep)
	}
	// bundle is stdlib only.
	out, err = exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../../bundle").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, "github.com/coroner-dev/coroner") {
			t.Errorf("bundle depends on %s; it must use only the standard library", dep)
		}
	}
}

// TestNarrateComesAfterReport keeps the LLM step after the report: nothing the report is
// built from may import narrate, and narrate reaches the network only through the LLM the
// caller hands it (narrate/ollama for the CLI).
func TestNarrateComesAfterReport(t *testing.T) {
	below := []string{"../../bundle", "../../bundle/redact", "../../parse", "../../index", "../../analyze", "../../report", "../../templates", "../../rules"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, below...)...).CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		require.NotContains(t, dep, "coroner/narrate", "a package the report is built from depends on %s", dep)
	}
	out, err = exec.Command("go", "list", "-deps", "../../narrate").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		require.False(t, strings.HasSuffix(dep, "/narrate/ollama") || strings.HasPrefix(dep, "github.com/ollama/"),
			"narrate depends on %s: the model client is handed in, not imported", dep)
	}
}
