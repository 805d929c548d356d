package parse

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// adapter reads one family of job kinds.
type adapter struct {
	family Family
	match  func(u *unstructured.Unstructured) bool
	read   func(m *Model, j *Job)
}

// adapters are tried in order; generic matches anything.
var adapters = []adapter{
	{Family{Name: "kubeflow"}, isKubeflowV1, readKubeflowV1},
	{Family{Name: "trainer"}, func(u *unstructured.Unstructured) bool {
		return groupOf(u.GetAPIVersion()) == "trainer.kubeflow.org" && u.GetKind() == "TrainJob"
	}, readTrainJob},
	{Family{Name: "t9k", LogDecides: "launcher", ReportMissingRoles: true},
		func(u *unstructured.Unstructured) bool { return groupOf(u.GetAPIVersion()) == "batch.tensorstack.dev" }, readT9k},
	{Family{Name: "batch"}, func(u *unstructured.Unstructured) bool {
		return groupOf(u.GetAPIVersion()) == "batch" && u.GetKind() == "Job"
	}, readBatchJob},
	{Family{Name: "pod"}, func(u *unstructured.Unstructured) bool { return u.GetAPIVersion() == "v1" && u.GetKind() == "Pod" }, readBarePod},
	{Family{Name: "generic"}, func(*unstructured.Unstructured) bool { return true }, readGeneric},
}

// supportKinds are kinds that a job stands on and that are never the job itself.
var supportKinds = map[string]bool{
	"Pod": true, "Node": true, "Event": true, "ResourceQuota": true, "LimitRange": true, "ConfigMap": true,
	"Secret": true, "Service": true, "PodGroup": true, "TrainingRuntime": true, "ClusterTrainingRuntime": true,
	"JobSet": true, "Namespace": true, "PersistentVolumeClaim": true, "ServiceAccount": true,
}

// findJob picks the job the bundle is about: the manifest's target, else the one object
// that nothing else in the bundle owns, else a job made of the bundle's pods and logs.
func findJob(m *Model) *Job {
	var target *unstructured.Unstructured
	if mf := m.Bundle.Manifest; mf != nil && mf.Target.Kind != "" {
		target = m.Object(groupOf(mf.Target.APIVersion), mf.Target.Kind, mf.Target.Namespace, mf.Target.Name)
		if target == nil {
			m.warnf("the manifest's target %s %s/%s is not among the bundle's resources", mf.Target.Kind, mf.Target.Namespace, mf.Target.Name)
		}
	}
	if target == nil {
		target = guessTarget(m)
	}
	if target == nil {
		return podsOnlyJob(m)
	}
	j := &Job{
		APIVersion: target.GetAPIVersion(), Kind: target.GetKind(), Namespace: target.GetNamespace(),
		Name: target.GetName(), UID: string(target.GetUID()), Object: target,
		Created: target.GetCreationTimestamp().Time.UTC(), Conditions: conditions(target),
	}
	for _, a := range adapters {
		if a.match(target) {
			j.Family = a.family
			a.read(m, j)
			break
		}
	}
	sort.SliceStable(j.Related, func(a, b int) bool { return objectKey(j.Related[a]) < objectKey(j.Related[b]) })
	return j
}

func guessTarget(m *Model) *unstructured.Unstructured {
	uids := map[string]bool{}
	for _, o := range m.Objects {
		uids[string(o.GetUID())] = true
	}
	for _, p := range m.typedPods() {
		uids[string(p.UID)] = true
	}
	var best *unstructured.Unstructured
	score := -1
	for _, o := range m.Objects {
		if supportKinds[o.GetKind()] {
			continue
		}
		owned := false
		for _, r := range o.GetOwnerReferences() {
			if uids[string(r.UID)] {
				owned = true
			}
		}
		if owned {
			continue
		}
		s := 1
		for _, a := range adapters[:4] {
			if a.match(o) {
				s = 2
			}
		}
		if s > score {
			best, score = o, s
		}
	}
	if best == nil && len(m.Pods) == 1 {
		for _, o := range m.Objects {
			if o.GetKind() == "Pod" && o.GetNamespace() == m.Pods[0].Namespace && o.GetName() == m.Pods[0].Name {
				return o // not a GPU agent's pod beside it (Model.NodeAgents)
			}
		}
	}
	return best
}

