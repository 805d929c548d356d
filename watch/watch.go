// Package watch runs coroner inside a cluster: it watches the training jobs the cluster
// serves, and when one fails (or succeeds with a failed pod, or sits pending too long) it runs
// the same collect as `coroner collect` and the same analysis as `coroner analyze`, writes the
// bundle and its reports, records the root cause on the job (an Event and annotations), and
// optionally holds the job's pods (a finalizer) until their evidence is collected.
//
// One replica works at a time (a Lease); a job's bundle is recorded on the job so that a
// restart or another replica never collects it twice.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bucket"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/collect"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/report"
	"github.com/coroner-dev/coroner/store"
)

// Annotations watch writes on a job it collected, and the finalizer it puts on pods.
const (
	AnnotationBundle  = "coroner.dev/bundle"  // the bundle's path in the watcher's volume
	AnnotationReport  = "coroner.dev/report"  // the HTML report's path
	AnnotationTrigger = "coroner.dev/trigger" // why it was collected (failed, succeeded, pod-failed, pending)
	AnnotationSummary = "coroner.dev/summary" // the Event's message
	Finalizer         = "coroner.dev/hold"    // on pods, with --hold-pods
)

// Options configure a watcher. Run fills in the defaults of zero values where it says so.
type Options struct {
	// Dir receives <namespace>/<job>/<time>.tar.gz, .html and .json.
	Dir string
	// Namespaces to watch; empty watches all.
	Namespaces []string
	// NamespaceSelector, when not empty, keeps only jobs in namespaces with matching labels.
	NamespaceSelector labels.Selector
	// Selector keeps only the training jobs with matching labels (nil: all).
	Selector labels.Selector
	// JobSelector opts batch Jobs in: only those matching it are watched (nil: none).
	JobSelector labels.Selector

	// PendingAfter collects a job nothing of which ran for this long (0: never).
	PendingAfter time.Duration
	// HangAfter, when positive, collects a running job whose containers that set a debug pipe
	// (TORCH_NCCL_DEBUG_INFO_PIPE_FILE) printed no log line for this long, after asking its
	// ranks for their flight recorder dumps through that pipe (collect.TriggerDumps, with
	// Collect.Exec, which it needs). DumpTrigger bounds the wait for the dumps.
	HangAfter   time.Duration
	DumpTrigger collect.TriggerOptions
	// OnSuccess says which succeeded jobs are collected: OnSuccessFailedPods (default),
	// OnSuccessAll or OnSuccessNone.
	OnSuccess string
	// SkipOlderThan leaves alone jobs that failed longer ago than this when first seen (0: none).
	SkipOlderThan time.Duration
	// HoldPods puts a finalizer on the pods of watched jobs so that their deletion waits for
	// the collect, at most HoldTimeout (default 10m) after the deletion was asked.
	HoldPods    bool
	HoldTimeout time.Duration

	// Retention of the bundle directory (0: no bound). Keep and MaxBytes bound each namespace
	// on its own, so that one namespace's failures never evict another's bundles; MaxDirBytes
	// bounds the directory, taking from the namespace that stores the most first.
	Keep        int
	MaxBytes    int64
	MaxAge      time.Duration
	MaxDirBytes int64

	// MaxCollects bounds the collects (with their analyses) running at once (default 4).
	MaxCollects int
	// Collect holds the limits of each collect, as `coroner collect` takes them: Since,
	// MaxLogBytes, MaxTotalLogBytes, LogIdleTimeout, Concurrency. The rest is set per job.
	Collect collect.Options
	// NewRedactor makes the redactor of one collect (nil: no redaction).
	NewRedactor func() (collect.Redactor, error)
	// Rules and Limits are those of the analysis.
	Rules  *analyze.RuleSet
	Limits bundle.Limits

	// Exec is a program run after each bundle with the bundle's path as its one argument.
	Exec        string
	ExecTimeout time.Duration

	// Narrate, when set, adds a model's narrative to each diagnosis (coroner watch --llm). It
	// runs after the bundle, the reports and the rule-based Event, one diagnosis at a time, and
	// never holds up a collect. d is the bundle diagnosed again, whose index gives the prompt's
	// log windows (nil when it could not be read again); rep is the report written beside the
	// bundle. It sets rep.LLM (with a Failure when there is no narrative: the model is down,
	// slow, not pulled) and adds its warnings to rep.Warnings; its error is for an interrupted
	// run only.
	Narrate func(ctx context.Context, d *diagnose.Diagnosis, rep *report.Report) error
	// NarrateQueue bounds the diagnoses waiting for the model (default 256); past it a
	// diagnosis goes without a narrative, with a warning and a counted error.
	NarrateQueue int
	// Store, when set, receives each diagnosis as rows of the fleet store: queued first on the
	// volume (Dir/.store-queue), so that a store that is down loses nothing, and retried every
	// StoreRetry (default 30s). Cluster names the cluster in those rows.
	Store      store.Putter
	Cluster    string
	StoreRetry time.Duration
	// Bucket, when set, receives a copy of each bundle (cluster/namespace/job/time.tar.gz under
	// its prefix; the store's rows then point at it), and keeps at most BucketKeep per
	// namespace and none older than BucketMaxAge (0: no bound).
	Bucket       *bucket.Bucket
	BucketKeep   int
	BucketMaxAge time.Duration

	// MetricsAddr is where /metrics, /healthz and /readyz are served ("" serves nothing).
	MetricsAddr string

	// LeaderElection: one replica collects at a time.
	LeaderElection LeaderElection
	// Identity names this replica in the Lease and in its Events.
	Identity string
	// ShutdownGrace is how long running collects may finish once asked to stop (default 20s);
	// then they are abandoned (nothing is written) and the next leader collects those jobs.
	ShutdownGrace time.Duration
	// Resync is how often every job is looked at again (default 5m).
	Resync time.Duration

	Version string
	Log     *slog.Logger
	Now     func() time.Time
	// Started, when set, is told where the metrics server listens.
	Started func(addr string)
}

