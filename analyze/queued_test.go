package analyze

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// kueuePendingEvent is Kueue's Pending event on the Workload of job sft, seen count times
// from 10:00:05 to 10:02:50.
func kueuePendingEvent(count int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Event\nmetadata: {name: wl.pending, namespace: ml}\n"+
		"involvedObject: {apiVersion: kueue.x-k8s.io/v1beta1, kind: Workload, name: job-sft-3c1a2, namespace: ml}\n"+
		"type: Normal\nreason: Pending\nmessage: %q\ncount: %d\nsource: {component: kueue-admission}\n"+
		"firstTimestamp: \"2026-03-14T10:00:05Z\"\nlastTimestamp: \"2026-03-14T10:02:50Z\"\n",
		"couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, 8 more needed", count)
}

// suspendedJobFiles is a batch Job created at 10:00 that Kueue keeps suspended (no pods),
// with its Workload's Pending event.
func suspendedJobFiles() map[string]string {
	return map[string]string{
		"resources/batch/Job/ml/sft.yaml": `apiVersion: batch/v1
kind: Job
metadata: {name: sft, namespace: ml, uid: j1, creationTimestamp: "2026-03-14T10:00:00Z", labels: {kueue.x-k8s.io/queue-name: team-a}}
spec: {suspend: true, completions: 1, template: {spec: {containers: [{name: train, image: trainer:v1}], restartPolicy: Never}}}
status:
  conditions:
  - {type: Suspended, status: "True", reason: JobSuspended, lastTransitionTime: "2026-03-14T10:00:00Z"}
`,
		"resources/core/Event/ml/wl.pending.yaml": kueuePendingEvent(25),
	}
}

// TestQueuedJob: a job that a queueing layer (Kueue) does not admit is stuck once the wait
// has lasted the threshold, with the queue's words as the root cause; before it, unknown;
// and a wait that ended (the job was admitted and succeeded) is no failure.
func TestQueuedJob(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)

	res := analyzeBundle(t, suspendedJobFiles(), t0.Add(25*time.Minute), Options{})
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryScheduling, res.RootCause.Category)
	require.Contains(t, res.VerdictReason, "Kueue did not admit the workload: insufficient unused quota for nvidia.com/gpu in flavor a100, 8 more needed")
	require.Contains(t, res.VerdictReason, "pending for 25 min")

	res = analyzeBundle(t, suspendedJobFiles(), t0.Add(3*time.Minute), Options{})
	require.Equal(t, VerdictUnknown, res.Verdict, res.VerdictReason)
	require.Contains(t, res.VerdictReason, "below the 5 min threshold; so far: scheduling: Kueue did not admit the workload")

	// The same event in the bundle of a job that was admitted later and succeeded.
	files := batchJobFiles(trainerLog(func(step int) string {
		return fmt.Sprintf("{'loss': %.4f, 'grad_norm': 1.83, 'learning_rate': 1.2e-05, 'epoch': %.2f}", 2.0-float64(step)/400, float64(step)/400)
	}))
	files["resources/core/Event/ml/wl.pending.yaml"] = kueuePendingEvent(25)
	res = analyzeBundle(t, files, t0.Add(2*time.Hour), Options{})
	t.Log(findingsOf(res))
	require.Equal(t, VerdictHealthy, res.Verdict, res.VerdictReason)
	require.Nil(t, res.RootCause)

	// ... and of a job still running, admitted later: its pods were scheduled and run.
	files = map[string]string{"resources/kubeflow.org/PyTorchJob/ml/train.yaml": pytorchJobYAML(2, "Running", "2026-03-14T10:10:00Z")}
	for i := range 2 {
		files[fmt.Sprintf("resources/core/Pod/ml/train-worker-%d.yaml", i)] = workerPodYAML(i, `  phase: Running
  startTime: "2026-03-14T10:09:00Z"
  conditions: [{type: PodScheduled, status: "True", lastTransitionTime: "2026-03-14T10:09:00Z"}]
  containerStatuses:
  - {name: pytorch, image: "registry.local/ml/trainer:v2", imageID: "registry.local/ml/trainer@sha256:1", ready: true, restartCount: 0, state: {running: {startedAt: "2026-03-14T10:09:30Z"}}}
`)
	}
	files["resources/core/Event/ml/wl.pending.yaml"] = kueuePendingEvent(25)
	res = analyzeBundle(t, files, t0.Add(time.Hour), Options{})
	require.Equal(t, VerdictHealthy, res.Verdict, res.VerdictReason)
	require.Contains(t, findingsOf(res), "scheduling/kueue-admission warning")

	// ... but not of a job whose pods still wait for a node.
	files["resources/core/Pod/ml/train-worker-1.yaml"] = strings.Replace(workerPodYAML(1, `  phase: Pending
  conditions: [{type: PodScheduled, status: "False", reason: Unschedulable, lastTransitionTime: "2026-03-14T10:09:00Z"}]
`), "  nodeName: gpu-1\n", "", 1)
	res = analyzeBundle(t, files, t0.Add(time.Hour), Options{})
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "scheduling/kueue-admission", res.RootCause.RuleID)
}

