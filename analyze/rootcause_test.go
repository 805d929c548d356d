package analyze

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// podYAML is a pod of namespace ml on node, in phase; term, when set, is its container's
// terminated state ("{exitCode: 1, reason: Error, finishedAt: ...}"); gpus its GPU limit.
func podYAML(name, node, phase, term string, gpus int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: ml, creationTimestamp: \"2026-03-14T10:00:00Z\"}\n", name)
	fmt.Fprintf(&b, "spec:\n  nodeName: %q\n  containers:\n  - name: c\n    image: trainer:v1\n", node)
	if gpus > 0 {
		fmt.Fprintf(&b, "    resources: {limits: {nvidia.com/gpu: %d}, requests: {nvidia.com/gpu: %d}}\n", gpus, gpus)
	}
	fmt.Fprintf(&b, "status:\n  phase: %s\n", phase)
	if phase != "Pending" {
		b.WriteString("  startTime: \"2026-03-14T10:00:01Z\"\n")
		b.WriteString("  containerStatuses:\n  - name: c\n    image: trainer:v1\n    imageID: trainer@sha256:1\n    ready: false\n    restartCount: 0\n")
		if term != "" {
			fmt.Fprintf(&b, "    state: {terminated: %s}\n", term)
		} else {
			b.WriteString("    state: {running: {startedAt: \"2026-03-14T10:00:02Z\"}}\n")
		}
	}
	return b.String()
}

// eventYAML is an event about a pod or node of namespace ml.
func eventYAML(name, kind, object, typ, reason, message, at string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Event\nmetadata: {name: %s, namespace: ml}\ninvolvedObject: {kind: %s, name: %s, namespace: ml}\n"+
		"type: %s\nreason: %s\nmessage: %q\ncount: 1\nfirstTimestamp: %q\nlastTimestamp: %q\n", name, kind, object, typ, reason, message, at, at)
}

// nodeYAML is a node with gpus allocatable.
func nodeYAML(name string, gpus int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata: {name: %s}\nstatus:\n  capacity: {nvidia.com/gpu: %d}\n  allocatable: {nvidia.com/gpu: %d}\n"+
		"  conditions: [{type: Ready, status: \"True\", lastTransitionTime: \"2026-03-14T09:00:00Z\"}]\n", name, gpus, gpus)
}

// analyzeFiles analyzes a bundle of the given files (paths as in a bundle), without a
// manifest and with the default thresholds.
func analyzeFiles(t *testing.T, files map[string]string) *Result {
	t.Helper()
	return analyzeBundle(t, files, time.Time{}, Options{})
}