// LeaderElection configures the Lease.
type LeaderElection struct {
	Enabled       bool
	Namespace     string
	Name          string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		return errors.New("no bundle directory")
	}
	if o.MaxCollects <= 0 {
		o.MaxCollects = 4
	}
	if o.NarrateQueue <= 0 {
		o.NarrateQueue = defaultNarrateQueue
	}
	if o.HoldTimeout <= 0 {
		o.HoldTimeout = 10 * time.Minute
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 20 * time.Second
	}
	if o.Resync <= 0 {
		o.Resync = 5 * time.Minute
	}
	if o.StoreRetry <= 0 {
		o.StoreRetry = 30 * time.Second
	}
	if o.ExecTimeout <= 0 {
		o.ExecTimeout = 10 * time.Minute
	}
	if o.HangAfter > 0 && o.Collect.Exec == nil {
		return errors.New("the hang trigger writes the debug pipes through pods/exec: it needs Collect.Exec")
	}
	if o.OnSuccess == "" {
		o.OnSuccess = OnSuccessFailedPods
	}
	switch o.OnSuccess {
	case OnSuccessNone, OnSuccessFailedPods, OnSuccessAll:
	default:
		return fmt.Errorf("on-success %q: want %s, %s or %s", o.OnSuccess, OnSuccessNone, OnSuccessFailedPods, OnSuccessAll)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rules == nil {
		var err error
		if o.Rules, err = diagnose.BuiltinRules(); err != nil {
			return err
		}
	}
	if o.Limits == (bundle.Limits{}) {
		o.Limits = bundle.DefaultLimits()
	}
	le := &o.LeaderElection
	if le.Enabled {
		if le.Namespace == "" {
			return errors.New("leader election needs a namespace for its Lease")
		}
		if le.Name == "" {
			le.Name = "coroner-watch"
		}
		if le.LeaseDuration <= 0 {
			le.LeaseDuration = 15 * time.Second
		}
		if le.RenewDeadline <= 0 {
			le.RenewDeadline = 10 * time.Second
		}
		if le.RetryPeriod <= 0 {
			le.RetryPeriod = 2 * time.Second
		}
	}
	if o.Identity == "" {
		h, _ := os.Hostname()
		o.Identity = h
	}
	return os.MkdirAll(o.Dir, 0o755)
}

