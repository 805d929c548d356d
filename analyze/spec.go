package analyze

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// spec checks what the user asked for against what the bundle shows of the cluster: the GPUs
// a pod asks against the largest node, its node selector against the nodes, /dev/shm. One
// fact per check and pod, so that each pod's scheduling failures follow from its own spec
// (the report shows the replicas' findings as one, listing the pods). A spec problem is as
// old as its pod: its findings are ordered at the pod's creation.
func (a *analyzer) spec() {
	done := map[string]bool{}
	once := func(key string) bool {
		if done[key] {
			return false
		}
		done[key] = true
		return true
	}
	var maxGPU int64
	for _, n := range a.m.Nodes {
		if q, ok := n.Status.Allocatable[gpuResource]; ok && q.Value() > maxGPU {
			maxGPU = q.Value()
		}
	}
	// Each pod's role, as Job.RoleOf says it (the first replica that lists the pod), looked up
	// once: RoleOf per pod reads every replica's pods, 134M comparisons at 16,384 pods.
	roles := map[*corev1.Pod]string{}
	if a.m.Job != nil {
		for _, r := range a.m.Job.Replicas {
			for _, q := range r.Pods {
				if _, ok := roles[q]; !ok {
					roles[q] = r.Role
				}
			}
		}
	}
	for _, p := range a.jobPods() {
		role := p.Name
		if r := roles[p]; r != "" {
			role = r
		}
		at := p.CreationTimestamp.Time
		ev := func(text string) Evidence {
			return Evidence{Source: SourceSpec, File: a.m.PathOf("Pod", p.Namespace, p.Name), Object: podRef(p), Text: text}
		}
		gpus := podGPUs(p)
		if len(a.m.Nodes) > 0 && gpus > 0 && once("gpu/"+p.Name) {
			fields := map[string]string{"requested": fmt.Sprint(gpus), "largest": fmt.Sprint(maxGPU), "fits": boolString(gpus <= maxGPU)}
			text := fmt.Sprintf("requests %d nvidia.com/gpu; the largest of the %d collected nodes has %d allocatable", gpus, len(a.m.Nodes), maxGPU)
			a.observe(fact{"gpu-request", fields}, seen{pod: p.Name, ev: ev(text), at: at})
		}
		if what, matches, judged := selectorCheck(p, a.m.Nodes); judged && once("selector/"+p.Name) {
			text := fmt.Sprintf("%s matches none of the %d collected nodes", what, len(a.m.Nodes))
			if matches {
				text = fmt.Sprintf("%s matches a collected node", what)
			}
			a.observe(fact{"node-selector", map[string]string{"what": what, "matches": boolString(matches)}}, seen{pod: p.Name, ev: ev(text), at: at})
		}
		if gpus > 0 && once("shm/"+role) {
			shm := hasMemoryShm(p)
			text := "no emptyDir with medium: Memory is mounted at /dev/shm (the container runtime's default is 64Mi)"
			if shm {
				text = "an emptyDir with medium: Memory is mounted at /dev/shm"
			}
			a.observe(fact{"dev-shm", map[string]string{"gpus": fmt.Sprint(gpus), "memoryBacked": boolString(shm)}}, seen{pod: p.Name, ev: ev(text), at: at})
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

// selectorCheck judges a pod's node constraints against the collected nodes when the pod
// was not scheduled and has some: what they are ("nodeSelector gpu-type=a100", "required node
// affinity") and whether a node satisfies them.
func selectorCheck(p *corev1.Pod, nodes []corev1.Node) (what string, matches, judged bool) {
	if len(nodes) == 0 || p.Spec.NodeName != "" {
		return "", false, false
	}
	if what := unmatchedSelector(p, nodes); what != "" {
		return what, false, true
	}
	if len(p.Spec.NodeSelector) > 0 {
		return "nodeSelector " + selectorString(p.Spec.NodeSelector), true, true
	}
	if aff := p.Spec.Affinity; aff != nil && aff.NodeAffinity != nil && aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil &&
		len(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) > 0 {
		return "required node affinity", true, true
	}
	return "", false, false
}

func selectorString(sel map[string]string) string {
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	return strings.Join(parts, ",")
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
			return "nodeSelector " + selectorString(p.Spec.NodeSelector)
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
