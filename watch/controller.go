package watch

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/coroner-dev/coroner/bundle/collect"
	"github.com/coroner-dev/coroner/store"
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
	busy      map[string]bool       // bundle paths (without extension) being written or read
	narrating map[string]bool       // bundle paths waiting for, or being given, a narrative
	hung      map[types.UID]trigger // running jobs checkHangs found without progress

	llm *narrations // the diagnoses waiting for the model (Options.Narrate)

	// storeMu makes one flush of the fleet store's queue at a time; rulesVersion keys the
	// analyses (store.RulesVersion of opts.Rules).
	storeMu      sync.Mutex
	rulesVersion string
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
	var rv string
	if opts.Store != nil {
		var err error
		if rv, err = store.RulesVersion(opts.Rules); err != nil {
			return nil, err
		}
	}
	return &controller{rulesVersion: rv,
		opts: opts, clients: c, kube: c.Kube, m: m, log: opts.Log,
		pol:   policy{PendingAfter: opts.PendingAfter, HoldPods: opts.HoldPods, OnSuccess: opts.OnSuccess, SkipOlderThan: opts.SkipOlderThan},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{Name: "jobs"}),
		podQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods"}),
		kinds: map[string]*watchedKind{}, scopes: scopes, pods: map[string]cache.SharedIndexInformer{},
		tombs: map[string]*tomb{}, seen: map[string]time.Time{}, gaveUp: map[types.UID]bool{}, busy: map[string]bool{},
		collected: map[types.UID]done{}, narrating: map[string]bool{}, hung: map[types.UID]trigger{},
		llm: newNarrations(opts.NarrateQueue),
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
	// The model's work runs beside the collects, one diagnosis at a time (a model server
	// answers one question at a time), so that it never holds up a bundle or an Event.
	var narrating sync.WaitGroup
	if c.opts.Narrate != nil {
		narrating.Add(1)
		go func() {
			defer narrating.Done()
			c.narrateAll(workCtx)
		}()
	}
	go c.every(infCtx, rediscoverEvery, func() {
		if err := c.discover(infCtx); err != nil {
			c.log.Warn("discovery failed", "err", err)
		}
	})
	go c.every(infCtx, 5*time.Second, c.countHeld)
	if c.opts.HangAfter > 0 {
		go c.every(infCtx, hangCheckEvery(c.opts.HangAfter), func() { c.checkHangs(infCtx) })
	}
	go c.retryStore(infCtx)

	select {
	case <-drain:
		c.log.Info("stopping: letting running collects finish", "grace", c.opts.ShutdownGrace.String())
	case <-leadCtx.Done():
		c.log.Warn("lost the lease: abandoning running collects")
	}
	c.queue.ShutDown()
	c.podQueue.ShutDown()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		// The collects are done: no narration is queued after this. The one running may
		// finish within the grace period; those still waiting go without a narrative.
		if left := c.llm.shut(); len(left) > 0 {
			c.log.Warn("stopping: diagnoses left without a narrative", "diagnoses", len(left))
			for _, n := range left {
				n.rep.Warnings = append(n.rep.Warnings, "no LLM narrative: coroner watch stopped before the model was asked")
				if err := writeReports(n.rep, n.p); err != nil {
					c.log.Error("could not write the reports", "bundle", n.p.bundle, "err", err)
				}
			}
		}
		narrating.Wait()
		close(done)
	}()
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
	prior := c.prior(u)
	d := decide(u, pods, prior, c.now(), c.pol)
	if d.trigger == nil && !d.done && d.recheck == 0 && c.opts.HangAfter > 0 {
		d.trigger = c.hangTrigger(u, prior)
	}
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
	delete(c.hung, u.GetUID())
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
