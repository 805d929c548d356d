//go:build e2e

package main

// End-to-end tests of `coroner watch` against a real kube-apiserver (internal/testcluster),
// with the service account and RBAC of deploy/watch/. They run under `make e2e`; `go test`
// alone skips them.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/internal/testcluster"
	"github.com/coroner-dev/coroner/report"
	"github.com/coroner-dev/coroner/watch"
)

// watchEnv is a cluster with deploy/watch/ applied.
type watchEnv struct {
	*e2eEnv
	kubeconfig string // the coroner-watch service account's
}

func startWatchE2E(t *testing.T) *watchEnv {
	env := startE2E(t)
	applyWatchManifests(t, env)
	token := env.c.ServiceAccountToken(t, "coroner", "coroner-watch")
	waitAllowed(t, env.c, token)
	return &watchEnv{e2eEnv: env, kubeconfig: env.c.Kubeconfig(t, token, "coroner-watch", "coroner")}
}

// applyWatchManifests applies deploy/watch/ as a user would: `kubectl apply -f deploy/watch/`
// (when kubectl is installed; the objects are created directly otherwise), and checks that
// `kubectl kustomize` renders the same objects.
func applyWatchManifests(t *testing.T, env *e2eEnv) {
	dir := "../../deploy/watch"
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl not installed: creating the objects of deploy/watch/ directly")
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		sort.Strings(files)
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			env.c.ApplyYAML(t, env.kubelet, string(data))
		}
		return
	}
	out, err := exec.Command(kubectl, "--kubeconfig", env.admin, "apply", "-f", dir).CombinedOutput()
	require.NoError(t, err, "kubectl apply -f deploy/watch/:\n%s", out)
	applied := regexp.MustCompile(`(?m)^(\S+) (created|configured|unchanged)$`).FindAllStringSubmatch(string(out), -1)
	require.Len(t, applied, 18, "%s", out)
	rendered, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
	require.NoError(t, err, "kubectl kustomize deploy/watch/:\n%s", rendered)
	require.Equal(t, len(applied), strings.Count(string(rendered), "\nkind: ")+boolInt(strings.HasPrefix(string(rendered), "kind: ")),
		"the Kustomization lists every file")
}

// waitAllowed waits until the authorizer has the bindings of a new service account: a kind
// the watcher may not list when it starts is not watched.
func waitAllowed(t *testing.T, c *testcluster.Cluster, token string) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(c.Config(token))
	waitFor(t, 10*time.Second, "the RBAC bindings", func() bool {
		_, err := dyn.Resource(testcluster.PyTorchJobs).List(t.Context(), metav1.ListOptions{Limit: 1})
		return err == nil
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// watcher is one `coroner watch` replica running in the test process.
type watcher struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan error
	log    *syncBuffer
	addr   string
	dir    string
	stop   sync.Once
	err    error
	kill   func() // a watcher process that does not stop is killed
}

// syncBuffer is a buffer several goroutines write (a server's log); the LLM tests use it too.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWatcher runs `coroner watch ARGS` (parsed as the command line would be) with short
// lease timings, and waits until it answers /readyz.
func startWatcher(t *testing.T, kubeconfig, dir string, args ...string) *watcher {
	t.Helper()
	var opts *WatchOptions
	cmd := NewCmdWatch(&IOStreams{Out: io.Discard, ErrOut: io.Discard}, func(o *WatchOptions) error { opts = o; return nil })
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--dir", dir, "--metrics-address", "127.0.0.1:0",
		"--skip-older-than", "0", "--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "500ms",
		"--kube-api-qps", "400", "--kube-api-burst", "800"}, args...))
	require.NoError(t, cmd.Execute())
	addr := make(chan string, 1)
	opts.Started = func(a string) { addr <- a }
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{t: t, cancel: cancel, done: make(chan error, 1), log: &syncBuffer{}, dir: dir}
	go func() { w.done <- runWatch(ctx, opts, &IOStreams{Out: io.Discard, ErrOut: w.log}) }()
	select {
	case w.addr = <-addr:
	case err := <-w.done:
		t.Fatalf("coroner watch ended: %v\n%s", err, w.log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("coroner watch did not start\n%s", w.log.String())
	}
	t.Cleanup(func() {
		w.Stop()
		if t.Failed() {
			t.Logf("coroner watch log:\n%s", w.log.String())
		}
	})
	waitFor(t, 30*time.Second, "/readyz", func() bool { return w.get("/readyz") == "ok\n" })
	return w
}

// startWatcherProcess runs `coroner watch ARGS` as a process of its own: this test binary,
// which TestMain turns into coroner (main) when CORONER_TEST_RUN_MAIN=1.
func startWatcherProcess(t *testing.T, kubeconfig, dir string, args ...string) (*watcher, int) {
	t.Helper()
	bin, err := os.Executable()
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", testcluster.DeadPort(t))
	cmd := exec.Command(bin, append([]string{"watch", "--kubeconfig", kubeconfig, "--dir", dir, "--metrics-address", addr,
		"--skip-older-than", "0", "--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "500ms",
		"--kube-api-qps", "400", "--kube-api-burst", "800"}, args...)...)
	w := &watcher{t: t, done: make(chan error, 1), log: &syncBuffer{}, dir: dir, addr: addr}
	cmd.Stdout, cmd.Stderr = w.log, w.log
	cmd.Env = append(os.Environ(), "CORONER_TEST_RUN_MAIN=1")
	require.NoError(t, cmd.Start())
	go func() { w.done <- cmd.Wait() }()
	w.cancel = func() { _ = cmd.Process.Signal(syscall.SIGTERM) }
	w.kill = func() { _ = cmd.Process.Kill() }
	t.Cleanup(func() {
		w.Stop()
		if t.Failed() {
			t.Logf("coroner watch log:\n%s", w.log.String())
		}
	})
	waitFor(t, 30*time.Second, "/readyz", func() bool { return w.get("/readyz") == "ok\n" })
	return w, cmd.Process.Pid
}

