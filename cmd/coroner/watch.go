package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/coroner-dev/coroner/bucket"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/collect"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/narrate/ollama"
	"github.com/coroner-dev/coroner/report"
	"github.com/coroner-dev/coroner/store"
	"github.com/coroner-dev/coroner/watch"
)

var klogOnce sync.Once

// WatchOptions hold everything `coroner watch` needs; tests build them directly.
type WatchOptions struct {
	Dir               string
	Namespaces        []string
	NamespaceSelector string
	Selector          string
	JobSelector       string
	PendingAfter      time.Duration
	FRTriggerAfter    time.Duration
	FRTriggerWait     time.Duration
	OnSuccess         string
	SkipOlderThan     time.Duration
	HoldPods          bool
	HoldTimeout       time.Duration
	Keep              int
	MaxBytes          int64
	MaxAge            time.Duration
	MaxDirBytes       int64
	MaxCollects       int

	// The limits of each collect, as `coroner collect` takes them.
	CollectLimits
	// The analysis.
	RuleDirs []string
	Limits   bundle.Limits

	Exec        string
	ExecTimeout time.Duration
	// Store keeps every diagnosis in the fleet store (store.go); what it refuses is written
	// again every StoreRetry.
	Store      StoreOptions
	StoreRetry time.Duration
	// BundleStore (s3://bucket/prefix) receives a copy of each bundle, with its own retention.
	BundleStore       string
	BundleStoreKeep   int
	BundleStoreMaxAge time.Duration

	// The LLM step (--llm), with analyze's flags and defaults but the collect's --redact-rules.
	LLM LLMOptions

	MetricsAddr    string
	LeaderElect    bool
	LeaseNamespace string
	LeaseName      string
	Identity       string
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration
	ShutdownGrace  time.Duration
	LogFormat      string

	Kubeconfig string
	Overrides  clientcmd.ConfigOverrides
	// Started, when set, is told where /metrics listens (tests).
	Started func(addr string)
}

