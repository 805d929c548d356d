package parse

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
)

func load(t *testing.T, files fstest.MapFS) *Model {
	t.Helper()
	b := &bundle.Bundle{Source: "test", FS: files, Limits: bundle.DefaultLimits()}
	for name, f := range files {
		b.Files = append(b.Files, bundle.File{Path: name, Size: int64(len(f.Data))})
	}
	m, err := Load(b)
	require.NoError(t, err)
	return m
}

// TestGenericCustomResource: an unknown kind still works through status.conditions and the
// pods it owns through an intermediate object.
func TestGenericCustomResource(t *testing.T) {
	m := load(t, fstest.MapFS{
		"resources/example.com/FancyJob/ml/fj.yaml": {Data: []byte("apiVersion: example.com/v1\nkind: FancyJob\nmetadata: {name: fj, namespace: ml, uid: j1}\n" +
			"status:\n  conditions:\n  - {type: Failed, status: \"True\", reason: BackoffLimit, message: boom, lastTransitionTime: \"2026-03-14T10:00:00Z\"}\n")},
		"resources/batch/Job/ml/fj-step.yaml":    {Data: []byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: fj-step, namespace: ml, uid: k1, ownerReferences: [{apiVersion: example.com/v1, kind: FancyJob, name: fj, uid: j1}]}\n")},
		"resources/core/Pod/ml/fj-step-abc.yaml": {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: fj-step-abc, namespace: ml, uid: p1, ownerReferences: [{apiVersion: batch/v1, kind: Job, name: fj-step, uid: k1}]}\nstatus: {phase: Failed}\n")},
		"resources/core/Pod/ml/other.yaml":       {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: other, namespace: ml, uid: p2}\nstatus: {phase: Running}\n")},
		"resources/core/Pod/ml/broken.yaml":      {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n")},
	})
	j := m.Job
	require.Equal(t, "FancyJob", j.Kind)
	require.Equal(t, "generic", j.Family.Name)
	require.Equal(t, PhaseFailed, j.Phase)
	require.Len(t, j.Replicas, 1)
	require.Len(t, j.Replicas[0].Pods, 1)
	require.Equal(t, "fj-step-abc", j.Replicas[0].Pods[0].Name)
	require.Equal(t, 1, j.Replicas[0].Failed)
	require.Len(t, m.Warnings, 1)
	require.Contains(t, m.Warnings[0], "resources/core/Pod/ml/broken.yaml: invalid YAML")
}

func TestKubeflowReplicasFromStatusWhenPodsAreGone(t *testing.T) {
	m := load(t, fstest.MapFS{
		"manifest.json": {Data: []byte(`{}`)},
		"resources/kubeflow.org/TFJob/ml/tf.yaml": {Data: []byte("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: tf, namespace: ml, uid: t1}\n" +
			"spec:\n  tfReplicaSpecs:\n    Worker: {replicas: 4}\n    Chief: {replicas: 1}\n" +
			"status:\n  conditions: [{type: Succeeded, status: \"True\"}]\n  replicaStatuses:\n    Worker: {succeeded: 4}\n    Chief: {succeeded: 1}\n")},
	})
	j := m.Job
	require.Equal(t, "kubeflow", j.Family.Name)
	require.Equal(t, PhaseSucceeded, j.Phase)
	require.Equal(t, "Chief", j.Replicas[0].Role, "the coordinating role comes first")
	require.Equal(t, 4, j.Replicas[1].Expected)
	require.Equal(t, 4, j.Replicas[1].Succeeded)
	require.True(t, j.Replicas[1].FromStatus)
}

// TestHostileResources: YAML that expands exponentially, YAML that expands within what the
// library allows but past the limit, deeply nested JSON and YAML: each is a one-line warning
// naming the file, and the other resources are still read.
func TestHostileResources(t *testing.T) {
	laughs := func(levels, width int) []byte {
		var b strings.Builder
		b.WriteString("a0: &a0 [" + strings.Repeat(`"lol",`, width-1) + "\"lol\"]\n")
		for i := 1; i < levels; i++ {
			fmt.Fprintf(&b, "a%d: &a%d [", i, i)
			for j := range width {
				if j > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "*a%d", i-1)
			}
			b.WriteString("]\n")
		}
		return []byte(b.String())
	}
	pod := []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nstatus: {phase: Failed}\n")
	files := fstest.MapFS{
		"resources/core/Pod/ml/p.yaml":            {Data: pod},
		"resources/core/ConfigMap/ml/laughs.yaml": {Data: laughs(10, 10)},
		"resources/core/ConfigMap/ml/wide.yaml":   {Data: []byte("a0: &a0 " + strings.Repeat("x", 30000) + "\na1: [" + strings.Repeat("*a0, ", 9) + "*a0]\n")},
		"resources/core/ConfigMap/ml/deep.json":   {Data: []byte(`{"a":` + strings.Repeat("[", 20000) + "1" + strings.Repeat("]", 20000) + "}")},
		"resources/core/ConfigMap/ml/deep.yaml":   {Data: []byte("a: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000))},
	}
	b := &bundle.Bundle{Source: "test", FS: files, Limits: bundle.DefaultLimits()}
	b.Limits.MaxResourceBytes = 64 << 10
	for name, f := range files {
		b.Files = append(b.Files, bundle.File{Path: name, Size: int64(len(f.Data))})
	}
	sort.Slice(b.Files, func(i, j int) bool { return b.Files[i].Path < b.Files[j].Path })
	m, err := Load(b)
	require.NoError(t, err)
	require.Len(t, m.Pods, 1, "the rest of the bundle is read")
	require.Len(t, m.Warnings, 4)
	want := []string{
		"resources/core/ConfigMap/ml/deep.json: holds more than 4096 YAML values (one per 16 bytes of the resource size limit of 65536); skipped",
		"resources/core/ConfigMap/ml/deep.yaml: holds more than 4096 YAML values (one per 16 bytes of the resource size limit of 65536); skipped",
		"resources/core/ConfigMap/ml/laughs.yaml: expands to more than 131072 bytes through YAML aliases, over twice the resource size limit of 65536; skipped",
		"resources/core/ConfigMap/ml/wide.yaml: expands to",
	}
	for i, w := range m.Warnings {
		require.Contains(t, w, want[i])
		require.NotContains(t, w, "\n")
	}
	require.Contains(t, m.Warnings[3], "the resource size limit of 65536")
}

// TestLenientObjects: one field of an unexpected type does not drop a whole Pod with its
// status; the warning names the file and the field.
func TestLenientObjects(t *testing.T) {
	m := load(t, fstest.MapFS{
		"resources/core/Pod/ml/w-0.yaml": {Data: []byte(`apiVersion: v1
kind: Pod
metadata: {name: w-0, namespace: ml}
spec:
  nodeName: gpu-1
  containers:
  - name: pytorch
    args: [train.py, --lr, 1e-3, --epochs, "3"]
    ports: [{containerPort: "8080x"}]
status:
  phase: Failed
  conditions: [{type: Ready, status: False}]
  containerStatuses:
  - name: pytorch
    restartCount: 2
    state: {terminated: {exitCode: 137, reason: OOMKilled}}
`)},
		"resources/core/Node/_cluster/gpu-1.yaml": {Data: []byte(`apiVersion: v1
kind: Node
metadata: {name: gpu-1}
status:
  capacity: {nvidia.com/gpu: "8"}
  allocatable: {nvidia.com/gpu: "8x"}
`)},
	})
	require.Len(t, m.Pods, 1)
	p := m.Pods[0]
	require.Equal(t, "gpu-1", p.Spec.NodeName)
	require.Equal(t, []string{"train.py", "--lr", "--epochs", "3"}, p.Spec.Containers[0].Args, "the number is left out, the strings kept")
	require.Equal(t, int32(137), p.Status.ContainerStatuses[0].State.Terminated.ExitCode, "the status survives")
	require.Len(t, m.Nodes, 1)
	require.Equal(t, int64(8), m.Nodes[0].Status.Capacity.Name("nvidia.com/gpu", "").Value())
	warnings := strings.Join(m.Warnings, "\n")
	require.Contains(t, warnings, "resources/core/Pod/ml/w-0.yaml: Pod field spec.containers[0].args[2]: a number where a string is expected")
	require.Contains(t, warnings, "resources/core/Pod/ml/w-0.yaml: Pod field spec.containers[0].ports[0].containerPort: a string where a int32 is expected")
	require.Contains(t, warnings, "resources/core/Pod/ml/w-0.yaml: Pod field status.conditions[0].status: a bool where a v1.ConditionStatus is expected")
	require.Contains(t, warnings, "resources/core/Node/_cluster/gpu-1.yaml: Node field status.allocatable.nvidia.com/gpu:")
}

// TestAliasBombBoundedWhileDecoding is the case: one 1 MiB string aliased 1,000 times
// (a 1 MB file that expands to 1 GB) took 3.1 GB. It is refused having allocated little more
// than the file, with the same warning as any expansion past the limit.
func TestAliasBombBoundedWhileDecoding(t *testing.T) {
	var s strings.Builder
	s.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: ml}\ndata:\n  big: &a \"" + strings.Repeat("x", 1<<20) + "\"\nitems: [")
	for range 1000 {
		s.WriteString("*a, ")
	}
	s.WriteString("*a]\n")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := load(t, fstest.MapFS{"resources/core/ConfigMap/ml/x.yaml": {Data: []byte(s.String())}})
	runtime.ReadMemStats(&after)
	require.Equal(t, []string{"resources/core/ConfigMap/ml/x.yaml: expands to more than 33554432 bytes through YAML aliases, over twice the resource size limit of 16777216; skipped"}, m.Warnings)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MB", alloc>>20)
	require.Less(t, alloc, uint64(64<<20), "bounded while decoding, not after")
}

