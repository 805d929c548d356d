package watch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

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
			c.log.Warn("letting a held pod go: its hold timeout passed", "pod", key, "job", jk)
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
