package collect

import (
	"cmp"
	"context"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coroner-dev/coroner/bundle"
)

// Bounds of a node agent's log: its last agentTailLines lines, at most agentLogBytes (and never
// more than the per-log limit). An Xid the device plugin reacted to is near the end of its log
// when the job failed of it; the agent's whole history is not the job's.
const (
	agentTailLines = 2000
	agentLogBytes  = 1 << 20
)

// agentNamespaces are where to list the pods of a node: across namespaces ("") when byNamespace
// is unset, else every namespace the agents are installed in.
func agentNamespaces(byNamespace bool) []string {
	if !byNamespace {
		return []string{""}
	}
	var out []string
	for _, a := range bundle.NodeAgents {
		for _, ns := range a.Namespaces {
			if !slices.Contains(out, ns) {
				out = append(out, ns)
			}
		}
	}
	sort.Strings(out)
	return out
}

// nodeAgents finds the GPU agents' pods (device plugin, DCGM exporter: bundle.NodeAgents) that
// run on the nodes the job's pods ran on: per node, one list of the node's pods (spec.nodeName),
// never a list of every pod, and the agents picked by their labels (bundle.AgentOf). One
// request per node, not one per agent label: a 128-node job costs 128 lists, not 512. It lists
// across namespaces when allowed (coroner watch's ClusterRole); otherwise in each namespace the
// agents are installed in, skipping those it may not read (deploy/node-agents-rbac.yaml
// grants one). When it can read none, that is one gap.
func (col *collector) nodeAgents(ctx context.Context, nodes *nodeSet) []*podInfo {
	r, ok := col.cat.Find("", "Pod")
	if !ok || len(nodes.objects) == 0 {
		return nil
	}
	first := nodes.objects[0].GetName()
	list := func(ctx context.Context, ns, node string) ([]*podInfo, error) {
		items, err := col.list(ctx, r, ns, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return nil, err
		}
		var out []*podInfo
		for _, u := range items {
			p, err := toPod(u)
			if err != nil || p.Spec.NodeName != node || bundle.AgentOf(p.Labels) == "" {
				continue // not an agent, or a server that ignored the selector sent it
			}
			out = append(out, &podInfo{u: u, pod: p})
		}
		return out, nil
	}
	// The first node's lists find where listing is allowed: across namespaces, else in each.
	var namespaces []string
	var found [][]*podInfo
	var denied []string
	for _, byNamespace := range []bool{false, true} {
		for _, ns := range agentNamespaces(byNamespace) {
			ps, err := list(ctx, ns, first)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				denied = append(denied, "pods in "+cmp.Or(ns, "all namespaces")+": "+describe(err))
				continue
			}
			namespaces = append(namespaces, ns)
			found = append(found, ps)
		}
		if len(namespaces) > 0 {
			break
		}
	}
	if len(namespaces) == 0 {
		col.gap(bundle.GapNodeAgents, "GPU node agent pods", "none could be listed, so whether a GPU health agent watched the nodes is unknown: %s", denied[0])
		return nil
	}
	type call struct {
		ns, node string
	}
	var calls []call
	for _, n := range nodes.objects[1:] {
		for _, ns := range namespaces {
			calls = append(calls, call{ns, n.GetName()})
		}
	}
	more := make([][]*podInfo, len(calls))
	fns := make([]func(context.Context) error, len(calls))
	for i, c := range calls {
		fns[i] = func(ctx context.Context) error {
			ps, err := list(ctx, c.ns, c.node)
			if err != nil && ctx.Err() == nil {
				col.gap("list", "GPU node agent pods in "+cmp.Or(c.ns, "all namespaces")+" on node/"+c.node, "%s", describe(err))
			}
			more[i] = ps
			return nil
		}
	}
	_ = parallel(ctx, col.opts.Concurrency, fns)
	var out []*podInfo
	seen := map[string]bool{}
	for _, ps := range append(found, more...) {
		for _, p := range ps {
			if k := p.pod.Namespace + "/" + p.pod.Name; !seen[k] {
				seen[k] = true
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].pod.Namespace+"/"+out[i].pod.Name < out[j].pod.Namespace+"/"+out[j].pod.Name
	})
	return out
}

// agentLogJobs are the logs of the agents' containers: the current ones, tailed. An agent that
// restarted lost the lines before; its previous log is the agent's own trouble, not the GPU's.
func agentLogJobs(agents []*podInfo) []logJob {
	var jobs []logJob
	for _, pi := range agents {
		for _, cs := range pi.pod.Status.ContainerStatuses {
			if cs.State.Running != nil || cs.State.Terminated != nil {
				jobs = append(jobs, logJob{pod: pi.pod, container: cs.Name, tail: agentTailLines, limit: agentLogBytes})
			}
		}
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].path() < jobs[j].path() })
	return jobs
}