// TestYAMLStream: a file of several documents gives each object, and says which document a
// path came from.
func TestYAMLStream(t *testing.T) {
	m := load(t, fstest.MapFS{"resources/core/Pod/ml/all.yaml": {Data: []byte(
		"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: ml}\n---\n" +
			"apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: ml}\n---\n")}})
	require.Empty(t, m.Warnings)
	require.Len(t, m.Pods, 2)
	require.Equal(t, "resources/core/Pod/ml/all.yaml", m.PathOf("Pod", "ml", "b"))
}

// TestPodReadFromTypedPod: the generic copy of a pod keeps its identity and owners and lets
// its spec and status go (the typed pod holds them); the job's own object keeps everything, a
// bare pod too.
func TestPodReadFromTypedPod(t *testing.T) {
	m := load(t, fstest.MapFS{
		"resources/batch/Job/ml/j.yaml": {Data: []byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ml, uid: k1}\n" +
			"status:\n  conditions: [{type: Failed, status: \"True\", reason: BackoffLimitExceeded}]\n")},
		"resources/core/Pod/ml/j-a.yaml": {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: j-a, namespace: ml, uid: p1, ownerReferences: [{apiVersion: batch/v1, kind: Job, name: j, uid: k1}]}\n" +
			"spec: {containers: [{name: c, image: img:1}]}\nstatus: {phase: Failed, containerStatuses: [{name: c, restartCount: 3}]}\n")},
	})
	require.Equal(t, PhaseFailed, m.Job.Phase)
	require.Len(t, m.Job.Replicas[0].Pods, 1)
	p := m.Job.Replicas[0].Pods[0]
	require.Equal(t, int32(3), p.Status.ContainerStatuses[0].RestartCount, "the typed pod keeps its status")
	require.Equal(t, "img:1", p.Spec.Containers[0].Image, "the typed pod keeps its spec")
	u := m.Object("", "Pod", "ml", "j-a")
	require.NotNil(t, u, "the generic pod stays listed")
	for _, gone := range []string{"status", "spec"} {
		_, has := u.Object[gone]
		require.False(t, has, "the generic pod lets its %s go", gone)
	}
	require.Equal(t, "p1", string(u.GetUID()))
	require.Equal(t, "k1", string(u.GetOwnerReferences()[0].UID), "its owners stay: ownership is read from them")
	require.NotNil(t, m.Object("batch", "Job", "ml", "j").Object["status"], "the job keeps its status")

	bare := load(t, fstest.MapFS{
		"manifest.json": {Data: []byte(`{"target": {"kind": "Pod", "namespace": "ml", "name": "solo"}}`)},
		"resources/core/Pod/ml/solo.yaml": {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: solo, namespace: ml}\n" +
			"status: {phase: Failed, conditions: [{type: Ready, status: \"False\", reason: PodFailed}]}\n")},
	})
	require.Equal(t, PhaseFailed, bare.Job.Phase)
	require.NotNil(t, bare.Job.Object.Object["status"], "a bare pod that is the job keeps its status")
	require.Len(t, bare.Job.Conditions, 1)
}

