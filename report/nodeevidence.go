package report

import (
	"sort"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/analyze"
)

// NodeEvidence is what the bundle shows of the health of the job's GPU nodes: the agents seen
// on each node, the gap when none watched their GPUs, and how the root cause's failure lines
// up with its node's GPU evidence. Absent for plain logs, CPU jobs and bundles without nodes.
type NodeEvidence struct {
	Nodes []NodeCoverage `json:"nodes"`
	// Gap is "no GPU health agent ran on these nodes: ..." when none did.
	Gap         string           `json:"gap,omitempty"`
	Attribution *NodeAttribution `json:"attribution,omitempty"`
	// RootCouldBeHardware: the root cause is a GPU fault or of a category one explains (a
	// CUDA or NCCL error, a hang); the terminal summary shows the coverage only then.
	RootCouldBeHardware bool `json:"rootCouldBeHardware"`
	// Moot says why the gap does not bear on the root cause (a host OOM kill, a missing
	// module: no GPU fault explains them); the full report shows it instead of warning that a
	// hardware cause cannot be ruled out. Not in the JSON, which has the gap and
	// RootCouldBeHardware already.
	Moot string `json:"-"`
}

// NodeCoverage is one of the job's nodes and the agents whose evidence the bundle holds:
// node-problem-detector, gpu-health-conditions, gpu-health-events, device-plugin,
// dcgm-exporter.
type NodeCoverage struct {
	Node   string   `json:"node"`
	GPUs   int      `json:"gpus"`
	Agents []string `json:"agents"`
}

// NodeAttribution says whether the root cause's failure is put down to its node's GPU: the
// pod's failure (failureId) and the node's evidence (evidenceId), their times, whether they
// line up within the window (attributed; otherwise the node's evidence is context), how sure
// that is, and why in one sentence.
type NodeAttribution struct {
	Node       string             `json:"node"`
	Pod        string             `json:"pod,omitempty"`
	FailureID  string             `json:"failureId,omitempty"`
	EvidenceID string             `json:"evidenceId"`
	FailureAt  *time.Time         `json:"failureAt,omitempty"`
	EvidenceAt *time.Time         `json:"evidenceAt,omitempty"`
	Attributed bool               `json:"attributed"`
	Confidence analyze.Confidence `json:"confidence"`
	Reason     string             `json:"reason"`
}

func nodeEvidenceOf(ne *analyze.NodeEvidence, res *analyze.Result) *NodeEvidence {
	if ne == nil {
		return nil
	}
	out := &NodeEvidence{Nodes: []NodeCoverage{}, Gap: ne.Gap, RootCouldBeHardware: ne.RootCouldBeHardware}
	if ne.Gap != "" && !ne.RootCouldBeHardware {
		what := "No GPU health agent ran on these nodes"
		if ne.Gap != analyze.NodeEvidenceGapReason {
			what = "The GPU agents' pods could not be listed"
		}
		switch {
		case res.RootCause != nil:
			out.Moot = what + "; that does not bear on this root cause (" + string(res.RootCause.Category) + "), which no GPU fault explains"
		case res.Verdict == analyze.VerdictHealthy:
			out.Moot = what + "; the job is healthy, with no failure for a GPU fault to explain"
		}
	}
	for _, n := range ne.Nodes {
		agents := append([]string{}, n.Agents...)
		out.Nodes = append(out.Nodes, NodeCoverage{Node: n.Node, GPUs: n.GPUs, Agents: agents})
	}
	if at := ne.Attribution; at != nil {
		out.Attribution = &NodeAttribution{Node: at.Node, Pod: at.Pod, FailureID: at.Failure, EvidenceID: at.Evidence,
			FailureAt: at.FailureAt, EvidenceAt: at.EvidenceAt, Attributed: at.Attributed, Confidence: at.Confidence, Reason: at.Reason}
	}
	return out
}

// Summary says the node evidence in one sentence, as the terminal summary shows it: the
// attribution, else the gap, else the agents seen; "" without node evidence, or when the
// root cause is one no GPU fault explains (an out-of-memory, a missing module: the full
// report still lists the coverage).
func (ne *NodeEvidence) Summary() string {
	switch {
	case ne == nil || ne.Attribution == nil && !ne.RootCouldBeHardware:
		return ""
	case ne.Attribution != nil:
		what := "context, not the cause"
		if ne.Attribution.Attributed {
			what = "attributed to the node's GPU"
		}
		return what + " (confidence " + string(ne.Attribution.Confidence) + "): " + ne.Attribution.Reason
	case ne.Gap != "":
		return "gap: " + ne.Gap
	}
	seen := map[string]bool{}
	var agents []string
	for _, n := range ne.Nodes {
		for _, a := range n.Agents {
			if !seen[a] {
				seen[a] = true
				agents = append(agents, a)
			}
		}
	}
	sort.Strings(agents)
	return "agents seen: " + strings.Join(agents, ", ") + "; no failure is put down to a node's GPU"
}
