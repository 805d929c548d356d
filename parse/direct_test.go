package parse

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/yamlbound"
)

// loadBoth loads b with pods and events decoded from the fast path's tape and through their
// generic maps, and fails t when the two models differ in anything the rest of coroner reads.
func loadBoth(t testing.TB, b *bundle.Bundle) *Model {
	t.Helper()
	defer func() { direct = true }()
	direct = false
	slow, err := Load(b)
	require.NoError(t, err)
	direct = true
	fast, err := Load(b)
	require.NoError(t, err)
	if d := cmp.Diff(modelView(slow), modelView(fast)); d != "" {
		t.Fatalf("%s: the model differs when pods are decoded from the tape (-map +tape):\n%s", b.Source, d)
	}
	return fast
}

func modelView(m *Model) map[string]any {
	objs := make([]map[string]any, len(m.Objects))
	for i, o := range m.Objects {
		objs[i] = o.Object
	}
	var job any
	if m.Job != nil {
		j := *m.Job
		if j.Object != nil {
			job = j.Object.Object
		}
		j.Object = (*unstructured.Unstructured)(nil)
		job = []any{job, j.Name, j.Namespace, j.Kind, j.UID, len(j.Pods())}
	}
	return map[string]any{"pods": m.Pods, "agents": m.NodeAgents, "events": m.Events, "nodes": m.Nodes,
		"objects": objs, "warnings": m.Warnings, "paths": m.paths, "job": job}
}

// TestDirectLoadAgrees: every sample bundle loads into the same model whether its pods and
// events go straight from the fast path's tokens into their types or through generic maps,
// and the samples' pods do go the direct way.
func TestDirectLoadAgrees(t *testing.T) {
	dirs, _ := filepath.Glob("../samples/*/resources")
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		b, err := bundle.Open(t.Context(), filepath.Dir(dir), bundle.DefaultLimits())
		require.NoError(t, err)
		loadBoth(t, b)
		b.Close()
	}
	data, err := os.ReadFile("../samples/pytorchjob-cuda-oom-rank/resources/core/Pod/ml/train-cuda-oom-worker-0.yaml")
	if err != nil {
		paths, _ := filepath.Glob("../samples/*/resources/core/Pod/*/*.yaml")
		require.NotEmpty(t, paths)
		data, err = os.ReadFile(paths[0])
	}
	require.NoError(t, err)
	tape, _, err := yamlbound.DecodeTape(data, yamlbound.ForResources(1<<20), nil)
	require.NoError(t, err)
	require.NotNil(t, tape, "a sample pod the fast path declines")
	m := &Model{Bundle: &bundle.Bundle{}, paths: map[string]string{}}
	require.True(t, m.addTyped("p.yaml", tape), "a sample pod the direct decode declines")
}

// TestDirectLoadOfOddPods: pods whose YAML the fast path takes but whose tape the direct
// decode must not take as it is (a key given twice, managed fields, a metadata that is no
// mapping, a wrong type, an event) load as through their maps.
func TestDirectLoadOfOddPods(t *testing.T) {
	docs := map[string]string{
		"twice":       "metadata: {name: twice, namespace: ml}\nspec: {nodeName: a}\nspec: {containers: [{name: c}]}",
		"twice-label": "metadata: {name: twice-label, labels: {a: x, a: y}}",
		"managed":     "metadata: {name: managed, managedFields: [{manager: kubectl}], labels: {r: '1'}}",
		"meta-scalar": "metadata: 3",
		"no-name":     "metadata: {namespace: ml}",
		"name-number": "metadata: {name: 7}",
		"wrong-type":  "metadata: {name: wrong-type}\nspec: {containers: [{name: c, ports: [{containerPort: '80'}]}]}",
		"owners":      "metadata: {name: owners, uid: u1, ownerReferences: [{apiVersion: v1, kind: X, name: x, uid: u0, controller: true}]}",
		"agent":       "metadata: {name: agent, namespace: gpu-operator, labels: {app: nvidia-device-plugin-daemonset}}\nspec: {nodeName: n1}",
	}
	files := fstest.MapFS{}
	for name, doc := range docs {
		files["resources/core/Pod/ml/"+name+".yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: Pod\n" + doc + "\n")}
	}
	files["resources/core/Event/ml/e.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: Event\nmetadata: {name: e, namespace: ml}\n" +
		"involvedObject: {kind: Pod, name: twice}\nreason: BackOff\nlastTimestamp: '2026-01-01T00:00:00Z'\n")}
	b := &bundle.Bundle{Source: "odd", FS: files, Limits: bundle.DefaultLimits()}
	for name, f := range files {
		b.Files = append(b.Files, bundle.File{Path: name, Size: int64(len(f.Data))})
	}
	m := loadBoth(t, b)
	require.Len(t, m.Events, 1)
	p := m.Pod("ml", "twice")
	require.NotNil(t, p)
	require.Empty(t, p.Spec.NodeName, "a key given twice: the last one")
	require.True(t, strings.Contains(strings.Join(m.Warnings, "\n"), "wrong-type.yaml: Pod field spec.containers[0].ports[0].containerPort"), "%q", m.Warnings)
}