// Run watches until ctx is done or, with leader election, until the lease is lost (an error:
// the process should exit and be restarted as a candidate). On ctx's end it stops taking new
// collects, lets running ones finish for ShutdownGrace, lets go of every pod it holds, and
// then gives up the Lease so that another replica takes over at once.
func Run(ctx context.Context, c *collect.Clients, opts Options) error {
	if err := opts.defaults(); err != nil {
		return err
	}
	w := &watcher{opts: opts, clients: c}
	w.m = newMetrics(opts.Version, w.queueLen, w.llmQueueLen)
	if opts.MetricsAddr != "" {
		srv, err := startServer(opts.MetricsAddr, w.m)
		if err != nil {
			return fmt.Errorf("metrics address: %w", err)
		}
		defer srv.stop()
		w.srv = srv
		if opts.Started != nil {
			opts.Started(srv.Addr())
		}
	}
	log := opts.Log
	if !opts.LeaderElection.Enabled {
		log.Info("watching without leader election", "identity", opts.Identity)
		w.m.leader.Set(1)
		return w.lead(context.WithoutCancel(ctx), ctx.Done())
	}

	le := opts.LeaderElection
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     c.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: opts.Identity},
	}
	// The elector's context outlives ctx: on shutdown the work drains first, and only then is
	// the Lease given up (ReleaseOnCancel), so that the next leader never overlaps a collect.
	electCtx, cancelElect := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElect()
	var (
		mu      sync.Mutex
		leading bool // a lead is running
		stopped bool // the elector returned: no lead may start
		leadErr error
		wg      sync.WaitGroup
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: le.Name, ReleaseOnCancel: true,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				mu.Lock()
				if stopped {
					mu.Unlock()
					return
				}
				leading = true
				wg.Add(1)
				mu.Unlock()
				defer wg.Done()
				log.Info("leading: watching jobs", "lease", le.Namespace+"/"+le.Name, "identity", opts.Identity)
				w.m.leader.Set(1)
				err := w.lead(leadCtx, ctx.Done())
				w.m.leader.Set(0)
				mu.Lock()
				leadErr = err
				mu.Unlock()
				cancelElect() // drained (or lost): give the Lease up
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != opts.Identity {
					log.Info("standing by", "leader", id, "identity", opts.Identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	if w.srv != nil {
		w.srv.ready.Store(true) // a standby is ready: it waits for the Lease
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-electCtx.Done():
			return
		}
		mu.Lock()
		l := leading
		mu.Unlock()
		if !l {
			cancelElect() // a leader cancels it itself once drained
		}
	}()
	elector.Run(electCtx)
	mu.Lock()
	stopped = true
	mu.Unlock()
	wg.Wait()
	if leadErr != nil {
		return leadErr
	}
	if ctx.Err() == nil {
		return errors.New("lost the leader lease; exiting so that a restart stands again")
	}
	return nil
}

// watcher is one replica: its metrics and, while it leads, its controller.
type watcher struct {
	opts    Options
	clients *collect.Clients
	m       *metrics
	srv     *server

	mu   sync.Mutex
	ctrl *controller
}

func (w *watcher) queueLen() int {
	return w.ofController(func(c *controller) int { return c.queue.Len() })
}

func (w *watcher) llmQueueLen() int {
	return w.ofController(func(c *controller) int { return c.llm.len() })
}

// ofController reads a gauge of the controller while one runs (0 otherwise).
func (w *watcher) ofController(f func(*controller) int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctrl == nil {
		return 0
	}
	return f(w.ctrl)
}

// lead runs the controller until leadCtx ends (abandon at once) or drain closes (finish).
func (w *watcher) lead(leadCtx context.Context, drain <-chan struct{}) error {
	c, err := newController(w.opts, w.clients, w.m)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.ctrl = c
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.ctrl = nil
		w.mu.Unlock()
	}()
	var ready func()
	if w.srv != nil {
		ready = func() { w.srv.ready.Store(true) }
	}
	return c.run(leadCtx, drain, ready)
}
