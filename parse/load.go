// Package parse turns the files of a bundle into a typed model: the job (kind-agnostic),
// its pods, events and nodes as upstream Kubernetes types, and its log streams. One adapter
// reads each family of job kinds; the job's Family says which, with the quirks analysis must
// know (whose log decides success, whether missing roles are worth reporting), so that no
// later step compares kind or adapter names.
package parse

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/yamlbound"
)

// Model is everything coroner knows about one job after reading a bundle.
type Model struct {
	Bundle *bundle.Bundle
	Job    *Job
	Pods   []*corev1.Pod
	Events []corev1.Event
	Nodes  []corev1.Node
	// NodeAgents are the pods of GPU agents (bundle.NodeAgents: the device plugin, the DCGM
	// exporter) on the job's nodes: evidence of those nodes, never pods of the job.
	NodeAgents []*corev1.Pod
	// Objects are all resources of the bundle, sorted by group, kind, namespace, name, but
	// for the pods that decoded into Pods or NodeAgents: those are read from their typed
	// objects, owners included (a pod that is the job, and a bundle's only pod, are listed
	// too: the job's own object keeps everything, a lone pod that is not the job its name,
	// namespace, uid, labels and owners).
	Objects []*unstructured.Unstructured
	Logs    []bundle.LogStream
	// FlightRecords are the bundle's flight recorder dumps, decoded, in path order.
	FlightRecords []FlightRecord
	// paths maps "Kind/namespace/name" to the bundle file the object came from.
	paths map[string]string
	// spare and strs are shared by the models of Load's workers while the resources are read
	// (Model.cut; the typed objects' strings, decodeTyped).
	spare *spare
	strs  *interner
	// tape is a Load worker's tape, reused from file to file (addTyped), and memo the values
	// its pods and events share (valueMemo).
	tape *yamlbound.Tape
	memo *valueMemo
	// buf is a Load worker's buffer of a resource file's bytes, reused from file to file.
	buf *[]byte
	// Warnings are problems met while reading (an unreadable resource file, an odd path).
	Warnings []string
}

