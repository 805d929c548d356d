package testcluster

import (
	"fmt"
	"path"
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
	// Running creates the job running (its pods running, its containers started): FailJob
	// makes it fail later, as a watcher would see it happen.
	Running bool
	// FlightRecorder, when set, is the TORCH_FR_DUMP_TEMP_FILE the containers set.
	FlightRecorder string
	// DebugPipe, when set, is the TORCH_NCCL_DEBUG_INFO_PIPE_FILE the containers set.
	DebugPipe string
	// DumpClaims mounts at the directory of FlightRecorder, in pod i, the
	// PersistentVolumeClaim <DumpClaims>-<i>.
	DumpClaims string
}

// frEnv is the container's flight recorder variables, as YAML flow items after another.
func (j Job) frEnv() string {
	s := ""
	if j.FlightRecorder != "" {
		s += fmt.Sprintf(", {name: TORCH_FR_DUMP_TEMP_FILE, value: %q}", j.FlightRecorder)
	}
	if j.DebugPipe != "" {
		s += fmt.Sprintf(", {name: TORCH_NCCL_DEBUG_INFO_PIPE_FILE, value: %q}", j.DebugPipe)
	}
	return s
}

// claim is pod i's dump volume (DumpClaims): the container's volumeMounts (a flow item) and
// the pod's volumes (a spec line).
func (j Job) claim(i int) (mounts, volumes string) {
	if j.DumpClaims == "" {
		return "", ""
	}
	return fmt.Sprintf(", volumeMounts: [{name: fr, mountPath: %q}]", path.Dir(j.FlightRecorder)),
		fmt.Sprintf("\n  volumes: [{name: fr, persistentVolumeClaim: {claimName: %s-%d}}]", j.DumpClaims, i)
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

// kind is the job's apiVersion, kind and first role.
func (j Job) kind() (string, string, string) {
	if j.Kind == "MPIJob" {
		return "kubeflow.org/v2beta1", "MPIJob", "launcher"
	}
	return "kubeflow.org/v1", "PyTorchJob", "master"
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
		j.Start = defaultStart
	}
	if j.LogLines == 0 {
		j.LogLines = 40
	}
	ts := j.ts
	uid := "00000000-0000-0000-0000-" + fmt.Sprintf("%012d", len(j.Name))
	apiVersion, kind, first := j.kind()
	spec := fmt.Sprintf(`
  pytorchReplicaSpecs:
    Master: {replicas: 1, restartPolicy: OnFailure, template: {spec: {containers: [{name: pytorch, image: train:1}]}}}
    Worker: {replicas: %d, restartPolicy: OnFailure, template: {spec: {containers: [{name: pytorch, image: train:1}]}}}`, j.Workers)
	if j.Kind == "MPIJob" {
		spec = fmt.Sprintf(`
  slotsPerWorker: 8
  mpiReplicaSpecs:
    Launcher: {replicas: 1, template: {spec: {containers: [{name: mpi, image: train:1}]}}}
    Worker: {replicas: %d, template: {spec: {containers: [{name: mpi, image: train:1}]}}}`, j.Workers)
	}
	objs := []*unstructured.Unstructured{mustYAML(t, fmt.Sprintf(`
apiVersion: %[1]s
kind: %[2]s
metadata: {name: %[3]s, namespace: %[4]s, uid: %[5]s}
spec: %[6]s
status: %[7]s
`, apiVersion, kind, j.Name, j.Namespace, uid, spec, j.jobStatus(!j.Running)))}
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
metadata: {name: %[1]s, labels: {kubernetes.io/hostname: %[1]s, nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}}
status:
  capacity: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}
  allocatable: {cpu: "63", memory: 500Gi, nvidia.com/gpu: "8"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady, lastHeartbeatTime: %[2]s, lastTransitionTime: %[2]s}]
