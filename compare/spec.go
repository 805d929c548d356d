package compare

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/parse"
)

// maxValues bounds the distinct values of a field listed across the pods of a role.
const maxValues = 8

// field is one spec field of a run: its kind (see Change.Kind), its role and its values
// across the role's pods, sorted.
type field struct {
	kind, role string
	values     map[string]bool
	// score, when set, ranks the field's change instead of its kind's (a version's
	// component).
	score int
}

// specOf flattens what a run asked for and where it ran into fields by a key that names no pod,
// node or run ("Worker/pytorch env NCCL_DEBUG"), so that two runs of one spec give the same
// keys and values: the job's spec (its pod templates are read through the pods), each pod's
// containers, scheduling fields and the labels of the nodes it ran on. A role whose pods were
// not collected is read from its template. Values are redacted (when red is set) and the run's
// own names (job name, uid) replaced by placeholders.
func specOf(d *diagnose.Diagnosis, red *redact.Redactor) map[string]*field {
	m := d.Model
	out := map[string]*field{}
	if m == nil || m.Job == nil {
		return out
	}
	norm := normalizer(m.Job)
	add := func(key, kind, role, value string) {
		f := out[key]
		if f == nil {
			f = &field{kind: kind, role: role, values: map[string]bool{}}
			out[key] = f
		}
		f.values[norm(value)] = true
	}
	withPods := map[string]bool{}
	for _, p := range m.Job.Pods() {
		spec := podSpec(p, red)
		if spec == nil {
			continue
		}
		role := m.Job.RoleOf(p)
		withPods[role] = true
		podFields(spec, role, add)
		nodeFields(m, p, role, add)
	}
	if m.Job.Object == nil {
		return out
	}
	spec, _ := redacted(m.Job.Object, red)["spec"].(map[string]any)
	flatten(spec, "", func(path string, v string) {
		add(path, kindOf(path), "", v)
	}, func(path string, tmpl map[string]any) {
		// A pod template: its pods say what ran, unless none were collected.
		role := templateRole(path)
		if withPods[role] {
			return
		}
		if s, ok := tmpl["spec"].(map[string]any); ok {
			podFields(s, role, add)
		}
	})
	return out
}

// podSpec is a pod's spec as the generic map the job's templates are read as, redacted (when
// red is set) as bundles are; nil when it does not convert.
func podSpec(p *corev1.Pod, red *redact.Redactor) map[string]any {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&p.Spec)
	if err != nil {
		return nil
	}
	obj := map[string]any{"spec": spec}
	if red != nil {
		red.Object(obj)
	}
	s, _ := obj["spec"].(map[string]any)
	return s
}

// redacted is a deep copy of an object's content, redacted by red (when set) as bundles are.
func redacted(obj *unstructured.Unstructured, red *redact.Redactor) map[string]any {
	c := obj.DeepCopy().Object
	if red != nil {
		red.Object(c)
	}
	return c
}

// normalizer replaces a run's own names in a value: the job's name and uid, which every pod
// name, generated address and label of the run carries.
func normalizer(j *parse.Job) func(string) string {
	var pairs []string
	if j.UID != "" {
		pairs = append(pairs, j.UID, "<uid>")
	}
	if len(j.Name) >= 3 {
		pairs = append(pairs, j.Name, "<job>")
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

// templateRole is the role of a pod template's path: the key above "template"
// ("pytorchReplicaSpecs.Worker.template" is Worker), or "" for a job with one template.
func templateRole(path string) string {
	parts := strings.Split(strings.TrimSuffix(path, ".template"), ".")
	if len(parts) >= 2 && strings.HasSuffix(parts[len(parts)-2], "Specs") {
		return parts[len(parts)-1]
	}
	return ""
}

// podFields adds the fields of a pod spec that say what runs and where it may run.
func podFields(spec map[string]any, role string, add func(key, kind, role, value string)) {
	if spec == nil {
		return
	}
	prefix := role
	if prefix == "" {
		prefix = "pod"
	}
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			if cm == nil {
				continue
			}
			name, _ := cm["name"].(string)
			if name == "" || strings.HasPrefix(name, "istio-") {
				continue
			}
			cp := prefix + "/" + name
			if list == "initContainers" {
				cp = prefix + "/init:" + name
			}
			if img, ok := cm["image"].(string); ok {
				add(cp+" image", "image", role, img)
			}
			for _, k := range []string{"command", "args"} {
				if v, ok := cm[k]; ok {
					add(cp+" "+k, "command", role, scalarText(v))
				}
			}
			env, _ := cm["env"].([]any)
			for _, e := range env {
				em, _ := e.(map[string]any)
				n, _ := em["name"].(string)
				if n == "" {
					continue
				}
				v, ok := em["value"].(string)
				if !ok {
					if vf, ok := em["valueFrom"]; ok {
						v = "from " + scalarText(vf)
					}
				}
				add(cp+" env "+n, "env", role, v)
			}
			if res, ok := cm["resources"].(map[string]any); ok {
				flatten(res, cp+" resources", func(path, v string) { add(path, "resources", role, v) }, nil)
			}
		}
	}
	for _, k := range []string{"nodeSelector", "tolerations", "affinity", "priorityClassName", "schedulerName", "runtimeClassName", "hostNetwork", "hostIPC"} {
		if v, ok := spec[k]; ok {
			add(prefix+" "+k, "scheduling", role, scalarText(v))
		}
	}
}

// nodeLabel are the node labels that say what hardware and drivers a pod ran on.
var nodeLabel = regexp.MustCompile(`(?i)gpu|nvidia|cuda|driver|accelerator|instance-type|machine|product`)