// TestLonePodIsTheJob: a bundle of one pod and no job object or manifest makes that pod the
// job, which keeps all its generic object although pods' copies are let go as they are read;
// two such pods are a pods-only job read from their typed pods alone.
func TestLonePodIsTheJob(t *testing.T) {
	pod := func(name string) []byte {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: ml}\n" +
			"status: {phase: Failed, conditions: [{type: Ready, status: \"False\", reason: PodFailed}]}\n")
	}
	lone := load(t, fstest.MapFS{"resources/core/Pod/ml/solo.yaml": {Data: pod("solo")}})
	require.NotNil(t, lone.Job.Object, "the lone pod is the job")
	require.Equal(t, "solo", lone.Job.Name)
	require.NotNil(t, lone.Job.Object.Object["status"], "the job's pod keeps its status")
	require.Len(t, lone.Job.Conditions, 1)

	two := load(t, fstest.MapFS{"resources/core/Pod/ml/a.yaml": {Data: pod("a")}, "resources/core/Pod/ml/b.yaml": {Data: pod("b")}})
	require.Equal(t, "pods", two.Job.Family.Name)
	require.Len(t, two.Job.Replicas[0].Pods, 2)
	for _, name := range []string{"a", "b"} {
		require.Nil(t, two.Object("", "Pod", "ml", name), "pod %s is read from its typed pod, no generic copy listed", name)
		require.Equal(t, "Failed", string(two.Pod("ml", name).Status.Phase), "the typed pod keeps its status")
	}
}

