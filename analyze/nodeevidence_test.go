package analyze

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
)

// gpuNodeYAML is a node with 8 GPUs and, when typ is set, a GPU health agent's condition of
// that type and status since at (NVSentinel names its syslog checks SysLogsXIDError...).
func gpuNodeYAML(name, typ, status, at, message string) string {
	s := fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata: {name: %s, labels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}}\nstatus:\n"+
		"  capacity: {nvidia.com/gpu: 8}\n  allocatable: {nvidia.com/gpu: 8}\n  conditions:\n"+
		"  - {type: Ready, status: \"True\", lastTransitionTime: \"2026-03-14T09:00:00Z\"}\n", name)
	if typ != "" {
		s += fmt.Sprintf("  - {type: %s, status: %q, reason: %sIsNotHealthy, message: %q, lastTransitionTime: %q}\n", typ, status, typ, message, at)
	}
	return s
}

// agentPodYAML is a GPU agent's pod on node (the GPU Operator's labels and namespace).
func agentPodYAML(name, app, node string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: gpu-operator, labels: {app: %s}}\n"+
		"spec:\n  nodeName: %s\n  containers:\n  - {name: %s, image: nvcr.io/nvidia/k8s-device-plugin:v0.17.0}\n"+
		"status:\n  phase: Running\n  containerStatuses:\n  - {name: %s, image: x, imageID: x, ready: true, restartCount: 0, state: {running: {startedAt: \"2026-03-01T00:00:00Z\"}}}\n",
		name, app, node, app, app)
}

const failedGPUPod = `{exitCode: 1, reason: Error, startedAt: "2026-03-14T10:00:02Z", finishedAt: "2026-03-14T10:05:09Z"}`

// TestNodeEvidenceAttribution: a rank's failure is put down to its node's GPU only when the
// node's evidence lines up with it in time; otherwise that evidence is context; and a bundle
// whose nodes no GPU health agent watched says so.
func TestNodeEvidenceAttribution(t *testing.T) {
	const xid79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=412, name=python3, GPU has fallen off the bus."
	cudaLog := "2026-03-14T10:05:04Z RuntimeError: CUDA error: unspecified launch failure\n"
	pod := podYAML("a", "n1", "Failed", failedGPUPod, 8)
	tests := []struct {
		name       string
		files      map[string]string
		category   Category
		rule       string
		attributed *bool // nil: no attribution
		confidence Confidence
		agents     []string
		gap        bool
	}{{
		name: "an NVSentinel condition on the pod's node at the failure: attributed, high",
		files: map[string]string{
			"resources/core/Pod/ml/a.yaml":         pod,
			"resources/core/Node/_cluster/n1.yaml": gpuNodeYAML("n1", "SysLogsXIDError", "True", "2026-03-14T10:05:20Z", xid79),
			"logs/ml/a/c.log":                      cudaLog,
		},
		category: CategoryGPUHardware, rule: "gpu-hardware/node-gpu-condition", attributed: ptr(true), confidence: ConfidenceHigh,
		agents: []string{AgentGPUConditions},
	}, {
		name: "the same condition three hours before the failure: context, the CUDA error stays the root",
		files: map[string]string{
			"resources/core/Pod/ml/a.yaml":         pod,
			"resources/core/Node/_cluster/n1.yaml": gpuNodeYAML("n1", "SysLogsXIDError", "True", "2026-03-14T07:05:00Z", xid79),
			"logs/ml/a/c.log":                      cudaLog,
		},
		category: CategoryCUDAError, attributed: ptr(false), confidence: ConfidenceLow,
		agents: []string{AgentGPUConditions},
	}, {
		name: "the device plugin's log on the pod's node marks the GPU unhealthy after the failure, within the window",
		files: map[string]string{
			"resources/core/Pod/ml/a.yaml":                              pod,
			"resources/core/Node/_cluster/n1.yaml":                      gpuNodeYAML("n1", "", "", "", ""),
			"resources/core/Pod/gpu-operator/nvidia-device-plugin.yaml": agentPodYAML("nvidia-device-plugin-daemonset-x7k2p", "nvidia-device-plugin-daemonset", "n1"),
			"logs/gpu-operator/nvidia-device-plugin-daemonset-x7k2p/nvidia-device-plugin-daemonset.log": "" +
				"2026-03-14T09:00:00Z I0314 09:00:00.000000       1 main.go:317] Retrieving plugins.\n" +
				// The agent's own troubles are not the job's: an exception in its log is no finding.
				"2026-03-14T09:30:00Z Traceback (most recent call last):\n2026-03-14T09:30:00Z ConnectionRefusedError: [Errno 111] Connection refused\n" +
				// https://github.com/NVIDIA/k8s-device-plugin/issues/189
				"2026-03-14T10:05:06Z 2026/03/14 10:05:06 XidCriticalError: Xid=79 on Device=GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8, the device will go unhealthy.\n",
			"logs/ml/a/c.log": cudaLog,
		},
		category: CategoryGPUHardware, rule: "gpu-hardware/device-plugin-unhealthy", attributed: ptr(true), confidence: ConfidenceHigh,
		agents: []string{bundle.AgentDevicePlugin},
	}, {
		name: "no GPU health agent on the node: the CUDA error is the root and the report says it is a gap",
		files: map[string]string{
			"resources/core/Pod/ml/a.yaml":         pod,
			"resources/core/Node/_cluster/n1.yaml": gpuNodeYAML("n1", "", "", "", ""),
			"logs/ml/a/c.log":                      cudaLog,
		},
		category: CategoryCUDAError, gap: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeFiles(t, tt.files)
			var all []string
			for _, f := range res.Findings {
				all = append(all, fmt.Sprintf("%s %s %s/%s %s %s", f.ID, f.RuleID, f.Pod, f.Node, f.Severity, f.SecondaryOf))
			}
			require.NotNil(t, res.RootCause, "verdict %s: %s", res.Verdict, res.VerdictReason)
			rc := res.RootCause
			require.Equal(t, tt.category, rc.Category, "root %s (%s); findings: %s", rc.RuleID, rc.Title, strings.Join(all, "; "))
			if tt.rule != "" {
				require.Equal(t, tt.rule, rc.RuleID)
			}
			require.Equal(t, "a", rc.Pod, "the failing pod is named")
			require.Equal(t, VerdictUnhealthy, res.Verdict)
			for _, f := range res.Findings {
				require.NotContains(t, f.RuleID, "python-exception", "the agent's own exception is no finding")
			}

			ne := res.NodeEvidence
			require.NotNil(t, ne)
			require.Len(t, ne.Nodes, 1)
			require.Equal(t, "n1", ne.Nodes[0].Node)
			require.Equal(t, 8, ne.Nodes[0].GPUs)
			require.Equal(t, tt.agents, ne.Nodes[0].Agents)
			if tt.gap {
				require.Equal(t, NodeEvidenceGapReason, ne.Gap)
			} else {
				require.Empty(t, ne.Gap)
			}
			if tt.attributed == nil {
				require.Nil(t, ne.Attribution)
				return
			}
			at := ne.Attribution
			require.NotNil(t, at, "findings: %s", strings.Join(all, "; "))
			require.Equal(t, *tt.attributed, at.Attributed, at.Reason)
			require.Equal(t, tt.confidence, at.Confidence)
			require.Equal(t, "n1", at.Node)
			require.Equal(t, "a", at.Pod)
			if at.Attributed {
				require.Equal(t, rc.ID, at.Evidence)
				require.Contains(t, at.Reason, "within the window")
				return
			}
			// Context: the node's finding is a warning that says how far it is from the failure.
			var node *Finding
			for _, f := range res.Findings {
				if f.ID == at.Evidence {
					node = f
				}
			}
			require.NotNil(t, node)
			require.Equal(t, SeverityWarning, node.Severity)
			require.Contains(t, node.Title, "(context: 3 h 0 min before the failure of a)")
			require.Contains(t, at.Reason, "context, not the cause")
		})
	}
}

