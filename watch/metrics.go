package watch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are what /metrics serves. Every name starts with coroner_watch_.
type metrics struct {
	reg *prometheus.Registry

	jobsSeen     *prometheus.CounterVec // kind
	triggers     *prometheus.CounterVec // trigger
	bundles      prometheus.Counter     // bundles written
	bundleBytes  prometheus.Counter     // their bytes
	rootCauses   *prometheus.CounterVec // category (healthy and unknown included)
	errors       *prometheus.CounterVec // step
	collectTime  prometheus.Histogram   // seconds per collect
	analyzeTime  prometheus.Histogram   // seconds per analysis
	llmTime      prometheus.Histogram   // seconds per narrative (Options.Narrate)
	llmQueued    prometheus.GaugeFunc   // diagnoses waiting for the model
	latency      prometheus.Histogram   // seconds from the trigger to the Event
	inFlight     prometheus.Gauge       // collects running
	queued       prometheus.GaugeFunc   // jobs waiting for a collect slot or a recheck
	podsHeld     prometheus.Gauge       // pods carrying the finalizer
	holdTimeouts prometheus.Counter     // pods let go because --hold-timeout passed
	leader       prometheus.Gauge       // 1 while this replica leads
	stored       *prometheus.GaugeVec   // what the bundle directory holds: bundles, bytes
	pruned       prometheus.Counter     // bundles removed by retention
	hooks        *prometheus.CounterVec // result: ok, failed
	skipped      *prometheus.CounterVec // reason: too-old, gave-up
	lastBundle   prometheus.Gauge       // unix time of the last bundle written
	info         *prometheus.GaugeVec   // version
	storeWrites  *prometheus.CounterVec // result: ok (analyses written), failed (flushes)
	storeQueued  prometheus.Gauge       // analyses waiting on the volume for the store
	uploads      prometheus.Counter     // bundles copied to the bundle store
}

func newMetrics(version string, queueLen, llmQueueLen func() int) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "coroner_watch_" + name, Help: help}, labels)
	}
	m.jobsSeen = f("jobs_seen_total", "Training jobs seen by the watcher (listed or created), by kind.", "kind")
	m.triggers = f("triggers_total", "Jobs that needed a collect, by why: failed, succeeded (with a failed pod), pod-failed, pending.", "trigger")
	m.bundles = prometheus.NewCounter(prometheus.CounterOpts{Name: "coroner_watch_bundles_written_total", Help: "Bundles written."})
	m.bundleBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "coroner_watch_bundle_bytes_total", Help: "Bytes of the bundles written."})
	m.rootCauses = f("root_causes_total", "Analysed jobs by the root cause's category (healthy and unknown when there is none).", "category")
	m.errors = f("errors_total", "Failures by step: collect, analyze, annotate, event, hold, release, exec, fr-trigger, prune, llm, store, upload.", "step")
	buckets := []float64{0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600}
	m.collectTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "coroner_watch_collect_duration_seconds", Help: "How long a collect took.", Buckets: buckets})
	m.analyzeTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "coroner_watch_analyze_duration_seconds", Help: "How long an analysis took.", Buckets: buckets})
	m.llmTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "coroner_watch_llm_duration_seconds", Help: "How long the model's narrative of a diagnosis took, answered from the cache or not.", Buckets: buckets})
	m.llmQueued = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "coroner_watch_llm_queue_depth", Help: "Diagnoses waiting for the model's narrative."}, func() float64 { return float64(llmQueueLen()) })
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "coroner_watch_trigger_to_event_seconds", Help: "From the moment the watcher saw a job needing a collect to its Event.", Buckets: buckets})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "coroner_watch_collects_in_flight", Help: "Collects (and their analyses) running now."})
	m.queued = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "coroner_watch_queue_depth", Help: "Jobs waiting to be looked at."}, func() float64 { return float64(queueLen()) })
	m.podsHeld = prometheus.NewGauge(prometheus.GaugeOpts{Name: "coroner_watch_pods_held", Help: "Pods carrying coroner's finalizer, held until their job is collected."})
	m.holdTimeouts = prometheus.NewCounter(prometheus.CounterOpts{Name: "coroner_watch_hold_timeouts_total", Help: "Pods let go because their hold timeout passed before their job was collected."})
	m.leader = prometheus.NewGauge(prometheus.GaugeOpts{Name: "coroner_watch_leader", Help: "1 while this replica holds the lease and collects, else 0."})
	m.stored = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "coroner_watch_stored", Help: "What the bundle directory holds after retention: bundles, bytes.", ConstLabels: nil}, []string{"what"})
	m.pruned = prometheus.NewCounter(prometheus.CounterOpts{Name: "coroner_watch_bundles_pruned_total", Help: "Bundles (with their reports) removed by the retention bounds: count, size or age."})
	m.hooks = f("exec_total", "Runs of the exec hook, by result: ok, failed.", "result")
	m.skipped = f("skipped_total", "Jobs not collected, by why: too-old (failed before the skip-older-than bound), gave-up (retries exhausted).", "reason")
	m.lastBundle = prometheus.NewGauge(prometheus.GaugeOpts{Name: "coroner_watch_last_bundle_timestamp_seconds", Help: "Unix time of the last bundle written."})
	m.info = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "coroner_watch_info", Help: "coroner's version."}, []string{"version"})
	m.info.WithLabelValues(version).Set(1)
	m.storeWrites = f("store_writes_total", "Diagnoses written to the fleet store (ok), and flushes of the queue it refused (failed).", "result")
	m.uploads = prometheus.NewCounter(prometheus.CounterOpts{Name: "coroner_watch_bundles_uploaded_total", Help: "Bundles copied to the bundle store (object storage)."})
	m.storeQueued = prometheus.NewGauge(prometheus.GaugeOpts{Name: "coroner_watch_store_queued", Help: "Diagnoses waiting on the volume for the fleet store."})
	m.reg.MustRegister(m.jobsSeen, m.triggers, m.bundles, m.bundleBytes, m.rootCauses, m.errors, m.collectTime,
		m.analyzeTime, m.llmTime, m.llmQueued, m.latency, m.inFlight, m.queued, m.podsHeld, m.holdTimeouts, m.leader, m.stored, m.pruned,
		m.hooks, m.skipped, m.lastBundle, m.info, m.storeWrites, m.storeQueued, m.uploads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Counters with a label start at zero for every known value, so that rate() sees the first one.
	for _, s := range []string{"collect", "analyze", "annotate", "event", "hold", "release", "exec", "fr-trigger", "prune", "llm", "store", "upload"} {
		m.errors.WithLabelValues(s)
	}
	for _, s := range []string{TriggerFailed, TriggerSucceeded, TriggerPodFailed, TriggerPending} {
		m.triggers.WithLabelValues(s)
	}
	return m
}

// server serves /metrics, /healthz and /readyz on addr until ctx is done.
type server struct {
	srv   *http.Server
	ln    net.Listener
	ready atomic.Bool
}

func startServer(addr string, m *metrics) (*server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &server{ln: ln}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is where the server listens.
func (s *server) Addr() string { return s.ln.Addr().String() }

func (s *server) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = s.srv.Close()
	}
}
