package parse

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/yamlbound"
)

// typedObjects are the Pods, Events and Nodes of the repository's sample and test bundles, as
// yamlbound decodes them.
func typedObjects(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	add := func(v any) {
		if o, ok := v.(map[string]any); ok {
			switch o["kind"] {
			case "Pod", "Event", "Node":
				out = append(out, o)
			}
		}
	}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(path, "/resources/core/") ||
			!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".json") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		docs, err := yamlbound.DecodeAll(data, yamlbound.ForResources(1<<20))
		if err != nil {
			return nil // the hostile samples
		}
		for _, doc := range docs {
			if o, ok := doc.(map[string]any); ok && strings.HasSuffix(str(o, "kind"), "List") {
				items, _ := o["items"].([]any)
				for _, it := range items {
					add(it)
				}
				continue
			}
			add(doc)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

func newOf(kind string) any {
	switch kind {
	case "Event":
		return &corev1.Event{}
	case "Node":
		return &corev1.Node{}
	}
	return &corev1.Pod{}
}

// agree checks that decodeTyped gives what the JSON round trip gives, or declines; it says
// whether it declined.
func agree(t testing.TB, obj map[string]any) (declined bool) {
	t.Helper()
	kind := str(obj, "kind")
	fast, slow := newOf(kind), newOf(kind)
	ok := decodeTyped(obj, fast, newInterner())
	err := decodeInto(obj, slow)
	if !ok {
		return true
	}
	if err != nil {
		t.Fatalf("the direct decode took a %s the JSON round trip refuses (%v): %v", kind, err, obj)
	}
	if !reflect.DeepEqual(slow, fast) {
		t.Fatalf("the direct decode of a %s differs from the JSON round trip:\n%#v\n%#v", kind, slow, fast)
	}
	return false
}

// TestDecodeTypedAgrees: every Pod, Event and Node of the samples and test bundles decodes
// straight from the map into what the JSON round trip gives, and none needs the round trip.
func TestDecodeTypedAgrees(t *testing.T) {
	objs := typedObjects(t)
	require.Greater(t, len(objs), 100)
	for _, o := range objs {
		require.False(t, agree(t, o), "the direct decode declined a sample %s: %v", o["kind"], o)
	}
}

// TestDecodeTypedDeclines: what the JSON round trip refuses or changes is left to it (and so
// to decodeLenient's warnings): the direct decode declines it.
func TestDecodeTypedDeclines(t *testing.T) {
	for name, doc := range map[string]string{
		"a number for a string":        "spec: {containers: [{name: c, args: [1e-3]}]}",
		"a string for an integer":      "spec: {containers: [{name: c, ports: [{containerPort: '80'}]}]}",
		"a fraction for an integer":    "status: {containerStatuses: [{name: c, restartCount: 1.5}]}",
		"an integer out of range":      "status: {containerStatuses: [{name: c, restartCount: 4294967296}]}",
		"1e21 for an integer":          "spec: {activeDeadlineSeconds: 1e21}",
		"a negative count into int64":  "spec: {terminationGracePeriodSeconds: -1e300}",
		"a bool for a string":          "status: {conditions: [{type: Ready, status: false}]}",
		"a list for an object":         "spec: [a, b]",
		"an object for a list":         "spec: {containers: {name: c}}",
		"a key matching ignoring case": "spec: {NodeName: gpu-1}",
		"a quantity that is no number": "spec: {containers: [{name: c, resources: {limits: {memory: lots}}}]}",
		"a bad time":                   "metadata: {name: p, creationTimestamp: yesterday}",
		"a list for a time":            "metadata: {name: p, creationTimestamp: [1, 2]}",
		"a label that is a number":     "metadata: {name: p, labels: {rank: 3}}",
	} {
		t.Run(name, func(t *testing.T) {
			v, err := yamlbound.Decode([]byte("apiVersion: v1\nkind: Pod\n"+doc+"\n"), yamlbound.ForResources(1<<20))
			require.NoError(t, err)
			require.True(t, agree(t, v.(map[string]any)), "declined")
		})
	}
	bad := map[string]any{"kind": "Pod", "metadata": map[string]any{"name": "p\xff"}}
	require.True(t, agree(t, bad), "a string that is not UTF-8 (the round trip replaces its byte)")
}

// TestMalformedPods: a pod with a field of the wrong type, a huge declared size or a deep
// nesting loads with a one-line warning naming its file, or is skipped with one; the other
// pods are read.
func TestMalformedPods(t *testing.T) {
	deep := strings.Repeat("[", 500) + strings.Repeat("]", 500)
	pods := map[string]string{
		"wrong-type":  "spec: {containers: [{name: c, ports: [{containerPort: [1]}]}]}",
		"huge-size":   "spec: {containers: [{name: c, resources: {limits: {memory: 9e999999999999Gi}}}]}",
		"huge-count":  "status: {containerStatuses: [{name: c, restartCount: 1e308}]}",
		"deep-known":  "spec: {containers: [{name: c, args: " + deep + "}]}",
		"deep-extra":  "spec: {containers: [{name: c, extra: " + deep + "}]}",
		"spec-scalar": "spec: 12",
	}
	files := fstest.MapFS{"resources/core/Pod/ml/good.yaml": {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: good, namespace: ml}\nstatus: {phase: Failed}\n")}}
	for name, doc := range pods {
		files["resources/core/Pod/ml/"+name+".yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: ml}\n" + doc + "\n")}
	}
	b := &bundle.Bundle{Source: "test", FS: files, Limits: bundle.DefaultLimits()}
	for name, f := range files {
		b.Files = append(b.Files, bundle.File{Path: name, Size: int64(len(f.Data))})
	}
	m, err := Load(b)
	require.NoError(t, err)
	require.NotNil(t, m.Pod("ml", "good"))
	require.NotNil(t, m.Pod("ml", "deep-extra"), "a field the type does not have is ignored")
	for name := range pods {
		if name == "deep-extra" {
			continue
		}
		var found []string
		for _, w := range m.Warnings {
			require.NotContains(t, w, "\n")
			if strings.HasPrefix(w, "resources/core/Pod/ml/"+name+".yaml: ") {
				found = append(found, w)
			}
		}
		require.NotEmpty(t, found, "a warning for %s in %q", name, m.Warnings)
	}
}

// FuzzDecodeTypedAgrees: for any YAML, the direct decode into a Pod (from its map, and from the
// fast path's tape) gives what the JSON round trip gives, or declines; never a panic.
func FuzzDecodeTypedAgrees(f *testing.F) {
	paths, _ := filepath.Glob("../samples/*/resources/core/Pod/*/*.yaml")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("kind: Pod\nspec: {containers: [{name: c, ports: [{containerPort: 8e3}], resources: {limits: {cpu: 1.5}}}]}\n"))
	f.Add([]byte("kind: Pod\nmetadata: {creationTimestamp: null, labels: {a: null}}\nspec: {nodeSelector: {}, tolerations: []}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := yamlbound.Decode(data, yamlbound.ForResources(1<<16))
		if err != nil {
			return
		}
		if obj, ok := v.(map[string]any); ok {
			obj["kind"] = "Pod"
			agree(t, obj)
		}
		// The fast path's tape, keys in document order and maybe given twice.
		tape, _, err := yamlbound.DecodeTape(data, yamlbound.ForResources(1<<16), nil)
		if err != nil || tape == nil {
			return
		}
		fast, slow := &corev1.Pod{}, &corev1.Pod{}
		obj, _ := tape.Value(0).(map[string]any)
		if decodeTape(tape, fast, newInterner()) {
			if err := decodeInto(obj, slow); err != nil || !reflect.DeepEqual(slow, fast) {
				t.Fatalf("the tape's decode differs from the JSON round trip (%v):\n%#v\n%#v", err, slow, fast)
			}
		}
	})
}
