package watch

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/store"
)

// upload copies a bundle to the bundle store (Options.Bucket) under
// cluster/namespace/job/time.tar.gz, applies the bucket's retention, and returns the bundle's
// URI: the object's, or the local file's when there is no bucket or the upload failed (the
// bundle stays on the volume either way).
func (c *controller) upload(ctx context.Context, namespace, job, bundlePath string, log *slog.Logger) string {
	local := "file://" + filepath.ToSlash(bundlePath)
	b := c.opts.Bucket
	if b == nil {
		return local
	}
	start := time.Now()
	uri, err := b.Put(ctx, b.Key(c.opts.Cluster, namespace, job, filepath.Base(bundlePath)), bundlePath)
	if err != nil {
		c.m.errors.WithLabelValues("upload").Inc()
		log.Error("could not upload the bundle; it stays on the volume", "err", err)
		return local
	}
	c.m.uploads.Inc()
	log.Info("bundle uploaded", "uri", uri, "seconds", time.Since(start).Seconds())
	if c.opts.BucketKeep > 0 || c.opts.BucketMaxAge > 0 {
		removed, err := b.Retain(ctx, c.opts.BucketKeep, c.opts.BucketMaxAge, c.now())
		if err != nil {
			c.m.errors.WithLabelValues("prune").Inc()
			log.Warn("retention of the bundle store failed", "err", err)
		}
		if len(removed) > 0 {
			c.m.pruned.Add(float64(len(removed)))
			log.Info("bundles removed from the bundle store by retention", "count", len(removed))
		}
	}
	return uri
}

// storeQueue is the directory, under Options.Dir, where diagnoses wait for the fleet store.
const storeQueue = ".store-queue"

// storeTimeout bounds one flush of the queue, so that a store that hangs holds up no collect.
const storeTimeout = 30 * time.Second

// record queues a diagnosis's rows for the fleet store, on the volume beside the bundle, and
// tries to write the queue at once; what the store does not take now is written by the
// retry loop (runStore) or after a restart. Nothing here fails the collect.
func (c *controller) record(ctx context.Context, d *diagnose.Diagnosis, bundleURI string, log *slog.Logger) {
	if c.opts.Store == nil {
		return
	}
	a, err := store.FromDiagnosis(ctx, d, store.Meta{
		Cluster: c.opts.Cluster, BundleURI: bundleURI,
		RulesVersion: c.rulesVersion, AnalyzedAt: c.now(),
	})
	if err == nil {
		_, err = c.storeQueue().Add(a)
	}
	if err != nil {
		c.m.errors.WithLabelValues("store").Inc()
		log.Error("could not queue the diagnosis for the fleet store", "err", err)
		return
	}
	c.flushStore(ctx)
}

func (c *controller) storeQueue() *store.Queue {
	return &store.Queue{Dir: filepath.Join(c.opts.Dir, storeQueue)}
}

// flushStore writes what waits in the queue, one flush at a time.
func (c *controller) flushStore(ctx context.Context) {
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	q := c.storeQueue()
	n, err := q.Flush(ctx, c.opts.Store)
	c.m.storeWrites.WithLabelValues("ok").Add(float64(n))
	pending, _ := q.Pending()
	c.m.storeQueued.Set(float64(len(pending)))
	if err != nil {
		c.m.storeWrites.WithLabelValues("failed").Inc()
		c.log.Warn("the fleet store did not take the diagnoses; they wait on the volume", "queued", len(pending), "err", err)
		return
	}
	if n > 0 {
		c.log.Info("diagnoses written to the fleet store", "rows", n)
	}
}

// retryStore writes what the queue holds (what a previous run left, what the store refused):
// once at the start, then every StoreRetry until ctx ends.
func (c *controller) retryStore(ctx context.Context) {
	if c.opts.Store == nil {
		return
	}
	flush := func() {
		if pending, err := c.storeQueue().Pending(); err == nil && len(pending) > 0 {
			c.flushStore(ctx)
		}
	}
	flush()
	c.every(ctx, c.opts.StoreRetry, flush)
}