// TestTapeDecodeAgrees: the typed decode of a pod's tape as the fast path makes it (keys in
// document order, a key possibly twice) gives what the JSON round trip of its map gives, or
// declines.
func TestTapeDecodeAgrees(t *testing.T) {
	for _, doc := range []string{
		"kind: Pod\nmetadata: {name: p}\nspec: {nodeName: a, containers: [{name: c, image: i}]}",
		"kind: Pod\nspec: {nodeName: a}\nspec: {nodeName: b}",
		"kind: Pod\nmetadata: {labels: {a: '1', a: '2'}}",
		"kind: Pod\nspec: {nodeSelector: {x: z}, overhead: {cpu: 1, cpu: 2}}",
	} {
		tape, _, err := yamlbound.DecodeTape([]byte(doc), yamlbound.ForResources(1<<20), nil)
		require.NoError(t, err)
		require.NotNil(t, tape, doc)
		obj := tape.Value(0).(map[string]any)
		var direct, slow = newOf("Pod"), newOf("Pod")
		require.NoError(t, decodeInto(obj, slow))
		if decodeTape(tape, direct, newInterner()) {
			require.True(t, reflect.DeepEqual(slow, direct), "%s:\n%#v\n%#v", doc, slow, direct)
		}
	}
}

// TestAlikePodsShareValues: pods that write their containers, resources and owners alike
// hold one copy of them (16,384 pods of a job are otherwise most of the model's heap), and a
// pod that writes them otherwise keeps its own; the model is the one the maps give.
func TestAlikePodsShareValues(t *testing.T) {
	pod := func(name, gpus string) []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: ml\n  labels: {rank: " + name + "}\n" +
			"  ownerReferences: [{apiVersion: kubeflow.org/v1, kind: PyTorchJob, name: j, uid: u, controller: true}]\n" +
			"spec:\n  containers:\n  - name: c\n    image: i:1\n    resources: {limits: {nvidia.com/gpu: \"" + gpus + "\"}}\n" +
			"    volumeMounts: [{name: dshm, mountPath: /dev/shm}]\n")
	}
	files := fstest.MapFS{
		"resources/core/Pod/ml/a.yaml": {Data: pod("a", "8")},
		"resources/core/Pod/ml/b.yaml": {Data: pod("b", "8")},
		"resources/core/Pod/ml/c.yaml": {Data: pod("c", "4")},
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one Load worker: one memo for the three
	b := &bundle.Bundle{Source: "alike", FS: files, Limits: bundle.DefaultLimits()}
	for _, name := range []string{"resources/core/Pod/ml/a.yaml", "resources/core/Pod/ml/b.yaml", "resources/core/Pod/ml/c.yaml"} {
		b.Files = append(b.Files, bundle.File{Path: name, Size: int64(len(files[name].Data))})
	}
	m := loadBoth(t, b)
	pa, pb, pc := m.Pod("ml", "a"), m.Pod("ml", "b"), m.Pod("ml", "c")
	require.NotNil(t, pa)
	require.NotNil(t, pb)
	require.NotNil(t, pc)
	same := func(x, y any) bool { return reflect.ValueOf(x).Pointer() == reflect.ValueOf(y).Pointer() }
	require.Equal(t, "b", pb.Labels["rank"])
	require.Equal(t, "c", pc.Labels["rank"])
	require.True(t, same(pa.Spec.Containers, pb.Spec.Containers), "alike containers are one slice")
	require.True(t, same(pa.OwnerReferences, pc.OwnerReferences), "alike owners are one slice")
	require.False(t, same(pa.Spec.Containers, pc.Spec.Containers), "other resources, other containers")
	require.Equal(t, "4", pc.Spec.Containers[0].Resources.Limits.Name("nvidia.com/gpu", "").String())
	require.Equal(t, "8", pb.Spec.Containers[0].Resources.Limits.Name("nvidia.com/gpu", "").String())
}