// NewCmdWatch builds `coroner watch`. runF replaces the run function in tests.
func NewCmdWatch(streams *IOStreams, runF func(*WatchOptions) error) *cobra.Command {
	opts := &WatchOptions{Limits: bundle.DefaultLimits()}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Run in the cluster: collect and diagnose every failed training job before its evidence is gone",
		Long: `Watch the training jobs the cluster serves (PyTorchJob and the other Kubeflow kinds, MPIJob,
TrainJob, JobSet, ColossalAIJob..., and batch Jobs that match --job-selector). When one fails,
succeeds while a pod of it failed, or has nothing running after --pending-after, run the same
collect as 'coroner collect' and the same analysis as 'coroner analyze', and write

  DIR/<namespace>/<job>/<time>.tar.gz   the bundle
  DIR/<namespace>/<job>/<time>.html     the report, and .json beside it

then record the root cause on the job, so that 'kubectl describe' shows it: an Event
("coroner: cuda-oom at train-job-worker-4 (rank 5): CUDA out of memory; report DIR/...html")
and the annotations coroner.dev/bundle, coroner.dev/report, coroner.dev/trigger and
coroner.dev/summary. A job annotated so is never collected again, by a restart or by another
replica. Without --hold-pods a job is collected as soon as its first pod fails; with it, the
job's pods carry the finalizer coroner.dev/hold so that their deletion waits for the collect
(at most --hold-timeout), and every hold is let go when watch stops.

Retention runs after each bundle: --keep and --max-bytes bound each namespace on its own, so
that one namespace's failures never evict another's bundles; --max-dir-bytes bounds the
directory, removing first from the namespace that stores the most; --max-age bounds all.

With --llm, a local model (Ollama, as 'coroner analyze --llm' asks it) narrates each diagnosis
after its bundle, reports and Event exist, one diagnosis at a time: the reports are written again
with the narrative, and a second Event ("Narrative") carries the model's one line, marked as the
model's, saying so when it disagrees with coroner's verdict. The verdict, the RootCause Event,
the annotations, the metrics of root causes and the hook's variables stay the rules'. A model
that is down or slow is a warning in the report and coroner_watch_errors_total{step="llm"}.
--prompt-dir is read again for each narrative, so a mounted ConfigMap's change is used without a
restart; answers are cached in --llm-cache-dir (default DIR/.llm-cache), so a restart asks nothing
twice.

With --store (default $CORONER_STORE, which the Deployment takes from a Secret) every diagnosis
is also written to the fleet store (docs/fleet.md), after the bundle: queued first in
DIR/.store-queue, so that a store that is down loses nothing; it is written again every
--store-retry. --cluster-name names the cluster in its rows. With --bundle-store each bundle is
also copied to object storage (s3://bucket/prefix/cluster/namespace/job/time.tar.gz), which
keeps its own retention (--bundle-store-keep, --bundle-store-max-age) and which analyze and
search read from.

Replicas elect a leader through a Lease; only the leader collects. /metrics (Prometheus),
/healthz and /readyz are served on --metrics-address. deploy/watch/ has the manifests.
`,
		Example: `  coroner watch --dir /var/lib/coroner --hold-pods
  coroner watch -n ml -n team-a --pending-after 30m --keep 500 --max-bytes 5Gi --max-dir-bytes 40Gi
  coroner watch --namespace-selector coroner.dev/watch=true --exec /usr/local/bin/upload-bundle
  coroner watch --llm --ollama-host http://ollama.ollama:11434 --prompt-dir /etc/coroner/prompts`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runWatch(cmd.Context(), opts, streams)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Dir, "dir", "/var/lib/coroner", "write bundles and reports under `DIR`")
	f.StringSliceVarP(&opts.Namespaces, "namespace", "n", nil, "watch only these namespaces (repeatable; default all)")
	f.StringVar(&opts.NamespaceSelector, "namespace-selector", "", "watch only namespaces whose labels match this `SELECTOR`")
	f.StringVarP(&opts.Selector, "selector", "l", "", "watch only training jobs whose labels match this `SELECTOR`")
	f.StringVar(&opts.JobSelector, "job-selector", "coroner.dev/watch=true", "batch Jobs are watched only when their labels match this `SELECTOR` (empty: none)")
	f.DurationVar(&opts.PendingAfter, "pending-after", time.Hour, "collect a job nothing of which has run for this long (0: never)")
	f.DurationVar(&opts.FRTriggerAfter, "fr-trigger-after", 0, "a running job whose containers set TORCH_NCCL_DEBUG_INFO_PIPE_FILE and printed no log line for this long is hung: write its ranks' debug pipes through pods/exec, wait for their flight recorder dumps, collect and diagnose it (needs --flight-recorder-exec; keep it below the NCCL timeout; 0: never)")
	f.DurationVar(&opts.FRTriggerWait, "fr-trigger-wait", 2*time.Minute, "how long --fr-trigger-after waits for the dumps after writing the pipes")
	f.StringVar(&opts.OnSuccess, "on-success", watch.OnSuccessFailedPods, "succeeded jobs to collect: failed-pods (one of its containers exited non-zero), all, none")
	f.DurationVar(&opts.SkipOlderThan, "skip-older-than", 24*time.Hour, "leave alone jobs that failed longer ago than this when first seen (0: collect all)")
	f.BoolVar(&opts.HoldPods, "hold-pods", false, "hold the pods of watched jobs with a finalizer until they are collected")
	f.DurationVar(&opts.HoldTimeout, "hold-timeout", 10*time.Minute, "never hold a pod longer than this after its deletion was asked")
	f.IntVar(&opts.Keep, "keep", 1000, "keep at most this many bundles per namespace, removing the oldest (0: no bound)")
	addSizeFlagOrZero(cmd, &opts.MaxBytes, "max-bytes", "keep each namespace's bundles and reports within this size, removing the oldest (e.g. 5Gi)")
	f.DurationVar(&opts.MaxAge, "max-age", 0, "remove bundles older than this (0: never)")
	addSizeFlagOrZero(cmd, &opts.MaxDirBytes, "max-dir-bytes", "keep all bundles and reports within this size, removing the oldest of the namespace that stores the most (e.g. 45Gi)")
	f.IntVar(&opts.MaxCollects, "max-collects", 4, "collects (with their analyses) running at once")
	addCollectLimitFlags(cmd, &opts.CollectLimits)
	f.StringArrayVar(&opts.RuleDirs, "rules", nil, "add the analysis rules of the YAML files in `DIR` (repeatable)")
	addLimitFlags(cmd, &opts.Limits)
	addStoreFlags(cmd, &opts.Store, true)
	opts.BundleStore = os.Getenv(bundleStoreEnv)
	f.StringVar(&opts.BundleStore, "bundle-store", opts.BundleStore, "copy each bundle to object storage at `s3://BUCKET/PREFIX` (endpoint and keys from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; default $"+bundleStoreEnv+")")
	f.IntVar(&opts.BundleStoreKeep, "bundle-store-keep", 0, "keep at most `N` bundles per namespace in --bundle-store (0: no bound)")
	f.DurationVar(&opts.BundleStoreMaxAge, "bundle-store-max-age", 0, "remove bundles older than `AGE` from --bundle-store (0: never)")
	f.DurationVar(&opts.StoreRetry, "store-retry", 30*time.Second, "how often diagnoses the fleet store refused are written again (they wait on --dir's volume)")
	f.StringVar(&opts.Exec, "exec", "", "run `PROGRAM` with the bundle's path as its argument after each bundle (not through a shell)")
	f.DurationVar(&opts.ExecTimeout, "exec-timeout", 10*time.Minute, "kill the --exec program after this long")
	addModelFlags(cmd, &opts.LLM, "", "answer cache `DIR` (default DIR/.llm-cache of --dir, kept across restarts)")
	f.StringVar(&opts.MetricsAddr, "metrics-address", ":8080", "serve /metrics, /healthz and /readyz on this `ADDRESS` (empty: none)")
	f.BoolVar(&opts.LeaderElect, "leader-elect", true, "elect one active replica through a Lease")
	f.StringVar(&opts.LeaseNamespace, "leader-election-namespace", "", "namespace of the Lease (default: the pod's, or the kubeconfig's)")
	f.StringVar(&opts.LeaseName, "leader-election-name", "coroner-watch", "name of the Lease")
	f.StringVar(&opts.Identity, "identity", "", "this replica's name in the Lease and its Events (default: the host name and a random suffix)")
	f.DurationVar(&opts.LeaseDuration, "lease-duration", 15*time.Second, "how long a standby waits before taking over a Lease that is not renewed")
	f.DurationVar(&opts.RenewDeadline, "renew-deadline", 10*time.Second, "how long the leader tries to renew before it gives up")
	f.DurationVar(&opts.RetryPeriod, "retry-period", 2*time.Second, "how often candidates try the Lease")
	f.DurationVar(&opts.ShutdownGrace, "shutdown-grace", 20*time.Second, "on SIGTERM, let running collects finish this long")
	f.StringVar(&opts.LogFormat, "log-format", "text", "log lines on stderr as text or json")
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: in-cluster, $KUBECONFIG or ~/.kube/config)")
	// The kubeconfig flags of collect, but -n/--namespace says what to watch.
	flags := clientcmd.RecommendedConfigOverrideFlags("")
	flags.ContextOverrideFlags.Namespace = clientcmd.FlagInfo{}
	clientcmd.BindOverrideFlags(&opts.Overrides, f, flags)
	return cmd
}

