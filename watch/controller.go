package watch

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/coroner-dev/coroner/bundle/collect"
)

const (
	// maxRetries is how often a failed collect is tried again (5 s, 10 s, ... up to 5 min apart).
	maxRetries = 5
	// tombTTL is how long a deleted job that still needs a collect is remembered.
	tombTTL = 10 * time.Minute
	// rediscoverEvery is how often the served kinds are read again (a CRD installed later).
	rediscoverEvery = 5 * time.Minute
	// podIndex indexes pods by the names of the jobs they may belong to ("ns/name").
	podIndex = "coroner-job"
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

// watchedKind is a served kind with its informers, one per namespace scope.
type watchedKind struct {
	key string // group/Kind
	res collect.Resource
	inf map[string]cache.SharedIndexInformer
}

// tomb is a deleted job that still needs its collect.
type tomb struct {
	obj   *unstructured.Unstructured
	until time.Time
}

type controller struct {
	opts    Options
	clients *collect.Clients
	kube    kubernetes.Interface
	m       *metrics
	log     *slog.Logger
	pol     policy

	queue    workqueue.TypedRateLimitingInterface[string] // job keys: group/Kind/namespace/name
	podQueue workqueue.TypedRateLimitingInterface[string] // pod keys: namespace/name

	mu     sync.RWMutex
	cat    *collect.Catalog
	kinds  map[string]*watchedKind
	scopes []string // "" for all namespaces
	pods   map[string]cache.SharedIndexInformer
	nsInf  cache.SharedIndexInformer
	stop   <-chan struct{}

	st     sync.Mutex
	tombs  map[string]*tomb
	seen   map[string]time.Time // job key -> when its trigger was first seen
	gaveUp map[types.UID]bool   // jobs skipped or given up, until they are deleted
	// collected remembers the jobs this leader collected, for tombTTL: the informer may not
	// show the annotation yet, and a deleted job carries none.
	collected map[types.UID]done
	busy      map[string]bool // bundle paths (without extension) being written or read
}

// done is a collect this leader made.
type done struct {
	trigger string
	until   time.Time
}

func newController(opts Options, c *collect.Clients, m *metrics) (*controller, error) {
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Second, 5*time.Minute)
	scopes := append([]string(nil), opts.Namespaces...)
	if len(scopes) == 0 {
		scopes = []string{metav1.NamespaceAll}
	}
	sort.Strings(scopes)
	return &controller{
		opts: opts, clients: c, kube: c.Kube, m: m, log: opts.Log,
		pol:   policy{PendingAfter: opts.PendingAfter, HoldPods: opts.HoldPods, OnSuccess: opts.OnSuccess, SkipOlderThan: opts.SkipOlderThan},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{Name: "jobs"}),
		podQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods"}),
		kinds: map[string]*watchedKind{}, scopes: scopes, pods: map[string]cache.SharedIndexInformer{},
		tombs: map[string]*tomb{}, seen: map[string]time.Time{}, gaveUp: map[types.UID]bool{}, busy: map[string]bool{},
		collected: map[types.UID]done{},
	}, nil
}

func (c *controller) now() time.Time { return c.opts.Now() }

