package analyze

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/parse"
)

// analyzeBundle analyzes a bundle of the given files collected at collectedAt (zero: no
// manifest), with opts' thresholds.
func analyzeBundle(t *testing.T, files map[string]string, collectedAt time.Time, opts Options) *Result {
	t.Helper()
	return analyzeBundleGaps(t, files, collectedAt, nil, opts)
}

// analyzeBundleGaps is analyzeBundle with the gaps the collector recorded in the manifest
// (the objects it could not get, and why).
func analyzeBundleGaps(t *testing.T, files map[string]string, collectedAt time.Time, gaps []bundle.Gap, opts Options) *Result {
	t.Helper()
	fsys := fstest.MapFS{}
	var list []bundle.File
	for p, data := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(data)}
		list = append(list, bundle.File{Path: p, Size: int64(len(data))})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Path < list[j].Path })
	b := &bundle.Bundle{Source: "test", FS: fsys, Files: list, Limits: bundle.DefaultLimits()}
	if !collectedAt.IsZero() {
		b.Manifest = &bundle.Manifest{FormatVersion: 1, CollectedAt: &collectedAt, Errors: gaps}
	}
	m, err := parse.Load(b)
	require.NoError(t, err)
	rs := defaultRuleSet(t)
	res, ix, err := analyzeModel(t.Context(), m, rs, index.BuildOptions{}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	return res
}

// pytorchJobYAML is a PyTorchJob of namespace ml created at 10:00 with workers workers, in
// the given condition ("Created", "Running", "Failed", "Succeeded").
func pytorchJobYAML(workers int, cond, at string) string {
	return fmt.Sprintf(`apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: train, namespace: ml, uid: u1, creationTimestamp: "2026-03-14T10:00:00Z"}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: %d
      restartPolicy: OnFailure
      template: {spec: {containers: [{name: pytorch, image: "registry.local/ml/trainer:v2"}]}}
status:
  conditions:
  - {type: Created, status: "True", reason: PyTorchJobCreated, lastTransitionTime: "2026-03-14T10:00:00Z"}
  - {type: %s, status: "True", reason: PyTorchJob%s, lastTransitionTime: %q}
`, workers, cond, cond, at)
}

// workerPodYAML is worker i of job train; status is the YAML of its status.
func workerPodYAML(i int, status string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: train-worker-%d
  namespace: ml
  creationTimestamp: "2026-03-14T10:00:01Z"
  labels: {training.kubeflow.org/job-name: train, training.kubeflow.org/replica-type: worker, training.kubeflow.org/replica-index: "%d"}
  ownerReferences: [{apiVersion: kubeflow.org/v1, kind: PyTorchJob, name: train, uid: u1, controller: true}]
spec:
  nodeName: gpu-%d
  containers: [{name: pytorch, image: "registry.local/ml/trainer:v2"}]
status:
%s`, i, i, i, status)
}

const imagePullBackOff = `  phase: Pending
  startTime: "2026-03-14T10:00:02Z"
  conditions: [{type: PodScheduled, status: "True", lastTransitionTime: "2026-03-14T10:00:02Z"}]
  containerStatuses:
  - name: pytorch
    image: registry.local/ml/trainer:v2
    imageID: ""
    ready: false
    restartCount: 0
    state: {waiting: {reason: ImagePullBackOff, message: 'Back-off pulling image "registry.local/ml/trainer:v2"'}}
`

// stuckImagePull is a PyTorchJob still Created whose two workers wait in ImagePullBackOff:
// the registry answers the pulls with a server error (a pull that may work on a retry).
func stuckImagePull() map[string]string {
	files := map[string]string{"resources/kubeflow.org/PyTorchJob/ml/train.yaml": pytorchJobYAML(2, "Created", "2026-03-14T10:00:00Z")}
	for i := range 2 {
		pod := fmt.Sprintf("train-worker-%d", i)
		files["resources/core/Pod/ml/"+pod+".yaml"] = workerPodYAML(i, imagePullBackOff)
		files[fmt.Sprintf("resources/core/Event/ml/%s.a.yaml", pod)] = eventCountYAML(pod+".a", pod, "Failed",
			`Failed to pull image "registry.local/ml/trainer:v2": rpc error: code = Unknown desc = failed to pull and unpack image "registry.local/ml/trainer:v2": unexpected status from GET request to https://registry.local/v2/ml/trainer/manifests/v2: 503 Service Unavailable`, 8)
		files[fmt.Sprintf("resources/core/Event/ml/%s.b.yaml", pod)] = eventCountYAML(pod+".b", pod, "BackOff", `Back-off pulling image "registry.local/ml/trainer:v2"`, 104)
	}
	return files
}

