package watch

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/coroner-dev/coroner/bundle/collect"
)

// podLabels are the labels controllers put on a job's pods, with the job's name as value
// (the ones collect uses to find pods), and the API group of the kinds they name.
var podLabels = []struct{ label, group string }{
	{"training.kubeflow.org/job-name", "kubeflow.org"},             // training-operator v1, mpi-operator v2beta1
	{"jobset.sigs.k8s.io/jobset-name", "jobset.x-k8s.io"},          // JobSet; a TrainJob's JobSet has its name
	{"trainer.kubeflow.org/trainjob-name", "trainer.kubeflow.org"}, // Kubeflow Trainer v2
	{"batch.tensorstack.dev/job-name", "batch.tensorstack.dev"},    // T9k
	{"batch.kubernetes.io/job-name", "batch"},                      // batch Job
	{"job-name", "batch"},                                          // batch Job, older clusters
	{"volcano.sh/job-name", "batch.volcano.sh"},                    // Volcano
}

// discover reads the served kinds and starts informers for the watched ones not yet watched.
func (c *controller) discover(ctx context.Context) error {
	cat, partial, err := collect.Discover(c.clients.Discovery)
	if err != nil {
		return err
	}
	if partial != "" {
		c.log.Warn("discovery is partial", "err", partial)
	}
	c.mu.Lock()
	c.cat = cat
	c.mu.Unlock()
	for _, r := range cat.TrainingKinds() {
		batch := r.GVR.Group == "batch" && r.Kind == "Job"
		if batch && c.opts.JobSelector == nil {
			continue
		}
		key := r.GVR.Group + "/" + r.Kind
		c.mu.RLock()
		_, ok := c.kinds[key]
		c.mu.RUnlock()
		if ok {
			continue
		}
		wk := &watchedKind{key: key, res: r, inf: map[string]cache.SharedIndexInformer{}}
		sel := c.opts.Selector
		if batch {
			sel = c.opts.JobSelector
		}
		tweak := func(o *metav1.ListOptions) {
			if sel != nil && !sel.Empty() {
				o.LabelSelector = sel.String()
			}
		}
		for _, scope := range c.scopes {
			// A kind the watcher may not list (in a namespace) is left out with a warning,
			// rather than retried by an informer forever; the next discovery tries it again.
			lo := metav1.ListOptions{Limit: 1}
			tweak(&lo)
			if _, err := c.clients.Dynamic.Resource(r.GVR).Namespace(scope).List(ctx, lo); err != nil {
				if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
					c.log.Warn("not watching a kind the watcher may not list", "kind", r.String(), "namespace", scope, "err", err)
					continue
				}
				return err
			}
			gi := dynamicinformer.NewFilteredDynamicInformer(c.clients.Dynamic, r.GVR, scope, c.opts.Resync, cache.Indexers{}, tweak)
			inf := gi.Informer()
			_ = inf.SetTransform(stripObject)
			_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: func(obj any) {
					if u, ok := obj.(*unstructured.Unstructured); ok {
						c.m.jobsSeen.WithLabelValues(u.GetKind()).Inc()
						c.jobChanged(wk, u)
					}
				},
				UpdateFunc: func(_, obj any) {
					if u, ok := obj.(*unstructured.Unstructured); ok {
						c.jobChanged(wk, u)
					}
				},
				DeleteFunc: func(obj any) {
					if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
						obj = d.Obj
					}
					if u, ok := obj.(*unstructured.Unstructured); ok {
						c.jobDeleted(wk, u)
					}
				},
			})
			wk.inf[scope] = inf
		}
		if len(wk.inf) == 0 {
			continue
		}
		c.mu.Lock()
		c.kinds[key] = wk
		c.mu.Unlock()
		if c.stop != nil {
			for _, inf := range wk.inf {
				go inf.Run(c.stop)
			}
		}
	}
	return nil
}

func (c *controller) kindNames() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, k := range c.kinds {
		if len(k.inf) > 0 {
			out = append(out, k.res.String())
		}
	}
	sort.Strings(out)
	return out
}

