package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/testcluster"
)

// complete runs cobra's __complete, as the shell completion scripts and
// kubectl_complete-coroner do, and returns the offered words (descriptions cut) and the
// directive line.
func complete(t *testing.T, args ...string) (words []string, directive string) {
	t.Helper()
	code, out, stderr := run(t, append([]string{"__complete"}, args...)...)
	require.Equal(t, exitOK, code, stderr)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.NotEmpty(t, lines)
	directive = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return words, directive
}

// TestCompleteFlagValues: the enum flags offer their values, and no file names.
func TestCompleteFlagValues(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"analyze", sample, "--format", ""}, []string{"text", "json", "md", "html"}},
		{[]string{"analyze", sample, "--fail-on", ""}, []string{"info", "warning", "error", "critical"}},
		{[]string{"analyze", sample, "--color", ""}, []string{"auto", "always", "never"}},
		{[]string{"search", sample, "x", "--format", ""}, []string{"text", "json"}},
		{[]string{"diff", sample, sample, "--fail-on", ""}, []string{"info", "warning", "error", "critical", "any"}},
		{[]string{"fleet", "query", "--format", ""}, []string{"table", "csv", "json"}},
	} {
		words, directive := complete(t, tc.args...)
		require.Equal(t, tc.want, words, "%v", tc.args)
		require.Equal(t, ":4", directive, "no file completion for %v", tc.args)
	}
}

// TestCompleteRuleIDs: rules show offers the built-in ids with their titles, the ids of a
// --rules directory's rules instead (a rule it turns off is not offered), and never an id
// already given.
func TestCompleteRuleIDs(t *testing.T) {
	words, _ := complete(t, "rules", "show", "cuda-oom/")
	require.Contains(t, words, "cuda-oom/torch-alloc")
	for _, w := range words {
		require.True(t, strings.HasPrefix(w, "cuda-oom/"), w)
	}
	_, out, _ := run(t, "__complete", "rules", "show", "cuda-oom/torch")
	require.Contains(t, out, "cuda-oom/torch-alloc\t", "each id carries its title")

	words, _ = complete(t, "rules", "show", "module-not-found/")
	require.Contains(t, words, "module-not-found/no-module")
	off := siteDir(t, "apiVersion: coroner.dev/rules/v1\nrules:\n  - {id: module-not-found/no-module, enabled: false}\n")
	words, _ = complete(t, "rules", "show", "--rules", off, "module-not-found/")
	require.NotContains(t, words, "module-not-found/no-module")

	words, _ = complete(t, "rules", "show", "cuda-oom/torch-alloc", "cuda-oom/")
	require.NotContains(t, words, "cuda-oom/torch-alloc")
}

// TestCompleteBundlePods: search's --pod and --container offer the pods and containers of the
// bundle being searched, a directory or a tarball; plain logs offer nothing.
func TestCompleteBundlePods(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	words, directive := complete(t, "search", sample, "NCCL", "--pod", "train-job-w")
	require.Equal(t, ":4", directive)
	want := []string{}
	for i := range 7 {
		want = append(want, fmt.Sprintf("train-job-worker-%d", i))
	}
	require.Equal(t, want, words)
	words, _ = complete(t, "search", sample, "NCCL", "-c", "")
	require.Equal(t, []string{"pytorch"}, words)
	words, _ = complete(t, "search", sample, "NCCL", "--pod=train-job-m")
	require.Equal(t, []string{"--pod=train-job-master-0"}, words)
	words, _ = complete(t, "search", sample, "NCCL", "--po")
	require.Equal(t, []string{"--pod"}, words, "flag names are still completed")

	words, _ = complete(t, "search", filepath.Join(samplesDir, "logs", "train-plain.log"), "x", "--pod", "")
	require.Empty(t, words)
}

// TestCompleteCollectWithoutCluster: with no cluster to ask (nothing listens on the
// kubeconfig's server) collect's completions offer nothing, within the bound, and
// --context offers the kubeconfig's contexts, which need no cluster.
func TestCompleteCollectWithoutCluster(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- {name: gone, cluster: {server: "https://127.0.0.1:%d"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: prod-gpu, context: {cluster: gone, user: u, namespace: ml}}
- {name: dev, context: {cluster: gone, user: u}}
current-context: prod-gpu
`, testcluster.DeadPort(t))), 0o600))
	start := time.Now()
	for _, args := range [][]string{
		{"collect", "--kubeconfig", kubeconfig, ""},
		{"collect", "--kubeconfig", kubeconfig, "pytorchjob/"},
		{"collect", "--kubeconfig", kubeconfig, "pytorchjob", ""},
		{"collect", "--kubeconfig", kubeconfig, "-n", ""},
	} {
		code, out, _ := run(t, append([]string{"__complete"}, args...)...)
		require.Equal(t, exitOK, code)
		require.Equal(t, ":4\n", out, "%v offers nothing", args)
	}
	require.Less(t, time.Since(start), 4*completeTimeout)

	words, _ := complete(t, "collect", "--kubeconfig", kubeconfig, "--context", "")
	require.Equal(t, []string{"dev", "prod-gpu"}, words)
	words, _ = complete(t, "watch", "--kubeconfig", kubeconfig, "--context", "p")
	require.Equal(t, []string{"prod-gpu"}, words)
}

// TestKubectlCompleteScript: the kubectl_complete-coroner that make dist ships asks the
// coroner beside it, so kubectl's plugin completion offers what coroner's does.
func TestKubectlCompleteScript(t *testing.T) {
	bin := coronerBinary(t)
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "kubectl_complete-coroner"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubectl_complete-coroner"), script, 0o755))
	require.NoError(t, os.Symlink(bin, filepath.Join(dir, "kubectl-coroner")))
	out, err := exec.Command(filepath.Join(dir, "kubectl_complete-coroner"), "rules", "show", "cuda-oom/torch").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "cuda-oom/torch-alloc\t")
	require.True(t, strings.HasSuffix(string(out), ":4\n"), string(out))
}
