package watch

import (
	"bufio"
	"context"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coroner-dev/coroner/bundle/collect"
)

// TriggerHang: a running job whose ranks printed nothing for --fr-trigger-after; its flight
// recorder dumps were asked for through the debug pipe before the collect. Like pending, it is
// not final: the job is collected again when it ends.
const TriggerHang = "hang"

// hangCheckEvery is how often running jobs are looked at for a hang: a quarter of the
// threshold, within [1s, 30s].
func hangCheckEvery(after time.Duration) time.Duration {
	return min(max(after/4, time.Second), 30*time.Second)
}

// checkHangs looks at every running job not yet collected whose running containers set a
// debug pipe (collect.DumpPipe): when the newest line any of them printed (its kubelet
// timestamp; the container's start when it printed none) is older than HangAfter, the job is
// marked hung and queued. Only those containers' last log line is read: a job that set no
// pipe costs nothing.
func (c *controller) checkHangs(ctx context.Context) {
	c.mu.RLock()
	var keys []string
	var jobs []*unstructured.Unstructured
	for _, wk := range c.kinds {
		for _, inf := range wk.inf {
			for _, obj := range inf.GetStore().List() {
				if u, ok := obj.(*unstructured.Unstructured); ok {
					keys = append(keys, jobKey(wk.key, u.GetNamespace(), u.GetName()))
					jobs = append(jobs, u)
				}
			}
		}
	}
	c.mu.RUnlock()
	now := c.now()
	for i, u := range jobs {
		if ctx.Err() != nil {
			return
		}
		if assess(u).phase != phaseRunning || c.prior(u) != "" || c.ownedByWatched(u) || !c.nsSelected(u.GetNamespace()) {
			continue
		}
		c.st.Lock()
		_, marked := c.hung[u.GetUID()]
		c.st.Unlock()
		if marked {
			continue
		}
		last, ok := c.lastProgress(ctx, c.podsOf(keys[i], u), now.Add(-c.opts.HangAfter))
		if !ok || now.Sub(last) < c.opts.HangAfter {
			continue
		}
		c.log.Info("no progress: asking the ranks for their flight recorder dumps", "job", keys[i], "lastLine", last.UTC().Format(time.RFC3339))
		c.st.Lock()
		c.hung[u.GetUID()] = trigger{Reason: TriggerHang, At: last.Add(c.opts.HangAfter)}
		c.st.Unlock()
		c.queue.Add(keys[i])
	}
}

// lastProgress is the time of the newest log line of the pods' running containers that set a
// debug pipe; false when none does. It stops reading at the first line after recent: the job
// progresses, and a large job costs one log read per check while it does.
func (c *controller) lastProgress(ctx context.Context, pods []*corev1.Pod, recent time.Time) (time.Time, bool) {
	var last time.Time
	found := false
	for _, p := range pods {
		started := map[string]time.Time{}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running != nil {
				started[s.Name] = s.State.Running.StartedAt.Time
			}
		}
		for _, ct := range p.Spec.Containers {
			at, running := started[ct.Name]
			if stem, prefix := collect.DumpPipe(ct); !running || stem == "" || prefix == "" {
				continue
			}
			found = true
			if t := c.lastLine(ctx, p, ct.Name); t.After(at) {
				at = t
			}
			if at.After(last) {
				last = at
			}
			if last.After(recent) {
				return last, true
			}
		}
	}
	return last, found
}

// lastLine is the kubelet timestamp of a container's last log line (zero when none is read).
func (c *controller) lastLine(ctx context.Context, p *corev1.Pod, container string) time.Time {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tail, limit := int64(1), int64(64<<10)
	rc, err := c.kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, TailLines: &tail, LimitBytes: &limit, Timestamps: true}).Stream(ctx)
	if err != nil {
		return time.Time{}
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 4096), int(limit))
	var at time.Time
	for sc.Scan() {
		ts, _, _ := strings.Cut(sc.Text(), " ")
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			at = t
		}
	}
	return at
}

// hangTrigger is the hang trigger checkHangs set for a job still running and not yet
// collected, or nil.
func (c *controller) hangTrigger(u *unstructured.Unstructured, prior string) *trigger {
	c.st.Lock()
	defer c.st.Unlock()
	t, ok := c.hung[u.GetUID()]
	if !ok {
		return nil
	}
	if prior != "" || assess(u).phase != phaseRunning {
		delete(c.hung, u.GetUID())
		return nil
	}
	return &t
}

// triggerDumps writes the debug pipes of a hung job's running containers and waits for
// their dumps, which the collect then reads. The pods are read again: the informer keeps no
// container spec but the flight recorder's variables.
func (c *controller) triggerDumps(ctx context.Context, pods []*corev1.Pod, log *slog.Logger) {
	var full []*corev1.Pod
	for _, p := range pods {
		fp, err := c.kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			log.Warn("hang: could not read a pod", "pod", p.Name, "err", err)
			continue
		}
		full = append(full, fp)
	}
	for _, t := range collect.TriggerDumps(ctx, full, c.opts.Collect.Exec, c.opts.DumpTrigger) {
		if t.Err != nil {
			c.m.errors.WithLabelValues("fr-trigger").Inc()
			log.Warn("hang: flight recorder dump", "pod", t.Pod, "container", t.Container, "ranks", t.Ranks, "dumped", t.Dumped, "err", t.Err)
			continue
		}
		log.Info("hang: flight recorder dumps written", "pod", t.Pod, "container", t.Container, "ranks", t.Dumped)
	}
}