func parseSelector(flag, s string) (labels.Selector, error) {
	if s == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, flagErrorf("--%s %q: %v", flag, s, err)
	}
	return sel, nil
}

func runWatch(ctx context.Context, opts *WatchOptions, streams *IOStreams) error {
	if opts.FRTriggerAfter > 0 && !opts.FlightRecorderExec {
		return flagErrorf("--fr-trigger-after writes the debug pipes through pods/exec: it needs --flight-recorder-exec")
	}
	wo := watch.Options{
		HangAfter: opts.FRTriggerAfter, DumpTrigger: collect.TriggerOptions{Wait: opts.FRTriggerWait},
		Dir: opts.Dir, Namespaces: opts.Namespaces, PendingAfter: opts.PendingAfter, OnSuccess: opts.OnSuccess,
		SkipOlderThan: opts.SkipOlderThan, HoldPods: opts.HoldPods, HoldTimeout: opts.HoldTimeout,
		Keep: opts.Keep, MaxBytes: opts.MaxBytes, MaxDirBytes: opts.MaxDirBytes, MaxAge: opts.MaxAge, MaxCollects: opts.MaxCollects,
		Limits: opts.Limits, Exec: opts.Exec, ExecTimeout: opts.ExecTimeout, MetricsAddr: opts.MetricsAddr,
		ShutdownGrace: opts.ShutdownGrace, Version: version, Started: opts.Started,
	}
	var err error
	if wo.NamespaceSelector, err = parseSelector("namespace-selector", opts.NamespaceSelector); err != nil {
		return err
	}
	if wo.Selector, err = parseSelector("selector", opts.Selector); err != nil {
		return err
	}
	if wo.JobSelector, err = parseSelector("job-selector", opts.JobSelector); err != nil {
		return err
	}
	switch opts.OnSuccess {
	case watch.OnSuccessNone, watch.OnSuccessFailedPods, watch.OnSuccessAll:
	default:
		return flagErrorf("--on-success %q: want failed-pods, all or none", opts.OnSuccess)
	}
	if opts.MaxCollects < 1 || opts.Concurrency < 1 {
		return flagErrorf("--max-collects and --concurrency want at least 1")
	}
	if opts.Keep < 0 {
		return flagErrorf("--keep %d: want 0 or more", opts.Keep)
	}
	if wo.Collect, err = opts.CollectLimits.options(); err != nil {
		return err
	}
	if opts.Exec != "" {
		st, err := os.Stat(opts.Exec)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return flagErrorf("--exec %q: want the path of an executable program", opts.Exec)
		}
	}
	if wo.NewRedactor, err = opts.CollectLimits.redactors(); err != nil {
		return err
	}
	if wo.Rules, err = loadRuleSet(opts.RuleDirs, "all"); err != nil {
		return err
	}
	if wo.Narrate, err = watchNarrator(ctx, opts); err != nil {
		return err
	}
	if opts.Store.URL != "" {
		// Connected when first written: a store that is down at the start only delays the rows.
		st, err := store.New(opts.Store.URL)
		if err != nil {
			return err
		}
		defer st.Close()
		wo.Store, wo.Cluster, wo.StoreRetry = st, opts.Store.Cluster, opts.StoreRetry
	}
	if opts.BundleStore != "" {
		if wo.Bucket, err = bucket.Open(opts.BundleStore, bucketConfig()); err != nil {
			return flagErrorf("--bundle-store: %v", err)
		}
		wo.Cluster, wo.BucketKeep, wo.BucketMaxAge = opts.Store.Cluster, opts.BundleStoreKeep, opts.BundleStoreMaxAge
	}

	var handler slog.Handler
	switch opts.LogFormat {
	case "text":
		handler = slog.NewTextHandler(streams.ErrOut, nil)
	case "json":
		handler = slog.NewJSONHandler(streams.ErrOut, nil)
	default:
		return flagErrorf("--log-format %q: want text or json", opts.LogFormat)
	}
	wo.Log = slog.New(handler)
	// client-go's own lines, in the same format. klog's logger is global and may be set only
	// before client-go runs: once a process (tests run several watchers in one).
	klogOnce.Do(func() { klog.SetLogger(logr.FromSlogHandler(handler)) })

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = opts.Kubeconfig
	kc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &opts.Overrides)
	cfg, err := kc.ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	cfg.UserAgent = "coroner-watch/" + version
	clients, err := collect.NewClients(cfg)
	if err != nil {
		return err
	}
	if opts.FlightRecorderExec {
		wo.Collect.Exec = collect.NewExecer(cfg, clients.Kube)
	}

	identity := opts.Identity
	if identity == "" {
		host := os.Getenv("POD_NAME")
		if host == "" {
			host, _ = os.Hostname()
		}
		var b [4]byte
		_, _ = rand.Read(b[:])
		identity = host + "_" + hex.EncodeToString(b[:])
	}
	wo.Identity = identity
	if opts.LeaderElect {
		ns := opts.LeaseNamespace
		if ns == "" {
			ns = os.Getenv("POD_NAMESPACE")
		}
		if ns == "" {
			if ns, _, err = kc.Namespace(); err != nil {
				return fmt.Errorf("kubeconfig: %v", err)
			}
		}
		wo.LeaderElection = watch.LeaderElection{Enabled: true, Namespace: ns, Name: opts.LeaseName,
			LeaseDuration: opts.LeaseDuration, RenewDeadline: opts.RenewDeadline, RetryPeriod: opts.RetryPeriod}
	}
	return watch.Run(ctx, clients, wo)
}

