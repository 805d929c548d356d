package bundle

// NodeAgent is a kind of pod that watches a node's GPUs and logs what it sees about them: the
// device plugin (which marks a GPU unhealthy after a critical Xid) and the DCGM exporter. A
// bundle holds the agents' pods that ran on the job's nodes, with a tail of their logs, as
// evidence of those nodes (collect gathers them, analyze reads them as the node's, never as the
// job's). Each is found by one label, in the namespaces its installer uses when the collector
// cannot list across namespaces.
type NodeAgent struct {
	Name       string // "device-plugin" or "dcgm-exporter"
	Namespaces []string
	LabelKey   string
	LabelValue string
}

// GapNodeAgents is the step of the gap collect records when the GPU agents' pods could be
// listed in none of their namespaces: the job's own evidence is complete (--strict does not
// count it), but whether a GPU health agent watched its nodes is unknown.
const GapNodeAgents = "node-agents"

// Agent names, as reports say them.
const (
	AgentDevicePlugin = "device-plugin"
	AgentDCGMExporter = "dcgm-exporter"
)

// gpuOperatorNamespaces are where the NVIDIA GPU Operator runs its operands: gpu-operator in
// its install guide, nvidia-gpu-operator on OpenShift, gpu-operator-resources before v1.9.
var gpuOperatorNamespaces = []string{"gpu-operator", "nvidia-gpu-operator", "gpu-operator-resources"}

// NodeAgents are the agents collect looks for on the job's nodes and analyze recognises.
var NodeAgents = []NodeAgent{
	// The GPU Operator's DaemonSets label their pods app=<DaemonSet name>.
	{AgentDevicePlugin, gpuOperatorNamespaces, "app", "nvidia-device-plugin-daemonset"},
	{AgentDCGMExporter, gpuOperatorNamespaces, "app", "nvidia-dcgm-exporter"},
	// The device plugin's own Helm chart (nvdp/nvidia-device-plugin) and static manifest.
	{AgentDevicePlugin, []string{"nvidia-device-plugin", "kube-system"}, "app.kubernetes.io/name", "nvidia-device-plugin"},
	{AgentDevicePlugin, []string{"kube-system"}, "name", "nvidia-device-plugin-ds"},
	// GKE's device plugin add-on.
	{AgentDevicePlugin, []string{"kube-system"}, "k8s-app", "nvidia-gpu-device-plugin"},
	// The DCGM exporter's own Helm chart.
	{AgentDCGMExporter, []string{"gpu-operator", "kube-system", "dcgm-exporter"}, "app.kubernetes.io/name", "dcgm-exporter"},
}

// AgentOf names the node agent a pod with these labels is ("" when none). The labels are the
// agents' own and distinctive: a pod that carries one is that agent in whatever namespace it
// was installed; Namespaces only say where to look when a collector may not list them all.
func AgentOf(labels map[string]string) string {
	for _, a := range NodeAgents {
		if v, ok := labels[a.LabelKey]; ok && v == a.LabelValue {
			return a.Name
		}
	}
	return ""
}