// eventCountYAML is a Warning event about a pod seen count times from 10:00:05 on.
func eventCountYAML(name, pod, reason, message string, count int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Event\nmetadata: {name: %s, namespace: ml}\ninvolvedObject: {kind: Pod, name: %s, namespace: ml}\n"+
		"type: Warning\nreason: %s\nmessage: %q\ncount: %d\nfirstTimestamp: \"2026-03-14T10:00:05Z\"\nlastTimestamp: \"2026-03-14T10:02:50Z\"\n", name, pod, reason, message, count)
}

func findingsOf(res *Result) string {
	var all []string
	for _, f := range res.Findings {
		all = append(all, fmt.Sprintf("%s %s %s %s %s", f.ID, f.RuleID, f.Severity, f.Pod, f.SecondaryOf))
	}
	return strings.Join(all, "; ")
}

// TestStuckJobVerdict: a job that has not failed but waits for something that does not come
// is unhealthy once the wait has lasted past the threshold, and unknown before it.
func TestStuckJobVerdict(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 10, 0, 1, 0, time.UTC)
	res := analyzeBundle(t, stuckImagePull(), t0.Add(25*time.Minute), Options{})
	t.Log(findingsOf(res))
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryImagePull, res.RootCause.Category)
	require.Contains(t, res.VerdictReason, "pending for 25 min")

	res = analyzeBundle(t, stuckImagePull(), t0.Add(3*time.Minute), Options{})
	require.Equal(t, VerdictUnknown, res.Verdict, res.VerdictReason)
	require.Nil(t, res.RootCause)
	require.Contains(t, res.VerdictReason, "pending for 3 min, below the 5 min threshold")
}

// batchJobYAML is a batch Job of namespace ml that completed at 11:00, and its one pod.
func batchJobFiles(log string) map[string]string {
	return map[string]string{
		"resources/batch/Job/ml/sft.yaml": `apiVersion: batch/v1
kind: Job
metadata: {name: sft, namespace: ml, uid: j1, creationTimestamp: "2026-03-14T10:00:00Z"}
spec: {completions: 1, template: {spec: {containers: [{name: train, image: trainer:v1}], restartPolicy: Never}}}
status:
  succeeded: 1
  conditions:
  - {type: Complete, status: "True", lastTransitionTime: "2026-03-14T11:00:00Z"}
`,
		"resources/core/Pod/ml/sft-x1.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: sft-x1
  namespace: ml
  creationTimestamp: "2026-03-14T10:00:00Z"
  labels: {job-name: sft, batch.kubernetes.io/job-name: sft}
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: sft, uid: j1, controller: true}]
spec: {nodeName: n1, containers: [{name: train, image: trainer:v1}]}
status:
  phase: Succeeded
  startTime: "2026-03-14T10:00:01Z"
  containerStatuses:
  - name: train
    image: trainer:v1
    imageID: trainer@sha256:1
    ready: false
    restartCount: 0
    state: {terminated: {exitCode: 0, reason: Completed, startedAt: "2026-03-14T10:00:02Z", finishedAt: "2026-03-14T10:59:59Z"}}
