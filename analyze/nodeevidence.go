package analyze

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/bundle"
)

// The node-evidence window: a GPU fault the node shows (a condition, an event, an agent's log
// line) explains a pod's failure when it is first seen at most nodeBefore before the failure
// and at most nodeWindow after it. The driver logs an Xid as the fault happens and the process
// fails at its next CUDA call, within seconds; a rank whose peers wait on it fails when their
// collective times out (NCCL's watchdog: 10 min by default, 30 min in some launchers), and
// agents report what they saw within their polling period (a minute) after. Evidence outside
// the window is shown as context, never as the cause: a GPU that faulted hours earlier and
// trained on is not what stopped the job.
const nodeBefore = 30 * time.Minute

// Node agents as NodeCoverage names them, besides bundle.AgentDevicePlugin and
// bundle.AgentDCGMExporter.
const (
	AgentNPD              = "node-problem-detector"
	AgentGPUConditions    = "gpu-health-conditions"
	AgentGPUEvents        = "gpu-health-events"
	NodeEvidenceGapReason = "no GPU health agent ran on these nodes: a hardware cause cannot be confirmed or ruled out"
	// NodeEvidenceUnreadReason is the gap when collect could not list the agents' pods.
	NodeEvidenceUnreadReason = "no GPU health condition or event on these nodes, and the GPU agents' pods could not be listed (RBAC): a hardware cause cannot be confirmed or ruled out"
)

// NodeEvidence is what a bundle shows of the health of the GPU nodes the job ran on: which
// agents watched them, and how the root cause's node evidence lines up with the failure.
type NodeEvidence struct {
	// Nodes are the job's nodes the bundle holds, by name.
	Nodes []NodeCoverage
	// Gap is set when no GPU health agent was seen on any of them (NodeEvidenceGapReason).
	Gap string
	// Attribution is how the root cause's failure relates to its node's GPU evidence; nil
	// when that node showed none.
	Attribution *NodeAttribution
	// RootCouldBeHardware: the root cause is a GPU fault, or of a category a GPU fault of its
	// node explains (a CUDA or NCCL error, a hang...: the rules' explainsOnNode), so what the
	// nodes show matters to it. False without a root cause.
	RootCouldBeHardware bool
}

// NodeCoverage is one node and the agents seen on it.
type NodeCoverage struct {
	Node string
	// GPUs is the node's nvidia.com/gpu capacity.
	GPUs int
	// Agents are the agents whose evidence the bundle holds, sorted: node-problem-detector
	// (its conditions or kernel-monitor events), gpu-health-conditions (a GPU health
	// condition, whatever its status: NVSentinel, GKE, EKS, an NPD GPU plugin), gpu-health-events
	// (a node event about its GPUs), device-plugin and dcgm-exporter (their pods and logs).
	Agents []string
}

// NodeAttribution says how a failure relates to its node's GPU evidence.
type NodeAttribution struct {
	Node string
	// Pod is the pod whose failure it is; Failure the finding of that failure and Evidence
	// the node's (finding ids).
	Pod               string
	Failure, Evidence string
	FailureAt         *time.Time
	EvidenceAt        *time.Time
	// Attributed: the failure is put down to the node's GPU (the node's finding is the
	// root cause). Otherwise the node's evidence is context: it lies outside the window.
	Attributed bool
	// Confidence is high when both times are known and line up, medium when the node's
	// evidence has no time of its own (GPUs gone from allocatable), low for context.
	Confidence Confidence
	// Reason says it in one sentence.
	Reason string
}

// gpuWords tells a node condition or event about GPUs from the others, by the words agents put
// in their types and reasons: NVSentinel's SysLogsXIDError and GpuNvlinkWatch, EKS's
// AcceleratedHardwareReady, an NPD GPU plugin's GPUProblem or XidErrorsProblem.
var gpuWords = lazyRegexp(`(?i)gpu|xid|nvlink|nvswitch|ecc\b|ecc[A-Z]|accelerat|NVRM|dcgm`)

// npdConditions are the node conditions node-problem-detector sets with its default monitors
// (kernel, docker, containerd, systemd): they show that it runs on the node, not that it
// watches the GPUs.
var npdConditions = []string{"KernelDeadlock", "ReadonlyFilesystem", "FrequentKubeletRestart", "FrequentDockerRestart",
	"FrequentContainerdRestart", "FrequentUnregisterNetDevice", "KubeletUnhealthy", "ContainerRuntimeUnhealthy", "CorruptDockerOverlay2"}

// npdSources are the event sources of node-problem-detector's monitors.
var npdSources = []string{"kernel-monitor", "node-problem-detector", "system-log-monitor", "custom-plugin-monitor"}

