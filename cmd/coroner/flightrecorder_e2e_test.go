//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/testcluster"
)

// execGaps are a manifest's gaps of step exec, as "object: message".
func execGaps(m *bundle.Manifest) []string {
	var out []string
	for _, g := range m.Errors {
		if g.Step == "exec" {
			out = append(out, g.Object+": "+g.Message)
		}
	}
	return out
}

// TestCollectFlightRecorderE2E: `collect --flight-recorder-exec` against a real kube-apiserver.
// Without the opt-in RBAC (deploy/flight-recorder-exec.yaml) the API server refuses pods/exec
// and each running container that names a dump prefix is a gap saying so; with it the API
// server authorizes the exec and proxies it to the node's kubelet. The harness's fake kubelet
// serves logs only, not the exec streaming protocol, so that exec fails at the kubelet and is
// a gap too: the copy of the files through a real exec stream is tested by bundle/collect's
// TestCollectFlightRecords with a fake container at the Execer. A container that is not
// running is a gap without any exec. Without the flag, coroner never execs.
func TestCollectFlightRecorderE2E(t *testing.T) {
	env := startE2E(t)
	c, k := env.c, env.kubelet
	rbac, err := os.ReadFile("../../deploy/rbac.yaml")
	require.NoError(t, err)
	const ns = "frns"
	c.ApplyYAML(t, k, strings.ReplaceAll(string(rbac), "namespace: ml", "namespace: "+ns))
	kc := c.Kubeconfig(t, testcluster.CollectorToken, "collector", ns)
	c.CreateJob(t, k, testcluster.Job{Namespace: ns, Name: "hang", Workers: 1, Running: true, FlightRecorder: "/fr/comm_lib_trace_rank_"})
	c.CreateJob(t, k, testcluster.Job{Namespace: ns, Name: "done", Workers: 1, FlightRecorder: "/fr/comm_lib_trace_rank_"})

	collectGaps := func(target string, args ...string) []string {
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code, _, stderr := eventually(t, func() (int, string, string) {
			return collectCLI(t, append([]string{target, "--kubeconfig", kc, "-o", out}, args...)...)
		})
		require.Equal(t, 0, code, "stderr: %s", stderr)
		return execGaps(readManifest(t, out))
	}

	require.Empty(t, collectGaps("pytorchjob/hang"), "no exec without --flight-recorder-exec")

	gaps := collectGaps("pytorchjob/hang", "--flight-recorder-exec")
	require.Len(t, gaps, 2, "%q", gaps)
	for _, g := range gaps {
		require.Contains(t, g, "flight recorder dumps /fr/comm_lib_trace_rank_*: forbidden")
	}

	gaps = collectGaps("pytorchjob/done", "--flight-recorder-exec")
	require.Len(t, gaps, 2, "%q", gaps)
	require.Contains(t, gaps[0], "pod/done-master-0 container pytorch: not running")

	grant, err := os.ReadFile("../../deploy/flight-recorder-exec.yaml")
	require.NoError(t, err)
	c.ApplyYAML(t, k, strings.ReplaceAll(string(grant), "namespace: ml", "namespace: "+ns))
	gaps = collectGaps("pytorchjob/hang", "--flight-recorder-exec")
	require.Len(t, gaps, 2, "%q", gaps)
	for _, g := range gaps {
		require.Contains(t, g, "flight recorder dumps /fr/comm_lib_trace_rank_*:")
		require.NotContains(t, g, "forbidden", "authorized: the exec reached the kubelet")
		t.Log(g)
	}
}