`,
		"logs/ml/sft-x1/train.log": log,
	}
}

// trainerLog is a Hugging Face Trainer's log of steps 10..400, one dict every 10 steps, each
// line written by bad(step) when it returns a dict body.
func trainerLog(line func(step int) string) string {
	var b strings.Builder
	t := time.Date(2026, 3, 14, 10, 1, 0, 0, time.UTC)
	for step := 10; step <= 400; step += 10 {
		fmt.Fprintf(&b, "%s %s\n", t.Add(time.Duration(step)*6*time.Second).Format(time.RFC3339Nano), line(step))
	}
	return b.String()
}

// TestSucceededButBroken: a job that succeeded is unhealthy when its training output ended
// broken, and healthy, saying where it recovered, when the bad values came back good.
func TestSucceededButBroken(t *testing.T) {
	t.Run("grad norm nan and loss 0.0 for the second half", func(t *testing.T) {
		res := analyzeBundle(t, batchJobFiles(trainerLog(func(step int) string {
			if step > 200 {
				return fmt.Sprintf("{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 1.2e-05, 'epoch': %.2f}", float64(step)/400)
			}
			return fmt.Sprintf("{'loss': %.4f, 'grad_norm': 1.83, 'learning_rate': 1.2e-05, 'epoch': %.2f}", 2.0-float64(step)/400, float64(step)/400)
		})), time.Date(2026, 3, 14, 11, 5, 0, 0, time.UTC), Options{})
		t.Log(findingsOf(res))
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryNaNLoss, res.RootCause.Category)
		require.Contains(t, res.VerdictReason, "the job succeeded but")
		require.Contains(t, res.VerdictReason, "on 20 logging steps in a row, from 10:22:00 to the end of its log")
		require.NotContains(t, res.VerdictReason, "recovered")
	})
	t.Run("one fp16 overflow skip, then finite losses", func(t *testing.T) {
		res := analyzeBundle(t, batchJobFiles(trainerLog(func(step int) string {
			if step == 120 {
				return "[INFO] [stage_1_and_2.py:1769:step] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768"
			}
			return fmt.Sprintf("[INFO] [logging.py:96:log_dist] [Rank 0] step=%d, skipped=%d, lr=[1.2e-05], mom=[(0.9, 0.999)]", step, min(1, step/130))
		})), time.Date(2026, 3, 14, 11, 5, 0, 0, time.UTC), Options{})
		t.Log(findingsOf(res))
		require.Equal(t, VerdictHealthy, res.Verdict, res.VerdictReason)
		require.Contains(t, res.VerdictReason, "from step 110, recovered at step 130")
	})
	t.Run("grad norm nan for a while, then finite to the end", func(t *testing.T) {
		res := analyzeBundle(t, batchJobFiles(trainerLog(func(step int) string {
			if step >= 100 && step < 150 {
				return fmt.Sprintf("{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 1.2e-05, 'epoch': %.2f}", float64(step)/400)
			}
			return fmt.Sprintf("{'loss': %.4f, 'grad_norm': 1.83, 'learning_rate': 1.2e-05, 'epoch': %.2f}", 2.0-float64(step)/400, float64(step)/400)
		})), time.Date(2026, 3, 14, 11, 5, 0, 0, time.UTC), Options{})
		t.Log(findingsOf(res))
		require.Equal(t, VerdictHealthy, res.Verdict, res.VerdictReason)
		// The Trainer's dicts carry no step: their times say where.
		require.Contains(t, res.VerdictReason, "on 5 logging steps in a row")
		require.Contains(t, res.VerdictReason, "from 10:11:00, recovered at 10:16:00")
	})
}

// progressLines writes step lines from step from to step to (every 10) between t0 and t1.
func progressLines(b *strings.Builder, from, to int, t0, t1 time.Time) {
	n := (to - from) / 10
	for i := 0; i <= n; i++ {
		at := t0.Add(time.Duration(i) * t1.Sub(t0) / time.Duration(max(n, 1)))
		fmt.Fprintf(b, "%s step %d | loss %.4f | lr 2.0e-04\n", at.Format(time.RFC3339Nano), from+10*i, 2.0-float64(from+10*i)/10000)
	}
}

// restartedThenUploadDenied: worker-1 hit an NCCL error at 10:02 and its container
// restarted; both workers resumed from the checkpoint of step 4,800 and trained for 34
// minutes; then worker-0's checkpoint upload was denied and the job failed.
func restartedThenUploadDenied() map[string]string {
	at := func(h, m, s int) time.Time { return time.Date(2026, 3, 14, h, m, s, 0, time.UTC) }
	ts := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	var prev1, cur1, w0 strings.Builder
	progressLines(&prev1, 4500, 4900, at(9, 30, 0), at(10, 2, 0))
	fmt.Fprintf(&prev1, "%s torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n", ts(at(10, 2, 11)))
	fmt.Fprintf(&cur1, "%s resuming from checkpoint /ckpt/step-4800\n", ts(at(10, 3, 0)))
	progressLines(&cur1, 4800, 6000, at(10, 3, 30), at(10, 37, 0))
	progressLines(&w0, 4500, 4900, at(9, 30, 0), at(10, 2, 0))
	fmt.Fprintf(&w0, "%s resuming from checkpoint /ckpt/step-4800\n", ts(at(10, 3, 0)))
	progressLines(&w0, 4800, 6000, at(10, 3, 30), at(10, 37, 0))
	fmt.Fprintf(&w0, "%s Traceback (most recent call last):\n", ts(at(10, 37, 20)))
	fmt.Fprintf(&w0, "%s   File \"/workspace/train.py\", line 301, in save_checkpoint\n", ts(at(10, 37, 20)))
	fmt.Fprintf(&w0, "%s botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the PutObject operation: Access Denied\n", ts(at(10, 37, 20)))
	running := `  phase: Running
  startTime: "2026-03-14T09:29:00Z"
  containerStatuses:
  - name: pytorch
    image: registry.local/ml/trainer:v2
    imageID: registry.local/ml/trainer@sha256:1
    ready: true
    restartCount: 1
    state: {running: {startedAt: "2026-03-14T10:02:40Z"}}
    lastState: {terminated: {exitCode: 1, reason: Error, startedAt: "2026-03-14T09:29:10Z", finishedAt: "2026-03-14T10:02:30Z"}}