// TestQueuedPaste: the text of a queueing layer pasted on its own (a describe of the
// Workload, the autoscaler's or Karpenter's word on a pending pod) names why the job waits.
func TestQueuedPaste(t *testing.T) {
	requireStuckPastes(t, []stuckPaste{
		// https://github.com/kubernetes-sigs/kueue/issues/1937
		{"kueue workload", `Status:
  Conditions:
    Last Transition Time:  2024-04-02T12:46:27Z
    Message:               couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 3 more needed
    Reason:                Pending
    Status:                False
    Type:                  QuotaReserved
Events:
  Type    Reason   Age                   From             Message
  ----    ------   ----                  ----             -------
  Normal  Pending  116s (x25 over 116s)  kueue-admission  couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, 3 more needed
`, "scheduling/kueue-admission", "pending for at least 1 min when the text was taken"},
		// https://github.com/aws/karpenter-provider-aws/issues/3862
		{"karpenter", "2023-05-06T15:47:57.982Z\tERROR\tcontroller.provisioner\tCould not schedule pod, incompatible with provisioner \"gpu\", did not tolerate app=app1-service:NoSchedule; incompatible with provisioner \"default\", incompatible requirements, key karpenter.sh/provisioner-name\n",
			"scheduling/karpenter-no-nodepool", "Karpenter cannot launch a node for the pod (nodepool gpu)"},
		// The message of cortexlabs/cortex#1685, in an event row as describe prints it.
		{"autoscaler", "  Normal   NotTriggerScaleUp  2m (x31 over 7m)  cluster-autoscaler  pod didn't trigger scale-up (it wouldn't fit if a new node is added): 1 in backoff after failed scale-up\n",
			"scheduling/autoscaler-no-scale-up", "pending for 7 min"},
		// https://github.com/ibm-cloud-labs/iks-handson/issues/7
		{"listing", "NAME                              READY   STATUS                            RESTARTS   AGE\nsample-mychart-6bfc89db65-j9g9z   0/1     Init:CreateContainerConfigError   0          108s\n",
			"config-error/status-listed", "Pod listed in CreateContainerConfigError"},
	})
}

// stuckPaste is a case of requireStuckPastes: pasted text of a pod waiting to start, the
// rule its root cause must be and words of the verdict's reason.
type stuckPaste struct{ name, text, rule, reason string }

// requireStuckPastes runs requireStuckPaste on each case as a subtest.
func requireStuckPastes(t *testing.T, cases []stuckPaste) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireStuckPaste(t, tc.text, tc.rule, tc.reason)
		})
	}
}