// TestNodeEvidenceAbsent: plain logs and a job on nodes without GPUs have no node evidence,
// and a GPU agent's log never makes a healthy job unhealthy.
func TestNodeEvidenceAbsent(t *testing.T) {
	t.Run("plain logs", func(t *testing.T) {
		res := analyzeFiles(t, map[string]string{"logs/ml/a/c.log": "2026-03-14T10:05:04Z RuntimeError: CUDA error: unspecified launch failure\n"})
		require.Nil(t, res.NodeEvidence)
	})
	t.Run("a CPU job", func(t *testing.T) {
		res := analyzeFiles(t, map[string]string{
			"resources/core/Pod/ml/a.yaml":         podYAML("a", "n1", "Failed", failedGPUPod, 0),
			"resources/core/Node/_cluster/n1.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: 8}}\n",
			"logs/ml/a/c.log":                      "2026-03-14T10:05:04Z ModuleNotFoundError: No module named 'flash_attn'\n",
		})
		require.Nil(t, res.NodeEvidence)
	})
	t.Run("a healthy job beside a device plugin that logged errors", func(t *testing.T) {
		res := analyzeFiles(t, map[string]string{
			"resources/core/Pod/ml/a.yaml":                              podYAML("a", "n1", "Succeeded", `{exitCode: 0, reason: Completed, startedAt: "2026-03-14T10:00:02Z", finishedAt: "2026-03-14T10:05:09Z"}`, 8),
			"resources/core/Node/_cluster/n1.yaml":                      gpuNodeYAML("n1", "", "", "", ""),
			"resources/core/Pod/gpu-operator/nvidia-device-plugin.yaml": agentPodYAML("nvidia-device-plugin-daemonset-x7k2p", "nvidia-device-plugin-daemonset", "n1"),
			"logs/gpu-operator/nvidia-device-plugin-daemonset-x7k2p/nvidia-device-plugin-daemonset.log": "2026-03-14T10:01:00Z E0314 10:01:00.000000       1 main.go:123] failed to start plugin: connection refused\n" +
				"2026-03-14T10:01:01Z Traceback (most recent call last):\n2026-03-14T10:01:01Z RuntimeError: boom\n",
			"logs/ml/a/c.log": "2026-03-14T10:05:00Z step 100 loss 1.2\n",
		})
		require.Equal(t, VerdictHealthy, res.Verdict, res.VerdictReason)
		require.NotNil(t, res.NodeEvidence)
		require.Equal(t, []string{bundle.AgentDevicePlugin}, res.NodeEvidence.Nodes[0].Agents)
		require.Empty(t, res.NodeEvidence.Gap)
		for _, l := range res.Logs {
			if strings.HasPrefix(l.Path, "logs/gpu-operator/") {
				require.Equal(t, bundle.AgentDevicePlugin, l.NodeAgent)
				require.Equal(t, "n1", l.Node)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }
