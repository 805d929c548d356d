package yamlbound

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// fastAgrees fails t when the fast path takes data and decodes it otherwise than yaml.v3, and
// says whether it took it.
func fastAgrees(t testing.TB, data []byte, opts Options) bool {
	t.Helper()
	fast, ok := fastDecode(data, opts)
	if !ok {
		return false
	}
	slow, err := decodeAll(data, opts)
	if err != nil {
		t.Fatalf("the fast path took what yaml.v3 refuses (%v):\n%s", err, data)
	}
	if len(slow) != 1 {
		t.Fatalf("the fast path took %d documents as one:\n%s", len(slow), data)
	}
	if d := cmp.Diff(slow[0], fast); d != "" {
		t.Fatalf("the fast path decodes otherwise than yaml.v3 (-yaml.v3 +fast):\n%s\n%s", d, data)
	}
	if d := cmp.Diff(fast, TapeOf(fast).Value(0)); d != "" {
		t.Fatalf("the value written as a tape reads back otherwise (-value +tape):\n%s", d)
	}
	return true
}

// TestFastPathTakesWhatClientsWrite: a pod as the Kubernetes client libraries write it (block
// style, collect's form), one written by hand with one-line flow collections, and every
// sample resource it takes decode as yaml.v3 decodes them.
func TestFastPathTakesWhatClientsWrite(t *testing.T) {
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "train-worker-3", Namespace: "ml", Labels: map[string]string{"replica-index": "3", "on": "yes"}},
		Spec: corev1.PodSpec{NodeName: "gpu-7", Containers: []corev1.Container{{Name: "pytorch", Image: "reg/llm:2.4@sha256:4f1b",
			Args:      []string{"--lr=0.1", "true", "1e3", "- x", "a: b", "it's", `say "hi"`, "~", ""},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "pytorch", RestartCount: 2,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}},
	}
	written, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	byHand := []byte(`apiVersion: v1
kind: Pod
metadata:
  name: big-train-worker-6355
  labels:
    training.kubeflow.org/replica-index: "6355"
  ownerReferences:
  - {apiVersion: kubeflow.org/v1, kind: PyTorchJob, name: big-train, controller: true}
spec:
  containers:
  - name: pytorch
    resources: {limits: {nvidia.com/gpu: "8", memory: 800Gi}, requests: {'nvidia.com/gpu': '8'}}
    volumeMounts: [{name: dshm, mountPath: /dev/shm}, []]
status:
  phase: Failed
  conditions:
    - {type: PodScheduled, status: "True", lastTransitionTime: "2026-03-14T08:00:00Z"}
  containerStatuses:
  -   name: pytorch
      state: {terminated: {reason: Error, exitCode: 1, startedAt: "2026-03-14T08:00:20Z"}}
  - 
  - [0x1F, .5, -3, 1_000, off, null, "a\tb\\c\"d"]
`)
	for name, data := range map[string][]byte{"client": written, "by hand": byHand} {
		if !fastAgrees(t, data, ForResources(1<<20)) {
			t.Errorf("the fast path declined the pod written %s:\n%s", name, data)
		}
	}
	taken := 0
	for _, data := range sampleResources(t, 1) {
		if fastAgrees(t, data, ForResources(1<<20)) {
			taken++
		}
	}
	t.Logf("the fast path took %d sample resources", taken)
}

// TestFastPathDeclines: what the fast path does not take goes to yaml.v3, which decodes it
// (or refuses it) as before.
func TestFastPathDeclines(t *testing.T) {
	for _, doc := range []string{
		"a: &x {b: 1}\nc: *x\n",      // anchors and aliases
		"a: !!str 1\n",               // tags
		"base: {x: 1}\n<<: {y: 2}\n", // merge keys
		"a: 1 # one\n",               // comments
		"# head\na: 1\n",             // comments
		"a: 1\n---\nb: 2\n",          // several documents
		"a: |\n  line\n",             // block scalars
		"a: [1,\n  2]\n",             // flow collections over lines
		"a: one\n  two\n",            // plain scalars over lines
		"a: \"\\u00e9\"\n",           // escapes beyond the common ones
		"a:\tb\n",                    // tabs
		"a: b\r\n",                   // carriage returns
		"a: caf\xc3\xa9\n",           // bytes beyond ASCII
		"a: {b}\n",                   // a flow key without a value
		"a: 1\n b: 2\n",              // indentation that is not YAML's
		"a: [1, 2,]\n",               // a trailing comma
		"- - x\n",                    // nested compact sequences
	} {
		if _, ok := fastDecode([]byte(doc), ForResources(1<<20)); ok {
			t.Errorf("the fast path took %q", doc)
		}
		want, werr := decodeAll([]byte(doc), ForResources(1<<20))
		got, gerr := DecodeAll([]byte(doc), ForResources(1<<20))
		if (werr == nil) != (gerr == nil) || cmp.Diff(want, got) != "" {
			t.Errorf("%q: DecodeAll gives %v, %v; yaml.v3 %v, %v", doc, got, gerr, want, werr)
		}
	}
}

// TestFastPathKeepsTheBound: a value over the limit is declined by the fast path, and
// DecodeAll gives yaml.v3's error.
func TestFastPathKeepsTheBound(t *testing.T) {
	data := []byte("a: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n")
	opts := Options{Limit: 20, MaxValues: 1000}
	if _, ok := fastDecode(data, opts); ok {
		t.Fatal("the fast path took a value over the bound")
	}
	_, err := DecodeAll(data, opts)
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("DecodeAll: %v, want a TooLargeError", err)
	}
}

// FuzzFastAgrees: whatever the fast path takes, it decodes as yaml.v3 does; the rest it
// declines.
func FuzzFastAgrees(f *testing.F) {
	for _, data := range sampleResources(f, 5) {
		f.Add(data)
	}
	f.Add([]byte("a:\n- {b: c, d: [e, 'f''g', \"h\\\"\"]}\n-\n- k: v\n  l: [1, 2.5, -3, 0x10, yes]\nm: ~\n"))
	f.Add([]byte("- a\n- - b\n-   c: d\n    e: f\n"))
	f.Add([]byte("{a: 1, b: [x, y]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := Options{Limit: 1 << 20, MaxValues: 1 << 20}
		if checkValues(data, opts) != nil {
			return
		}
		fastAgrees(t, data, opts)
	})
}