// wait waits for the watcher to end by itself.
func (w *watcher) wait(timeout time.Duration) (exited bool, err error) {
	select {
	case err := <-w.done:
		w.stop.Do(func() { w.err = err })
		return true, err
	case <-time.After(timeout):
		return false, nil
	}
}

// Stop asks the watcher to stop as SIGTERM does and waits for it.
func (w *watcher) Stop() error {
	w.stop.Do(func() {
		w.cancel()
		select {
		case w.err = <-w.done:
		case <-time.After(60 * time.Second):
			w.t.Errorf("coroner watch did not stop within 60s\n%s", w.log.String())
			if w.kill != nil {
				w.kill()
			}
		}
	})
	return w.err
}

// httpClient reads the watchers' endpoints; a watcher that does not answer is a failure, not a hang.
var httpClient = &http.Client{Timeout: 10 * time.Second}

func (w *watcher) get(path string) string {
	resp, err := httpClient.Get("http://" + w.addr + path)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metric reads one series of /metrics ("coroner_watch_bundles_written_total",
// `coroner_watch_errors_total{step="event"}`); -1 when it is not there.
func (w *watcher) metric(series string) float64 {
	sc := bufio.NewScanner(strings.NewReader(w.get("/metrics")))
	for sc.Scan() {
		if name, value, ok := strings.Cut(sc.Text(), " "); ok && name == series {
			f, _ := strconv.ParseFloat(value, 64)
			return f
		}
	}
	return -1
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// coronerEvents are the Events coroner watch recorded on a job.
func coronerEvents(t *testing.T, c *testcluster.Cluster, ns, name string) []corev1.Event {
	t.Helper()
	l, err := c.Kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	require.NoError(t, err)
	var out []corev1.Event
	for _, e := range l.Items {
		if e.Source.Component == "coroner-watch" {
			out = append(out, e)
		}
	}
	return out
}

func waitEvent(t *testing.T, c *testcluster.Cluster, ns, name string, timeout time.Duration) corev1.Event {
	t.Helper()
	var evs []corev1.Event
	waitFor(t, timeout, "the Event on "+ns+"/"+name, func() bool {
		evs = coronerEvents(t, c, ns, name)
		return len(evs) > 0
	})
	return evs[0]
}

// bundles lists the bundles under dir, and fails on a temporary file left behind.
func bundles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		require.NotContains(t, d.Name(), ".tmp-", "a temporary file is left: %s", p)
		if strings.HasSuffix(p, ".tar.gz") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	}))
	sort.Strings(out)
	return out
}

func pytorchJob(t *testing.T, c *testcluster.Cluster, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := c.Dyn.Resource(testcluster.PyTorchJobs).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return u
}

func readReportJSON(t *testing.T, path string) *report.Report {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var r report.Report
	require.NoError(t, json.Unmarshal(data, &r))
	return &r
}