`
	failed := `  phase: Failed
  startTime: "2026-03-14T09:29:00Z"
  containerStatuses:
  - name: pytorch
    image: registry.local/ml/trainer:v2
    imageID: registry.local/ml/trainer@sha256:1
    ready: false
    restartCount: 0
    state: {terminated: {exitCode: 1, reason: Error, startedAt: "2026-03-14T09:29:10Z", finishedAt: "2026-03-14T10:37:25Z"}}
`
	return map[string]string{
		"resources/kubeflow.org/PyTorchJob/ml/train.yaml": pytorchJobYAML(2, "Failed", "2026-03-14T10:37:30Z"),
		"resources/core/Pod/ml/train-worker-0.yaml":       workerPodYAML(0, failed),
		"resources/core/Pod/ml/train-worker-1.yaml":       workerPodYAML(1, running),
		"logs/ml/train-worker-0/pytorch.log":              w0.String(),
		"logs/ml/train-worker-1/pytorch.previous.log":     prev1.String(),
		"logs/ml/train-worker-1/pytorch.log":              cur1.String(),
	}
}

// TestRecoveredErrorIsNotTheRoot: an error training went on past (a restart, then 34 minutes
// of training from the checkpoint) is reported as recovered, and the failure that ended the
// job is the root cause.
func TestRecoveredErrorIsNotTheRoot(t *testing.T) {
	res := analyzeBundle(t, restartedThenUploadDenied(), time.Date(2026, 3, 14, 10, 40, 0, 0, time.UTC), Options{})
	t.Log(findingsOf(res))
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	// An object store's AccessDenied is access refused (permission-denied), not a failing store.
	require.Equal(t, CategoryPermissionDenied, res.RootCause.Category, res.VerdictReason)
	require.Equal(t, "train-worker-0", res.RootCause.Pod)
	require.Contains(t, res.VerdictReason, "; recovered from train-worker-1: NCCL")
	require.Contains(t, res.VerdictReason, "at 10:02:11, restarted, resumed at step 4,800")
	var nccl *Finding
	for _, f := range res.Findings {
		if f.Category == CategoryCollectiveError {
			nccl = f
		}
	}
	require.NotNil(t, nccl)
	require.Equal(t, SeverityWarning, nccl.Severity)
	require.Contains(t, nccl.Title, "(recovered: restarted, resumed at step 4,800)")

	// The same error with no training after it is still the root cause.
	files := restartedThenUploadDenied()
	files["logs/ml/train-worker-1/pytorch.log"] = "2026-03-14T10:03:00Z resuming from checkpoint /ckpt/step-4800\n"
	res = analyzeBundle(t, files, time.Date(2026, 3, 14, 10, 40, 0, 0, time.UTC), Options{})
	require.Equal(t, CategoryCollectiveError, res.RootCause.Category, res.VerdictReason)
}

// sampleFiles reads a sample bundle's files (manifest and expected answer left out).
func sampleFiles(t *testing.T, name string) map[string]string {
	t.Helper()
	files := map[string]string{}
	dir := filepath.Join("..", "samples", name)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if rel == "manifest.json" || rel == "expected.json" {
			return nil
		}
		data, err := os.ReadFile(path)
		files[rel] = string(data)
		return err
	})
	require.NoError(t, err)
	return files
}

// TestMPIJobLauncherDiskFull: the launcher's log carries every rank's output; a rank's
// [Errno 28] there is the root cause, not the MPIJob's Failed condition.
func TestMPIJobLauncherDiskFull(t *testing.T) {
	files := sampleFiles(t, "mpijob-launcher-failed")
	const launcher = "logs/ml/mpi-train-launcher/mpi-launcher.log"
	lines := strings.SplitAfter(files[launcher], "\n")
	require.Greater(t, len(lines), 4)
	// The sample ends with mpirun's report of rank 2's SIGKILL; here rank 0 fails writing.
	files[launcher] = strings.Join(lines[:len(lines)-4], "") +
		"2026-03-14T20:19:08.1Z [1,0]<stderr>:Traceback (most recent call last):\n" +
		"2026-03-14T20:19:08.1Z [1,0]<stderr>:  File \"/workspace/train.py\", line 212, in <module>\n" +
		"2026-03-14T20:19:08.1Z [1,0]<stderr>:    torch.save(state, ckpt_path)\n" +
		"2026-03-14T20:19:08.1Z [1,0]<stderr>:OSError: [Errno 28] No space left on device\n" +
		"2026-03-14T20:19:08.9Z --------------------------------------------------------------------------\n" +
		"2026-03-14T20:19:08.9Z Primary job  terminated normally, but 1 process returned\n" +
		"2026-03-14T20:19:08.9Z a non-zero exit code. Per user-direction, the job has been aborted.\n" +
		"2026-03-14T20:19:08.9Z --------------------------------------------------------------------------\n"
	const pod = "resources/core/Pod/ml/mpi-train-worker-1.yaml"
	files[pod] = strings.ReplaceAll(strings.ReplaceAll(files[pod], "OOMKilled", "Error"), "exitCode: 137", "exitCode: 143")
	const lpod = "resources/core/Pod/ml/mpi-train-launcher.yaml"
	files[lpod] = strings.ReplaceAll(files[lpod], "exitCode: 137", "exitCode: 1")
	res := analyzeBundle(t, files, time.Date(2026, 3, 14, 20, 30, 0, 0, time.UTC), Options{})
	t.Log(findingsOf(res))
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryDiskFull, res.RootCause.Category, res.VerdictReason)
	require.Equal(t, "mpi-train-launcher", res.RootCause.Pod)
}

// describeEvents is the Events table of a pasted `kubectl describe pod`, its ages given.
func describeEvents(failedAge, backOffAge string) string {
	return "Events:\n" +
		"  Type     Reason     Age                  From               Message\n" +
		"  ----     ------     ----                 ----               -------\n" +
		"  Normal   Scheduled  " + failedAge + "  default-scheduler  Successfully assigned ml/train-worker-0 to gpu-1\n" +
		"  Warning  Failed     " + failedAge + "  kubelet  Failed to pull image \"registry.local/ml/trainer:v2\": rpc error: code = Unknown desc = failed to pull and unpack image \"registry.local/ml/trainer:v2\": unexpected status from GET request: 503 Service Unavailable\n" +
		"  Normal   BackOff    " + backOffAge + "  kubelet  Back-off pulling image \"registry.local/ml/trainer:v2\"\n"
}

// TestStuckFromPrintedAges: without a collection time, the ages a pasted describe prints
// measure the wait.
func TestStuckFromPrintedAges(t *testing.T) {
	res := analyzeBundle(t, map[string]string{"logs/ml/x/c.log": describeEvents("24m (x16 over 25m)", "3s (x208 over 25m)")}, time.Time{}, Options{})
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryImagePull, res.RootCause.Category)
	require.Contains(t, res.VerdictReason, "pending for 25 min")

	// A paste has no "now": a short age is a lower bound of a wait someone found worth
	// pasting, and the finding stands, saying so.
	res = analyzeBundle(t, map[string]string{"logs/ml/x/c.log": describeEvents("2m (x4 over 3m)", "5s (x12 over 3m)")}, time.Time{}, Options{})
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Contains(t, res.VerdictReason, "pending for at least 3 min when the text was taken")

	// The same bundle collected 3 minutes after the pod was created: below the threshold, and
	// with a user's threshold of 2 minutes past it.
	t0 := time.Date(2026, 3, 14, 10, 0, 1, 0, time.UTC)
	res = analyzeBundle(t, stuckImagePull(), t0.Add(3*time.Minute), Options{StuckAfter: 2 * time.Minute})
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Contains(t, res.VerdictReason, "pending for 3 min")
}

func TestKubeAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"25m": 25 * time.Minute, "3m12s": 3*time.Minute + 12*time.Second, "2d3h": 51 * time.Hour, "40s": 40 * time.Second} {
		got, ok := kubeAge(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "m", "x208", "v2", "3s5m", "25", "12ms", "sm"} {
		_, ok := kubeAge(in)
		require.False(t, ok, in)
	}
}
