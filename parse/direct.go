package parse

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/yamlbound"
)

// addTyped adds a core v1 Pod or Event from the fast path's tape of its file straight into
// its typed object, building no generic map of it (but for the few pods Model.cut lists). It does what
// addObject does with the map the tape would make, and declines (false, having added
// nothing) for any other document, or when the typed decode declines: the caller then builds
// that map and adds it as before, which names what is wrong.
func (m *Model) addTyped(where string, t *yamlbound.Tape) bool {
	toks := t.Tokens()
	str := func(i int) string {
		if i >= 0 && toks[i].Kind == yamlbound.String {
			return toks[i].Str
		}
		return ""
	}
	if toks[0].Kind != yamlbound.Map || str(t.Lookup(0, "apiVersion")) != "v1" {
		return false
	}
	kind := str(t.Lookup(0, "kind"))
	if kind != "Pod" && kind != "Event" {
		return false
	}
	md := t.Lookup(0, "metadata")
	if md < 0 {
		return false
	}
	t.Remove(md, "managedFields") // as addObject does
	// What the paths, the checks of addObject and podSkeleton read, as the map has it.
	meta := map[string]any{}
	for _, k := range []string{"name", "namespace", "uid", "labels", "ownerReferences"} {
		if i := t.Lookup(md, k); i >= 0 {
			meta[k] = t.Value(i)
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": meta}}
	if u.GetName() == "" {
		return false
	}
	var p corev1.Pod
	var e corev1.Event
	into := any(&p)
	if kind == "Event" {
		into = &e
	}
	if !decodeShared(t, into, m.strs, m.memo) {
		return false
	}
	m.paths[kind+"/"+u.GetNamespace()+"/"+u.GetName()] = where
	if kind == "Event" {
		m.Events = append(m.Events, e)
		return true // events are not objects of the job
	}
	if bundle.AgentOf(p.Labels) != "" && !m.isTarget("Pod", p.Namespace, p.Name) {
		m.NodeAgents = append(m.NodeAgents, &p) // never the job: the typed pod is all
		return true
	}
	m.Pods = append(m.Pods, &p)
	if m.cut(u, &p, func() map[string]any { return t.Value(0).(map[string]any) }) {
		m.Objects = append(m.Objects, u)
	}
	return true
}
