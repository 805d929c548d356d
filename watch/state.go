package watch

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// phase is where a live job stands, as far as watch cares.
type phase int

const (
	phasePending   phase = iota // created, nothing running yet
	phaseRunning                // running or restarting
	phaseSuspended              // suspended (queued by Kueue, paused): never "stuck pending"
	phaseSucceeded
	phaseFailed
)

func (p phase) String() string {
	return [...]string{"Pending", "Running", "Suspended", "Succeeded", "Failed"}[p]
}

// state is a job's phase and when it entered it (zero when the object does not say).
type state struct {
	phase phase
	since time.Time
}

// assess reads a live job's phase from its status, across the kinds watch watches:
// conditions of the Kubeflow v1 kinds, MPIJob v2beta1, TrainJob, JobSet and batch Job
// (Failed, Succeeded/Complete/Completed, Suspended, Running/Restarting), T9k's status.phase,
// Volcano's status.state.phase and RayJob's status.jobStatus.
func assess(u *unstructured.Unstructured) state {
	st, _ := u.Object["status"].(map[string]any)
	created := u.GetCreationTimestamp().Time.UTC()
	if s, ok := phaseField(st); ok {
		if s.since.IsZero() {
			s.since = condTime(st, s.phase)
		}
		return s
	}
	var running bool
	var runningSince time.Time
	var out *state
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm == nil || str(cm, "status") != "True" {
			continue
		}
		at := parseTime(str(cm, "lastTransitionTime"))
		switch strings.ToLower(str(cm, "type")) {
		case "failed":
			return state{phaseFailed, at}
		case "succeeded", "complete", "completed":
			out = &state{phaseSucceeded, at}
		case "suspended":
			if out == nil {
				out = &state{phaseSuspended, at}
			}
		case "running", "restarting":
			running, runningSince = true, at
		}
	}
	if out != nil {
		return *out
	}
	if running {
		return state{phaseRunning, runningSince}
	}
	if positive(st["active"]) { // batch Job
		return state{phaseRunning, parseTime(str(st, "startTime"))}
	}
	return state{phasePending, created}
}

// condTime finds when a job reached a phase its status states in a field (T9k), from its
// conditions or its completion time; zero when the status does not say.
func condTime(st map[string]any, p phase) time.Time {
	types := map[phase][]string{
		phaseFailed: {"failed"}, phaseSucceeded: {"completed", "succeeded", "complete"},
		phaseRunning: {"running"}, phaseSuspended: {"suspended", "paused"},
	}[p]
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm != nil && str(cm, "status") == "True" && slices.Contains(types, strings.ToLower(str(cm, "type"))) {
			if t := parseTime(str(cm, "lastTransitionTime")); !t.IsZero() {
				return t
			}
		}
	}
	if p == phaseFailed || p == phaseSucceeded {
		return parseTime(str(st, "completionTime"))
	}
	return time.Time{}
}

// phaseField reads the kinds that say their phase in one field rather than in conditions.
func phaseField(st map[string]any) (state, bool) {
	if st == nil {
		return state{}, false
	}
	at := parseTime(str(st, "lastTransitionTime"))
	// T9k (batch.tensorstack.dev): status.phase.
	if p := str(st, "phase"); p != "" {
		switch p {
		case "Failed":
			return state{phaseFailed, at}, true
		case "Succeeded":
			return state{phaseSucceeded, at}, true
		case "Running", "Resuming":
			return state{phaseRunning, at}, true
		case "Paused":
			return state{phaseSuspended, at}, true
		case "Pending":
			return state{phasePending, at}, true
		}
	}
	// Volcano (batch.volcano.sh): status.state.phase.
	if vs, ok := st["state"].(map[string]any); ok {
		at := parseTime(str(vs, "lastTransitionTime"))
		switch str(vs, "phase") {
		case "Failed", "Aborted", "Terminated":
			return state{phaseFailed, at}, true
		case "Completed":
			return state{phaseSucceeded, at}, true
		case "Running", "Restarting", "Completing", "Aborting", "Terminating":
			return state{phaseRunning, at}, true
		case "Pending":
			return state{phasePending, at}, true
		}
	}
	// Ray (ray.io RayJob): status.jobStatus, and jobDeploymentStatus for a cluster that never came up.
	if js := str(st, "jobStatus"); js != "" || str(st, "jobDeploymentStatus") != "" {
		at := parseTime(str(st, "endTime"))
		switch {
		case js == "FAILED" || str(st, "jobDeploymentStatus") == "Failed":
			return state{phaseFailed, at}, true
		case js == "SUCCEEDED":
			return state{phaseSucceeded, at}, true
		case js == "STOPPED":
			return state{phaseFailed, at}, true
		case js == "RUNNING":
			return state{phaseRunning, parseTime(str(st, "startTime"))}, true
		}
	}
	return state{}, false
}

// positive reports whether a JSON number (int64 from the API, float64 from a decoder) is > 0.
func positive(v any) bool {
	switch n := v.(type) {
	case int64:
		return n > 0
	case float64:
		return n > 0
	}
	return false
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// podFailed reports whether a pod ended in failure, and when its last container stopped.
func podFailed(p *corev1.Pod) (bool, time.Time) {
	if p.Status.Phase != corev1.PodFailed {
		return false, time.Time{}
	}
	return true, podEnded(p)
}

// podExitedNonZero reports whether a container of the pod ended with a non-zero exit code
// (now or before its last restart): the sign of a failure under a job that succeeded.
func podExitedNonZero(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if t != nil && t.ExitCode != 0 {
					return true
				}
			}
		}
	}
	return false
}