// startPods starts the pod informers (and the namespaces' for a namespace selector), which run
// until ctx ends.
func (c *controller) startPods(ctx, startCtx context.Context) error {
	for _, scope := range c.scopes {
		if _, err := c.kube.CoreV1().Pods(scope).List(startCtx, metav1.ListOptions{Limit: 1}); err != nil {
			return fmt.Errorf("the watcher cannot list pods: %w", err)
		}
		f := informers.NewSharedInformerFactoryWithOptions(c.kube, c.opts.Resync, informers.WithNamespace(scope), informers.WithTransform(stripPod))
		inf := f.Core().V1().Pods().Informer()
		if err := inf.AddIndexers(cache.Indexers{podIndex: podJobNames}); err != nil {
			return err
		}
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.podChanged(obj) },
			UpdateFunc: func(_, obj any) { c.podChanged(obj) },
		})
		c.mu.Lock()
		c.pods[scope] = inf
		c.mu.Unlock()
		go inf.Run(ctx.Done())
	}
	if c.opts.NamespaceSelector != nil && !c.opts.NamespaceSelector.Empty() {
		f := informers.NewSharedInformerFactory(c.kube, c.opts.Resync)
		c.nsInf = f.Core().V1().Namespaces().Informer()
		go c.nsInf.Run(ctx.Done())
	}
	return nil
}

// stripObject drops what a watched job does not need to keep in memory.
func stripObject(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
		if a := u.GetAnnotations(); a != nil {
			if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
				delete(a, corev1.LastAppliedConfigAnnotation)
				u.SetAnnotations(a)
			}
		}
	}
	return obj, nil
}

// stripPod keeps of a pod what watch decides on: identity, owners, labels, finalizers,
// deletion, phase, how its containers ended, and their flight recorder variables (the hang
// trigger's). A busy cluster's pods stay a few hundred bytes each.
func stripPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Labels: p.Labels, OwnerReferences: p.OwnerReferences, Finalizers: p.Finalizers,
			DeletionTimestamp: p.DeletionTimestamp, CreationTimestamp: p.CreationTimestamp,
		},
		Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName, RestartPolicy: p.Spec.RestartPolicy},
		Status: corev1.PodStatus{Phase: p.Status.Phase, StartTime: p.Status.StartTime},
	}
	strip := func(in []corev1.ContainerStatus) []corev1.ContainerStatus {
		var o []corev1.ContainerStatus
		for _, s := range in {
			o = append(o, corev1.ContainerStatus{Name: s.Name, State: s.State, LastTerminationState: s.LastTerminationState, RestartCount: s.RestartCount})
		}
		return o
	}
	for _, ct := range p.Spec.Containers {
		var env []corev1.EnvVar
		for _, e := range ct.Env {
			if slices.Contains(collect.DumpPipeEnv, e.Name) || slices.Contains(collect.FlightRecorderEnv, e.Name) {
				env = append(env, corev1.EnvVar{Name: e.Name, Value: e.Value})
			}
		}
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: ct.Name, Env: env})
	}
	out.Status.InitContainerStatuses = strip(p.Status.InitContainerStatuses)
	out.Status.ContainerStatuses = strip(p.Status.ContainerStatuses)
	return out, nil
}

// podJobNames are the "namespace/name"s of the jobs a pod may belong to: its owners and the
// values of the controllers' job-name labels.
func podJobNames(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, n := range candidateNames(p) {
		out = append(out, p.Namespace+"/"+n)
	}
	return out, nil
}

func candidateNames(p *corev1.Pod) []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, r := range p.OwnerReferences {
		add(r.Name)
	}
	for _, l := range podLabels {
		add(p.Labels[l.label])
	}
	return out
}

// --- lookups

func jobKey(kindKey, ns, name string) string { return kindKey + "/" + ns + "/" + name }

func splitJobKey(key string) (kindKey, ns, name string) {
	parts := strings.SplitN(key, "/", 4)
	if len(parts) != 4 {
		return "", "", ""
	}
	return parts[0] + "/" + parts[1], parts[2], parts[3]
}

func (c *controller) scopeOf(ns string) string {
	if c.scopes[0] == metav1.NamespaceAll {
		return metav1.NamespaceAll
	}
	return ns
}