// Load reads a bundle's resources and lists its logs. Unreadable resource files become
// warnings: the rest of the bundle is still analysed.
func Load(b *bundle.Bundle) (*Model, error) {
	m := &Model{Bundle: b, paths: map[string]string{}, spare: &spare{}, strs: newInterner()}
	m.Logs, m.Warnings = bundle.LogStreams(b) // logs/ sorts before resources/: warnings keep file order
	m.loadResources()
	m.loadFlightRecords()
	lone := m.spare.obj
	if len(m.Pods) == 1 && lone != nil && lone.GetNamespace() == m.Pods[0].Namespace && lone.GetName() == m.Pods[0].Name {
		lone.Object = m.spare.full // it may be the job (guessTarget)
		m.Objects = append(m.Objects, lone)
	} else {
		lone = nil
	}
	sort.SliceStable(m.Objects, func(i, j int) bool { return objectKey(m.Objects[i]) < objectKey(m.Objects[j]) })
	sort.SliceStable(m.Pods, func(i, j int) bool {
		a, b := m.Pods[i], m.Pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	sort.SliceStable(m.Events, func(i, j int) bool { return eventLess(&m.Events[i], &m.Events[j]) })
	sort.SliceStable(m.Nodes, func(i, j int) bool { return m.Nodes[i].Name < m.Nodes[j].Name })
	sort.SliceStable(m.NodeAgents, func(i, j int) bool {
		a, b := m.NodeAgents[i], m.NodeAgents[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	m.Job = findJob(m)
	if lone != nil && m.Job.Object != lone {
		lone.Object = podSkeleton(lone, m.strs)
	}
	m.spare, m.strs = nil, nil
	return m, nil
}

// spare holds the full generic copy of the first typed pod read (Model.cut): a bundle of one
// pod lists it among its objects, and with no job object makes that pod the job
// (guessTarget), which keeps all of it.
type spare struct {
	mu   sync.Mutex
	obj  *unstructured.Unstructured
	full map[string]any
}

// cut says whether a typed pod's generic object is listed among the model's objects: only
// the manifest's target is, with everything (full makes it). The rest of a pod is read from
// the typed pod, its owners too: a generic copy of each of 16,384 pods, even cut to its name,
// uid, labels and owners, was a quarter of the heap parse.Load leaves (docs/performance.md).
// The first pod read keeps its full copy aside (Load lists it when it is the bundle's only
// pod, which may be the job).
func (m *Model) cut(u *unstructured.Unstructured, p *corev1.Pod, full func() map[string]any) bool {
	if m.isTarget("Pod", p.Namespace, p.Name) {
		u.Object = full()
		return true
	}
	if m.spare == nil {
		return false
	}
	m.spare.mu.Lock()
	if m.spare.obj == nil {
		m.spare.obj, m.spare.full = u, full()
	}
	m.spare.mu.Unlock()
	return false
}

// podSkeleton is what stays of a typed pod's generic object: its kind, name, namespace, uid,
// labels and owners, as fresh strings (the originals are substrings of the whole YAML text):
// through strs, the very strings of the typed pod.
func podSkeleton(o *unstructured.Unstructured, strs *interner) map[string]any {
	clone := strings.Clone
	if strs != nil {
		clone = strs.get
	}
	meta := map[string]any{"name": clone(o.GetName())}
	if ns := o.GetNamespace(); ns != "" {
		meta["namespace"] = clone(ns)
	}
	if uid := string(o.GetUID()); uid != "" {
		meta["uid"] = clone(uid)
	}
	if ls := o.GetLabels(); len(ls) > 0 {
		labels := make(map[string]any, len(ls))
		for k, v := range ls {
			labels[clone(k)] = clone(v)
		}
		meta["labels"] = labels
	}
	if refs := o.GetOwnerReferences(); len(refs) > 0 {
		owners := make([]any, 0, len(refs))
		for _, r := range refs {
			ref := map[string]any{"apiVersion": clone(r.APIVersion), "kind": clone(r.Kind),
				"name": clone(r.Name), "uid": clone(string(r.UID))}
			if r.Controller != nil {
				ref["controller"] = *r.Controller
			}
			owners = append(owners, ref)
		}
		meta["ownerReferences"] = owners
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta}
}

// isTarget says whether the object is the bundle's target (a bare Pod collected as the job is
// the job's, whatever its labels).
func (m *Model) isTarget(kind, ns, name string) bool {
	mf := m.Bundle.Manifest
	return mf != nil && mf.Target.Kind == kind && mf.Target.Namespace == ns && mf.Target.Name == name
}

func objectKey(o *unstructured.Unstructured) string {
	gv := o.GetAPIVersion()
	return gv + "\x00" + o.GetKind() + "\x00" + o.GetNamespace() + "\x00" + o.GetName()
}

func eventLess(a, b *corev1.Event) bool {
	ta, tb := EventTime(a), EventTime(b)
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if a.InvolvedObject.Name != b.InvolvedObject.Name {
		return a.InvolvedObject.Name < b.InvolvedObject.Name
	}
	return a.Name < b.Name
}

func (m *Model) warnf(format string, args ...any) {
	m.Warnings = append(m.Warnings, fmt.Sprintf(format, args...))
}

// direct lets Load decode pods and events from the fast path's tape (addTyped); the tests
// turn it off to check that the model is the same.
var direct = true

// maxKeptTape bounds the tokens a Load worker keeps from one file for the next (a pod is a
// few hundred).
const maxKeptTape = 1 << 14

// maxKeptBuf bounds the bytes of one file a Load worker keeps the buffer of for the next (a
// pod is a few KiB).
const maxKeptBuf = 1 << 20

// loadResources reads the resource files on every CPU (a bundle of 25,000 pods holds 90 MB of
// YAML), each into a model of its own, and joins them in file order: the model, its warnings
// and their order are those of reading the files one after the other.
func (m *Model) loadResources() {
	var files []bundle.File
	for _, f := range m.Bundle.Files {
		if strings.HasPrefix(f.Path, "resources/") {
			files = append(files, f)
		}
	}
	parts := make([]*Model, len(files))
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tape := &yamlbound.Tape{} // the tokens of a worker's files, one after the other
			memo := newValueMemo()
			var buf []byte // the bytes of a worker's files, one after the other
			for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
				part := &Model{Bundle: m.Bundle, paths: map[string]string{}, spare: m.spare, strs: m.strs, tape: tape, memo: memo, buf: &buf}
				part.loadResource(files[i])
				parts[i] = part
				if len(tape.Tokens()) > maxKeptTape {
					tape = &yamlbound.Tape{} // a large file's tokens: not kept for the next ones
				}
				if cap(buf) > maxKeptBuf {
					buf = nil // nor its bytes
				}
			}
		}()
	}
	wg.Wait()
	for _, part := range parts {
		m.Pods = append(m.Pods, part.Pods...)
		m.NodeAgents = append(m.NodeAgents, part.NodeAgents...)
		m.Events = append(m.Events, part.Events...)
		m.Nodes = append(m.Nodes, part.Nodes...)
		m.Objects = append(m.Objects, part.Objects...)
		m.Warnings = append(m.Warnings, part.Warnings...)
		for k, v := range part.paths {
			m.paths[k] = v
		}
	}
}

func (m *Model) loadResource(f bundle.File) {
	if !strings.HasSuffix(f.Path, ".yaml") && !strings.HasSuffix(f.Path, ".yml") && !strings.HasSuffix(f.Path, ".json") {
		m.warnf("%s: not a YAML or JSON file; skipped", f.Path)
		return
	}
	if f.Size > m.Bundle.Limits.MaxResourceBytes {
		m.warnf("%s: %d bytes exceeds the %s of %d; skipped", f.Path, f.Size, bundle.LimitResourceBytes, m.Bundle.Limits.MaxResourceBytes)
		return
	}
	data, err := m.Bundle.ReadFileTo(*m.buf, f.Path, f.Size)
	*m.buf = data[:0] // the next file's buffer: the tape below holds no byte of data
	if err != nil {
		m.warnf("%s: %v; skipped", f.Path, err)
		return
	}
	// Anchors and aliases can make a small file expand ("billion laughs"): the decoder stops
	// at twice the resource limit while it builds, not after.
	// The parser's nodes cost about 200 bytes each: a file of one-character values is refused
	// before it is parsed when it has more than one value per 16 bytes of the limit.
	lim := m.Bundle.Limits.MaxResourceBytes
	tape, docs, err := yamlbound.DecodeTape(data, yamlbound.ForResources(lim), m.tape)
	data = nil // the bytes are not needed any more: let them go while the objects are built
	var tl *yamlbound.TooLargeError
	var tm *yamlbound.TooManyError
	switch {
	case errors.As(err, &tl) && tl.Aliases:
		m.warnf("%s: %v, over twice the %s of %d; skipped", f.Path, err, bundle.LimitResourceBytes, lim)
		return
	case errors.As(err, &tm):
		m.warnf("%s: %v (one per 16 bytes of the %s of %d); skipped", f.Path, err, bundle.LimitResourceBytes, lim)
		return
	case err != nil:
		m.warnf("%s: invalid YAML: %v; skipped", f.Path, firstLine(err.Error()))
		return
	case tape != nil && direct && m.addTyped(f.Path, tape):
		return
	case tape != nil:
		docs = []any{tape.Value(0)}
	}
	n := 0
	for i, doc := range docs {
		if doc == nil {
			continue // an empty document of a stream
		}
		where := f.Path
		if len(docs) > 1 {
			where = fmt.Sprintf("%s[doc %d]", f.Path, i)
		}
		if items, ok := doc.([]any); ok {
			// A bare array of objects: troubleshoot's custom resources.
			m.addItems(where, items, "", "")
			n++
			continue
		}
		obj, ok := doc.(map[string]any)
		if !ok {
			m.warnf("%s: not a Kubernetes object; skipped", f.Path)
			return
		}
		m.addObjectOrList(where, obj)
		n++
	}
	if n == 0 {
		m.warnf("%s: not a Kubernetes object; skipped", f.Path)
	}
}

// addObjectOrList adds one decoded object, or each item of a List.
func (m *Model) addObjectOrList(where string, obj map[string]any) {
	u := &unstructured.Unstructured{Object: obj}
	if kind, ok := strings.CutSuffix(u.GetKind(), "List"); ok {
		items, _, _ := unstructured.NestedSlice(obj, "items")
		m.addItems(where, items, u.GetAPIVersion(), kind)
		return
	}
	m.addObject(where, u)
}

// addItems adds the objects of a list. Items the API server listed carry no kind: they get
// the list's (a PodList's items are Pods).
func (m *Model) addItems(where string, items []any, apiVersion, kind string) {
	for i, it := range items {
		o, ok := it.(map[string]any)
		if !ok {
			continue
		}
		item := &unstructured.Unstructured{Object: o}
		if item.GetKind() == "" && kind != "" {
			item.SetKind(kind)
			if item.GetAPIVersion() == "" {
				item.SetAPIVersion(apiVersion)
			}
		}
		m.addObject(fmt.Sprintf("%s[%d]", where, i), item)
	}
}

func (m *Model) addObject(where string, u *unstructured.Unstructured) {
	if u.GetKind() == "" || u.GetName() == "" {
		m.warnf("%s: object without kind or name; skipped", where)
		return
	}
	u.SetManagedFields(nil)
	m.paths[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = strings.TrimSuffix(where, "]")
	gv := u.GetAPIVersion()
	typed := func(into any) bool {
		left, err := decodeLenient(u.Object, into, m.strs)
		for _, l := range left {
			m.warnf("%s: %s field %s; left out, the rest was read", where, u.GetKind(), l)
		}
		if err != nil {
			m.warnf("%s: %s does not decode: %v; skipped", where, u.GetKind(), firstLine(err.Error()))
			return false
		}
		return true
	}
	if gv == "v1" {
		switch u.GetKind() {
		case "Pod":
			var p corev1.Pod
			switch {
			case !typed(&p):
			case bundle.AgentOf(p.Labels) != "" && !m.isTarget("Pod", p.Namespace, p.Name):
				m.NodeAgents = append(m.NodeAgents, &p)
				return // never the job: the typed pod is all
			default:
				m.Pods = append(m.Pods, &p)
				full := u.Object
				if !m.cut(u, &p, func() map[string]any { return full }) {
					return
				}
			}
		case "Event":
			var e corev1.Event
			if typed(&e) {
				m.Events = append(m.Events, e)
			}
			return // events are not objects of the job
		case "Node":
			var n corev1.Node
			if typed(&n) {
				m.Nodes = append(m.Nodes, n)
			}
		}
	}
	if gv == "events.k8s.io/v1" && u.GetKind() == "Event" {
		m.addEventsV1(where, u)
		return
	}
	m.Objects = append(m.Objects, u)
}

// addEventsV1 maps an events.k8s.io/v1 Event onto the core Event the rest of coroner reads.
func (m *Model) addEventsV1(where string, u *unstructured.Unstructured) {
	o := u.Object
	e := corev1.Event{}
	e.Name, e.Namespace = u.GetName(), u.GetNamespace()
	e.Reason, _, _ = unstructured.NestedString(o, "reason")
	e.Message, _, _ = unstructured.NestedString(o, "note")
	e.Type, _, _ = unstructured.NestedString(o, "type")
	if reg, ok, _ := unstructured.NestedMap(o, "regarding"); ok {
		js, _ := json.Marshal(reg)
		_ = json.Unmarshal(js, &e.InvolvedObject)
	}
	if s, ok, _ := unstructured.NestedString(o, "eventTime"); ok {
		_ = e.EventTime.UnmarshalQueryParameter(s)
	}
	if s, ok, _ := unstructured.NestedString(o, "deprecatedFirstTimestamp"); ok {
		_ = e.FirstTimestamp.UnmarshalQueryParameter(s)
	}
	if s, ok, _ := unstructured.NestedString(o, "deprecatedLastTimestamp"); ok {
		_ = e.LastTimestamp.UnmarshalQueryParameter(s)
	}
	if n, ok, _ := unstructured.NestedInt64(o, "deprecatedCount"); ok {
		e.Count = int32(n)
	}
	m.Events = append(m.Events, e)
}

// PathOf returns the bundle file an object came from, or "".
func (m *Model) PathOf(kind, namespace, name string) string {
	p := m.paths[kind+"/"+namespace+"/"+name]
	if i := strings.IndexByte(p, '['); i >= 0 { // "file[doc 1][3]": the file

		p = p[:i]
	}
	return p
}

// Pod returns the pod of that name, or nil.
func (m *Model) Pod(namespace, name string) *corev1.Pod {
	for _, p := range m.Pods {
		if p.Name == name && (namespace == "" || p.Namespace == namespace) {
			return p
		}
	}
	return nil
}

// Object returns the first object of that kind (and group, when given) and name, or nil.
func (m *Model) Object(group, kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range m.Objects {
		if o.GetKind() == kind && o.GetName() == name && (namespace == "" || o.GetNamespace() == namespace) &&
			(group == "" || groupOf(o.GetAPIVersion()) == group) {
			return o
		}
	}
	return nil
}

func groupOf(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// EventTime is when an event was last seen, whichever time field the emitter filled.
func EventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// EventFirstTime is when an event was first seen.
func EventFirstTime(e *corev1.Event) time.Time {
	switch {
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return EventTime(e)
}