// agentPods maps "namespace/name" to the node agents' pods of the bundle.
func (a *analyzer) agentPods() map[string]*corev1.Pod {
	if a.agents == nil {
		a.agents = map[string]*corev1.Pod{}
		for _, p := range a.m.NodeAgents {
			a.agents[p.Namespace+"/"+p.Name] = p
		}
	}
	return a.agents
}

// agentFindings turns what a node agent's log showed into evidence of its node: only GPU
// faults (rules that explain failures on their node) are kept, about the node and no pod;
// the agent's own troubles are not the job's.
func (a *analyzer) agentFindings(agent *corev1.Pod, found []*Finding) []*Finding {
	var out []*Finding
	for _, f := range found {
		if f.rule == nil || len(f.rule.ExplainsOnNode) == 0 || agent.Spec.NodeName == "" {
			continue
		}
		f.Node, f.Pod, f.Container, f.Rank = agent.Spec.NodeName, "", "", -1
		f.nodeEvidence = true
		for i := range f.Evidence {
			if f.Evidence[i].Object == nil {
				f.Evidence[i].Object = podRef(agent)
			}
		}
		out = append(out, f)
	}
	return out
}

// gpuNodeEvidence says whether f is a node's own evidence of a GPU fault: what the window
// applies to.
func (f *Finding) gpuNodeEvidence() bool { return f.nodeEvidence && f.Category == CategoryGPUHardware }

// linedUp says whether node evidence at e lines up with a failure at f (the window above).
func linedUp(e, f time.Time) bool {
	return !e.Before(f.Add(-nodeBefore)) && !e.After(f.Add(nodeWindow))
}