// TestRootCauseSelection: each rule of the root-cause choice, one row with a minimal bundle
// and the root it must give.
func TestRootCauseSelection(t *testing.T) {
	const ts = "2026-03-14T10:"
	tests := []struct {
		name     string
		files    map[string]string
		category Category
		rule     string // when set, the root's rule
		pod      string
	}{{
		name: "an abort carries its cause: the what() line is the finding, not the abort",
		files: map[string]string{"logs/ml/a/c.log": ts + "00:05Z terminate called after throwing an instance of 'c10::DistBackendError'\n" +
			ts + "00:05Z   what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.\n" +
			ts + "00:06Z Fatal Python error: Aborted\n"},
		category: CategoryCollectiveTimeout, pod: "a",
	}, {
		name: "the last exception of a chained traceback is the finding",
		files: map[string]string{"logs/ml/a/c.log": ts + "00:01Z Traceback (most recent call last):\n" +
			ts + "00:01Z ValueError: could not convert string to float: 'abc'\n" +
			ts + "00:01Z During handling of the above exception, another exception occurred:\n" +
			ts + "00:01Z Traceback (most recent call last):\n" +
			ts + "00:02Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free.\n"},
		category: CategoryCUDAOOM, pod: "a",
	}, {
		name: "a generic non-zero exit never outranks the specific error of the same pod",
		files: map[string]string{
			"resources/core/Pod/ml/a.yaml": podYAML("a", "n1", "Failed", `{exitCode: 1, reason: Error, startedAt: "2026-03-14T10:00:02Z", finishedAt: "2026-03-14T10:00:09Z"}`, 0),
			"logs/ml/a/c.log":              ts + "00:08Z ModuleNotFoundError: No module named 'flash_attn'\n",
		},
		category: CategoryModuleNotFound, pod: "a",
	}, {
		name: "a launcher's summary that a rank failed does not outrank the line saying how it died",
		files: map[string]string{"logs/ml/launcher/c.log": ts + "00:05Z Primary job  terminated normally, but 1 process returned\n" +
			ts + "00:05Z a non-zero exit code. Per user-direction, the job has been aborted.\n" +
			ts + "00:06Z mpirun noticed that process rank 3 with PID 0 on node worker-1 exited on signal 9 (Killed).\n"},
		category: CategoryHostOOM, rule: "host-oom/mpi-rank-sigkill", pod: "launcher",
	}, {
		name: "the earliest primary failure across pods, not an earlier symptom on another pod",
		files: map[string]string{
			"logs/ml/a/c.log": ts + "00:05Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free.\n",
			"logs/ml/b/c.log": ts + "00:01Z [rank1]:[E314 10:00:01.000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.\n",
		},
		category: CategoryCUDAOOM, pod: "a",
	}, {
		name: "a transient FailedMount on a pod that then ran is not the root cause",
		files: map[string]string{
			"resources/core/Pod/ml/a.yaml":   podYAML("a", "n1", "Running", "", 0),
			"resources/core/Pod/ml/b.yaml":   podYAML("b", "n1", "Failed", `{exitCode: 1, reason: Error, startedAt: "2026-03-14T10:00:02Z", finishedAt: "2026-03-14T10:25:09Z"}`, 0),
			"resources/core/Event/ml/e.yaml": eventYAML("e", "Pod", "a", "Warning", "FailedMount", `MountVolume.SetUp failed for volume "config" : failed to sync configmap cache: timed out waiting for the condition`, "2026-03-14T10:00:03Z"),
			"logs/ml/a/c.log":                ts + "01:00Z step 10 loss 2.1\n" + ts + "24:00Z step 2000 loss 1.1\n",
			"logs/ml/b/c.log":                ts + "25:05Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free.\n",
		},
		category: CategoryCUDAOOM, pod: "b",
	}, {
		name: "a spec that no node can hold comes before the scheduling events it causes",
		files: map[string]string{
			"resources/core/Pod/ml/a.yaml":         podYAML("a", "", "Pending", "", 8),
			"resources/core/Node/_cluster/n1.yaml": nodeYAML("n1", 4),
			"resources/core/Event/ml/e.yaml":       eventYAML("e", "Pod", "a", "Warning", "FailedScheduling", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.", "2026-03-14T10:00:01Z"),
		},
		category: CategoryScheduling, rule: "scheduling/gpu-request-exceeds-nodes", pod: "a",
	}, {
		name: "a GPU fault on the node explains the CUDA error of the pod on it",
		files: map[string]string{
			"resources/core/Pod/ml/a.yaml":         podYAML("a", "n1", "Failed", `{exitCode: 1, reason: Error, startedAt: "2026-03-14T10:00:02Z", finishedAt: "2026-03-14T10:05:09Z"}`, 1),
			"resources/core/Node/_cluster/n1.yaml": nodeYAML("n1", 8),
			"resources/core/Event/ml/e.yaml":       eventYAML("e", "Node", "n1", "Warning", "SysLogsXIDError", "NVRM: Xid (PCI:0000:3b:00): 79, pid=412, name=python3, GPU has fallen off the bus.", "2026-03-14T10:05:03Z"),
			"logs/ml/a/c.log":                      ts + "05:04Z RuntimeError: CUDA error: unspecified launch failure\n",
		},
		category: CategoryGPUHardware, pod: "a",
	}, {
		name: "NaN loss to the end of a log is a failure even with no error line",
		files: map[string]string{"logs/ml/a/c.log": func() string {
			var b strings.Builder
			for i := 1; i <= 60; i++ {
				loss := "2.31"
				if i > 20 {
					loss = "nan"
				}
				fmt.Fprintf(&b, "%s%02d:%02dZ step %d | loss %s | lr 3.0e-04 | grad_norm %s\n", ts, 1+i/60, i%60, i, loss, loss)
			}
			return b.String()
		}()},
		category: CategoryNaNLoss, pod: "a",
	}, {
		// Lines without a time: their order in the log is the order they were printed in.
		name: "an NCCL network error printed before a CUDA error is the root, not the CUDA error",
		files: map[string]string{"logs/ml/a/c.log": "node-3:2201:2290 [0] transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129\n" +
			"node-3:2201:2201 [1] NCCL WARN Cuda failure 'an illegal memory access was encountered'\n"},
		category: CategoryCollectiveError, rule: "collective-error/nccl-ib-completion-error", pod: "a",
	}, {
		name: "a CUDA error printed before the NCCL errors it causes stays the root",
		files: map[string]string{"logs/ml/a/c.log": "RuntimeError: CUDA error: an illegal memory access was encountered\n" +
			"node-3:2201:2290 [0] transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129\n" +
			"node-3:2201:2201 [0] NCCL WARN Cuda failure 'an illegal memory access was encountered'\n"},
		category: CategoryCUDAError, rule: "cuda-error/illegal-memory-access", pod: "a",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeFiles(t, tt.files)
			require.NotNil(t, res.RootCause, "verdict %s: %s", res.Verdict, res.VerdictReason)
			rc := res.RootCause
			var all []string
			for _, f := range res.Findings {
				all = append(all, fmt.Sprintf("%s %s %s %s", f.ID, f.RuleID, f.Pod, f.SecondaryOf))
			}
			t.Logf("findings: %s", strings.Join(all, "; "))
			require.Equal(t, tt.category, rc.Category, "root %s (%s); findings: %s", rc.RuleID, rc.Title, strings.Join(all, "; "))
			if tt.rule != "" {
				require.Equal(t, tt.rule, rc.RuleID)
			}
			require.Equal(t, tt.pod, rc.Pod)
			require.Equal(t, VerdictUnhealthy, res.Verdict)
		})
	}
}
