//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/testcluster"
)

// agentPod is a GPU Operator agent's pod (its DaemonSet's app label) running on node.
func agentPod(name, ns, app, node string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[1]s, namespace: %[2]s, labels: {app: %[3]s}}
spec:
  nodeName: %[4]s
  containers: [{name: %[3]s, image: nvcr.io/nvidia/agent:1}]
status: {phase: Running, startTime: "2026-03-01T00:00:00Z", containerStatuses: [{name: %[3]s, image: "nvcr.io/nvidia/agent:1", imageID: "agent@sha256:0", containerID: "containerd://%[1]s", ready: true, restartCount: 0, state: {running: {startedAt: "2026-03-01T00:00:00Z"}}}]}
`, name, ns, app, node)
}

// TestCollectE2ENodeAgents: collect finds the GPU agents' pods on the job's nodes (by label
// and spec.nodeName, not another node's), keeps the tail of their logs, and analyze puts the
// rank's CUDA error down to its node's GPU when the device plugin marked it unhealthy at that
// time; the report says which agents ran on which node.
func TestCollectE2ENodeAgents(t *testing.T) {
	env := startE2E(t)
	c, k := env.c, env.kubelet
	start := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	j := testcluster.Job{Namespace: "gpu", Name: "xid", Workers: 2, Nodes: 2, Start: start}
	c.CreateJob(t, k, j)
	// Worker 1 (pod 2, on node 0) dies of a CUDA error; the device plugin on its node marks
	// the GPU unhealthy two seconds later (the line NVIDIA/k8s-device-plugin#189 shows).
	ts := func(d time.Duration) string { return start.Add(d).Format(time.RFC3339Nano) }
	k.SetLog(j.Namespace, j.PodName(2), j.Container(), false, []byte(
		ts(5*time.Minute)+" [rank2] step 1 loss 2.5\n"+
			ts(6*time.Minute)+" RuntimeError: CUDA error: unspecified launch failure\n"))
	node0, node1 := j.NodeName(2), j.NodeName(1)
	require.NotEqual(t, node0, node1)
	c.ApplyYAML(t, k, agentPod("nvidia-device-plugin-daemonset-a1", "gpu-operator", "nvidia-device-plugin-daemonset", node0)+"---\n"+
		agentPod("nvidia-dcgm-exporter-b2", "gpu-operator", "nvidia-dcgm-exporter", node1)+"---\n"+
		agentPod("nvidia-device-plugin-daemonset-zz", "gpu-operator", "nvidia-device-plugin-daemonset", "another-node"))
	var plugin strings.Builder
	for i := range 3000 { // longer than the tail kept
		fmt.Fprintf(&plugin, "%s I0314 main.go:317] health check %d ok\n", ts(time.Duration(i)*100*time.Millisecond), i)
	}
	fmt.Fprintf(&plugin, "%s 2026/03/14 10:06:02 XidCriticalError: Xid=79 on Device=GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8, the device will go unhealthy.\n", ts(6*time.Minute+2*time.Second))
	k.SetLog("gpu-operator", "nvidia-device-plugin-daemonset-a1", "nvidia-device-plugin-daemonset", false, []byte(plugin.String()))
	k.SetLog("gpu-operator", "nvidia-dcgm-exporter-b2", "nvidia-dcgm-exporter", false,
		[]byte(ts(0)+` time="2026-03-14T10:00:00Z" level=info msg="Starting dcgm-exporter"`+"\n"))
	k.SetLog("gpu-operator", "nvidia-device-plugin-daemonset-zz", "nvidia-device-plugin-daemonset", false,
		[]byte(ts(6*time.Minute)+" XidCriticalError: Xid=48 on Device=GPU-0, the device will go unhealthy.\n"))

	out := filepath.Join(t.TempDir(), "b.tar.gz")
	code, stdout, stderr := collectCLI(t, "pytorchjob/xid", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "2 GPU agent pods")
	m := readManifest(t, out)
	require.Empty(t, m.Errors)
	require.NotNil(t, m.File("resources/core/Pod/gpu-operator/nvidia-device-plugin-daemonset-a1.yaml"))
	require.NotNil(t, m.File("resources/core/Pod/gpu-operator/nvidia-dcgm-exporter-b2.yaml"))
	require.Nil(t, m.File("resources/core/Pod/gpu-operator/nvidia-device-plugin-daemonset-zz.yaml"), "an agent on a node the job did not use")
	log := fileInTar(t, out, "logs/gpu-operator/nvidia-device-plugin-daemonset-a1/nvidia-device-plugin-daemonset.log")
	require.Contains(t, log, "XidCriticalError: Xid=79")
	require.NotContains(t, log, "health check 0 ok", "only the tail of an agent's log")
	require.Equal(t, 2000, strings.Count(log, "\n"))
	require.Contains(t, k.Calls(), "gpu-operator/nvidia-device-plugin-daemonset-a1/nvidia-device-plugin-daemonset")

	r, _ := analyzeJSON(t, nil, out)
	require.NotNil(t, r.RootCause)
	require.Equal(t, "gpu-hardware/device-plugin-unhealthy", r.RootCause.RuleID, r.RootCause.Title)
	require.Equal(t, j.PodName(2), r.RootCause.Pod)
	require.Equal(t, node0, r.RootCause.Node)
	ne := r.NodeEvidence
	require.NotNil(t, ne)
	require.Empty(t, ne.Gap)
	agents := map[string][]string{}
	for _, n := range ne.Nodes {
		agents[n.Node] = n.Agents
	}
	require.Equal(t, map[string][]string{node0: {bundle.AgentDevicePlugin}, node1: {bundle.AgentDCGMExporter}}, agents)
	require.NotNil(t, ne.Attribution)
	require.True(t, ne.Attribution.Attributed, ne.Attribution.Reason)
	require.Equal(t, "high", string(ne.Attribution.Confidence))
	for _, l := range r.Logs {
		if l.Pod == "nvidia-dcgm-exporter-b2" {
			require.Equal(t, bundle.AgentDCGMExporter, l.NodeAgent)
			require.Equal(t, node1, l.Node)
		}
	}

	// A least-privilege collector without the opt-in (deploy/rbac.yaml only) may not list the
	// agents' pods: one gap, which --strict does not count, and a report that says it could
	// not look rather than that no agent ran.
	rbac, err := os.ReadFile("../../deploy/rbac.yaml")
	require.NoError(t, err)
	c.ApplyYAML(t, k, strings.ReplaceAll(string(rbac), "namespace: ml", "namespace: "+j.Namespace))
	kc := c.Kubeconfig(t, testcluster.CollectorToken, "collector", j.Namespace)
	out = filepath.Join(t.TempDir(), "least.tar.gz")
	code, stdout, stderr = eventually(t, func() (int, string, string) {
		return collectCLI(t, "pytorchjob/xid", "--kubeconfig", kc, "-o", out, "--strict")
	})
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, ", 1 gaps")
	m = readManifest(t, out)
	require.Len(t, m.Errors, 1, "%+v", m.Errors)
	require.Equal(t, bundle.GapNodeAgents, m.Errors[0].Step)
	require.Contains(t, m.Errors[0].Message, "forbidden")
	r, _ = analyzeJSON(t, nil, out)
	require.NotNil(t, r.NodeEvidence)
	require.Equal(t, analyze.NodeEvidenceUnreadReason, r.NodeEvidence.Gap)
	require.Equal(t, "cuda-error", string(r.RootCause.Category), "without node evidence the CUDA error is all there is")
}