func TestWatchE2E(t *testing.T) {
	env := startWatchE2E(t)
	c, k := env.c, env.kubelet

	t.Run("a failed PyTorchJob: bundle, reports, Event, annotations, metrics", func(t *testing.T) {
		c.LoadSample(t, filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "w-oom", k)
		c.LoadSample(t, filepath.Join(samplesDir, "trainjob-dataset-init-failed"), "w-trainjob", k)
		c.LoadSample(t, filepath.Join(samplesDir, "colossalai-launcher-succeeded"), "w-cai", k)
		live := testcluster.Job{Namespace: "w-live", Name: "live", Workers: 2, Running: true}
		c.CreateJob(t, k, live)
		dir := t.TempDir()
		// An upload hook, as an operator writes one: a script, executed directly.
		hookDir := t.TempDir()
		hookOut := filepath.Join(hookDir, "uploaded")
		hook := filepath.Join(hookDir, "upload")
		require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\nprintf '%s %s/%s %s\\n' \"$1\" \"$CORONER_NAMESPACE\" \"$CORONER_NAME\" \"$CORONER_CATEGORY\" >> '"+hookOut+"'\n"), 0o755))
		w := startWatcher(t, env.kubeconfig, dir, "-n", "w-oom,w-live,w-trainjob,w-cai", "--exec", hook)
		require.Equal(t, "ok\n", w.get("/healthz"))

		// The sample is already Failed when the watcher starts.
		ev := waitEvent(t, c, "w-oom", "train-job", 60*time.Second)
		html := filepath.Join(dir, "w-oom", "train-job", "20260314T100215Z.html")
		require.Equal(t, "coroner: cuda-oom at train-job-worker-4 (rank 5): CUDA out of memory; report "+html, ev.Message)
		require.Equal(t, corev1.EventTypeWarning, ev.Type)
		require.Equal(t, watch.ReasonRootCause, ev.Reason)
		require.Equal(t, "PyTorchJob", ev.InvolvedObject.Kind)

		job := pytorchJob(t, c, "w-oom", "train-job")
		a := job.GetAnnotations()
		require.Equal(t, filepath.Join(dir, "w-oom", "train-job", "20260314T100215Z.tar.gz"), a[watch.AnnotationBundle])
		require.Equal(t, html, a[watch.AnnotationReport])
		require.Equal(t, watch.TriggerFailed, a[watch.AnnotationTrigger])
		require.Equal(t, ev.Message, a[watch.AnnotationSummary])

		// The reports beside the bundle are those of `coroner analyze`.
		rep := readReportJSON(t, filepath.Join(dir, "w-oom", "train-job", "20260314T100215Z.json"))
		require.Equal(t, analyze.Category("cuda-oom"), rep.RootCause.Category)
		require.Equal(t, "train-job-worker-4", rep.RootCause.Pod)
		cli, _ := analyzeJSON(t, nil, a[watch.AnnotationBundle])
		require.Equal(t, cli.RootCause, rep.RootCause)
		page, err := os.ReadFile(html)
		require.NoError(t, err)
		require.Contains(t, string(page), "CUDA out of memory")
		m := readManifest(t, a[watch.AnnotationBundle])
		require.Equal(t, string(job.GetUID()), m.Target.UID)
		require.True(t, m.Redaction.Enabled)
		require.Len(t, m.Errors, 0, "%+v", m.Errors)

		// A TrainJob is collected as one job (its JobSet and Jobs with it, never on their own);
		// a ColossalAIJob that "succeeded" is diagnosed from its launcher's log.
		ev = waitEvent(t, c, "w-trainjob", "llama-sft", 30*time.Second)
		require.Regexp(t, `^coroner: hub-offline at llama-sft-dataset-initializer-0-0-k7x2p: .+; report .+\.html$`, ev.Message)
		require.Equal(t, "TrainJob", ev.InvolvedObject.Kind)
		ev = waitEvent(t, c, "w-cai", "cai-demo", 30*time.Second)
		require.Regexp(t, `^coroner: cuda-oom at cai-demo-launcher: .+; report .+\.html$`, ev.Message)
		cai, err := c.Dyn.Resource(schema.GroupVersionResource{Group: "batch.tensorstack.dev", Version: "v1beta1", Resource: "colossalaijobs"}).
			Namespace("w-cai").Get(t.Context(), "cai-demo", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, watch.TriggerSucceeded, cai.GetAnnotations()[watch.AnnotationTrigger])

		// A running job that fails while watched: the Event follows within seconds.
		time.Sleep(500 * time.Millisecond)
		require.Empty(t, coronerEvents(t, c, "w-live", "live"), "a running job is left alone")
		start := time.Now()
		c.FailJob(t, live)
		ev = waitEvent(t, c, "w-live", "live", 30*time.Second)
		t.Logf("a job failed -> its Event in %.2fs", time.Since(start).Seconds())
		require.Regexp(t, `^coroner: cuda-oom at live-worker-1: CUDA out of memory; report `+regexp.QuoteMeta(filepath.Join(dir, "w-live", "live"))+`/20260314T\d{6}Z\.html$`, ev.Message)

		got := bundles(t, dir)
		require.Len(t, got, 4, "%q", got)
		require.Regexp(t, `^w-cai/cai-demo/\d{8}T\d{6}Z\.tar\.gz$`, got[0])
		require.Regexp(t, `^w-live/live/20260314T\d{6}Z\.tar\.gz$`, got[1])
		require.Equal(t, "w-oom/train-job/20260314T100215Z.tar.gz", got[2])
		require.Regexp(t, `^w-trainjob/llama-sft/\d{8}T\d{6}Z\.tar\.gz$`, got[3])
		waitFor(t, 5*time.Second, "the metrics", func() bool { return w.metric("coroner_watch_bundles_written_total") == 4 })
		require.Equal(t, 3.0, w.metric(`coroner_watch_root_causes_total{category="cuda-oom"}`))
		require.Equal(t, 1.0, w.metric(`coroner_watch_root_causes_total{category="hub-offline"}`))
		require.Equal(t, 1.0, w.metric("coroner_watch_leader"))
		// Retention runs (and sets what is stored) after the Event and the hook of each job.
		waitFor(t, 5*time.Second, "the stored bundles", func() bool { return w.metric(`coroner_watch_stored{what="bundles"}`) == 4 })
		require.Equal(t, 4.0, w.metric("coroner_watch_collect_duration_seconds_count"))
		require.Equal(t, 0.0, w.metric(`coroner_watch_errors_total{step="event"}`))
		require.Greater(t, w.metric("coroner_watch_bundle_bytes_total"), 10000.0)
		waitFor(t, 10*time.Second, "the hook", func() bool { return w.metric(`coroner_watch_exec_total{result="ok"}`) == 4 })
		uploaded, err := os.ReadFile(hookOut)
		require.NoError(t, err)
		require.Contains(t, string(uploaded), filepath.Join(dir, "w-oom", "train-job", "20260314T100215Z.tar.gz")+" w-oom/train-job cuda-oom\n")
		require.Len(t, strings.Split(strings.TrimSpace(string(uploaded)), "\n"), 4)
		require.Equal(t, 2.0, w.metric(`coroner_watch_jobs_seen_total{kind="PyTorchJob"}`))
		require.NoError(t, w.Stop())
	})

	t.Run("--hold-pods: pods deleted right after the failure keep every log, then go", func(t *testing.T) {
		j := testcluster.Job{Namespace: "w-hold", Name: "held", Workers: 3, Running: true}
		c.CreateJob(t, k, j)
		other := testcluster.Job{Namespace: "w-hold", Name: "still-running", Workers: 2, Running: true}
		c.CreateJob(t, k, other)
		ttl := testcluster.Job{Namespace: "w-hold", Name: "ttl", Workers: 2, Running: true}
		c.CreateJob(t, k, ttl)
		dir := t.TempDir()
		// One collect at a time: the second job waits for the first, slowed down.
		w := startWatcher(t, env.kubeconfig, dir, "-n", "w-hold", "--hold-pods", "--hold-timeout", "2m", "--max-collects", "1")
		pods := func() []corev1.Pod {
			l, err := c.Kube.CoreV1().Pods("w-hold").List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			return l.Items
		}
		waitFor(t, 20*time.Second, "the finalizer on every pod", func() bool {
			for _, p := range pods() {
				if !slices.Contains(p.Finalizers, watch.Finalizer) {
					return false
				}
			}
			return true
		})
		waitFor(t, 10*time.Second, "the gauge of held pods", func() bool { return w.metric("coroner_watch_pods_held") == 10 })

		// The job fails and its pods are deleted at once (cleanPodPolicy: All).
		k.Slow("w-hold", j.PodName(1), "pytorch", 50*time.Millisecond)
		defer k.Slow("w-hold", j.PodName(1), "pytorch", 0)
		c.FailJob(t, j)
		for i := 0; i <= j.Workers; i++ {
			require.NoError(t, c.Kube.CoreV1().Pods("w-hold").Delete(t.Context(), j.PodName(i), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
		}
		// While it is collected, another job fails and its object is deleted at once
		// (ttlSecondsAfterFinished: 0), its pods with it.
		waitFor(t, 20*time.Second, "the collect", func() bool { return slices.Contains(k.Calls(), "w-hold/held-worker-0/pytorch") })
		c.FailJob(t, ttl)
		require.NoError(t, c.Dyn.Resource(testcluster.PyTorchJobs).Namespace("w-hold").Delete(t.Context(), "ttl", metav1.DeleteOptions{}))
		for i := 0; i <= ttl.Workers; i++ {
			require.NoError(t, c.Kube.CoreV1().Pods("w-hold").Delete(t.Context(), ttl.PodName(i), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
		}

		ev := waitEvent(t, c, "w-hold", "held", 30*time.Second)
		require.Contains(t, ev.Message, "coroner: cuda-oom at held-worker-1: CUDA out of memory")
		b := pytorchJob(t, c, "w-hold", "held").GetAnnotations()[watch.AnnotationBundle]
		m := readManifest(t, b)
		require.Empty(t, m.Errors, "no gap: every log was there")
		for i := 0; i <= j.Workers; i++ {
			require.NotNil(t, m.File("logs/w-hold/"+j.PodName(i)+"/pytorch.log"), "the log of %s", j.PodName(i))
		}

		// The deleted job: its last watched state stands in for it, and every log is there.
		ev = waitEvent(t, c, "w-hold", "ttl", 30*time.Second)
		require.Contains(t, ev.Message, "coroner: cuda-oom at ttl-worker-1: CUDA out of memory")
		found, _ := filepath.Glob(filepath.Join(dir, "w-hold", "ttl", "*.tar.gz"))
		require.Len(t, found, 1)
		m = readManifest(t, found[0])
		require.NotNil(t, m.File("resources/kubeflow.org/PyTorchJob/w-hold/ttl.yaml"))
		for i := 0; i <= ttl.Workers; i++ {
			require.NotNil(t, m.File("logs/w-hold/"+ttl.PodName(i)+"/pytorch.log"), "the log of %s", ttl.PodName(i))
		}
		require.Len(t, m.Errors, 1, "%+v", m.Errors)
		require.Equal(t, "pytorchjob/ttl", m.Errors[0].Object)
		require.Contains(t, m.Errors[0].Message, "deleted before it was collected")

		// Collected, the held pods are let go; the running job's stay held.
		waitFor(t, 20*time.Second, "the deleted pods to go", func() bool { return len(pods()) == 3 })
		for _, p := range pods() {
			require.True(t, strings.HasPrefix(p.Name, "still-running-"), p.Name)
			require.Contains(t, p.Finalizers, watch.Finalizer)
		}
		require.Len(t, coronerEvents(t, c, "w-hold", "held"), 1)
		require.Len(t, coronerEvents(t, c, "w-hold", "ttl"), 1)
		require.Len(t, bundles(t, dir), 2)
		// Stopping lets go of every hold.
		require.NoError(t, w.Stop())
		for _, p := range pods() {
			require.NotContains(t, p.Finalizers, watch.Finalizer, "after shutdown: %s", p.Name)
		}
	})

	t.Run("--hold-timeout lets a pod go; without --hold-pods its logs are lost", func(t *testing.T) {
		j := testcluster.Job{Namespace: "w-timeout", Name: "slowjob", Workers: 1, Running: true}
		c.CreateJob(t, k, j)
		lost := testcluster.Job{Namespace: "w-nohold", Name: "lost", Workers: 2, Running: true}
		c.CreateJob(t, k, lost)
		dir := t.TempDir()
		w := startWatcher(t, env.kubeconfig, dir, "-n", "w-timeout", "--hold-pods", "--hold-timeout", "2s")
		waitFor(t, 20*time.Second, "the finalizer", func() bool {
			p, err := c.Kube.CoreV1().Pods("w-timeout").Get(t.Context(), j.PodName(1), metav1.GetOptions{})
			return err == nil && slices.Contains(p.Finalizers, watch.Finalizer)
		})
		require.NoError(t, c.Kube.CoreV1().Pods("w-timeout").Delete(t.Context(), j.PodName(1), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
		start := time.Now()
		waitFor(t, 20*time.Second, "the held pod to go", func() bool {
			_, err := c.Kube.CoreV1().Pods("w-timeout").Get(t.Context(), j.PodName(1), metav1.GetOptions{})
			return err != nil
		})
		held := time.Since(start)
		// Held --hold-timeout from the deletion's timestamp, which has whole seconds.
		require.GreaterOrEqual(t, held, time.Second, "held until --hold-timeout")
		require.Equal(t, 1.0, w.metric("coroner_watch_hold_timeouts_total"))
		require.Empty(t, bundles(t, dir), "a running job is not collected")
		require.NoError(t, w.Stop())

		// The control: without --hold-pods, pods deleted before the job is marked Failed are gone
		// by the time it is collected.
		dir = t.TempDir()
		w = startWatcher(t, env.kubeconfig, dir, "-n", "w-nohold")
		for i := 0; i <= lost.Workers; i++ {
			require.NoError(t, c.Kube.CoreV1().Pods("w-nohold").Delete(t.Context(), lost.PodName(i), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
		}
		c.FailJobStatus(t, lost)
		waitEvent(t, c, "w-nohold", "lost", 30*time.Second)
		m := readManifest(t, pytorchJob(t, c, "w-nohold", "lost").GetAnnotations()[watch.AnnotationBundle])
		require.Nil(t, m.File("logs/w-nohold/lost-worker-0/pytorch.log"), "no pod, no log")
		require.NoError(t, w.Stop())
	})

	// A kubelet that takes a log request and never answers. SIGTERM comes while the collect
	// waits on it: after --shutdown-grace the collect is cancelled, and the watcher used to
	// panic there (a cancelled request was a success without a stream), exit 2 and leave the
	// temporary bundle, every pod's finalizer and the Lease behind.
	t.Run("SIGTERM while a log request hangs; then --log-idle-timeout makes it a gap", func(t *testing.T) {
		j := testcluster.Job{Namespace: "w-hang", Name: "hg", Workers: 2, Running: true}
		c.CreateJob(t, k, j)
		k.Hang(j.Namespace, j.PodName(1), "pytorch", true)
		defer k.Hang(j.Namespace, j.PodName(1), "pytorch", false)
		pods := func() []corev1.Pod {
			l, err := c.Kube.CoreV1().Pods("w-hang").List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			return l.Items
		}
		dir := t.TempDir()
		w, _ := startWatcherProcess(t, env.kubeconfig, dir, "-n", "w-hang", "--hold-pods", "--shutdown-grace", "1s")
		waitFor(t, 20*time.Second, "the finalizer on every pod", func() bool {
			for _, p := range pods() {
				if !slices.Contains(p.Finalizers, watch.Finalizer) {
					return false
				}
			}
			return true
		})
		c.FailJob(t, j)
		waitFor(t, 30*time.Second, "the hung log request", func() bool { return slices.Contains(k.Calls(), "w-hang/hg-worker-0/pytorch") })
		temps, _ := filepath.Glob(filepath.Join(dir, "w-hang", "hg", ".*.tar.gz.tmp-*"))
		require.Len(t, temps, 1, "the bundle is being written")

		require.NoError(t, w.Stop(), "SIGTERM: exit 0, as documented")
		require.NotContains(t, w.log.String(), "panic")
		require.Contains(t, w.log.String(), "running collects did not finish within the grace period")
		require.Empty(t, bundles(t, dir), "no bundle, and no temporary file")
		for _, p := range pods() {
			require.NotContains(t, p.Finalizers, watch.Finalizer, "after SIGTERM: %s", p.Name)
		}
		lease, err := c.Kube.CoordinationV1().Leases("coroner").Get(t.Context(), "coroner-watch", metav1.GetOptions{})
		require.NoError(t, err)
		require.Empty(t, ptrString(lease.Spec.HolderIdentity), "the Lease is given up")
		require.Empty(t, pytorchJob(t, c, "w-hang", "hg").GetAnnotations()[watch.AnnotationBundle], "abandoned: the next leader collects it")

		// The next leader meets the same kubelet: with --log-idle-timeout the log is a gap, the
		// bundle is written and the job diagnosed, and the watcher goes on.
		w, _ = startWatcherProcess(t, env.kubeconfig, dir, "-n", "w-hang", "--hold-pods", "--log-idle-timeout", "1s")
		waitEvent(t, c, "w-hang", "hg", 60*time.Second)
		a := pytorchJob(t, c, "w-hang", "hg").GetAnnotations()
		m := readManifest(t, a[watch.AnnotationBundle])
		require.Len(t, m.Errors, 1, "%+v", m.Errors)
		require.Equal(t, "pod/hg-worker-0 container pytorch", m.Errors[0].Object)
		require.Equal(t, "the log stream sent nothing for too long (1s)", m.Errors[0].Message)
		require.NotNil(t, m.File("logs/w-hang/hg-worker-1/pytorch.log"))
		require.Len(t, bundles(t, dir), 1)
		exited, err := w.wait(time.Second)
		require.False(t, exited, "the watcher goes on: %v", err)
		require.Equal(t, "ok\n", w.get("/healthz"))
		require.NoError(t, w.Stop())
		require.NotContains(t, w.log.String(), "panic")
		for _, p := range pods() {
			require.NotContains(t, p.Finalizers, watch.Finalizer, "after shutdown: %s", p.Name)
		}
	})

	t.Run("a restart mid-collect: exactly one bundle", func(t *testing.T) {
		j := testcluster.Job{Namespace: "w-restart", Name: "rs", Workers: 2, Running: true, LogLines: 400}
		c.CreateJob(t, k, j)
		k.Slow(j.Namespace, j.PodName(1), "pytorch", 50*time.Millisecond)
		dir := t.TempDir()
		w := startWatcher(t, env.kubeconfig, dir, "-n", "w-restart", "--shutdown-grace", "500ms")
		c.FailJob(t, j)
		waitFor(t, 30*time.Second, "the collect to stream the slow log", func() bool {
			return slices.Contains(k.Calls(), "w-restart/rs-worker-0/pytorch")
		})
		time.Sleep(300 * time.Millisecond)
		require.NoError(t, w.Stop())
		require.Empty(t, bundles(t, dir), "an abandoned collect leaves nothing")
		require.Empty(t, coronerEvents(t, c, "w-restart", "rs"))
		require.Empty(t, pytorchJob(t, c, "w-restart", "rs").GetAnnotations()[watch.AnnotationBundle])
		// What a killed process leaves behind is cleaned by the next leader.
		stale := filepath.Join(dir, "w-restart", "rs", ".20260314T100900Z.tar.gz.tmp-123")
		require.NoError(t, os.MkdirAll(filepath.Dir(stale), 0o755))
		require.NoError(t, os.WriteFile(stale, []byte("partial"), 0o644))

		k.Slow(j.Namespace, j.PodName(1), "pytorch", 0)
		w = startWatcher(t, env.kubeconfig, dir, "-n", "w-restart")
		waitEvent(t, c, "w-restart", "rs", 30*time.Second)
		one := bundles(t, dir)
		require.Len(t, one, 1)
		require.NoError(t, w.Stop())

		// Once more: the job is annotated, nothing is collected again.
		w = startWatcher(t, env.kubeconfig, dir, "-n", "w-restart")
		time.Sleep(2 * time.Second)
		require.Equal(t, 0.0, w.metric("coroner_watch_bundles_written_total"))
		require.NoError(t, w.Stop())
		require.Equal(t, one, bundles(t, dir))
		require.Len(t, coronerEvents(t, c, "w-restart", "rs"), 1)
	})

	t.Run("two replicas: one leader, one bundle; the other takes over", func(t *testing.T) {
		first := testcluster.Job{Namespace: "w-ha", Name: "first", Workers: 2, Running: true}
		second := testcluster.Job{Namespace: "w-ha", Name: "second", Workers: 2, Running: true}
		c.CreateJob(t, k, first)
		c.CreateJob(t, k, second)
		dir := t.TempDir()
		a := startWatcher(t, env.kubeconfig, dir, "-n", "w-ha", "--identity", "replica-a")
		b := startWatcher(t, env.kubeconfig, dir, "-n", "w-ha", "--identity", "replica-b")
		var leader, standby *watcher
		waitFor(t, 20*time.Second, "a leader", func() bool {
			la, lb := a.metric("coroner_watch_leader"), b.metric("coroner_watch_leader")
			switch {
			case la == 1 && lb == 0:
				leader, standby = a, b
			case la == 0 && lb == 1:
				leader, standby = b, a
			}
			return leader != nil
		})
		c.FailJob(t, first)
		ev := waitEvent(t, c, "w-ha", "first", 30*time.Second)
		time.Sleep(time.Second)
		require.Len(t, coronerEvents(t, c, "w-ha", "first"), 1)
		got := bundles(t, dir)
		require.Len(t, got, 1)
		require.True(t, strings.HasPrefix(got[0], "w-ha/first/"), got[0])
		require.Equal(t, 1.0, leader.metric("coroner_watch_bundles_written_total"))
		require.Equal(t, 0.0, standby.metric("coroner_watch_bundles_written_total"))
		require.Equal(t, 0.0, standby.metric("coroner_watch_leader"))
		require.Equal(t, leader == a, ev.ReportingInstance == "replica-a", ev.ReportingInstance)

		require.NoError(t, leader.Stop()) // gives the Lease up
		start := time.Now()
		waitFor(t, 20*time.Second, "the standby to lead", func() bool { return standby.metric("coroner_watch_leader") == 1 })
		t.Logf("the standby leads %.2fs after the leader stopped", time.Since(start).Seconds())
		c.FailJob(t, second)
		waitEvent(t, c, "w-ha", "second", 30*time.Second)
		got = bundles(t, dir)
		require.Len(t, got, 2)
		require.True(t, strings.HasPrefix(got[1], "w-ha/second/"), got[1])
		require.Len(t, coronerEvents(t, c, "w-ha", "first"), 1, "the new leader does not collect the first job again")

		// A leader whose Lease is taken (a partition, a clock jump) stops at once and exits
		// with an error, so that its pod restarts as a candidate.
		lease, err := c.Kube.CoordinationV1().Leases("coroner").Get(t.Context(), "coroner-watch", metav1.GetOptions{})
		require.NoError(t, err)
		intruder, long := "intruder", int32(600)
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = &intruder, &long
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = c.Kube.CoordinationV1().Leases("coroner").Update(t.Context(), lease, metav1.UpdateOptions{})
		require.NoError(t, err)
		exited, err := standby.wait(20 * time.Second)
		require.True(t, exited, "the leader did not notice it lost the Lease")
		require.EqualError(t, err, "lost the leader lease; exiting so that a restart stands again")
		require.NoError(t, c.Kube.CoordinationV1().Leases("coroner").Delete(t.Context(), "coroner-watch", metav1.DeleteOptions{}))
	})

	t.Run("a job pending too long, without leader election", func(t *testing.T) {
		c.LoadSample(t, filepath.Join(samplesDir, "pytorchjob-pending-no-node"), "w-pending", k)
		dir := t.TempDir()
		w := startWatcher(t, env.kubeconfig, dir, "-n", "w-pending", "--pending-after", "3s", "--leader-elect=false")
		require.Equal(t, 1.0, w.metric("coroner_watch_leader"))
		ev := waitEvent(t, c, "w-pending", "bert-pretrain", 30*time.Second)
		require.Regexp(t, `^coroner: scheduling at bert-pretrain-master-0: .+; report .+\.html$`, ev.Message)
		job := pytorchJob(t, c, "w-pending", "bert-pretrain")
		require.Equal(t, watch.TriggerPending, job.GetAnnotations()[watch.AnnotationTrigger])
		require.GreaterOrEqual(t, ev.FirstTimestamp.Sub(job.GetCreationTimestamp().Time), 2*time.Second, "not before --pending-after")
		require.Equal(t, 1.0, w.metric(`coroner_watch_triggers_total{trigger="pending"}`))
		require.NoError(t, w.Stop())
	})

	t.Run("RBAC forbids events: the bundle is still written and the gap recorded", func(t *testing.T) {
		rbac, err := os.ReadFile("../../deploy/watch/20-rbac.yaml")
		require.NoError(t, err)
		// The watcher's ClusterRole without its events rule, for another service account.
		role := strings.SplitN(string(rbac), "\n---\n", 2)[0]
		noEvents := strings.NewReplacer(
			"name: coroner-watch\n", "name: coroner-watch-noevents\n",
			"  - apiGroups: [\"\"]\n    resources: [events]\n    verbs: [list, create]\n", "",
		).Replace(role)
		require.NotContains(t, noEvents, "[events]")
		c.ApplyYAML(t, k, noEvents+`
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: coroner-watch-noevents}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: coroner-watch-noevents}
subjects: [{kind: ServiceAccount, name: coroner-watch-noevents, namespace: coroner}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: coroner-watch-noevents-annotate}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: coroner-watch-annotate}
subjects: [{kind: ServiceAccount, name: coroner-watch-noevents, namespace: coroner}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: coroner-watch-noevents-leader, namespace: coroner}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: coroner-watch-leader}
subjects: [{kind: ServiceAccount, name: coroner-watch-noevents, namespace: coroner}]
`)
		token := c.ServiceAccountToken(t, "coroner", "coroner-watch-noevents")
		kc := c.Kubeconfig(t, token, "noevents", "coroner")
		waitAllowed(t, c, token)
		j := testcluster.Job{Namespace: "w-noevents", Name: "ne", Workers: 2, Running: true}
		c.CreateJob(t, k, j)
		dir := t.TempDir()
		w := startWatcher(t, kc, dir, "-n", "w-noevents")
		c.FailJob(t, j)
		waitFor(t, 30*time.Second, "the annotation", func() bool {
			return pytorchJob(t, c, "w-noevents", "ne").GetAnnotations()[watch.AnnotationSummary] != ""
		})
		a := pytorchJob(t, c, "w-noevents", "ne").GetAnnotations()
		require.Contains(t, a[watch.AnnotationSummary], "coroner: cuda-oom at ne-worker-1: CUDA out of memory; report ")
		m := readManifest(t, a[watch.AnnotationBundle])
		require.Len(t, m.Errors, 2, "%+v", m.Errors)
		require.Equal(t, "events in w-noevents", m.Errors[0].Object)
		require.Equal(t, "events of node/ne-node-0", m.Errors[1].Object)
		for _, g := range m.Errors {
			require.Contains(t, g.Message, "forbidden by RBAC")
		}
		require.NotNil(t, m.File("logs/w-noevents/ne-worker-1/pytorch.log"))
		require.Empty(t, coronerEvents(t, c, "w-noevents", "ne"))
		waitFor(t, 5*time.Second, "the report", func() bool { _, err := os.Stat(a[watch.AnnotationReport]); return err == nil })
		rep := readReportJSON(t, strings.TrimSuffix(a[watch.AnnotationReport], ".html")+".json")
		require.Equal(t, analyze.Category("cuda-oom"), rep.RootCause.Category)
		require.True(t, slices.ContainsFunc(rep.Warnings, func(s string) bool {
			return strings.HasPrefix(s, "coroner watch could not record the Event on the job: ") && strings.Contains(s, "forbidden")
		}), "%q", rep.Warnings)
		require.Equal(t, 1.0, w.metric(`coroner_watch_errors_total{step="event"}`))
		require.Contains(t, w.log.String(), "could not record the Event on the job")
		require.NoError(t, w.Stop())
	})
}

// TestWatchE2E200Jobs fails 200 jobs at once under --max-collects 4 and reports how long the
// watcher took, how many collects ran at once and the memory it used (docs/watch.md).
func TestWatchE2E200Jobs(t *testing.T) {
	env := startWatchE2E(t)
	c, k := env.c, env.kubelet
	const namespaces, perNS, limit = 10, 20, 4
	var jobs []testcluster.Job
	var nsList []string
	var create, fail []func(testing.TB)
	setup := time.Now()
	for n := range namespaces {
		ns := fmt.Sprintf("w-many-%d", n)
		nsList = append(nsList, ns)
		for i := range perNS {
			j := testcluster.Job{Namespace: ns, Name: fmt.Sprintf("job-%03d", i), Workers: 2, Running: true}
			jobs = append(jobs, j)
			create = append(create, func(tb testing.TB) { c.CreateJob(tb, k, j) })
			fail = append(fail, func(tb testing.TB) { c.FailJob(tb, j) })
		}
	}
	testcluster.Parallel(t, 8, create...)
	t.Logf("created %d running jobs in %.1fs", len(jobs), time.Since(setup).Seconds())
	dir := t.TempDir()
	w, pid := startWatcherProcess(t, env.kubeconfig, dir, "-n", strings.Join(nsList, ","), "--max-collects", strconv.Itoa(limit))
	waitFor(t, 20*time.Second, "the leader", func() bool { return w.metric("coroner_watch_leader") == 1 })
	time.Sleep(time.Second) // the caches hold the 200 running jobs and their 600 pods
	baseRSS, baseHeap := w.metric("process_resident_memory_bytes"), w.metric("go_memstats_heap_inuse_bytes")

	var (
		mu       sync.Mutex
		maxIn    float64
		peakHeap float64
		stop     = make(chan struct{})
		sampled  = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			in, heap := w.metric("coroner_watch_collects_in_flight"), w.metric("go_memstats_heap_inuse_bytes")
			mu.Lock()
			maxIn, peakHeap = max(maxIn, in), max(peakHeap, heap)
			mu.Unlock()
		}
	}()
	start := time.Now()
	testcluster.Parallel(t, 8, fail...)
	failed := time.Since(start)
	waitFor(t, 3*time.Minute, "200 diagnoses", func() bool {
		return w.metric(`coroner_watch_root_causes_total{category="cuda-oom"}`) == float64(len(jobs))
	})
	require.Equal(t, float64(len(jobs)), w.metric("coroner_watch_bundles_written_total"))
	waitFor(t, 10*time.Second, "200 Events", func() bool {
		n := 0
		for _, ns := range nsList {
			l, err := c.Kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "source=coroner-watch"})
			require.NoError(t, err)
			n += len(l.Items)
		}
		return n == len(jobs)
	})
	took := time.Since(start)
	close(stop)
	<-sampled
	require.Len(t, bundles(t, dir), len(jobs))
	require.LessOrEqual(t, maxIn, float64(limit), "collects at once")
	require.Greater(t, maxIn, 1.0, "collects ran side by side")
	hwm := procStatus(pid, "VmHWM")
	t.Logf("200 jobs failing at once: all collected and diagnosed in %.1fs (failing them took %.1fs), at most %.0f collects at once (--max-collects %d); "+
		"the watcher process: %.0f MiB resident and %.0f MiB of heap in use with the 200 running jobs cached, peak heap %.0f MiB, peak resident %s; %.1f MiB of bundles",
		took.Seconds(), failed.Seconds(), maxIn, limit, baseRSS/(1<<20), baseHeap/(1<<20), peakHeap/(1<<20), hwm,
		w.metric("coroner_watch_bundle_bytes_total")/(1<<20))
	t.Logf("per job: collect %.2fs, analysis %.2fs on average",
		w.metric("coroner_watch_collect_duration_seconds_sum")/w.metric("coroner_watch_collect_duration_seconds_count"),
		w.metric("coroner_watch_analyze_duration_seconds_sum")/w.metric("coroner_watch_analyze_duration_seconds_count"))

	// SIGTERM: exit 0, and the Lease is given up for the next replica.
	require.NoError(t, w.Stop())
	lease, err := c.Kube.CoordinationV1().Leases("coroner").Get(t.Context(), "coroner-watch", metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, ptrString(lease.Spec.HolderIdentity), "the Lease is released")
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// procStatus reads a field of a process's /proc status ("VmHWM": the peak resident set).
func procStatus(pid int, field string) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
