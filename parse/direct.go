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
	// The name and namespace as the generic object has them (a string, else ""), read from
	// the tape: a map of the metadata made for each of 16,384 pods was a twentieth of Load's
	// allocations, for these two strings.
	name, ns := str(t.Lookup(md, "name")), str(t.Lookup(md, "namespace"))
	if name == "" {
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
	m.paths[kind+"/"+ns+"/"+name] = where
	if kind == "Event" {
		m.Events = append(m.Events, e)
		return true // events are not objects of the job
	}
	if bundle.AgentOf(p.Labels) != "" && !m.isTarget("Pod", p.Namespace, p.Name) {
		m.NodeAgents = append(m.NodeAgents, &p) // never the job: the typed pod is all
		return true
	}
	m.Pods = append(m.Pods, &p)
	// The generic object, for the few pods cut keeps (the target, the spare), is the whole
	// map of the tape.
	u := &unstructured.Unstructured{}
	if m.cut(u, &p, func() map[string]any {
		u.Object = t.Value(0).(map[string]any)
		return u.Object
	}) {
		m.Objects = append(m.Objects, u)
	}
	return true
}