// requireStuckPaste: pasted text of a pod waiting to start, as one log of a bundle with no
// collection time, is unhealthy with rule as its root cause and reason in the verdict's
// reason (the wait the text prints is past the threshold).
func requireStuckPaste(t *testing.T, text, rule, reason string) {
	t.Helper()
	res := analyzeBundle(t, map[string]string{"logs/ml/x/c.log": text}, time.Time{}, Options{})
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, rule, res.RootCause.RuleID, findingsOf(res))
	require.Contains(t, res.VerdictReason, reason)
}

// TestPendingListing: kubectl get pods listing a pod Pending says that it waits for a node,
// not why. Past the threshold by its Age column it is a scheduling failure; below it, a
// queued job looks the same, so the verdict is unknown; a pod bound to a node
// (ContainerCreating) is no scheduling wait at all.
func TestPendingListing(t *testing.T) {
	// https://github.com/dask/dask-kubernetes/issues/205
	long := "NAME        READY   STATUS    RESTARTS   AGE\nworkerpod   0/1     Pending   0          19m\n"
	requireStuckPaste(t, long, "scheduling/pending-listed", "pending for 19 min")

	short := strings.Replace(long, "19m", "3m", 1)
	res := analyzeBundle(t, map[string]string{"logs/ml/x/c.log": short}, time.Time{}, Options{})
	require.Equal(t, VerdictUnknown, res.Verdict, res.VerdictReason)
	require.Nil(t, res.RootCause)
	require.Contains(t, res.VerdictReason, "pending for at least 3 min when the text was taken, below the 5 min threshold; so far: scheduling: Pod listed Pending")

	// The same pod with its FailedScheduling event: the event says why.
	res = analyzeBundle(t, map[string]string{"logs/ml/x/c.log": long +
		"  Warning  FailedScheduling  2m (x12 over 19m)  default-scheduler  0/2 nodes are available: 2 Insufficient nvidia.com/gpu.\n"}, time.Time{}, Options{})
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "scheduling/insufficient-resource", res.RootCause.RuleID, findingsOf(res))

	res = analyzeBundle(t, map[string]string{"logs/ml/x/c.log": strings.Replace(long, "Pending", "ContainerCreating", 1)}, time.Time{}, Options{})
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}

// TestPodCannotStartPaste: pasted kubectl output of pods that cannot start names the
// class of cause, not only the crash loop or the pod's state.
func TestPodCannotStartPaste(t *testing.T) {
	requireStuckPastes(t, []stuckPaste{
		// https://github.com/aquasecurity/tracee/issues/2757
		{"exec format", "NAME           READY   STATUS             RESTARTS   AGE\ntracee-x2k9d   0/1     CrashLoopBackOff   6          9m\nexec /tracee/entrypoint.sh: exec format error\n",
			"config-error/exec-format-error", "exec format error"},
		// https://github.com/NVIDIA/gpu-operator/issues/413
		{"runtime handler", "  Warning  FailedCreatePodSandBox  3m (x40 over 12m)  kubelet  Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for \"nvidia\" is configured\n",
			"config-error/runtime-handler-missing", "pending for 12 min"},
		// https://github.com/openkruise/kruise/issues/1863
		{"admission", "  Warning  FailedCreatePod  108s (x17 over 7m15s)  pytorchjob-controller  Error creating: admission webhook \"mpod.kb.io\" denied the request: Internal error occurred: the spec replicas field \".spec.pytorchReplicaSpecs.Worker.replicas\" does not exist\n",
			"config-error/admission-denied", "Admission webhook mpod.kb.io denied the request"},
		// https://github.com/ray-project/kuberay/issues/2210
		{"invalid object", `{"level":"error","ts":"2024-08-28T19:56:13.072Z","logger":"controllers.RayJob","msg":"failed to create k8s Job","error":"Job.batch \"ray-job-s9rqx\" is invalid: [spec.template.spec.containers[0].name: Required value]"}` + "\n",
			"config-error/object-invalid", "Job.batch ray-job-s9rqx is invalid: spec.template.spec.containers[0].name"},
		// https://github.com/NVIDIA/nvidia-container-toolkit/issues/237, as a kubelet event
		{"gpu hook", "  Warning  Failed  5s (x3 over 19s)  kubelet  Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: initialization error: driver rpc error: timed out: unknown\n",
			"cuda-error/container-gpu-hook-failed", "driver rpc error: timed out"},
		// The same line naming a driver/library version mismatch: cuda.yaml's rule says more.
		{"gpu hook mismatch", "Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy' nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown\n",
			"cuda-error/nvml-driver-mismatch", "version mismatch"},
		// https://github.com/pangeo-data/pangeo-cloud-federation/issues/260 (GKE's notice)
		{"gke notice", "PodUnschedulable\n  Cannot schedule pods: Insufficient cpu.\n",
			"scheduling/insufficient-resource", "Insufficient cpu"},
	})
	// https://github.com/LibreTexts/metalc/issues/133: evicted pods are no wait to start.
	res := analyzeBundle(t, map[string]string{"logs/ml/x/c.log": "binderhub   binder-7c5df8bbf6-2vqvt   0/1     Evicted    0          38d     <none>           chick18\n"}, time.Time{}, Options{})
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "preempted-evicted/status-listed", res.RootCause.RuleID, findingsOf(res))
}