// run watches until leadCtx ends (everything running is abandoned) or drain closes (running
// collects get ShutdownGrace to finish). Either way every held pod is let go before it returns.
func (c *controller) run(leadCtx context.Context, drain <-chan struct{}, ready func()) error {
	infCtx, stopInformers := context.WithCancel(leadCtx)
	defer stopInformers()
	workCtx, cancelWork := context.WithCancel(leadCtx)
	defer cancelWork()
	c.stop = infCtx.Done()
	// Starting (discovery, the caches) ends early when asked to stop.
	startCtx, cancelStart := context.WithCancel(infCtx)
	defer cancelStart()
	go func() {
		select {
		case <-drain:
			cancelStart()
		case <-startCtx.Done():
		}
	}()

	if n, _ := removeStaleTemps(c.opts.Dir); n > 0 {
		c.log.Info("removed temporary files of interrupted collects", "files", n)
	}
	// The cluster may not answer yet (a restarting control plane): try until it does.
	err := wait.PollUntilContextCancel(startCtx, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.discover(ctx); err != nil {
			c.log.Warn("discovery failed; trying again", "err", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return c.finish(leadCtx)
	}
	if err := c.startPods(infCtx, startCtx); err != nil {
		if startCtx.Err() != nil {
			return c.finish(leadCtx)
		}
		return err
	}
	var synced []cache.InformerSynced
	c.mu.RLock()
	for _, inf := range c.pods {
		synced = append(synced, inf.HasSynced)
	}
	for _, k := range c.kinds {
		for _, inf := range k.inf {
			synced = append(synced, inf.HasSynced)
		}
	}
	if c.nsInf != nil {
		synced = append(synced, c.nsInf.HasSynced)
	}
	c.mu.RUnlock()
	if !cache.WaitForCacheSync(startCtx.Done(), synced...) {
		return c.finish(leadCtx)
	}
	c.log.Info("caches synced", "kinds", c.kindNames(), "namespaces", c.scopes, "holdPods", c.opts.HoldPods)
	if ready != nil {
		ready()
	}
	c.retain()

	var wg sync.WaitGroup
	for range c.opts.MaxCollects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(workCtx, c.queue, c.syncJob, c.jobGaveUp)
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(workCtx, c.podQueue, c.syncPod, nil)
		}()
	}
	go c.every(infCtx, rediscoverEvery, func() {
		if err := c.discover(infCtx); err != nil {
			c.log.Warn("discovery failed", "err", err)
		}
	})
	go c.every(infCtx, 5*time.Second, c.countHeld)

	select {
	case <-drain:
		c.log.Info("stopping: letting running collects finish", "grace", c.opts.ShutdownGrace.String())
	case <-leadCtx.Done():
		c.log.Warn("lost the lease: abandoning running collects")
	}
	c.queue.ShutDown()
	c.podQueue.ShutDown()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(c.opts.ShutdownGrace):
		c.log.Warn("running collects did not finish within the grace period; abandoning them")
		cancelWork()
		<-done
	}
	return c.finish(leadCtx)
}

// finish lets go of every held pod.
func (c *controller) finish(leadCtx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(leadCtx), 15*time.Second)
	defer cancel()
	n, err := c.releaseAll(ctx)
	if n > 0 || err != nil {
		c.log.Info("let go of held pods", "pods", n, "err", err)
	}
	c.m.podsHeld.Set(0)
	c.m.inFlight.Set(0)
	return nil
}

func (c *controller) every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// work processes a queue's keys until it shuts down; a failure is retried with backoff up to
// maxRetries, then handed to gaveUp.
func (c *controller) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error, gaveUp func(context.Context, string, error)) {
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		err := sync(ctx, key)
		switch {
		case err == nil:
			q.Forget(key)
		case ctx.Err() != nil:
			q.Forget(key) // abandoned: the next leader does it
		case q.NumRequeues(key) < maxRetries:
			c.log.Warn("will retry", "key", key, "err", err, "retry", q.NumRequeues(key)+1)
			q.AddRateLimited(key)
		default:
			q.Forget(key)
			if gaveUp != nil {
				gaveUp(ctx, key, err)
			}
		}
		q.Done(key)
	}
}

// --- discovery and informers

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
// deletion, phase and how its containers ended. A busy cluster's pods stay a few hundred
// bytes each.
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

// --- events from the informers

func (c *controller) jobChanged(wk *watchedKind, u *unstructured.Unstructured) {
	if c.ownedByWatched(u) || !c.nsSelected(u.GetNamespace()) {
		return
	}
	c.queue.Add(jobKey(wk.key, u.GetNamespace(), u.GetName()))
}

// jobDeleted remembers a deleted job that still needs its collect (a TTL or a user deleted it
// before watch got to it): its pods may still be there, held or not yet gone.
func (c *controller) jobDeleted(wk *watchedKind, u *unstructured.Unstructured) {
	if c.ownedByWatched(u) || !c.nsSelected(u.GetNamespace()) {
		return
	}
	key := jobKey(wk.key, u.GetNamespace(), u.GetName())
	pods := c.podsOf(key, u)
	d := decide(u, pods, c.prior(u), c.now(), c.pol)
	c.st.Lock()
	delete(c.gaveUp, u.GetUID())
	if d.trigger != nil {
		c.tombs[key] = &tomb{obj: u, until: c.now().Add(tombTTL)}
		c.queue.Add(key)
	}
	c.st.Unlock()
	c.enqueuePods(pods)
}

