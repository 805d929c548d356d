package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/collect"
	"github.com/coroner-dev/coroner/report"
)

// timeLayout names bundles: the trigger's time in UTC, sortable.
const timeLayout = "20060102T150405Z"

// paths are the files of one collect.
type paths struct {
	base   string // <dir>/<ns>/<job>/<time>
	bundle string
	html   string
	json   string
}

func pathsOf(base string) paths {
	return paths{base: base, bundle: base + ".tar.gz", html: base + ".html", json: base + ".json"}
}

// bundlePaths chooses where a job's bundle goes: <dir>/<ns>/<job>/<time>.tar.gz. When that
// file already holds this job's bundle (written before a restart that came before the job
// was annotated) it is reused; when it holds another job's (a job of the same name), the
// uid is added to the name.
func (c *controller) bundlePaths(ctx context.Context, u *unstructured.Unstructured, at time.Time) (paths, bool, error) {
	dir := filepath.Join(c.opts.Dir, u.GetNamespace(), u.GetName())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return paths{}, false, err
	}
	base := filepath.Join(dir, at.UTC().Format(timeLayout))
	for _, b := range []string{base, base + "-" + shortUID(u.GetUID())} {
		p := pathsOf(b)
		if _, err := os.Stat(p.bundle); err != nil {
			return p, false, nil
		}
		if bundleUID(ctx, p.bundle, c.opts.Limits) == string(u.GetUID()) {
			return p, true, nil
		}
	}
	return pathsOf(base + "-" + shortUID(u.GetUID()) + "-" + c.now().UTC().Format(timeLayout)), false, nil
}

func shortUID(uid types.UID) string {
	s := string(uid)
	if len(s) > 8 {
		s = s[:8]
	}
	return s
}

// bundleUID is the uid of a bundle's target, "" when it cannot be read.
func bundleUID(ctx context.Context, path string, lim bundle.Limits) string {
	b, err := bundle.Open(ctx, path, lim)
	if err != nil {
		return ""
	}
	defer b.Close()
	if b.Manifest == nil {
		return ""
	}
	return b.Manifest.Target.UID
}

// collectJob collects a job, analyses the bundle, writes the reports beside it, records the
// outcome on the job (annotations, then an Event), runs the hook and applies retention.
// Only a failed collect is an error (it is retried); a failure after the bundle exists is
// recorded and the job counts as collected, so that it is never collected twice.
func (c *controller) collectJob(ctx context.Context, wk *watchedKind, u *unstructured.Unstructured, t trigger) error {
	key := jobKey(wk.key, u.GetNamespace(), u.GetName())
	at := t.At
	if at.IsZero() {
		at = c.now()
	}
	p, reuse, err := c.bundlePaths(ctx, u, at)
	if err != nil {
		c.m.errors.WithLabelValues("collect").Inc()
		return err
	}
	c.st.Lock()
	c.busy[p.base] = true
	c.st.Unlock()
	defer func() {
		c.st.Lock()
		delete(c.busy, p.base)
		c.st.Unlock()
	}()
	c.m.inFlight.Inc()
	defer c.m.inFlight.Dec()

	log := c.log.With("job", key, "bundle", p.bundle)
	if !reuse {
		if t.Reason == TriggerHang {
			c.triggerDumps(ctx, c.podsOf(key, u), log)
		}
		o := c.opts.Collect
		o.Kind, o.Name, o.Namespace = wk.res.String(), u.GetName(), u.GetNamespace()
		o.Last, o.Version, o.Now, o.Progress, o.Strict = u, c.opts.Version, c.opts.Now, nil, false
		c.mu.RLock()
		o.Catalog = c.cat
		c.mu.RUnlock()
		if c.opts.NewRedactor != nil {
			red, err := c.opts.NewRedactor()
			if err != nil {
				return err
			}
			o.Redactor = red
		}
		start := time.Now()
		res, err := collect.Collect(ctx, c.clients, o, p.bundle)
		c.m.collectTime.Observe(time.Since(start).Seconds())
		if err != nil {
			if ctx.Err() == nil {
				c.m.errors.WithLabelValues("collect").Inc()
			}
			return fmt.Errorf("collect: %w", err)
		}
		c.m.bundles.Inc()
		c.m.bundleBytes.Add(float64(res.Bytes))
		c.m.lastBundle.Set(float64(c.now().Unix()))
		log.Info("bundle written", "bytes", res.Bytes, "pods", res.Pods, "logs", res.Logs, "gaps", len(res.Gaps), "seconds", time.Since(start).Seconds())
	} else {
		log.Info("the bundle was written before a restart: not collecting again")
	}

	// The analysis, as `coroner analyze` does it.
	start := time.Now()
	uri := c.upload(ctx, u.GetNamespace(), u.GetName(), p.bundle, log)
	var rep *report.Report
	d, err := diagnoseBundle(ctx, p.bundle, c.opts.Rules, c.opts.Limits, c.opts.PendingAfter, c.opts.Version)
	if err == nil {
		rep = d.Report
		c.record(ctx, d, uri, log) // the bundle exists: the rows follow it
		d.Close()
	}
	c.m.analyzeTime.Observe(time.Since(start).Seconds())
	var typ, reason, msg string
	if err != nil {
		c.m.errors.WithLabelValues("analyze").Inc()
		log.Error("analysis failed", "err", err)
		typ, reason = corev1.EventTypeWarning, ReasonDiagnosed
		msg = fit("coroner: analysis failed: ", oneLine(err.Error()), "; bundle "+p.bundle, maxEventMessage)
	} else {
		reason, msg = summary(rep, rankOf(rep), p.html, maxEventMessage)
		typ = corev1.EventTypeNormal
		category := string(rep.Verdict)
		if rep.RootCause != nil {
			typ, category = corev1.EventTypeWarning, string(rep.RootCause.Category)
		}
		c.m.rootCauses.WithLabelValues(category).Inc()
	}

	// The reports exist before anything points at them.
	if rep != nil {
		if err := writeReports(rep, p); err != nil {
			c.m.errors.WithLabelValues("analyze").Inc()
			log.Error("could not write the reports", "err", err)
		}
	}
	// Recorded on the job: annotations first (they make the collect exactly-once), then the
	// Event. A refusal of either is a gap: counted, logged, and added to the report's warnings.
	var gaps []string
	if err := c.annotate(ctx, wk, u, t, p, msg); err != nil {
		c.m.errors.WithLabelValues("annotate").Inc()
		log.Warn("could not annotate the job", "err", err)
		gaps = append(gaps, "coroner watch could not annotate the job: "+err.Error())
	}
	if err := c.recordEvent(ctx, u, typ, reason, msg); err != nil {
		c.m.errors.WithLabelValues("event").Inc()
		log.Warn("could not record the Event on the job", "err", err)
		gaps = append(gaps, "coroner watch could not record the Event on the job: "+err.Error())
	}
	if rep != nil && len(gaps) > 0 {
		rep.Warnings = append(rep.Warnings, gaps...)
		if err := writeReports(rep, p); err != nil {
			c.m.errors.WithLabelValues("analyze").Inc()
			log.Error("could not write the reports", "err", err)
		}
	}
	c.st.Lock()
	if seen, ok := c.seen[key]; ok {
		c.m.latency.Observe(time.Since(seen).Seconds())
	}
	c.st.Unlock()
	log.Info("diagnosed", "trigger", t.Reason, "summary", msg)

	if c.opts.Exec != "" {
		c.hook(ctx, wk, u, t, p, rep)
	}
	// The model comes last: the bundle, the reports, the rule-based Event and the hook are
	// never held up by it.
	c.queueNarration(key, u, p, rep)
	c.retain()
	return nil
}

