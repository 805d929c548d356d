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

// TestKindNotServedAndUnknownFlag: two ways a job on Kubernetes fails before anything of it
// runs, for its manifest and the cluster (or the image) being of different releases. The API
// server serves no such kind at that version (the operator's CRD is not installed:
// kubeflow/examples#694, kubeflow/katib#661, #1228), whether kubectl or a controller asked;
// and a program started with a flag its build does not define (Go's flag package, cobra's:
// operator-framework/operator-lifecycle-manager#714, kubealex/k8s-mediaserver-operator#36).
// The CRD's creation and a usage listing of the flags are no failure.
func TestKindNotServedAndUnknownFlag(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tc := range []struct{ log, rule, evidence string }{
		{"error: unable to recognize \"train.yaml\": no matches for kind \"PyTorchJob\" in version \"kubeflow.org/v1\"\n",
			"config-error/kind-not-served", "no matches for kind \"PyTorchJob\""},
		{"2024/03/02 10:01:07 controller.AddToManager(mgr)\n2024/03/02 10:01:07 no matches for kind “RayJob” in version “ray.io/v1\"\n",
			"config-error/kind-not-served", "RayJob"},
		{"flag provided but not defined: -gang-scheduling-name\nUsage of /opt/mpi-operator:\n  -kubeconfig string\n    \tPath to a kubeconfig.\n",
			"config-error/unknown-flag", "flag provided but not defined: -gang-scheduling-name"},
		{"Error: unknown flag: --enable-scheduler-plugins\nUsage:\n  manager [flags]\n",
			"config-error/unknown-flag", "unknown flag: --enable-scheduler-plugins"},
	} {
		res := analyzeLogs(t, all, tc.log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, tc.log)
		require.Equal(t, CategoryConfigError, res.RootCause.Category, "%s\n%s", tc.log, findingsOf(res))
		require.Equal(t, tc.rule, res.RootCause.RuleID, findingsOf(res))
		require.Equal(t, ConfidenceHigh, res.Confidence, tc.log)
		require.Contains(t, res.RootCause.Evidence[0].Text, tc.evidence)
	}
	for _, healthy := range []string{
		"customresourcedefinition.apiextensions.k8s.io/pytorchjobs.kubeflow.org created\npytorchjob.kubeflow.org/mnist created\n",
		"Usage of /opt/mpi-operator:\n  -gang-scheduling-name string\n    \tSet the gang scheduler name if enabled.\n  -kubeconfig string\n",
	} {
		res := analyzeLogs(t, all, healthy)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s\n%s", healthy, findingsOf(res))
	}
	// The review's cases: the same words from a step the job went on past. kubectl 1.28 and
	// later refuse `version --short` (kubernetes/kubectl#1518); an optional ServiceMonitor
	// applied before the Prometheus operator's CRDs (tumblr/k8s-sidecar-injector#23), applied
	// again once served (labring/sealos#489).
	short := "+ kubectl version --short\nerror: unknown flag: --short\nSee 'kubectl version --help' for usage.\n" +
		"+ kubectl apply -f pytorchjob.yaml\npytorchjob.kubeflow.org/bert-ddp created\n"
	monitor := "+ kubectl apply -f monitoring/\nerror: resource mapping not found for name: \"dcgm-exporter\" namespace: \"default\" from " +
		"\"monitoring/servicemonitor.yaml\": no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"\nensure CRDs are installed first\n"
	train := "[rank0]: Epoch 1/3 step 100 loss 0.91\n[rank0]: Epoch 3/3 step 300 loss 0.80\n"
	for _, healthy := range []string{
		short + train,
		monitor + "+ kubectl apply -f pytorchjob.yaml\npytorchjob.kubeflow.org/bert-ddp created\n" + train,
		"16:27:13 [INFO] unable to recognize \"manifests/0prometheus-operator-serviceMonitor.yaml\": no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"\n" +
			"16:27:20 [INFO] cd /root/prometheus && kubectl apply -f manifests\n16:27:21 [INFO] servicemonitor.monitoring.coreos.com/prometheus-operator created\n",
	} {
		res := analyzeLogs(t, all, healthy)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s\n%s", healthy, findingsOf(res))
	}
	// A caller raising for the failed step (subprocess's CalledProcessError) did not go on
	// past it: the kind not served is still the cause (the second review's case).
	res := analyzeLogs(t, all, "+ kubectl apply -f /workspace/manifests/pytorchjob.yaml\n"+
		"error: unable to recognize \"/workspace/manifests/pytorchjob.yaml\": no matches for kind \"PyTorchJob\" in version \"kubeflow.org/v1\"\n"+
		"Traceback (most recent call last):\n  File \"/workspace/launch.py\", line 42, in <module>\n"+
		"    subprocess.check_call([\"kubectl\", \"apply\", \"-f\", manifest])\n"+
		"subprocess.CalledProcessError: Command '['kubectl', 'apply', '-f', '/workspace/manifests/pytorchjob.yaml']' returned non-zero exit status 1.\n")
	require.Equal(t, "config-error/kind-not-served", res.RootCause.RuleID, findingsOf(res))
	require.Equal(t, ConfidenceHigh, res.Confidence)

	// And the cause the job died of later is the root, not the step before it.
	for _, tc := range []struct {
		log string
		cat Category
	}{
		{short + "[rank0]: RuntimeError: NCCL communicator was aborted on rank 3. Original reason for failure was: [Rank 3] Watchdog caught collective operation timeout: " +
			"WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n", CategoryCollectiveTimeout},
		{monitor + "+ kubectl apply -f pytorchjob.yaml\npytorchjob.kubeflow.org/bert-ddp created\n[rank0]: Epoch 1/3 step 100 loss 0.91\n[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n", CategoryCUDAOOM},
	} {
		res := analyzeLogs(t, all, tc.log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, tc.log)
		require.Equal(t, tc.cat, res.RootCause.Category, "%s\n%s", tc.log, findingsOf(res))
	}
}