// podRan reports whether any container of the pod ever started.
func podRan(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// podEnded is when the pod's last container stopped; zero when none did.
func podEnded(p *corev1.Pod) time.Time {
	var end time.Time
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if t := cs.State.Terminated; t != nil && t.FinishedAt.Time.After(end) {
				end = t.FinishedAt.Time
			}
		}
	}
	return end.UTC()
}

// Triggers: why a job is collected. They are recorded on the job (AnnotationTrigger).
const (
	TriggerFailed    = "failed"     // the job failed
	TriggerSucceeded = "succeeded"  // the job succeeded, but a pod of it failed (or --on-success=all)
	TriggerPodFailed = "pod-failed" // a pod failed while the job still runs: its evidence may go soon
	TriggerPending   = "pending"    // nothing of the job ran for --pending-after
)

// final reports whether a collect for this trigger is the job's last: only a job collected
// while pending (or hung) is collected again when it ends.
func final(trigger string) bool {
	return trigger != "" && trigger != TriggerPending && trigger != TriggerHang
}

// On success: which succeeded jobs are collected.
const (
	OnSuccessNone       = "none"
	OnSuccessFailedPods = "failed-pods"
	OnSuccessAll        = "all"
)

// policy is what decides whether a job is collected.
type policy struct {
	PendingAfter  time.Duration
	HoldPods      bool
	OnSuccess     string
	SkipOlderThan time.Duration
}

// trigger says why and as of when a job is collected.
type trigger struct {
	Reason string
	// At is when the reason arose (the Failed condition's time, the first failed pod's end,
	// creation + --pending-after); it names the bundle, so the same failure gives the same
	// name after a restart. Zero when the job does not say.
	At time.Time
	// Pod is the failed pod of a pod-failed trigger.
	Pod string
}

// decision is what to do with a job now.
type decision struct {
	trigger *trigger
	// recheck, when positive, is when to look at the job again (a pending job not yet due).
	recheck time.Duration
	// tooOld is set when a trigger was found but arose before --skip-older-than.
	tooOld bool
	// done: the job needs nothing more from watch (its pods may be let go).
	done bool
}

// decide looks at a job, its pods and what was already collected (prior: the trigger of the
// last collect, from the job's annotation) and says whether to collect it now.
func decide(job *unstructured.Unstructured, pods []*corev1.Pod, prior string, now time.Time, p policy) decision {
	if final(prior) {
		return decision{done: true}
	}
	st := assess(job)
	var t *trigger
	switch st.phase {
	case phaseFailed:
		t = &trigger{Reason: TriggerFailed, At: st.since}
	case phaseSucceeded:
		switch p.OnSuccess {
		case OnSuccessAll:
			t = &trigger{Reason: TriggerSucceeded, At: st.since}
		case OnSuccessFailedPods:
			if launcherHides(job) {
				t = &trigger{Reason: TriggerSucceeded, At: st.since}
			}
			for _, pod := range pods {
				if podExitedNonZero(pod) {
					t = &trigger{Reason: TriggerSucceeded, At: st.since}
					break
				}
			}
		}
		if t == nil {
			return decision{done: true}
		}
	case phaseSuspended:
		return decision{}
	default:
		t = firstFailedPod(pods, p.HoldPods)
		if t == nil && prior == "" && p.PendingAfter > 0 && st.phase == phasePending && !anyRan(pods) && !st.since.IsZero() {
			due := pendingSince(st.since, pods).Add(p.PendingAfter)
			if now.Before(due) {
				return decision{recheck: due.Sub(now)}
			}
			t = &trigger{Reason: TriggerPending, At: due}
		}
	}
	if t == nil {
		return decision{}
	}
	if p.SkipOlderThan > 0 && !t.At.IsZero() && now.Sub(t.At) > p.SkipOlderThan {
		return decision{tooOld: true, done: true}
	}
	return decision{trigger: t}
}

// launcherHides reports whether a job's success says nothing of its training: a T9k job
// with a launcher (ColossalAIJob) succeeds when its launcher exits 0, even when training
// failed and the workers are already cleaned up. Only the launcher's log can tell.
func launcherHides(u *unstructured.Unstructured) bool {
	if !strings.HasPrefix(u.GetAPIVersion(), "batch.tensorstack.dev/") {
		return false
	}
	spec, _ := u.Object["spec"].(map[string]any)
	_, launcher := spec["launcher"]
	return u.GetKind() == "ColossalAIJob" || launcher
}

// firstFailedPod is the pod-failed trigger of the earliest failed pod. With --hold-pods the
// pods are kept until the job ends, so only a failed pod already being deleted (a restart
// policy replacing it) is collected early.
func firstFailedPod(pods []*corev1.Pod, hold bool) *trigger {
	var t *trigger
	for _, pod := range pods {
		failed, ended := podFailed(pod)
		if !failed || (hold && pod.DeletionTimestamp == nil) {
			continue
		}
		if t == nil || (!ended.IsZero() && (t.At.IsZero() || ended.Before(t.At))) {
			t = &trigger{Reason: TriggerPodFailed, At: ended, Pod: pod.Name}
		}
	}
	return t
}

// pendingSince is when a pending job's wait is measured from: its pending condition, or the
// creation of its last pod when that came later. The diagnosis measures the wait from the
// creation of the pod it blames, so a job collected at creation + --pending-after is judged
// past the threshold, not a second short of it.
func pendingSince(since time.Time, pods []*corev1.Pod) time.Time {
	for _, p := range pods {
		if c := p.CreationTimestamp.Time; c.After(since) {
			since = c
		}
	}
	return since
}

func anyRan(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if podRan(p) {
			return true
		}
	}
	return false
}
