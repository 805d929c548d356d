package analyze

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/parse"
)

// analyzeBundle analyzes a bundle of the given files collected at collectedAt (zero: no
// manifest), with opts' thresholds.
func analyzeBundle(t *testing.T, files map[string]string, collectedAt time.Time, opts Options) *Result {
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
		b.Manifest = &bundle.Manifest{FormatVersion: 1, CollectedAt: &collectedAt}
	}
	m, err := parse.Load(b)
	require.NoError(t, err)
	rules, err := DefaultRules()
	require.NoError(t, err)
	rs, err := NewRuleSet(rules)
	require.NoError(t, err)
	opts.Rules = rs
	res, err := Run(t.Context(), m, opts)
	require.NoError(t, err)
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
