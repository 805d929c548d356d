package analyze

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/stretchr/testify/require"
)

// startFailed is a one-worker PyTorchJob whose container never started: runc failed to exec
// its command, and the kubelet keeps retrying it (StartError, exit code 128, the runtime's
// message in the last state).
func startFailed(message string) map[string]string {
	status := fmt.Sprintf(`  phase: Running
  startTime: "2026-03-14T10:00:02Z"
  containerStatuses:
  - name: pytorch
    image: registry.local/ml/trainer:v2
    imageID: registry.local/ml/trainer@sha256:1
    ready: false
    restartCount: 4
    state: {waiting: {reason: CrashLoopBackOff, message: "back-off 1m20s restarting failed container=pytorch pod=train-worker-0_ml(u2)"}}
    lastState: {terminated: {exitCode: 128, reason: StartError, message: %q, startedAt: "1970-01-01T00:00:00Z", finishedAt: "2026-03-14T10:02:30Z"}}
`, message)
	return map[string]string{
		"resources/kubeflow.org/PyTorchJob/ml/train.yaml": pytorchJobYAML(1, "Failed", "2026-03-14T10:03:00Z"),
		"resources/core/Pod/ml/train-worker-0.yaml":       workerPodYAML(0, status),
	}
}

// TestCommandNotExecutableUnderContainerd: under containerd a container whose command lacks
// the execute bit ends StartError with exit code 128, not the shell's 126: the runtime's
// message names the cause and the command. A command missing from the image, in the same
// place, stays a missing command.
func TestCommandNotExecutableUnderContainerd(t *testing.T) {
	at := time.Date(2026, 3, 14, 10, 10, 0, 0, time.UTC)
	res := analyzeBundle(t, startFailed(`failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: "/workspace/run.sh": permission denied: unknown`), at, Options{})
	t.Log(findingsOf(res))
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.NotNil(t, res.RootCause)
	require.Equal(t, "permission-denied/command-not-executable", res.RootCause.RuleID, res.VerdictReason)
	require.Equal(t, CategoryPermissionDenied, res.RootCause.Category)
	require.Contains(t, res.RootCause.Title, "/workspace/run.sh")

	res = analyzeBundle(t, startFailed(`failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "torchrun": executable file not found in $PATH: unknown`), at, Options{})
	require.NotNil(t, res.RootCause)
	require.Equal(t, "config-error/executable-not-found", res.RootCause.RuleID, res.VerdictReason)
}

// TestRuntimeMissingNeedsTheAPIServersWord: a TrainJob's runtime absent from the bundle is
// reported missing only when the collector recorded the API server's "not found" for it.
// Kubeflow Trainer's webhook refuses a TrainJob whose runtime does not exist and a finalizer
// keeps a runtime in use, so without that record the runtime was more likely not collected:
// a warning says so, and no finding blames the spec.
func TestRuntimeMissingNeedsTheAPIServersWord(t *testing.T) {
	files := sampleFiles(t, "trainjob-missing-runtime")
	at := time.Date(2026, 3, 14, 9, 10, 0, 0, time.UTC)
	missing := func(res *Result) bool {
		for _, f := range res.Findings {
			if f.RuleID == "config-error/runtime-missing" {
				return true
			}
		}
		return false
	}

	res := analyzeBundleGaps(t, files, at, []bundle.Gap{{Step: "get", Object: "ClusterTrainingRuntime/torch-distributed-v3",
		Message: `gone: clustertrainingruntimes.trainer.kubeflow.org "torch-distributed-v3" not found`}}, Options{})
	require.True(t, missing(res), findingsOf(res))

	for _, gaps := range [][]bundle.Gap{nil, {{Step: "get", Object: "ClusterTrainingRuntime/torch-distributed-v3",
		Message: `forbidden by RBAC: clustertrainingruntimes.trainer.kubeflow.org "torch-distributed-v3" is forbidden`}}} {
		res = analyzeBundleGaps(t, files, at, gaps, Options{})
		require.False(t, missing(res), findingsOf(res))
		require.Contains(t, strings.Join(res.Warnings, "\n"), "runtime ClusterTrainingRuntime torch-distributed-v3 was not collected")
	}
}