// TestPendingListingExplained: kubectl lists a pod whose image cannot be pulled as Pending
// too (corpus excerpt 228's shape): what the pod's log says names the cause.
func TestPendingListingExplained(t *testing.T) {
	// https://github.com/kubernetes/kubernetes/issues/30148 (kubectl logs of a pod that cannot
	// pull its image), under a listing of it.
	text := "NAME     READY   STATUS    RESTARTS   AGE\nupload   0/1     Pending   0          27m\n" +
		"Error from server: container \"upload\" in pod \"upload\" is waiting to start: trying and failing to pull image\n"
	res := analyzeBundle(t, map[string]string{"logs/ml/x/c.log": text}, time.Time{}, Options{})
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "image-pull/waiting-to-start", res.RootCause.RuleID, findingsOf(res))
}

// TestPastedSqueuePending: a pasted squeue listing whose job waits on nodes that are down or
// drained is a scheduling failure, named from the row; the queue's ordinary waits (resources,
// priority, nodes in use by others) name nothing.
func TestPastedSqueuePending(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	head := "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
	res := analyzeLogs(t, all, head+
		"           1020391 gpu2080ti pythonjo    rnath PD       0:00      1 (Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions)\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "scheduling/slurm-pending-nodes-down", res.RootCause.RuleID)
	require.Equal(t, CategoryScheduling, res.RootCause.Category)

	for _, reason := range []string{"(Resources)", "(Priority)", "(ReqNodeNotAvail, May be reserved for other job)", "(QOSMaxGRESPerUser)"} {
		res := analyzeLogs(t, all, head+"           1020391 gpu2080ti pythonjo    rnath PD       0:00      1 "+reason+"\n")
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", reason, res.VerdictReason)
	}
}

// TestProgramsOwnInvalid: a program that calls its own token or configuration invalid says
// nothing about a Kubernetes object the API server refused.
func TestProgramsOwnInvalid(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, log := range []string{
		"step 100 loss 2.3\nWARNING: The Token is invalid: expired, falling back to anonymous access\nstep 200 loss 2.2\nstep 300 loss 2.1\n",
		"Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\nValueError: The Config is invalid: hidden_size must be divisible by num_heads\n",
	} {
		res := analyzeLogs(t, all, log)
		for _, f := range res.Findings {
			require.NotEqual(t, "config-error/object-invalid", f.RuleID, findingsOf(res))
		}
	}
	// kubectl's answer without the object's name still names the refused Job.
	res := analyzeLogs(t, all, "The Job is invalid: spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\"\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "config-error/object-invalid", res.RootCause.RuleID, findingsOf(res))
}