// annotate records the collect on the job with a merge patch of its annotations.
func (c *controller) annotate(ctx context.Context, wk *watchedKind, u *unstructured.Unstructured, t trigger, p paths, msg string) error {
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		AnnotationBundle: p.bundle, AnnotationReport: p.html, AnnotationTrigger: t.Reason, AnnotationSummary: msg,
	}}}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = c.clients.Dynamic.Resource(wk.res.GVR).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType, data, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: nothing to annotate
	}
	return err
}

// hook runs the --exec program for a bundle.
func (c *controller) hook(ctx context.Context, wk *watchedKind, u *unstructured.Unstructured, t trigger, p paths, rep *report.Report) {
	env := map[string]string{
		"KIND": u.GetKind(), "NAMESPACE": u.GetNamespace(), "NAME": u.GetName(), "UID": string(u.GetUID()),
		"TRIGGER": t.Reason, "VERDICT": "", "CATEGORY": "",
	}
	if rep != nil {
		env["VERDICT"] = string(rep.Verdict)
		if rep.RootCause != nil {
			env["CATEGORY"] = string(rep.RootCause.Category)
		}
	}
	start := time.Now()
	out, err := runHook(ctx, c.opts.Exec, c.opts.ExecTimeout, hookRun{Bundle: p.bundle, HTML: p.html, JSON: p.json, Env: env})
	if err != nil {
		c.m.hooks.WithLabelValues("failed").Inc()
		c.m.errors.WithLabelValues("exec").Inc()
		c.log.Warn("the exec hook failed", "bundle", p.bundle, "err", err, "output", out)
		return
	}
	c.m.hooks.WithLabelValues("ok").Inc()
	c.log.Info("the exec hook ran", "bundle", p.bundle, "seconds", time.Since(start).Seconds(), "output", out)
}

// retain applies --keep, --max-bytes (per namespace), --max-age and --max-dir-bytes, sparing
// the bundles in use.
func (c *controller) retain() {
	r := retention{Keep: c.opts.Keep, MaxBytes: c.opts.MaxBytes, MaxAge: c.opts.MaxAge, MaxDirBytes: c.opts.MaxDirBytes}
	n, left, err := prune(c.opts.Dir, r, c.now(), func(base string) bool {
		c.st.Lock()
		defer c.st.Unlock()
		return c.busy[base] || c.narrating[base]
	})
	if err != nil {
		c.m.errors.WithLabelValues("prune").Inc()
		c.log.Warn("retention", "err", err)
	}
	if n > 0 {
		c.m.pruned.Add(float64(n))
		c.log.Info("retention removed old bundles", "bundles", n)
	}
	var bytes int64
	for _, s := range left {
		bytes += s.bytes
	}
	c.m.stored.WithLabelValues("bundles").Set(float64(len(left)))
	c.m.stored.WithLabelValues("bytes").Set(float64(bytes))
}
