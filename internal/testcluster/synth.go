package testcluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Job describes a synthetic failed PyTorchJob: a master and workers, one container each.
// Worker 1 runs out of GPU memory at step 120; the others fail after it.
type Job struct {
	Namespace, Name string
	// Kind is PyTorchJob (kubeflow.org/v1: a master and workers; the default) or MPIJob
	// (the mpi-operator's kubeflow.org/v2beta1: a launcher and workers).
	Kind      string
	Workers   int
	Nodes     int          // pods are spread over this many nodes (default 1)
	Restarted map[int]bool // pod index (0 = master) whose container restarted once
	LogLines  int          // lines of training log per pod (default 40)
	Start     time.Time
}

// PodName is the name of pod i (0 = master, or launcher).
func (j Job) PodName(i int) string {
	switch {
	case i == 0 && j.Kind == "MPIJob":
		return j.Name + "-launcher"
	case i == 0:
		return j.Name + "-master-0"
	}
	return fmt.Sprintf("%s-worker-%d", j.Name, i-1)
}

// Container is the name of the pods' container.
func (j Job) Container() string {
	if j.Kind == "MPIJob" {
		return "mpi"
	}
	return "pytorch"
}

// NodeName is the node pod i ran on.
func (j Job) NodeName(i int) string {
	return fmt.Sprintf("%s-node-%d", j.Name, i%max(j.Nodes, 1))
}

func mustYAML(t testing.TB, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatalf("%v in\n%s", err, s)
	}
	return u
}

