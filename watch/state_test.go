package watch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(s), &u.Object))
	return u
}

var (
	t0 = time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	t1 = time.Date(2026, 3, 14, 10, 2, 15, 0, time.UTC)
)

func TestAssess(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       state
	}{
		{"kubeflow failed", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: a, creationTimestamp: "2026-03-14T10:00:00Z"}
status:
  conditions:
  - {type: Created, status: "True", lastTransitionTime: "2026-03-14T10:00:00Z"}
  - {type: Running, status: "False", lastTransitionTime: "2026-03-14T10:02:15Z"}
  - {type: Failed, status: "True", lastTransitionTime: "2026-03-14T10:02:15Z"}`, state{phaseFailed, t1}},
		{"kubeflow running", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: a, creationTimestamp: "2026-03-14T10:00:00Z"}
status: {conditions: [{type: Created, status: "True"}, {type: Running, status: "True", lastTransitionTime: "2026-03-14T10:02:15Z"}]}`, state{phaseRunning, t1}},
		{"kubeflow created only: pending since creation", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: a, creationTimestamp: "2026-03-14T10:00:00Z"}
status: {conditions: [{type: Created, status: "True", lastTransitionTime: "2026-03-14T10:00:00Z"}]}`, state{phasePending, t0}},
		{"no status at all", `
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: a, creationTimestamp: "2026-03-14T10:00:00Z"}`, state{phasePending, t0}},
		{"suspended by a queue", `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: a, creationTimestamp: "2026-03-14T10:00:00Z"}
status: {conditions: [{type: Suspended, status: "True", lastTransitionTime: "2026-03-14T10:02:15Z"}]}`, state{phaseSuspended, t1}},
		{"TrainJob complete", `
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: a}
status: {conditions: [{type: Complete, status: "True", lastTransitionTime: "2026-03-14T10:02:15Z"}]}`, state{phaseSucceeded, t1}},
		{"JobSet completed after a suspension", `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: a}
status: {conditions: [{type: Suspended, status: "False"}, {type: Completed, status: "True", lastTransitionTime: "2026-03-14T10:02:15Z"}]}`, state{phaseSucceeded, t1}},
		{"batch Job active", `
apiVersion: batch/v1
kind: Job
metadata: {name: a}
status: {active: 2, startTime: "2026-03-14T10:02:15Z"}`, state{phaseRunning, t1}},
		{"batch Job failed", `
apiVersion: batch/v1
kind: Job
metadata: {name: a}
status: {failed: 1, conditions: [{type: FailureTarget, status: "True"}, {type: Failed, status: "True", lastTransitionTime: "2026-03-14T10:02:15Z"}]}`, state{phaseFailed, t1}},
		{"T9k phase", `
apiVersion: batch.tensorstack.dev/v1beta1
kind: ColossalAIJob
metadata: {name: a}
status: {phase: Succeeded, conditions: [{type: Running, status: "False"}, {type: Completed, status: "True", lastTransitionTime: "2026-03-14T10:02:15Z"}]}`, state{phaseSucceeded, t1}},
		{"T9k phase, no time", `
apiVersion: batch.tensorstack.dev/v1beta1
kind: ColossalAIJob
metadata: {name: a}
status: {phase: Failed}`, state{phaseFailed, time.Time{}}},
		{"Volcano aborted", `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: a}
status: {state: {phase: Aborted, lastTransitionTime: "2026-03-14T10:02:15Z"}}`, state{phaseFailed, t1}},
		{"RayJob failed", `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: a}
status: {jobStatus: FAILED, jobDeploymentStatus: Complete, endTime: "2026-03-14T10:02:15Z"}`, state{phaseFailed, t1}},
		{"RayJob whose cluster never came up", `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: a}
status: {jobDeploymentStatus: Failed}`, state{phaseFailed, time.Time{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := assess(obj(t, tc.yaml))
			require.Equal(t, tc.want.phase.String(), got.phase.String())
			require.True(t, tc.want.since.Equal(got.since), "since %v, want %v", got.since, tc.want.since)
		})
	}
}

func pod(name string, phase corev1.PodPhase, exit int32, ended time.Time) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
	cs := corev1.ContainerStatus{Name: "pytorch"}
	switch {
	case phase == corev1.PodRunning:
		cs.State.Running = &corev1.ContainerStateRunning{}
		if exit != 0 {
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: exit}
		}
	case phase != corev1.PodPending:
		cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: exit, FinishedAt: metav1.NewTime(ended)}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return p
}

func created(p *corev1.Pod, at time.Time) *corev1.Pod {
	p.CreationTimestamp = metav1.NewTime(at)
	return p
}

func deleting(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{Time: t1}
	return p
}

func TestDecide(t *testing.T) {
	failed := `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: a, creationTimestamp: "2026-03-14T10:00:00Z"}
status: {conditions: [{type: Failed, status: "True", lastTransitionTime: "2026-03-14T10:02:15Z"}]}`
	succeeded := `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: a, creationTimestamp: "2026-03-14T10:00:00Z"}
status: {conditions: [{type: Succeeded, status: "True", lastTransitionTime: "2026-03-14T10:02:15Z"}]}`
	colossal := `
apiVersion: batch.tensorstack.dev/v1beta1
kind: ColossalAIJob
metadata: {name: a, creationTimestamp: "2026-03-14T10:00:00Z"}
spec: {worker: {replicas: 2}}
status: {phase: Succeeded, lastTransitionTime: "2026-03-14T10:02:15Z"}`
	running := `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: a, creationTimestamp: "2026-03-14T10:00:00Z"}
