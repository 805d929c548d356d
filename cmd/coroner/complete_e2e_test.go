//go:build e2e

package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCollectCompletionE2E: against a real kube-apiserver, collect completes the training kinds
// the cluster serves, the jobs of a kind in -n's namespace (in both the KIND/NAME and the KIND
// NAME forms) and the namespaces; and the job so completed, named KIND NAME, is collected and
// analyzed to its sample's root cause.
func TestCollectCompletionE2E(t *testing.T) {
	env := startE2E(t)
	const ns = "complete-ml"
	env.c.LoadSample(t, filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), ns, env.kubelet)

	words, _ := complete(t, "collect", "--kubeconfig", env.admin, "-n", ns, "py")
	require.Contains(t, words, "pytorchjob")
	words, _ = complete(t, "collect", "--kubeconfig", env.admin, "-n", ns, "")
	require.Subset(t, words, []string{"trainjob", "mpijob", "job"})
	words, _ = complete(t, "collect", "--kubeconfig", env.admin, "-n", ns, "pytorchjob/")
	require.Equal(t, []string{"pytorchjob/train-job"}, words)
	words, _ = complete(t, "collect", "--kubeconfig", env.admin, "-n", ns, "pytorchjobs.kubeflow.org", "")
	require.Equal(t, []string{"train-job"}, words)
	words, _ = complete(t, "collect", "--kubeconfig", env.admin, "-n", "default", "pytorchjob", "")
	require.Empty(t, words)
	words, _ = complete(t, "collect", "--kubeconfig", env.admin, "-n", "complete-")
	require.Equal(t, []string{ns}, words)

	out := filepath.Join(t.TempDir(), "bundle.tar.gz")
	code, _, stderr := collectCLI(t, "pytorchjob", "train-job", "-n", ns, "--kubeconfig", env.admin, "-o", out)
	require.Equal(t, 0, code, stderr)
	r, _ := analyzeJSON(t, nil, out)
	require.NotNil(t, r.RootCause)
	require.Equal(t, "cuda-oom", string(r.RootCause.Category))
	require.Equal(t, "train-job-worker-4", r.RootCause.Pod)
}