// nodeFields adds what the nodes a pod ran on say of their GPUs, drivers and runtime (never
// their names: two runs on different nodes of one pool are the same).
func nodeFields(m *parse.Model, p *corev1.Pod, role string, add func(key, kind, role, value string)) {
	if p.Spec.NodeName == "" {
		return
	}
	var n *corev1.Node
	for i := range m.Nodes {
		if m.Nodes[i].Name == p.Spec.NodeName {
			n = &m.Nodes[i]
		}
	}
	if n == nil {
		return
	}
	prefix := role
	if prefix == "" {
		prefix = "pod"
	}
	for k, v := range n.Labels {
		if nodeLabel.MatchString(k) && !strings.Contains(k, "hostname") {
			add(prefix+" node label "+k, "node", role, v)
		}
	}
	info := n.Status.NodeInfo
	for k, v := range map[string]string{"kernel": info.KernelVersion, "container runtime": info.ContainerRuntimeVersion, "kubelet": info.KubeletVersion, "os image": info.OSImage} {
		if v != "" {
			add(prefix+" node "+k, "node", role, v)
		}
	}
}

// flatten calls leaf with the path and text of every scalar (lists of scalars and lists of
// objects without names are one value) and, when tmpl is set, hands it the pod templates
// instead of flattening them. Lists of named objects are keyed by name.
func flatten(v any, path string, leaf func(path, v string), tmpl func(path string, t map[string]any)) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		if strings.HasPrefix(k, "[") {
			return path + k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if tmpl != nil && k == "template" {
				if t, ok := x[k].(map[string]any); ok {
					tmpl(join(k), t)
					continue
				}
			}
			flatten(x[k], join(k), leaf, tmpl)
		}
	case []any:
		named := len(x) > 0
		for _, e := range x {
			m, ok := e.(map[string]any)
			if _, has := m["name"].(string); !ok || !has {
				named = false
			}
		}
		if !named {
			leaf(path, scalarText(x))
			return
		}
		for _, e := range x {
			m := e.(map[string]any)
			flatten(m, join("["+m["name"].(string)+"]"), leaf, tmpl)
		}
	default:
		leaf(path, scalarText(x))
	}
}

// scalarText shows a value in one line: a string as it is, a list of strings as a command
// line, anything else as compact JSON (keys sorted).
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "null"
	case []any:
		words := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				b, _ := json.Marshal(x)
				return string(b)
			}
			if s == "" || strings.ContainsAny(s, " \t'\"") {
				s = fmt.Sprintf("%q", s)
			}
			words = append(words, s)
		}
		return strings.Join(words, " ")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// kindOf classes a job spec path (see Change.Kind).
func kindOf(path string) string {
	p := strings.ToLower(path)
	switch {
	case strings.HasSuffix(p, "replicas") || strings.Contains(p, "nproc") || strings.Contains(p, "numworkers") ||
		strings.Contains(p, "numnodes") || strings.Contains(p, "slotsper") || strings.Contains(p, "minavailable") ||
		strings.Contains(p, "elasticpolicy"):
		return "replicas"
	case strings.Contains(p, "image"):
		return "image"
	case strings.Contains(p, "command") || strings.Contains(p, "args"):
		return "command"
	case strings.Contains(p, "env"):
		return "env"
	case strings.Contains(p, "resources"):
		return "resources"
	case strings.Contains(p, "policy") || strings.Contains(p, "backofflimit") || strings.Contains(p, "deadline") ||
		strings.Contains(p, "ttl") || strings.Contains(p, "suspend") || strings.Contains(p, "runtimeref"):
		return "policy"
	case strings.Contains(p, "selector") || strings.Contains(p, "toleration") || strings.Contains(p, "affinity") ||
		strings.Contains(p, "queue") || strings.Contains(p, "priority") || strings.Contains(p, "scheduling"):
		return "scheduling"
	}
	return "spec"
}

// specScore is how often a difference of each kind explains a failure: a new image beats a
// new label.
var specScore = map[string]int{
	"image": 900, "command": 850, "env": 800, "replicas": 760, "resources": 750,
	"policy": 600, "scheduling": 500, "node": 450, "spec": 100,
}

// specChanges compares the two runs' fields.
func specChanges(good, bad *Run, red *redact.Redactor) []*Change {
	gs, bs := specOf(good.Diagnosis, red), specOf(bad.Diagnosis, red)
	versionFields(good, gs)
	versionFields(bad, bs)
	var out []*Change
	for _, k := range sortedUnion(gs, bs) {
		g, b := gs[k], bs[k]
		gv, bv := valuesText(g), valuesText(b)
		if gv == bv {
			continue
		}
		f := b
		if f == nil {
			f = g
		}
		score := specScore[f.kind]
		if f.score != 0 {
			score = f.score
		}
		c := &Change{Section: SectionSpec, Kind: f.kind, Score: score, Role: f.role, Path: k, Good: gv, Bad: bv}
		switch {
		case g == nil:
			c.Title = k + " only in BAD: " + bv
		case b == nil:
			c.Title = k + " only in GOOD: " + gv
		default:
			c.Title = k + ": " + gv + " → " + bv
		}
		out = append(out, c)
	}
	return out
}

// valuesText shows a field's values across a role's pods, at most maxValues of them.
func valuesText(f *field) string {
	if f == nil {
		return ""
	}
	vs := sortedKeys(f.values)
	if len(vs) > maxValues {
		vs = append(vs[:maxValues], fmt.Sprintf("(and %d more)", len(f.values)-maxValues))
	}
	return strings.Join(vs, ", ")
}
