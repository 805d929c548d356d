package parse

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Phase is a job's state, normalised across kinds.
type Phase string

// The phases coroner reports. Kinds map their own conditions and phases onto these.
const (
	PhaseCreated    Phase = "Created"
	PhasePending    Phase = "Pending"
	PhaseRunning    Phase = "Running"
	PhaseRestarting Phase = "Restarting"
	PhaseSucceeded  Phase = "Succeeded"
	PhaseFailed     Phase = "Failed"
	PhaseSuspended  Phase = "Suspended"
	PhaseUnknown    Phase = "Unknown"
)

// Condition is a job condition, whatever kind it came from.
type Condition struct {
	Type    string
	Status  string
	Reason  string
	Message string
	Time    time.Time
}

// Replica is one role of a job (Master, Worker, Launcher, node, dataset-initializer...).
type Replica struct {
	Role     string
	Expected int // -1 when the spec does not say
	Created  int
	Pending  int
	Running  int
	// Succeeded and Failed count pods, or come from the job's status when its pods are gone.
	Succeeded int
	Failed    int
	// FromStatus is true when the counts come from the job's status because the pods were not
	// collected (deleted by a cleanup policy, for example).
	FromStatus bool
	Pods       []*corev1.Pod
}

// RuntimeRef is the runtime a Kubeflow Trainer TrainJob refers to.
type RuntimeRef struct {
	Kind   string
	Name   string
	Object *unstructured.Unstructured // nil when the bundle does not hold it
	// DeprecatedBy is what marks the runtime deprecated ("label key: value"), or "".
	DeprecatedBy string
}

// Family is the family of job kinds one adapter reads, and what analysis must know about
// it: analysis reads these quirks, never the family's name.
type Family struct {
	// Name is "kubeflow" (training-operator v1 jobs), "trainer" (TrainJob), "t9k", "batch",
	// "pod", "generic" (any other resource), "pods" (pods without a job object) or "logs"
	// (plain logs).
	Name string
	// LogDecides names the role whose log, not its status, says whether training succeeded;
	// "" when the job's status can be trusted (then errors of a job that succeeded were
	// recovered from). T9k's launcher runs the training script and succeeds even when
	// training failed.
	LogDecides string
	// ReportMissingRoles: a role with pods expected and none in the bundle is a finding. T9k
	// deletes workers when the job ends (runPolicy.cleanUpWorkers), so the launcher's log may
	// be the only witness left.
	ReportMissingRoles bool
}

// Job is the kind-agnostic job model.
type Job struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        string
	// Object is the job as served; nil when the bundle holds no job object (plain logs).
	Object     *unstructured.Unstructured
	Created    time.Time
	Phase      Phase
	Conditions []Condition
	Replicas   []*Replica
	// Family says how the job was read and what its kind makes special.
	Family Family
	// Runtime is set for TrainJobs.
	Runtime *RuntimeRef
	// Related holds the objects the job stands on or created (runtimes, JobSets, Jobs,
	// PodGroups), sorted.
	Related []*unstructured.Unstructured
	// CleanUpWorkers is true when the job's controller deletes worker pods at the end
	// (T9k runPolicy.cleanUpWorkers), so missing worker logs are expected.
	CleanUpWorkers bool
}

// Ref is "Kind namespace/name".
func (j *Job) Ref() string {
	if j.Namespace == "" {
		return j.Kind + " " + j.Name
	}
	return j.Kind + " " + j.Namespace + "/" + j.Name
}

// Replica returns the replica of that role (case-insensitive), or nil.
func (j *Job) Replica(role string) *Replica {
	for _, r := range j.Replicas {
		if strings.EqualFold(r.Role, role) {
			return r
		}
	}
	return nil
}

// RoleOf returns the role of a pod in this job, or "".
func (j *Job) RoleOf(p *corev1.Pod) string {
	for _, r := range j.Replicas {
		for _, q := range r.Pods {
			if q == p {
				return r.Role
			}
		}
	}
	return ""
}

// Pods lists all pods of the job, in replica order.
func (j *Job) Pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, r := range j.Replicas {
		out = append(out, r.Pods...)
	}
	return out
}

// Condition returns the condition of that type, or nil.
func (j *Job) Condition(typ string) *Condition {
	for i := range j.Conditions {
		if strings.EqualFold(j.Conditions[i].Type, typ) {
			return &j.Conditions[i]
		}
	}
	return nil
}

// countPods fills a replica's counts from its pods.
func (r *Replica) countPods() {
	r.Created = len(r.Pods)
	r.Pending, r.Running, r.Succeeded, r.Failed = 0, 0, 0, 0
	for _, p := range r.Pods {
		switch p.Status.Phase {
		case corev1.PodRunning:
			r.Running++
		case corev1.PodSucceeded:
			r.Succeeded++
		case corev1.PodFailed:
			r.Failed++
		default:
			r.Pending++
		}
	}
	sortPods(r.Pods)
}

func sortPods(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, k int) bool {
		a, b := podIndex(pods[i]), podIndex(pods[k])
		if a != b {
			return a < b
		}
		return pods[i].Name < pods[k].Name
	})
}

// podIndex is the replica index of a pod from the labels operators set, or the trailing
// number of its name, so that worker-10 sorts after worker-9.
func podIndex(p *corev1.Pod) int {
	for _, l := range []string{"training.kubeflow.org/replica-index", "batch.kubernetes.io/job-completion-index", "jobset.sigs.k8s.io/job-index"} {
		if v, ok := p.Labels[l]; ok {
			if n, ok := atoi(v); ok {
				return n
			}
		}
	}
	name := p.Name
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if n, ok := atoi(name[i:]); ok {
		return n
	}
	return 0
}

func atoi(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// conditions reads status.conditions in the shape every Kubernetes-style controller uses.
func conditions(u *unstructured.Unstructured) []Condition {
	items, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []Condition
	for _, it := range items {
		c, ok := it.(map[string]any)
		if !ok {
			continue
		}
		cond := Condition{Type: str(c, "type"), Status: str(c, "status"), Reason: str(c, "reason"), Message: str(c, "message")}
		for _, f := range []string{"lastTransitionTime", "lastUpdateTime", "lastProbeTime"} {
			if t, ok := parseTime(str(c, f)); ok {
				cond.Time = t
				break
			}
		}
		out = append(out, cond)
	}
	return out
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func parseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err == nil
}

func nestedInt(o map[string]any, fields ...string) (int, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(o, fields...)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	case int:
		return n, true
	}
	return 0, false
}