// watchNarrator is the LLM step of `coroner watch --llm`: analyze's (the same flags, prompts,
// redaction, fences and cache), with the templates of --prompt-dir read again for each
// narrative and the collect's --redact-rules for the prompts. nil without --llm.
func watchNarrator(ctx context.Context, opts *WatchOptions) (func(context.Context, *diagnose.Diagnosis, *report.Report) error, error) {
	o := &opts.LLM
	if !o.Enabled {
		return nil, nil
	}
	o.RedactRules = opts.RedactRules
	if opts.NoRedact {
		o.RedactRules = "" // the prompts are redacted all the same, with the built-in rules
	}
	if o.CacheDir == "" {
		o.CacheDir = filepath.Join(opts.Dir, ".llm-cache")
	}
	// The templates of --prompt-dir are read for each narrative, not here: a ConfigMap
	// edited into a template that does not parse costs the narratives their text (each says
	// why), never the watcher's start and with it the rule-based diagnoses.
	dir := o.PromptDir
	if dir != "" {
		if err := checkDir(dir); err != nil {
			return nil, flagErrorf("--prompt-dir %s: %v", dir, err)
		}
	}
	o.PromptDir = ""
	step, err := newLLMStep(ctx, o)
	o.PromptDir = dir
	if err != nil {
		return nil, err
	}
	step.reload = true
	if o.NewLLM == nil {
		if _, err := ollama.New(o.Host, nil); err != nil {
			return nil, flagErrorf("--ollama-host: %v", err)
		}
	}
	return func(ctx context.Context, d *diagnose.Diagnosis, rep *report.Report) error {
		var ix *index.Index
		if d != nil {
			ix = d.Index
		}
		_, err := step.narrate(ctx, rep, ix)
		return err
	}, nil
}
