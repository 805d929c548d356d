package collect

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"

	corev1 "k8s.io/api/core/v1"
)

// backoff is how API calls are retried on 429 and 5xx: 4 tries over about 1.5 s.
var backoff = wait.Backoff{Steps: 4, Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1}

func retriable(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err)
}

// withRetry runs fn, and again with backoff while it fails with a retriable error and ctx is
// not done. It returns nil only when fn did: a retry cut by ctx returns fn's last error, with
// ctx's cause when it came while waiting. (client-go's retry.OnError returned nil when fn's
// first error wrapped context.Canceled, taking it for the end of its own backoff, and callers
// went on with the nil stream or object fn had set.)
func withRetry(ctx context.Context, fn func() error) error {
	b := backoff
	for {
		err := fn()
		if err == nil || !retriable(err) || b.Steps <= 1 || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(b.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (not retried: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

func (col *collector) get(ctx context.Context, r Resource, ns, name string) (*unstructured.Unstructured, error) {
	var u *unstructured.Unstructured
	err := withRetry(ctx, func() (err error) {
		u, err = col.c.Dynamic.Resource(r.GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	return u, err
}

// list lists a resource in a namespace, page by page.
func (col *collector) list(ctx context.Context, r Resource, ns string, opts metav1.ListOptions) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	opts.Limit = 500
	for {
		var l *unstructured.UnstructuredList
		err := withRetry(ctx, func() (err error) {
			l, err = col.c.Dynamic.Resource(r.GVR).Namespace(ns).List(ctx, opts)
			return err
		})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// namespaced lists one served kind in ns; a kind the cluster does not serve gives nothing, and an
// error becomes a gap.
func (col *collector) namespaced(ctx context.Context, ns, group, kind string) []*unstructured.Unstructured {
	items, _ := col.listKind(ctx, ns, group, kind, true)
	return items
}

// listKind lists one served kind in ns. An error is a gap when gap is set; otherwise (a kind
// listed in case it owns something of the job's) it only means nothing of that kind is seen.
func (col *collector) listKind(ctx context.Context, ns, group, kind string, gap bool) ([]*unstructured.Unstructured, bool) {
	r, ok := col.cat.Find(group, kind)
	if !ok || ns == "" {
		return nil, false
	}
	items, err := col.list(ctx, r, ns, metav1.ListOptions{})
	if err != nil {
		if gap {
			col.gap("list", r.String()+" in "+ns, "%s", describe(err))
		}
		return nil, false
	}
	return items, true
}

// podLabels are the labels controllers put on the pods of a job, with the job's name as value.
var podLabels = []string{
	"training.kubeflow.org/job-name", // Kubeflow training-operator v1
	"jobset.sigs.k8s.io/jobset-name", // JobSet (TrainJob's JobSet has the TrainJob's name)
	"batch.kubernetes.io/job-name",   // batch Job
	"job-name",                       // batch Job, older clusters
	"batch.tensorstack.dev/job-name", // T9k
	"trainer.kubeflow.org/trainjob-name",
}

// ownedKinds are listed in the job's namespace to find what it owns: any object whose
// ownerReferences lead to the job is collected, down to pods.
var ownedKinds = [][2]string{
	{"jobset.x-k8s.io", "JobSet"},
	{"batch", "Job"},
	{"scheduling.x-k8s.io", "PodGroup"},
	{"scheduling.volcano.sh", "PodGroup"},
}

type podInfo struct {
	u   *unstructured.Unstructured
	pod *corev1.Pod
}

type tree struct {
	objects []*unstructured.Unstructured // owned objects other than pods, and PodGroups
	pods    []*podInfo
}

// maxOwnerGets bounds the owners fetched while following ownerReferences up from pods.
const maxOwnerGets = 256

// ownedTree finds the objects the target owns, transitively, and its pods (by owner or by the
// labels controllers set). It lists the kinds that own training pods (Jobs, JobSets, PodGroups)
// and the training kinds (a job may own another); what else stands between the target and its
// pods (a Trial of a custom Experiment) is found by following the pods' ownerReferences up,
// one get at a time, never by listing every kind of the target's API group: a least-privilege
// user may read none of the unrelated ones (notebooks.kubeflow.org). A training kind the user
// may not list is not a gap: it is listed only in case it holds something of the job's.
func (col *collector) ownedTree(ctx context.Context, target *unstructured.Unstructured) (*tree, error) {
	ns := target.GetNamespace()
	if ns == "" {
		return &tree{}, nil
	}
	var candidates []*unstructured.Unstructured
	listed := map[string]bool{}
	for _, k := range ownedKinds {
		listed[k[0]+"/"+k[1]] = true
		candidates = append(candidates, col.namespaced(ctx, ns, k[0], k[1])...)
	}
	var training [][2]string
	for _, r := range col.cat.Resources {
		if r.Namespaced && isTrainingKind(r) {
			training = append(training, [2]string{r.GVR.Group, r.Kind})
		}
	}
	sort.Slice(training, func(a, b int) bool { return training[a][0]+"/"+training[a][1] < training[b][0]+"/"+training[b][1] })
	for _, k := range training {
		key := k[0] + "/" + k[1]
		if listed[key] {
			continue
		}
		if items, ok := col.listKind(ctx, ns, k[0], k[1], false); ok {
			listed[key] = true
			candidates = append(candidates, items...)
		}
	}
	podRes, _ := col.cat.Find("", "Pod")
	pods, err := col.list(ctx, podRes, ns, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) {
			col.gap("list", "pods in "+ns, "%s", describe(err))
		} else {
			return nil, fmt.Errorf("list pods in %s: %w", ns, err)
		}
	}

	candidates = append(candidates, col.owners(ctx, target, append(append([]*unstructured.Unstructured{}, candidates...), pods...), listed)...)

	// Owner closure: start from the target and add whatever names an owned uid, until stable.
	owned := map[string]bool{string(target.GetUID()): true}
	in := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, u := range append(candidates, pods...) {
			uid := string(u.GetUID())
			if owned[uid] {
				continue
			}
			for _, ref := range u.GetOwnerReferences() {
				if owned[string(ref.UID)] {
					owned[uid], changed = true, true
					break
				}
			}
		}
	}
	t := &tree{}
	name := target.GetName()
	for _, u := range candidates {
		uid := string(u.GetUID())
		isGroup := u.GetKind() == "PodGroup" && (u.GetName() == name || strings.HasPrefix(u.GetName(), name+"-"))
		if (owned[uid] || isGroup) && uid != string(target.GetUID()) && !in[uid] {
			in[uid] = true
			t.objects = append(t.objects, u)
		}
	}
	for _, u := range pods {
		uid := string(u.GetUID())
		mine := owned[uid]
		for _, l := range podLabels {
			if v, ok := u.GetLabels()[l]; ok && v == name {
				mine = true
			}
		}
		// T9k names its pods <job>-<role>-<index> and may not set owners on all of them.
		if !mine && strings.HasPrefix(target.GetAPIVersion(), "batch.tensorstack.dev/") && strings.HasPrefix(u.GetName(), name+"-") {
			mine = true
		}
		if !mine || in[uid] {
			continue
		}
		in[uid] = true
		p, err := toPod(u)
		if err != nil {
			col.gap("decode", "pod/"+u.GetName(), "%v", err)
			continue
		}
		t.pods = append(t.pods, &podInfo{u: u, pod: p})
	}
	sort.Slice(t.pods, func(a, b int) bool { return t.pods[a].pod.Name < t.pods[b].pod.Name })
	return t, nil
}

// owners follows the ownerReferences of objs up to objects of kinds that were not listed,
// fetching each by name: those of the target's own API group, or of a training kind. The
// chain from a pod up to the target may pass through any such kind. An owner that cannot be
// read is skipped: whether it belonged to the job cannot be told, and most owners in a
// namespace belong to other things.
func (col *collector) owners(ctx context.Context, target *unstructured.Unstructured, objs []*unstructured.Unstructured, listed map[string]bool) []*unstructured.Unstructured {
	group, _, _ := strings.Cut(target.GetAPIVersion(), "/")
	known := map[string]bool{string(target.GetUID()): true}
	for _, u := range objs {
		known[string(u.GetUID())] = true
	}
	var found []*unstructured.Unstructured
	gets := 0
	queue := objs
	for len(queue) > 0 && gets < maxOwnerGets {
		u := queue[0]
		queue = queue[1:]
		for _, ref := range u.GetOwnerReferences() {
			if known[string(ref.UID)] || gets >= maxOwnerGets {
				continue
			}
			g, _, _ := strings.Cut(ref.APIVersion, "/")
			if !strings.Contains(ref.APIVersion, "/") {
				g = ""
			}
			r, ok := col.cat.Find(g, ref.Kind)
			if !ok || !r.Namespaced || listed[g+"/"+ref.Kind] || !(g == group && group != "" || isTrainingKind(r)) {
				continue
			}
			known[string(ref.UID)] = true
			gets++
			o, err := col.get(ctx, r, u.GetNamespace(), ref.Name)
			if err != nil || o.GetUID() != ref.UID {
				continue
			}
			found = append(found, o)
			queue = append(queue, o)
		}
	}
	return found
}

// runtimeOf returns the TrainingRuntime or ClusterTrainingRuntime a TrainJob references.
func (col *collector) runtimeOf(ctx context.Context, target *unstructured.Unstructured) []*unstructured.Unstructured {
	if target.GetKind() != "TrainJob" {
		return nil
	}
	name, _, _ := unstructured.NestedString(target.Object, "spec", "runtimeRef", "name")
	kind, _, _ := unstructured.NestedString(target.Object, "spec", "runtimeRef", "kind")
	group, _, _ := unstructured.NestedString(target.Object, "spec", "runtimeRef", "apiGroup")
	if kind == "" {
		kind = "ClusterTrainingRuntime"
	}
	if group == "" {
		group = "trainer.kubeflow.org"
	}
	if name == "" {
		return nil
	}
	r, ok := col.cat.Find(group, kind)
	if !ok {
		col.gap("get", kind+"/"+name, "the cluster does not serve %s.%s", kind, group)
		return nil
	}
	ns := ""
	if r.Namespaced {
		ns = target.GetNamespace()
	}
	u, err := col.get(ctx, r, ns, name)
	if err != nil {
		col.gap("get", kind+"/"+name, "%s", describe(err))
		return nil
	}
	return []*unstructured.Unstructured{u}
}

type nodeSet struct {
	objects []*unstructured.Unstructured
	gone    map[string]bool // nodes the pods ran on that no longer exist
}

// nodes gets every node the pods were scheduled on.
func (col *collector) nodes(ctx context.Context, pods []*podInfo) *nodeSet {
	set := &nodeSet{gone: map[string]bool{}}
	var names []string
	seen := map[string]bool{}
	for _, p := range pods {
		if n := p.pod.Spec.NodeName; n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	r, _ := col.cat.Find("", "Node")
	got := make([]*unstructured.Unstructured, len(names))
	listed := col.nodesByHostname(ctx, r, names)
	var fns []func(context.Context) error
	for i, n := range names {
		if u := listed[n]; u != nil {
			got[i] = u
			continue
		}
		fns = append(fns, func(ctx context.Context) error {
			u, err := col.get(ctx, r, "", n)
			switch {
			case err == nil:
				got[i] = u
			case apierrors.IsNotFound(err):
				col.mu.Lock()
				set.gone[n] = true
				col.mu.Unlock()
				col.gap("get", "node/"+n, "the node is gone")
			default:
				col.gap("get", "node/"+n, "%s", describe(err))
			}
			return nil
		})
	}
	_ = parallel(ctx, col.opts.Concurrency, fns)
	for _, u := range got {
		if u != nil {
			set.objects = append(set.objects, u)
		}
	}
	return set
}

// nodesPerList is how many node names one list by hostname label asks for: 64 names of 63
// bytes keep the request's URL under 5 KiB.
const nodesPerList = 64

// nodesByHostname lists the named nodes by the label the kubelet sets to its hostname
// (kubernetes.io/hostname), nodesPerList names a request, when there are enough of them
// for that to save requests: a job on 128 nodes costs 2 lists, not 128 gets. A node whose
// label is not its name (a kubelet's --hostname-override, a cloud's node names) is not in
// the answer and is got by name; an error only means every node is got by name.
func (col *collector) nodesByHostname(ctx context.Context, r Resource, names []string) map[string]*unstructured.Unstructured {
	if len(names) < 4 {
		return nil
	}
	want := map[string]bool{}
	var values []string
	for _, n := range names {
		if len(validation.IsValidLabelValue(n)) == 0 {
			want[n] = true
			values = append(values, n)
		}
	}
	out := map[string]*unstructured.Unstructured{}
	for len(values) > 0 {
		chunk := values[:min(nodesPerList, len(values))]
		values = values[len(chunk):]
		items, err := col.list(ctx, r, "", metav1.ListOptions{LabelSelector: corev1.LabelHostname + " in (" + strings.Join(chunk, ",") + ")"})
		if err != nil {
			return out
		}
		for _, u := range items {
			if want[u.GetName()] {
				out[u.GetName()] = u
			}
		}
	}
	return out
}

// events lists the events of the job, of what it owns, of its pods and of their nodes.
func (col *collector) events(ctx context.Context, ns string, objs []*unstructured.Unstructured, pods []*podInfo, nodes *nodeSet) []*unstructured.Unstructured {
	r, ok := col.cat.Find("", "Event")
	if !ok {
		return nil
	}
	uids := map[string]bool{}
	names := map[string]bool{}
	for _, u := range objs {
		uids[string(u.GetUID())] = true
		names[u.GetKind()+"/"+u.GetName()] = true
	}
	for _, p := range pods {
		uids[string(p.pod.UID)] = true
		names["Pod/"+p.pod.Name] = true
	}
	var out []*unstructured.Unstructured
	if ns != "" {
		items, err := col.list(ctx, r, ns, metav1.ListOptions{})
		if err != nil {
			col.gap("list", "events in "+ns, "%s", describe(err))
		}
		for _, e := range items {
			uid, _, _ := unstructured.NestedString(e.Object, "involvedObject", "uid")
			kind, _, _ := unstructured.NestedString(e.Object, "involvedObject", "kind")
			name, _, _ := unstructured.NestedString(e.Object, "involvedObject", "name")
			if (uid != "" && uids[uid]) || names[kind+"/"+name] {
				out = append(out, e)
			}
		}
	}
	// Node events are recorded in the default namespace.
	var nodeNames []string
	for _, u := range nodes.objects {
		nodeNames = append(nodeNames, u.GetName())
	}
	for n := range nodes.gone {
		nodeNames = append(nodeNames, n)
	}
	sort.Strings(nodeNames)
	byNode := make([][]*unstructured.Unstructured, len(nodeNames))
	fns := make([]func(context.Context) error, len(nodeNames))
	for i, n := range nodeNames {
		fns[i] = func(ctx context.Context) error {
			items, err := col.list(ctx, r, metav1.NamespaceDefault, metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + n})
			if err != nil && ctx.Err() == nil {
				col.gap("list", "events of node/"+n, "%s", describe(err))
			}
			byNode[i] = items
			return nil
		}
	}
	_ = parallel(ctx, col.opts.Concurrency, fns)
	for _, items := range byNode {
		out = append(out, items...)
	}
	return out
}
