package analyze

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// spec checks what the user asked for against what the bundle shows of the cluster. One
// finding per check and role, not per pod: replicas share their template.
func (a *analyzer) spec() {
	seen := map[string]bool{}
	once := func(key string) bool {
		if seen[key] {
			return false
		}
		seen[key] = true
		return true
	}
	var maxGPU int64
	for _, n := range a.m.Nodes {
		if q, ok := n.Status.Allocatable[gpuResource]; ok && q.Value() > maxGPU {
			maxGPU = q.Value()
		}
	}
	for _, p := range a.jobPods() {
		role := p.Name
		if a.m.Job != nil {
			if r := a.m.Job.RoleOf(p); r != "" {
				role = r
			}
		}
		ev := Evidence{Source: "spec", File: a.m.PathOf("Pod", p.Namespace, p.Name), Object: podRef(p)}
		gpus := podGPUs(p)
		if len(a.m.Nodes) > 0 && gpus > maxGPU && once("gpu/"+role) {
			vars := map[string]string{"requested": fmt.Sprint(gpus), "largest": fmt.Sprint(maxGPU)}
			if f := a.builtin("scheduling/gpu-request-exceeds-nodes", vars); f != nil {
				f.Pod = p.Name
				ev.Text = fmt.Sprintf("requests %d nvidia.com/gpu; collected nodes have at most %d allocatable", gpus, maxGPU)
				f.Evidence = []Evidence{ev}
				a.add(f)
			}
		}
		if what := unmatchedSelector(p, a.m.Nodes); what != "" && once("selector/"+role) {
			if f := a.builtin("scheduling/node-selector-unmatched", map[string]string{"what": what}); f != nil {
				f.Pod = p.Name
				ev.Text = fmt.Sprintf("%s matches none of the %d collected nodes", what, len(a.m.Nodes))
				f.Evidence = []Evidence{ev}
				a.add(f)
			}
		}
		if gpus > 0 && !hasMemoryShm(p) && once("shm/"+role) {
			if f := a.builtin("shm-bus-error/no-dev-shm", nil); f != nil {
				f.Pod = p.Name
				ev.Text = "no emptyDir with medium: Memory is mounted at /dev/shm (the container runtime's default is 64Mi)"
				f.Evidence = []Evidence{ev}
				a.add(f)
			}
		}
	}
}

func podGPUs(p *corev1.Pod) int64 {
	var n int64
	for _, c := range p.Spec.Containers {
		q, ok := c.Resources.Limits[gpuResource]
		if !ok {
			q, ok = c.Resources.Requests[gpuResource]
		}
		if ok {
			n += q.Value()
		}
	}
	return n
}

func hasMemoryShm(p *corev1.Pod) bool {
	mem := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
			mem[v.Name] = true
		}
	}
	for _, c := range p.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if strings.TrimSuffix(m.MountPath, "/") == "/dev/shm" && mem[m.Name] {
				return true
			}
		}
	}
	return false
}

// unmatchedSelector says which of the pod's node constraints no collected node satisfies
// ("nodeSelector gpu-type=a100"), or "" when some node does or there are no nodes to judge.
func unmatchedSelector(p *corev1.Pod, nodes []corev1.Node) string {
	if len(nodes) == 0 || p.Spec.NodeName != "" {
		return ""
	}
	if len(p.Spec.NodeSelector) > 0 {
		ok := false
		for i := range nodes {
			if labelsMatch(nodes[i].Labels, p.Spec.NodeSelector) {
				ok = true
				break
			}
		}
		if !ok {
			var parts []string
			keys := make([]string, 0, len(p.Spec.NodeSelector))
			for k := range p.Spec.NodeSelector {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				parts = append(parts, k+"="+p.Spec.NodeSelector[k])
			}
			return "nodeSelector " + strings.Join(parts, ",")
		}
	}
	if aff := p.Spec.Affinity; aff != nil && aff.NodeAffinity != nil && aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		for i := range nodes {
			for _, t := range terms {
				if termMatches(nodes[i].Labels, t) {
					return ""
				}
			}
		}
		if len(terms) > 0 {
			return "required node affinity"
		}
	}
	return ""
}

func labelsMatch(labels, sel map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func termMatches(labels map[string]string, t corev1.NodeSelectorTerm) bool {
	if len(t.MatchExpressions) == 0 {
		return len(t.MatchFields) > 0 // matchFields (metadata.name) are not judged here
	}
	for _, e := range t.MatchExpressions {
		v, has := labels[e.Key]
		in := false
		for _, x := range e.Values {
			in = in || x == v
		}
		switch e.Operator {
		case corev1.NodeSelectorOpIn:
			if !has || !in {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			if has && in {
				return false
			}
		case corev1.NodeSelectorOpExists:
			if !has {
				return false
			}
		case corev1.NodeSelectorOpDoesNotExist:
			if has {
				return false
			}
		default:
			return true // Gt/Lt: not judged; assume it can match
		}
	}
	return true
}