status: {conditions: [{type: Running, status: "True", lastTransitionTime: "2026-03-14T10:00:00Z"}]}`
	pending := `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: a, creationTimestamp: "2026-03-14T10:00:00Z"}`
	now := t0.Add(2 * time.Hour)
	p := policy{PendingAfter: time.Hour, OnSuccess: OnSuccessFailedPods}
	hold := p
	hold.HoldPods = true
	early, late := t0.Add(5*time.Minute), t0.Add(9*time.Minute)

	for _, tc := range []struct {
		name  string
		job   string
		pods  []*corev1.Pod
		prior string
		pol   policy
		now   time.Time
		want  decision
	}{
		{"failed", failed, nil, "", p, now, decision{trigger: &trigger{Reason: TriggerFailed, At: t1}}},
		{"failed, already collected", failed, nil, TriggerFailed, p, now, decision{done: true}},
		{"failed after a pending collect", failed, nil, TriggerPending, p, now, decision{trigger: &trigger{Reason: TriggerFailed, At: t1}}},
		{"failed after a hang collect", failed, nil, TriggerHang, p, now, decision{trigger: &trigger{Reason: TriggerFailed, At: t1}}},
		{"running after a hang collect", running, []*corev1.Pod{pod("m", corev1.PodRunning, 0, late)}, TriggerHang, p, now, decision{}},
		{"failed after a pod-failed collect", failed, nil, TriggerPodFailed, p, now, decision{done: true}},
		{"failed too long ago", failed, nil, "", policy{SkipOlderThan: time.Hour}, now, decision{tooOld: true, done: true}},
		{"failed within --skip-older-than", failed, nil, "", policy{SkipOlderThan: 3 * time.Hour}, now, decision{trigger: &trigger{Reason: TriggerFailed, At: t1}}},
		{"succeeded while a worker failed", succeeded, []*corev1.Pod{pod("l", corev1.PodSucceeded, 0, late), pod("w", corev1.PodFailed, 1, late)}, "", p, now,
			decision{trigger: &trigger{Reason: TriggerSucceeded, At: t1}}},
		{"succeeded while a worker restarted after exit 137", succeeded, []*corev1.Pod{pod("w", corev1.PodRunning, 137, late)}, "", p, now,
			decision{trigger: &trigger{Reason: TriggerSucceeded, At: t1}}},
		{"succeeded cleanly", succeeded, []*corev1.Pod{pod("l", corev1.PodSucceeded, 0, late)}, "", p, now, decision{done: true}},
		{"a ColossalAIJob's success hides its training", colossal, []*corev1.Pod{pod("l", corev1.PodSucceeded, 0, late)}, "", p, now,
			decision{trigger: &trigger{Reason: TriggerSucceeded, At: t1}}},
		{"a ColossalAIJob, --on-success none", colossal, nil, "", policy{OnSuccess: OnSuccessNone}, now, decision{done: true}},
		{"succeeded, --on-success all", succeeded, nil, "", policy{OnSuccess: OnSuccessAll}, now, decision{trigger: &trigger{Reason: TriggerSucceeded, At: t1}}},
		{"succeeded with a failed pod, --on-success none", succeeded, []*corev1.Pod{pod("w", corev1.PodFailed, 1, late)}, "", policy{OnSuccess: OnSuccessNone}, now, decision{done: true}},
		{"running", running, []*corev1.Pod{pod("m", corev1.PodRunning, 0, late)}, "", p, now, decision{}},
		{"running, the first failed pod", running, []*corev1.Pod{pod("m", corev1.PodFailed, 1, late), pod("w", corev1.PodFailed, 1, early), pod("x", corev1.PodRunning, 0, late)}, "", p, now,
			decision{trigger: &trigger{Reason: TriggerPodFailed, At: early, Pod: "w"}}},
		{"running, a failed pod held", running, []*corev1.Pod{pod("w", corev1.PodFailed, 1, early)}, "", hold, now, decision{}},
		{"running, a failed pod held and being deleted", running, []*corev1.Pod{deleting(pod("w", corev1.PodFailed, 1, early))}, "", hold, now,
			decision{trigger: &trigger{Reason: TriggerPodFailed, At: early, Pod: "w"}}},
		{"pending, not yet due", pending, []*corev1.Pod{pod("w", corev1.PodPending, 0, late)}, "", p, t0.Add(20 * time.Minute), decision{recheck: 40 * time.Minute}},
		{"pending, due", pending, []*corev1.Pod{pod("w", corev1.PodPending, 0, late)}, "", p, now, decision{trigger: &trigger{Reason: TriggerPending, At: t0.Add(time.Hour)}}},
		{"pending, due from its last pod's creation", pending, []*corev1.Pod{pod("w", corev1.PodPending, 0, late), created(pod("m", corev1.PodPending, 0, late), t0.Add(2*time.Second))}, "", p, t0.Add(time.Hour + time.Second),
			decision{recheck: time.Second}},
		{"pending, due an hour after its last pod", pending, []*corev1.Pod{created(pod("m", corev1.PodPending, 0, late), t0.Add(2*time.Second))}, "", p, now,
			decision{trigger: &trigger{Reason: TriggerPending, At: t0.Add(time.Hour + 2*time.Second)}}},
		{"pending, collected once", pending, nil, TriggerPending, p, now, decision{}},
		{"no Running condition, but a pod runs", pending, []*corev1.Pod{pod("w", corev1.PodRunning, 0, late)}, "", p, now, decision{}},
		{"pending, --pending-after 0", pending, nil, "", policy{}, now, decision{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, decide(obj(t, tc.job), tc.pods, tc.prior, tc.now, tc.pol))
		})
	}
}