`, node, ts(0))))
		}
		mounts, volumes := j.claim(i)
		role, index := first, 0
		if i > 0 {
			role, index = "worker", i-1
		}
		objs = append(objs, mustYAML(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {training.kubeflow.org/job-name: %[3]s, training.kubeflow.org/replica-type: %[4]s, training.kubeflow.org/replica-index: "%[5]d"}
  ownerReferences: [{apiVersion: %[9]s, kind: %[10]s, name: %[3]s, uid: %[6]s, controller: true}]
spec:
  nodeName: %[7]s
  restartPolicy: OnFailure
  containers: [{name: %[11]s, image: train:1, env: [{name: WANDB_API_KEY, value: 0123456789abcdef0123456789abcdef01234567}%[12]s]%[13]s}]%[14]s
status: %[8]s
`, j.PodName(i), j.Namespace, j.Name, role, index, uid, j.NodeName(i), j.podStatus(i, !j.Running), apiVersion, kind, j.Container(), j.frEnv(), mounts, volumes)))
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

func (j Job) ts(d time.Duration) string {
	start := j.Start
	if start.IsZero() {
		start = defaultStart
	}
	return start.Add(d).Format(time.RFC3339)
}

// defaultStart is when a Job without Start began.
var defaultStart = time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)

// jobStatus is the job's status as YAML (flow style): failed 10 minutes in, or running.
func (j Job) jobStatus(failed bool) string {
	st := j.pytorchJobStatus(failed)
	if j.Kind == "MPIJob" {
		st = strings.NewReplacer("PyTorchJob", "MPIJob", "Master:", "Launcher:").Replace(st)
	}
	return st
}

func (j Job) pytorchJobStatus(failed bool) string {
	if !failed {
		return fmt.Sprintf(`{startTime: %[1]s, conditions: [{type: Created, status: "True", reason: PyTorchJobCreated, lastTransitionTime: %[1]s},
  {type: Running, status: "True", reason: PyTorchJobRunning, lastTransitionTime: %[1]s}], replicaStatuses: {Master: {active: 1}, Worker: {active: %[2]d}}}`,
			j.ts(0), j.Workers)
	}
	return fmt.Sprintf(`{startTime: %[1]s, completionTime: %[2]s, conditions: [
  {type: Created, status: "True", reason: PyTorchJobCreated, lastTransitionTime: %[1]s},
  {type: Running, status: "False", reason: PyTorchJobRunning, lastTransitionTime: %[2]s},
  {type: Failed, status: "True", reason: PyTorchJobFailed, message: "PyTorchJob %[3]s is failed because 1 Worker replica(s) failed.", lastTransitionTime: %[2]s}],
  replicaStatuses: {Master: {failed: 1}, Worker: {failed: %[4]d}}}`, j.ts(0), j.ts(10*time.Minute), j.Name, j.Workers)
}

// podStatus is pod i's status as YAML (flow style): failed, or running.
func (j Job) podStatus(i int, failed bool) string {
	_, _, role := j.kind()
	if i > 0 {
		role = "worker"
	}
	id := fmt.Sprintf("containerd://c%d%s", max(i-1, 0), role)
	restarts, last := 0, ""
	if j.Restarted[i] {
		restarts = 1
		last = fmt.Sprintf(`, lastState: {terminated: {exitCode: 1, reason: Error, startedAt: %s, finishedAt: %s, containerID: "containerd://prev%d"}}`, j.ts(time.Minute), j.ts(4*time.Minute), i)
	}
	state := fmt.Sprintf(`{terminated: {exitCode: 1, reason: Error, startedAt: %[1]s, finishedAt: %[2]s, containerID: "%[3]s"}}`, j.ts(5*time.Minute), j.ts(9*time.Minute), id)
	phase := "Failed"
	if !failed {
		state, phase = fmt.Sprintf(`{running: {startedAt: %s}}`, j.ts(5*time.Minute)), "Running"
	}
	return fmt.Sprintf(`{phase: %s, startTime: %s, containerStatuses: [{name: %s, image: "train:1", imageID: "train@sha256:0", containerID: "%s", ready: %t, restartCount: %d, state: %s%s}]}`,
		phase, j.ts(5*time.Minute), j.Container(), id, !failed, restarts, state, last)
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