// prior is the trigger of a job's last collect: its annotation, or what this leader
// collected and the informer may not show yet.
func (c *controller) prior(u *unstructured.Unstructured) string {
	p := u.GetAnnotations()[AnnotationTrigger]
	c.st.Lock()
	defer c.st.Unlock()
	if d, ok := c.collected[u.GetUID()]; ok {
		if c.now().After(d.until) {
			delete(c.collected, u.GetUID())
		} else if !final(p) {
			p = d.trigger
		}
	}
	return p
}

func (c *controller) podChanged(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if key, _ := c.jobOfPod(p); key != "" {
		c.queue.Add(key)
	}
	if c.opts.HoldPods || hasFinalizer(p) {
		c.podQueue.Add(p.Namespace + "/" + p.Name)
	}
}

func (c *controller) enqueuePods(pods []*corev1.Pod) {
	if !c.opts.HoldPods {
		return
	}
	for _, p := range pods {
		c.podQueue.Add(p.Namespace + "/" + p.Name)
	}
}

// --- the job queue

// syncJob looks at one job and collects it when it needs it.
func (c *controller) syncJob(ctx context.Context, key string) error {
	kindKey, ns, name := splitJobKey(key)
	wk, u, gone := c.job(kindKey, ns, name)
	if u == nil || c.ownedByWatched(u) || !c.nsSelected(ns) {
		return nil
	}
	c.st.Lock()
	gaveUp := c.gaveUp[u.GetUID()]
	c.st.Unlock()
	pods := c.podsOf(key, u)
	d := decide(u, pods, c.prior(u), c.now(), c.pol)
	switch {
	case d.done || gaveUp:
		if d.tooOld {
			c.skip(key, u, "too-old")
		}
		c.forget(key, gone)
		c.enqueuePods(pods)
		return nil
	case d.recheck > 0:
		c.queue.AddAfter(key, d.recheck)
		return nil
	case d.trigger == nil:
		return nil
	}
	c.st.Lock()
	if _, ok := c.seen[key]; !ok {
		c.seen[key] = time.Now()
		c.m.triggers.WithLabelValues(d.trigger.Reason).Inc()
		c.log.Info("collecting", "job", key, "trigger", d.trigger.Reason, "pod", d.trigger.Pod)
	}
	c.st.Unlock()
	if err := c.collectJob(ctx, wk, u, *d.trigger); err != nil {
		return err
	}
	c.st.Lock()
	c.collected[u.GetUID()] = done{trigger: d.trigger.Reason, until: c.now().Add(tombTTL)}
	c.st.Unlock()
	c.forget(key, gone)
	c.enqueuePods(pods)
	return nil
}

// skip records once that a job was not collected.
func (c *controller) skip(key string, u *unstructured.Unstructured, reason string) {
	c.st.Lock()
	defer c.st.Unlock()
	if c.gaveUp[u.GetUID()] {
		return
	}
	c.gaveUp[u.GetUID()] = true
	c.m.skipped.WithLabelValues(reason).Inc()
	c.log.Info("not collecting", "job", key, "reason", reason)
}

func (c *controller) forget(key string, gone bool) {
	c.st.Lock()
	defer c.st.Unlock()
	delete(c.seen, key)
	if gone {
		delete(c.tombs, key)
	}
}

// jobGaveUp is called when a job's collect failed maxRetries times: an Event says so, and
// its pods are let go.
func (c *controller) jobGaveUp(ctx context.Context, key string, err error) {
	kindKey, ns, name := splitJobKey(key)
	_, u, gone := c.job(kindKey, ns, name)
	if u == nil {
		return
	}
	pods := c.podsOf(key, u)
	c.skip(key, u, "gave-up")
	c.log.Error("giving up on a job", "job", key, "err", err)
	msg := fit("coroner: collect failed: ", oneLine(err.Error()), "", maxEventMessage)
	if err := c.recordEvent(ctx, u, corev1.EventTypeWarning, ReasonCollectFailed, msg); err != nil {
		c.m.errors.WithLabelValues("event").Inc()
	}
	c.forget(key, gone)
	c.enqueuePods(pods)
}

