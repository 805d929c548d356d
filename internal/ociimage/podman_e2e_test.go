//go:build e2e

package ociimage

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImageRunsInPodman loads the image into a real container runtime (Debian's podman) and runs
// it: --version, then an analysis of a sample mounted read-only, which needs the writable /tmp
// and HOME (the index cache) of the non-root user.
func TestImageRunsInPodman(t *testing.T) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman is not installed (apt-get install podman): the image is checked by TestImageConfigAndLayers only")
	}
	dir := t.TempDir()
	archive, _ := testImage(t, dir)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(podman, args...).CombinedOutput()
		if err != nil && strings.Contains(string(out), "OCI permission denied") {
			t.Skipf("podman cannot start a container on this machine: %s", out)
		}
		require.NoError(t, err, "podman %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	run("load", "-i", archive)
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", "coroner:imagetest").Run() })

	require.Contains(t, run("run", "--rm", "--network=none", "coroner:imagetest", "--version"), testVersion)
	require.Equal(t, "65532:65532\n", run("image", "inspect", "--format", "{{.Config.User}}", "coroner:imagetest"), "runs as the non-root user")

	samples, err := filepath.Abs("../../samples")
	require.NoError(t, err)
	out := run("run", "--rm", "--network=none", "-v", samples+":/samples:ro", "coroner:imagetest",
		"analyze", "/samples/pytorchjob-cuda-oom-rank", "--format", "json")
	require.Contains(t, out, `"category": "cuda-oom"`)
}