// TestOwnershipThroughTypedPods: pods are not listed among the objects, yet a pod owned by a
// pod still belongs to the job that owns the first, and an object owned by a pod is not taken
// for the job.
func TestOwnershipThroughTypedPods(t *testing.T) {
	m := load(t, fstest.MapFS{
		"resources/example.com/Trainer/ml/j.yaml": {Data: []byte("apiVersion: example.com/v1\nkind: Trainer\nmetadata: {name: j, namespace: ml, uid: k1}\n")},
		"resources/core/Pod/ml/a.yaml":            {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: ml, uid: p1, ownerReferences: [{apiVersion: example.com/v1, kind: Trainer, name: j, uid: k1}]}\n")},
		"resources/core/Pod/ml/b.yaml":            {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: ml, uid: p2, ownerReferences: [{apiVersion: v1, kind: Pod, name: a, uid: p1}]}\n")},
		"resources/example.com/Sidecar/ml/s.yaml": {Data: []byte("apiVersion: example.com/v1\nkind: Sidecar\nmetadata: {name: s, namespace: ml, uid: s1, ownerReferences: [{apiVersion: v1, kind: Pod, name: a, uid: p1}]}\n")},
	})
	require.Equal(t, "j", m.Job.Name, "the object a pod owns is not the job")
	require.Len(t, m.Job.Pods(), 2, "the pod a pod owns is the job's")
	require.Nil(t, m.Object("", "Pod", "ml", "a"))
}