// --- holding pods

func hasFinalizer(p *corev1.Pod) bool {
	for _, f := range p.Finalizers {
		if f == Finalizer {
			return true
		}
	}
	return false
}

func (c *controller) pod(ns, name string) *corev1.Pod {
	c.mu.RLock()
	inf := c.pods[c.scopeOf(ns)]
	c.mu.RUnlock()
	if inf == nil {
		return nil
	}
	obj, ok, _ := inf.GetIndexer().GetByKey(ns + "/" + name)
	if !ok {
		return nil
	}
	p, _ := obj.(*corev1.Pod)
	return p
}

// syncPod puts the finalizer on a pod of a watched job, or takes it off once the job needs
// nothing more, or the hold timed out.
func (c *controller) syncPod(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	p := c.pod(ns, name)
	if p == nil {
		return nil
	}
	has := hasFinalizer(p)
	hold, left, timedOut, jk := false, time.Duration(0), false, ""
	if c.opts.HoldPods {
		hold, left, timedOut, jk = c.shouldHold(p)
	}
	switch {
	case hold && !has && p.DeletionTimestamp == nil:
		return c.setFinalizer(ctx, p, true)
	case !hold && has:
		if timedOut {
			c.m.holdTimeouts.Inc()
			c.log.Warn("letting a held pod go: --hold-timeout passed", "pod", key, "job", jk)
		}
		return c.setFinalizer(ctx, p, false)
	case hold && has && p.DeletionTimestamp != nil:
		c.podQueue.AddAfter(key, left)
		if jk != "" {
			c.queue.Add(jk) // a pod going away may be what the job's collect waits for
		}
	}
	return nil
}

// shouldHold says whether a pod is to be held, for how long still, and why not.
func (c *controller) shouldHold(p *corev1.Pod) (hold bool, left time.Duration, timedOut bool, jobKey string) {
	key, u := c.jobOfPod(p)
	if u == nil {
		return false, 0, false, ""
	}
	left = c.opts.HoldTimeout
	if p.DeletionTimestamp != nil {
		held := c.now().Sub(p.DeletionTimestamp.Time)
		if held >= c.opts.HoldTimeout {
			return false, 0, true, key
		}
		left -= held
	}
	c.st.Lock()
	gaveUp := c.gaveUp[u.GetUID()]
	c.st.Unlock()
	if gaveUp {
		return false, 0, false, key
	}
	d := decide(u, c.podsOf(key, u), c.prior(u), c.now(), c.pol)
	return !d.done, left, false, key
}

// setFinalizer adds or removes coroner's finalizer with a strategic merge patch, which
// leaves the other finalizers alone.
func (c *controller) setFinalizer(ctx context.Context, p *corev1.Pod, add bool) error {
	patch := `{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + Finalizer + `"]}}`
	step := "release"
	if add {
		patch = `{"metadata":{"finalizers":["` + Finalizer + `"]}}`
		step = "hold"
	}
	_, err := c.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || (add && apierrors.IsForbidden(err) && p.DeletionTimestamp != nil) {
		return nil
	}
	if err != nil {
		c.m.errors.WithLabelValues(step).Inc()
		return fmt.Errorf("%s pod %s/%s: %w", step, p.Namespace, p.Name, err)
	}
	return nil
}

// releaseAll takes the finalizer off every pod that carries it.
func (c *controller) releaseAll(ctx context.Context) (int, error) {
	c.mu.RLock()
	var held []*corev1.Pod
	for _, inf := range c.pods {
		for _, it := range inf.GetIndexer().List() {
			if p, ok := it.(*corev1.Pod); ok && hasFinalizer(p) {
				held = append(held, p)
			}
		}
	}
	c.mu.RUnlock()
	var (
		mu    sync.Mutex
		first error
		n     int
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
	)
	for _, p := range held {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := c.setFinalizer(ctx, p, false)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			} else if err == nil {
				n++
			}
		}()
	}
	wg.Wait()
	return n, first
}

func (c *controller) countHeld() {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, inf := range c.pods {
		for _, it := range inf.GetIndexer().List() {
			if p, ok := it.(*corev1.Pod); ok && hasFinalizer(p) {
				n++
			}
		}
	}
	c.m.podsHeld.Set(float64(n))
}