// typedPods are the pods read into their types (which Objects does not list): the job's and
// the GPU agents'.
func (m *Model) typedPods() []*corev1.Pod {
	return append(m.Pods[:len(m.Pods):len(m.Pods)], m.NodeAgents...)
}

// podsOnlyJob is the unnamed job of a bundle with no job object: plain logs, or pods only.
func podsOnlyJob(m *Model) *Job {
	j := &Job{Kind: "Job", Name: "", Phase: PhaseUnknown, Family: Family{Name: "logs"}}
	if m.Bundle.Plain {
		j.Kind = "Logs"
	}
	r := &Replica{Role: "Pod", Expected: -1}
	r.Pods = append(r.Pods, m.Pods...)
	r.countPods()
	if len(r.Pods) > 0 {
		j.Family = Family{Name: "pods"}
		j.Replicas = []*Replica{r}
	}
	return j
}

// ownedPods returns the pods owned, directly or through owned objects, by the object with uid.
func ownedPods(m *Model, uid string) []*corev1.Pod {
	if uid == "" {
		return nil
	}
	owners := map[string]bool{uid: true}
	owned := func(uid string, refs []metav1.OwnerReference) (changed bool) {
		if owners[uid] {
			return false
		}
		for _, r := range refs {
			if owners[string(r.UID)] {
				owners[uid] = true
				changed = true
			}
		}
		return changed
	}
	pods := m.typedPods()
	// Ownership chains are short (TrainJob -> JobSet -> Job -> Pod); iterate to a fixpoint.
	for changed := true; changed; {
		changed = false
		for _, o := range m.Objects {
			changed = owned(string(o.GetUID()), o.GetOwnerReferences()) || changed
		}
		for _, p := range pods {
			changed = owned(string(p.UID), p.OwnerReferences) || changed
		}
	}
	var out []*corev1.Pod
	for _, p := range m.Pods {
		for _, r := range p.OwnerReferences {
			if owners[string(r.UID)] {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// ownedObjects returns the non-pod objects owned (transitively) by uid.
func ownedObjects(m *Model, uid string) []*unstructured.Unstructured {
	owners := map[string]bool{uid: true}
	var out []*unstructured.Unstructured
	for changed := true; changed; {
		changed = false
		for _, o := range m.Objects {
			if owners[string(o.GetUID())] || o.GetKind() == "Pod" {
				continue
			}
			for _, r := range o.GetOwnerReferences() {
				if owners[string(r.UID)] {
					owners[string(o.GetUID())] = true
					out = append(out, o)
					changed = true
					break
				}
			}
		}
	}
	return out
}

func podsWithLabel(m *Model, ns, key, value string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range m.Pods {
		if p.Namespace == ns && p.Labels[key] == value {
			out = append(out, p)
		}
	}
	return out
}

// jobPods merges pods found by label with pods found by owner, without duplicates.
func jobPods(m *Model, j *Job, labelKeys ...string) []*corev1.Pod {
	seen := map[*corev1.Pod]bool{}
	var out []*corev1.Pod
	add := func(ps []*corev1.Pod) {
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	for _, k := range labelKeys {
		add(podsWithLabel(m, j.Namespace, k, j.Name))
	}
	add(ownedPods(m, j.UID))
	return out
}

// relatedPodGroups adds PodGroups (scheduler-plugins, Volcano) named after or owned by the job.
func relatedPodGroups(m *Model, j *Job) {
	for _, o := range m.Objects {
		if o.GetKind() != "PodGroup" || o.GetNamespace() != j.Namespace {
			continue
		}
		owned := false
		for _, r := range o.GetOwnerReferences() {
			owned = owned || string(r.UID) == j.UID
		}
		if owned || o.GetName() == j.Name || strings.HasPrefix(o.GetName(), j.Name+"-") {
			j.Related = append(j.Related, o)
		}
	}
}

// --- Kubeflow training-operator v1: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob, MXJob.

func isKubeflowV1(u *unstructured.Unstructured) bool {
	if groupOf(u.GetAPIVersion()) != "kubeflow.org" {
		return false
	}
	_, ok := replicaSpecs(u)
	return ok
}

// replicaSpecs finds spec.<x>ReplicaSpecs, the map from role to replica spec every v1 kind has.
func replicaSpecs(u *unstructured.Unstructured) (map[string]any, bool) {
	spec, ok := u.Object["spec"].(map[string]any)
	if !ok {
		return nil, false
	}
	keys := make([]string, 0, len(spec))
	for k := range spec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasSuffix(k, "ReplicaSpecs") {
			if rs, ok := spec[k].(map[string]any); ok {
				return rs, true
			}
		}
	}
	return nil, false
}

// kubeflowRoleOrder puts the coordinating role first, as users read the job.
var kubeflowRoleOrder = map[string]int{"master": 0, "chief": 0, "launcher": 0, "scheduler": 1, "ps": 2, "server": 2, "worker": 3, "evaluator": 4}

func readKubeflowV1(m *Model, j *Job) {
	specs, _ := replicaSpecs(j.Object)
	roles := make([]string, 0, len(specs))
	for r := range specs {
		roles = append(roles, r)
	}
	sort.Slice(roles, func(a, b int) bool {
		oa, ok := kubeflowRoleOrder[strings.ToLower(roles[a])]
		if !ok {
			oa = 5
		}
		ob, ok := kubeflowRoleOrder[strings.ToLower(roles[b])]
		if !ok {
			ob = 5
		}
		if oa != ob {
			return oa < ob
		}
		return roles[a] < roles[b]
	})
	pods := jobPods(m, j, "training.kubeflow.org/job-name", "job-name")
	for _, role := range roles {
		r := &Replica{Role: role, Expected: 1}
		if n, ok := nestedInt(specs, role, "replicas"); ok {
			r.Expected = n
		}
		for _, p := range pods {
			rt := p.Labels["training.kubeflow.org/replica-type"]
			if rt == "" {
				rt = p.Labels["replica-type"]
			}
			if strings.EqualFold(rt, role) {
				r.Pods = append(r.Pods, p)
			}
		}
		r.countPods()
		if len(r.Pods) == 0 {
			if st, ok, _ := unstructured.NestedMap(j.Object.Object, "status", "replicaStatuses", role); ok {
				a, _ := nestedInt(st, "active")
				s, _ := nestedInt(st, "succeeded")
				f, _ := nestedInt(st, "failed")
				if a+s+f > 0 {
					r.Running, r.Succeeded, r.Failed, r.FromStatus = a, s, f, true
				}
			}
		}
		j.Replicas = append(j.Replicas, r)
	}
	j.Phase = phaseFromConditions(j.Conditions)
	relatedPodGroups(m, j)
}

// phaseFromConditions maps the training-operator's condition types (Created, Running,
// Restarting, Succeeded, Failed, Suspended) and similar ones onto a Phase.
func phaseFromConditions(conds []Condition) Phase {
	has := func(types ...string) bool {
		for _, c := range conds {
			for _, t := range types {
				if strings.EqualFold(c.Type, t) && c.Status == "True" {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has("Failed"):
		return PhaseFailed
	case has("Succeeded", "Complete", "Completed"):
		return PhaseSucceeded
	case has("Suspended"):
		return PhaseSuspended
	case has("Restarting"):
		return PhaseRestarting
	case has("Running"):
		return PhaseRunning
	case has("Created"):
		return PhaseCreated
	}
	if len(conds) == 0 {
		return PhasePending
	}
	return PhaseUnknown
}

// --- Kubeflow Trainer v2: TrainJob -> (Cluster)TrainingRuntime, JobSet, Jobs, pods.

const (
	ancestorStepLabel = "trainer.kubeflow.org/trainjob-ancestor-step"
	// supportLabel on a runtime says "deprecated" when the runtime is on its way out.
	supportLabel = "trainer.kubeflow.org/support"
)

func readTrainJob(m *Model, j *Job) {
	o := j.Object.Object
	ref := &RuntimeRef{Kind: "ClusterTrainingRuntime"}
	ref.Name, _, _ = unstructured.NestedString(o, "spec", "runtimeRef", "name")
	if k, ok, _ := unstructured.NestedString(o, "spec", "runtimeRef", "kind"); ok && k != "" {
		ref.Kind = k
	}
	ns := j.Namespace
	if ref.Kind == "ClusterTrainingRuntime" {
		ns = ""
	}
	ref.Object = m.Object("trainer.kubeflow.org", ref.Kind, ns, ref.Name)
	j.Runtime = ref
	if ref.Object != nil {
		j.Related = append(j.Related, ref.Object)
		if ref.Object.GetLabels()[supportLabel] == "deprecated" {
			ref.DeprecatedBy = "label " + supportLabel + ": deprecated"
		}
	}
	j.Related = append(j.Related, ownedObjects(m, j.UID)...)
	for _, o := range m.Objects {
		if o.GetKind() == "JobSet" && o.GetName() == j.Name && o.GetNamespace() == j.Namespace && !containsObj(j.Related, o) {
			j.Related = append(j.Related, o)
		}
	}
	relatedPodGroups(m, j)

	pods := jobPods(m, j, "jobset.sigs.k8s.io/jobset-name")
	// Roles come from the runtime's replicatedJobs, in the runtime's order (initializers
	// first, then the trainer), or from the pods when the runtime is missing.
	var roles []string
	expected := map[string]int{}
	if ref.Object != nil {
		rjs, _, _ := unstructured.NestedSlice(ref.Object.Object, "spec", "template", "spec", "replicatedJobs")
		for _, it := range rjs {
			rj, ok := it.(map[string]any)
			if !ok {
				continue
			}
			name := str(rj, "name")
			roles = append(roles, name)
			n, ok := nestedInt(rj, "replicas")
			if !ok {
				n = 1
			}
			if step, _, _ := unstructured.NestedString(rj, "template", "metadata", "labels", ancestorStepLabel); step == "trainer" || name == "node" {
				if nn, ok := nestedInt(o, "spec", "trainer", "numNodes"); ok {
					n = nn
				} else if nn, ok := nestedInt(ref.Object.Object, "spec", "mlPolicy", "numNodes"); ok {
					n = nn
				}
			}
			expected[name] = n
		}
	}
	for _, p := range pods {
		rj := p.Labels["jobset.sigs.k8s.io/replicatedjob-name"]
		if rj == "" {
			rj = p.Labels[ancestorStepLabel]
		}
		if _, ok := expected[rj]; !ok && rj != "" && !contains(roles, rj) {
			roles = append(roles, rj)
		}
	}
	for _, role := range roles {
		r := &Replica{Role: role, Expected: -1}
		if n, ok := expected[role]; ok {
			r.Expected = n
		}
		for _, p := range pods {
			rj := p.Labels["jobset.sigs.k8s.io/replicatedjob-name"]
			if rj == "" {
				rj = p.Labels[ancestorStepLabel]
			}
			if rj == role {
				r.Pods = append(r.Pods, p)
			}
		}
		r.countPods()
		j.Replicas = append(j.Replicas, r)
	}
	j.Phase = phaseFromConditions(j.Conditions)
	if j.Phase == PhasePending || j.Phase == PhaseUnknown {
		j.Phase = phaseFromPods(j)
	}
}

func phaseFromPods(j *Job) Phase {
	var running, failed, pending, total int
	for _, r := range j.Replicas {
		running += r.Running
		failed += r.Failed
		pending += r.Pending
		total += r.Created
	}
	switch {
	case total == 0:
		return PhaseCreated
	case failed > 0 && running == 0 && pending == 0:
		return PhaseFailed
	case running > 0:
		return PhaseRunning
	case pending > 0:
		return PhasePending
	}
	return PhaseUnknown
}

// --- T9k jobs (batch.tensorstack.dev): ColossalAIJob (launcher + worker) and siblings with
// spec.replicaSpecs as a list of {type, replicas, template}.

func readT9k(m *Model, j *Job) {
	o := j.Object.Object
	pods := ownedPods(m, j.UID)
	for _, p := range m.Pods {
		if p.Namespace == j.Namespace && strings.HasPrefix(p.Name, j.Name+"-") && !containsPod(pods, p) {
			pods = append(pods, p)
		}
	}
	type roleSpec struct {
		name     string
		expected int
	}
	var roles []roleSpec
	if j.Kind == "ColossalAIJob" || hasField(o, "spec", "launcher") {
		roles = append(roles, roleSpec{"launcher", 1})
		n, ok := nestedInt(o, "spec", "worker", "replicas")
		if !ok {
			n = -1
		}
		roles = append(roles, roleSpec{"worker", n})
	} else {
		rs, _, _ := unstructured.NestedSlice(o, "spec", "replicaSpecs")
		for _, it := range rs {
			if r, ok := it.(map[string]any); ok {
				n, ok := nestedInt(r, "replicas")
				if !ok {
					n = 1
				}
				roles = append(roles, roleSpec{str(r, "type"), n})
			}
		}
	}
	// status.tasks names each role's pods, even ones that are gone.
	taskPods := map[string][]map[string]any{}
	tasks, _, _ := unstructured.NestedSlice(o, "status", "tasks")
	for _, it := range tasks {
		t, ok := it.(map[string]any)
		if !ok {
			continue
		}
		sts, _, _ := unstructured.NestedSlice(t, "status")
		for _, s := range sts {
			if sm, ok := s.(map[string]any); ok {
				taskPods[str(t, "type")] = append(taskPods[str(t, "type")], sm)
			}
		}
	}
	for _, rs := range roles {
		r := &Replica{Role: rs.name, Expected: rs.expected}
		for _, p := range pods {
			if t9kRole(j, p) == rs.name {
				r.Pods = append(r.Pods, p)
			}
		}
		r.countPods()
		if len(r.Pods) == 0 && len(taskPods[rs.name]) > 0 {
			r.FromStatus = true
			r.Created = len(taskPods[rs.name])
			for _, t := range taskPods[rs.name] {
				switch str(t, "phase") {
				case "Running":
					r.Running++
				case "Succeeded":
					r.Succeeded++
				case "Failed":
					r.Failed++
				default:
					r.Pending++
				}
			}
		}
		j.Replicas = append(j.Replicas, r)
	}
	j.CleanUpWorkers, _, _ = unstructured.NestedBool(o, "spec", "runPolicy", "cleanUpWorkers")
	phase, _, _ := unstructured.NestedString(o, "status", "phase")
	switch phase {
	case "Pending", "Running", "Succeeded", "Failed", "Unknown":
		j.Phase = Phase(phase)
	case "Paused":
		j.Phase = PhaseSuspended
	case "Resuming":
		j.Phase = PhaseRestarting
	default:
		j.Phase = phaseFromConditions(j.Conditions)
	}
	relatedPodGroups(m, j)
}

func t9kRole(j *Job, p *corev1.Pod) string {
	for _, k := range []string{"tensorstack.dev/replica-type", "batch.tensorstack.dev/replica-type", "replica-type"} {
		if v := p.Labels[k]; v != "" {
			return strings.ToLower(v)
		}
	}
	rest := strings.TrimPrefix(p.Name, j.Name+"-")
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// --- batch/v1 Job.

func readBatchJob(m *Model, j *Job) {
	o := j.Object.Object
	r := &Replica{Role: "Pod", Expected: 1}
	if n, ok := nestedInt(o, "spec", "completions"); ok {
		r.Expected = n
	}
	if n, ok := nestedInt(o, "spec", "parallelism"); ok && n > r.Expected {
		r.Expected = n
	}
	r.Pods = jobPods(m, j, "batch.kubernetes.io/job-name", "job-name")
	r.countPods()
	j.Replicas = []*Replica{r}
	j.Phase = phaseFromConditions(j.Conditions)
	if j.Phase == PhasePending {
		if n, _ := nestedInt(o, "status", "active"); n > 0 {
			j.Phase = PhaseRunning
		}
	}
}

// --- a bare Pod as the target.

func readBarePod(m *Model, j *Job) {
	p := m.Pod(j.Namespace, j.Name)
	r := &Replica{Role: "Pod", Expected: 1}
	if p != nil {
		r.Pods = []*corev1.Pod{p}
	}
	r.countPods()
	j.Replicas = []*Replica{r}
	j.Phase = PhaseUnknown
	if p != nil {
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			j.Phase = PhaseSucceeded
		case corev1.PodFailed:
			j.Phase = PhaseFailed
		case corev1.PodRunning:
			j.Phase = PhaseRunning
		case corev1.PodPending:
			j.Phase = PhasePending
		}
	}
}

// --- any other custom resource: status.conditions and the pods it owns.

func readGeneric(m *Model, j *Job) {
	j.Related = append(j.Related, ownedObjects(m, j.UID)...)
	r := &Replica{Role: "Pod", Expected: -1, Pods: ownedPods(m, j.UID)}
	r.countPods()
	j.Replicas = []*Replica{r}
	j.Phase = phaseFromConditions(j.Conditions)
	if j.Phase == PhasePending {
		j.Phase = phaseFromPods(j)
	}
	relatedPodGroups(m, j)
}

func hasField(o map[string]any, fields ...string) bool {
	_, ok, _ := unstructured.NestedFieldNoCopy(o, fields...)
	return ok
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func containsPod(ps []*corev1.Pod, p *corev1.Pod) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

func containsObj(os []*unstructured.Unstructured, o *unstructured.Unstructured) bool {
	for _, q := range os {
		if q == o {
			return true
		}
	}
	return false
}