// job returns a watched job from its informer, or from the tombs when it was deleted.
func (c *controller) job(kindKey, ns, name string) (*watchedKind, *unstructured.Unstructured, bool) {
	c.mu.RLock()
	wk := c.kinds[kindKey]
	c.mu.RUnlock()
	if wk == nil {
		return nil, nil, false
	}
	if inf := wk.inf[c.scopeOf(ns)]; inf != nil {
		if obj, ok, _ := inf.GetIndexer().GetByKey(ns + "/" + name); ok {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				return wk, u, false
			}
		}
	}
	c.st.Lock()
	defer c.st.Unlock()
	if t := c.tombs[jobKey(kindKey, ns, name)]; t != nil {
		if c.now().Before(t.until) {
			return wk, t.obj, true
		}
		delete(c.tombs, jobKey(kindKey, ns, name))
	}
	return wk, nil, false
}

// ownerKind returns the watched kind of an owner reference, if it is watched.
func (c *controller) ownerKind(r metav1.OwnerReference) string {
	group, _, _ := strings.Cut(r.APIVersion, "/")
	if !strings.Contains(r.APIVersion, "/") {
		group = ""
	}
	key := group + "/" + r.Kind
	c.mu.RLock()
	defer c.mu.RUnlock()
	if wk := c.kinds[key]; wk != nil && len(wk.inf) > 0 {
		return key
	}
	return ""
}

// ownedByWatched reports whether a job is part of another watched job (a TrainJob's JobSet,
// an MPIJob's launcher Job): it is collected with its owner, never on its own.
func (c *controller) ownedByWatched(u *unstructured.Unstructured) bool {
	for _, r := range u.GetOwnerReferences() {
		if c.ownerKind(r) != "" {
			return true
		}
	}
	return false
}

// top climbs from a watched object to the outermost watched owner.
func (c *controller) top(kindKey string, u *unstructured.Unstructured) (string, *unstructured.Unstructured) {
	for range 5 {
		var next string
		var nu *unstructured.Unstructured
		for _, r := range u.GetOwnerReferences() {
			if k := c.ownerKind(r); k != "" {
				if _, o, _ := c.job(k, u.GetNamespace(), r.Name); o != nil && o.GetUID() == r.UID {
					next, nu = k, o
					break
				}
			}
		}
		if nu == nil {
			break
		}
		kindKey, u = next, nu
	}
	return kindKey, u
}

// jobOfPod finds the watched job a pod belongs to: its owners first, then the names of the
// controllers' labels, climbing to the outermost watched owner.
func (c *controller) jobOfPod(p *corev1.Pod) (string, *unstructured.Unstructured) {
	c.mu.RLock()
	keys := make([]string, 0, len(c.kinds))
	for k, wk := range c.kinds {
		if len(wk.inf) > 0 {
			keys = append(keys, k)
		}
	}
	c.mu.RUnlock()
	sort.Strings(keys)
	for _, r := range p.OwnerReferences {
		if k := c.ownerKind(r); k != "" {
			if _, u, _ := c.job(k, p.Namespace, r.Name); u != nil && u.GetUID() == r.UID {
				k, u = c.top(k, u)
				return jobKey(k, u.GetNamespace(), u.GetName()), u
			}
		}
	}
	for _, l := range podLabels {
		name := p.Labels[l.label]
		if name == "" {
			continue
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, l.group+"/") {
				continue
			}
			if _, u, _ := c.job(k, p.Namespace, name); u != nil {
				k, u = c.top(k, u)
				return jobKey(k, u.GetNamespace(), u.GetName()), u
			}
		}
	}
	return "", nil
}

// podsOf returns the pods of a job, sorted by name.
func (c *controller) podsOf(key string, u *unstructured.Unstructured) []*corev1.Pod {
	c.mu.RLock()
	inf := c.pods[c.scopeOf(u.GetNamespace())]
	c.mu.RUnlock()
	if inf == nil {
		return nil
	}
	items, _ := inf.GetIndexer().ByIndex(podIndex, u.GetNamespace()+"/"+u.GetName())
	var out []*corev1.Pod
	for _, it := range items {
		p, ok := it.(*corev1.Pod)
		if !ok {
			continue
		}
		if k, _ := c.jobOfPod(p); k == key {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

func (c *controller) nsSelected(ns string) bool {
	sel := c.opts.NamespaceSelector
	if sel == nil || sel.Empty() || c.nsInf == nil {
		return true
	}
	obj, ok, _ := c.nsInf.GetIndexer().GetByKey(ns)
	if !ok {
		return false
	}
	n, ok := obj.(*corev1.Namespace)
	return ok && sel.Matches(labels.Set(n.Labels))
}