// CreateJob creates the job, its pods and nodes, and hands their logs to the kubelet.
func (c *Cluster) CreateJob(t testing.TB, k *Kubelet, j Job) *Sample {
	t.Helper()
	if j.Start.IsZero() {
		j.Start = time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	}
	if j.LogLines == 0 {
		j.LogLines = 40
	}
	ts := func(d time.Duration) string { return j.Start.Add(d).Format(time.RFC3339) }
	uid := "00000000-0000-0000-0000-" + fmt.Sprintf("%012d", len(j.Name))
	apiVersion, kind, first := "kubeflow.org/v1", "PyTorchJob", "master"
	if j.Kind == "MPIJob" {
		apiVersion, kind, first = "kubeflow.org/v2beta1", "MPIJob", "launcher"
	}
	objs := []*unstructured.Unstructured{mpiJob(t, j, uid, ts)}
	if j.Kind != "MPIJob" {
		objs = []*unstructured.Unstructured{mustYAML(t, fmt.Sprintf(`
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: %[1]s, namespace: %[2]s, uid: %[3]s}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, restartPolicy: OnFailure, template: {spec: {containers: [{name: pytorch, image: train:1}]}}}
    Worker: {replicas: %[4]d, restartPolicy: OnFailure, template: {spec: {containers: [{name: pytorch, image: train:1}]}}}
status:
  startTime: %[5]s
  completionTime: %[6]s
  conditions:
  - {type: Created, status: "True", reason: PyTorchJobCreated, lastTransitionTime: %[5]s}
  - {type: Running, status: "False", reason: PyTorchJobRunning, lastTransitionTime: %[6]s}
  - {type: Failed, status: "True", reason: PyTorchJobFailed, message: "PyTorchJob %[1]s is failed because 1 Worker replica(s) failed.", lastTransitionTime: %[6]s}
  replicaStatuses:
    Master: {failed: 1}
    Worker: {failed: %[4]d}
`, j.Name, j.Namespace, uid, j.Workers, ts(0), ts(10*time.Minute)))}
	}
	objs = append(objs, mustYAML(t, fmt.Sprintf(`
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: %s, namespace: %s}
spec: {minMember: %d}
status: {phase: Running}
`, j.Name, j.Namespace, j.Workers+1)))
	seen := map[string]bool{}
	for i := 0; i <= j.Workers; i++ {
		node := j.NodeName(i)
		if !seen[node] {
			seen[node] = true
			objs = append(objs, mustYAML(t, fmt.Sprintf(`
apiVersion: v1
kind: Node
metadata: {name: %s, labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}}
status:
  capacity: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}
  allocatable: {cpu: "63", memory: 500Gi, nvidia.com/gpu: "8"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady, lastHeartbeatTime: %s, lastTransitionTime: %s}]
`, node, ts(0), ts(0))))
		}
		role, index := first, 0
		if i > 0 {
			role, index = "worker", i-1
		}
		restarts, last := 0, ""
		if j.Restarted[i] {
			restarts = 1
			last = fmt.Sprintf(`lastState: {terminated: {exitCode: 1, reason: Error, startedAt: %s, finishedAt: %s, containerID: "containerd://prev%d"}}`, ts(time.Minute), ts(4*time.Minute), i)
		}
		objs = append(objs, mustYAML(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {training.kubeflow.org/job-name: %[3]s, training.kubeflow.org/replica-type: %[4]s, training.kubeflow.org/replica-index: "%[5]d"}
  ownerReferences: [{apiVersion: %[12]s, kind: %[13]s, name: %[3]s, uid: %[6]s, controller: true}]
spec:
  nodeName: %[7]s
  restartPolicy: OnFailure
  containers: [{name: %[14]s, image: train:1, env: [{name: WANDB_API_KEY, value: 0123456789abcdef0123456789abcdef01234567}]}]
status:
  phase: Failed
  startTime: %[8]s
  containerStatuses:
  - name: %[14]s
    image: train:1
    imageID: train@sha256:0
    containerID: containerd://c%[5]d%[4]s
    ready: false
    restartCount: %[9]d
    state: {terminated: {exitCode: 1, reason: Error, startedAt: %[8]s, finishedAt: %[10]s, containerID: "containerd://c%[5]d%[4]s"}}
    %[11]s
`, j.PodName(i), j.Namespace, j.Name, role, index, uid, j.NodeName(i), ts(5*time.Minute), restarts, ts(9*time.Minute), last, apiVersion, kind, j.Container())))
	}
	s := c.Apply(t, k, objs...)
	for i := 0; i <= j.Workers; i++ {
		k.SetLog(j.Namespace, j.PodName(i), j.Container(), false, []byte(j.log(i, 5*time.Minute)))
		if j.Restarted[i] {
			k.SetLog(j.Namespace, j.PodName(i), j.Container(), true, []byte(j.log(i, time.Minute)))
		}
	}
	return s
}

// mpiJob is the mpi-operator's MPIJob (kubeflow.org/v2beta1) of j.
func mpiJob(t testing.TB, j Job, uid string, ts func(time.Duration) string) *unstructured.Unstructured {
	return mustYAML(t, fmt.Sprintf(`
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: %[1]s, namespace: %[2]s, uid: %[3]s}
spec:
  slotsPerWorker: 8
  mpiReplicaSpecs:
    Launcher: {replicas: 1, template: {spec: {containers: [{name: mpi, image: train:1}]}}}
    Worker: {replicas: %[4]d, template: {spec: {containers: [{name: mpi, image: train:1}]}}}
status:
  startTime: %[5]s
  completionTime: %[6]s
  conditions:
  - {type: Created, status: "True", reason: MPIJobCreated, lastTransitionTime: %[5]s}
  - {type: Failed, status: "True", reason: MPIJobFailed, message: "MPIJob %[2]s/%[1]s has failed", lastTransitionTime: %[6]s}
  replicaStatuses:
    Launcher: {failed: 1}
    Worker: {failed: %[4]d}
`, j.Name, j.Namespace, uid, j.Workers, ts(0), ts(10*time.Minute)))
}

// log is pod i's training log, starting at offset from the job's start.
func (j Job) log(i int, offset time.Duration) string {
	var b strings.Builder
	at := j.Start.Add(offset)
	line := func(s string) {
		at = at.Add(10 * time.Millisecond)
		b.WriteString(at.Format(time.RFC3339Nano) + " " + s + "\n")
	}
	line(fmt.Sprintf("[rank%d] initializing process group, world size %d, token hf_abcdefghijklmnopqrstuvwxyz012345", i, j.Workers+1))
	for s := 0; s < j.LogLines; s++ {
		line(fmt.Sprintf("[rank%d] step %d loss %.4f lr 3.0e-4 throughput 812.5 samples/s", i, s, 2.5-float64(s)/1000))
	}
	if i == 2 {
		line("Traceback (most recent call last):")
		line(`  File "/workspace/train.py", line 212, in <module>`)
		line("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.20 GiB is free.")
	} else {
		at = at.Add(10 * time.Minute)
		line(fmt.Sprintf("[rank%d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1201, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.", i))
	}
	return b.String()
}

// ApplyYAML creates the objects of a multi-document YAML text.
func (c *Cluster) ApplyYAML(t testing.TB, k *Kubelet, text string) {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(text, "\n---\n") {
		if strings.TrimSpace(doc) != "" {
			objs = append(objs, mustYAML(t, doc))
		}
	}
	c.Apply(t, k, objs...)
}

// SetKubeletPort points a node's kubelet endpoint at another port.
func (c *Cluster) SetKubeletPort(t testing.TB, node string, port int) {
	t.Helper()
	n, err := c.Kube.CoreV1().Nodes().Get(ctx(t), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := c.Kube.CoreV1().Nodes().UpdateStatus(ctx(t), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// DeadPort is a loopback port nothing listens on.
func DeadPort(t testing.TB) int { return freePort(t) }