// nodeContext lowers a node's GPU fault that does not line up with any failure of the job's
// pods on that node to context: a warning whose title says how far it is from the failure.
// A node fault with no failure on its node to compare with keeps its severity (the node's own
// failure may be all there is).
func (a *analyzer) nodeContext() {
	nodeOf := map[string]string{}
	for _, p := range a.jobPods() {
		nodeOf[p.Name] = p.Spec.NodeName
	}
	for _, n := range a.findings {
		if !n.gpuNodeEvidence() || n.rule == nil || len(n.rule.ExplainsOnNode) == 0 || n.Severity < SeverityError || n.at == nil {
			continue
		}
		var nearest *Finding
		var gap time.Duration
		for _, f := range a.findings {
			if f.nodeEvidence || f.Pod == "" || nodeOf[f.Pod] != n.Node || f.Severity < SeverityError || f.at == nil ||
				!slices.Contains(n.rule.ExplainsOnNode, f.Category) || f.symptom || f.generic {
				continue
			}
			if linedUp(*n.at, *f.at) {
				nearest = nil
				gap = 0
				break
			}
			d := n.at.Sub(*f.at)
			if nearest == nil || abs(d) < abs(gap) {
				nearest, gap = f, d
			}
		}
		if nearest == nil {
			continue
		}
		n.Severity = SeverityWarning
		n.SecondaryOf = ""
		n.context = true
		side := "before"
		if gap > 0 {
			side = "after"
		}
		n.Title += fmt.Sprintf(" (context: %s %s the failure of %s)", roundDuration(abs(gap)), side, nearest.Pod)
	}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// attribution records how the root cause relates to its node's GPU evidence: the node finding
// that explains the root (hardwareBehind chose it), or the nearest node fault that was left
// as context.
func (a *analyzer) attribution(root, failure *Finding) *NodeAttribution {
	if root == nil {
		return nil
	}
	if root.gpuNodeEvidence() && root.Node != "" && failure != nil && failure != root {
		at := &NodeAttribution{Node: root.Node, Pod: failure.Pod, Failure: failure.ID, Evidence: root.ID,
			FailureAt: failure.at, EvidenceAt: root.at, Attributed: true}
		switch {
		case root.at == nil:
			at.Confidence = ConfidenceMedium
			at.Reason = fmt.Sprintf("node %s shows a GPU fault with no time of its own (%s); the failure of %s is put down to it", root.Node, lowerFirst(root.Title), failure.Pod)
		case failure.at == nil:
			at.Confidence = ConfidenceMedium
			at.Reason = fmt.Sprintf("node %s shows a GPU fault at %s; the failure of %s has no time to compare it with", root.Node, root.at.UTC().Format(time.RFC3339), failure.Pod)
		default:
			at.Confidence = ConfidenceHigh
			d := root.at.Sub(*failure.at)
			side := "before"
			if d > 0 {
				side = "after"
			}
			at.Reason = fmt.Sprintf("node %s showed the GPU fault %s %s the failure of %s, within the window (%s before to %s after)",
				root.Node, roundDuration(abs(d)), side, failure.Pod, roundDuration(nodeBefore), roundDuration(nodeWindow))
		}
		return at
	}
	node := root.Node
	if root.Pod != "" {
		for _, p := range a.jobPods() {
			if p.Name == root.Pod {
				node = p.Spec.NodeName
			}
		}
	}
	for _, f := range a.findings {
		if f.context && f.Node == node && node != "" {
			at := &NodeAttribution{Node: node, Pod: root.Pod, Failure: root.ID, Evidence: f.ID, FailureAt: root.at, EvidenceAt: f.at,
				Confidence: ConfidenceLow}
			at.Reason = fmt.Sprintf("node %s showed a GPU fault (%s), outside the window (%s before to %s after the failure): context, not the cause",
				node, lowerFirst(f.Title), roundDuration(nodeBefore), roundDuration(nodeWindow))
			return at
		}
	}
	return nil
}

// nodeCoverage says which agents the bundle shows on the job's GPU nodes. It is nil when the
// bundle holds none of the job's nodes, or when they have no GPUs and no agent ran on them (a
// CPU job: GPU health says nothing of it).
func (a *analyzer) nodeCoverage() *NodeEvidence {
	onJob := map[string]bool{}
	gpuPods := false
	for _, p := range a.jobPods() {
		if p.Spec.NodeName != "" {
			onJob[p.Spec.NodeName] = true
		}
		for _, c := range p.Spec.Containers {
			if q, ok := c.Resources.Limits[gpuResource]; ok && !q.IsZero() {
				gpuPods = true
			}
		}
	}
	agents := map[string]map[string]bool{}
	see := func(node, agent string) {
		if agents[node] == nil {
			agents[node] = map[string]bool{}
		}
		agents[node][agent] = true
	}
	ne := &NodeEvidence{}
	gpus := false
	for _, n := range a.m.Nodes {
		if !onJob[n.Name] {
			continue
		}
		c := NodeCoverage{Node: n.Name}
		if q, ok := n.Status.Capacity[gpuResource]; ok {
			c.GPUs = int(q.Value())
			gpus = gpus || c.GPUs > 0
		}
		for _, cond := range n.Status.Conditions {
			switch {
			case gpuWords().MatchString(string(cond.Type)):
				see(n.Name, AgentGPUConditions)
			case slices.Contains(npdConditions, string(cond.Type)):
				see(n.Name, AgentNPD)
			}
		}
		ne.Nodes = append(ne.Nodes, c)
	}
	if len(ne.Nodes) == 0 {
		return nil
	}
	for i := range a.m.Events {
		e := &a.m.Events[i]
		if e.InvolvedObject.Kind != "Node" || !onJob[e.InvolvedObject.Name] {
			continue
		}
		if slices.Contains(npdSources, e.Source.Component) {
			see(e.InvolvedObject.Name, AgentNPD)
		}
		// Node names often say "gpu": the message is read without the node's name.
		if gpuWords().MatchString(e.Reason) || gpuWords().MatchString(strings.ReplaceAll(e.Message, e.InvolvedObject.Name, "")) {
			see(e.InvolvedObject.Name, AgentGPUEvents)
		}
	}
	for _, p := range a.m.NodeAgents {
		if onJob[p.Spec.NodeName] {
			if name := bundle.AgentOf(p.Labels); name != "" {
				see(p.Spec.NodeName, name)
			}
		}
	}
	if !gpus && !gpuPods && len(agents) == 0 {
		return nil
	}
	watched := false
	for i := range ne.Nodes {
		c := &ne.Nodes[i]
		for name := range agents[c.Node] {
			c.Agents = append(c.Agents, name)
			watched = watched || name != AgentNPD
		}
		sort.Strings(c.Agents)
	}
	if !watched {
		ne.Gap = NodeEvidenceGapReason
		if mf := a.m.Bundle.Manifest; mf != nil {
			for _, g := range mf.Errors {
				if g.Step == bundle.GapNodeAgents {
					// collect could not look: that no agent ran is not known either.
					ne.Gap = NodeEvidenceUnreadReason
				}
			}
		}
	}
	return ne
}

// couldBeHardware says whether a GPU fault of its node could explain a failure of category c.
func (a *analyzer) couldBeHardware(c Category) bool {
	if c == CategoryGPUHardware {
		return true
	}
	for _, r := range a.rs.rules {
		if r.Category == CategoryGPUHardware && slices.Contains(r.ExplainsOnNode, c) {
			return true
		}
	}
	return false
}
