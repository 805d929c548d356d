//go:build e2e

package main

// End-to-end tests of `coroner watch --llm`: a real kube-apiserver and etcd
// (internal/testcluster) with deploy/watch/ applied, and a real Ollama server serving the tiny
// model (scripts/ollama-server.sh). They run under `make e2e-llm`, which provides both.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/internal/testcluster"
	"github.com/coroner-dev/coroner/internal/tinygguf"
	"github.com/coroner-dev/coroner/report"
	"github.com/coroner-dev/coroner/watch"
)

// configMapDir is a directory laid out as the kubelet mounts a ConfigMap: each key a symbolic
// link to ..data/<key>, and ..data a link to a directory of the current files, replaced in one
// rename when the ConfigMap changes (the kubelet's AtomicWriter). The test cluster has no
// kubelet to mount volumes: sync plays its part.
type configMapDir struct {
	dir string
	gen int
}

// sync writes the ConfigMap coroner-prompts of deploy/watch/ as the kubelet updates its volume.
func (m *configMapDir) sync(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	cm, err := c.Kube.CoreV1().ConfigMaps("coroner").Get(t.Context(), "coroner-prompts", metav1.GetOptions{})
	require.NoError(t, err)
	m.gen++
	ts := fmt.Sprintf("..2026_11_26_13_00_00.%d", m.gen)
	require.NoError(t, os.Mkdir(filepath.Join(m.dir, ts), 0o755))
	for k, v := range cm.Data {
		require.NoError(t, os.WriteFile(filepath.Join(m.dir, ts, k), []byte(v), 0o644))
	}
	old, _ := os.Readlink(filepath.Join(m.dir, "..data"))
	require.NoError(t, os.Symlink(ts, filepath.Join(m.dir, "..data_tmp")))
	require.NoError(t, os.Rename(filepath.Join(m.dir, "..data_tmp"), filepath.Join(m.dir, "..data")))
	for k := range cm.Data {
		if _, err := os.Lstat(filepath.Join(m.dir, k)); err != nil {
			require.NoError(t, os.Symlink(filepath.Join("..data", k), filepath.Join(m.dir, k)))
		}
	}
	entries, err := os.ReadDir(m.dir)
	require.NoError(t, err)
	for _, e := range entries {
		if _, ok := cm.Data[e.Name()]; !ok && !strings.HasPrefix(e.Name(), "..") {
			require.NoError(t, os.Remove(filepath.Join(m.dir, e.Name())))
		}
	}
	if old != "" {
		require.NoError(t, os.RemoveAll(filepath.Join(m.dir, old)))
	}
}

// setPrompts edits the ConfigMap as a site would (kubectl apply of its manifest), and the
// kubelet's sync follows.
func (m *configMapDir) setPrompts(t *testing.T, c *testcluster.Cluster, data map[string]string) {
	t.Helper()
	cm, err := c.Kube.CoreV1().ConfigMaps("coroner").Get(t.Context(), "coroner-prompts", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data = data
	_, err = c.Kube.CoreV1().ConfigMaps("coroner").Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	m.sync(t, c)
}

// A short site prompt keeps the tiny model's byte-level tokens few (the built-in templates are
// covered by the golden prompts); the two versions differ as a site's edit would.
const (
	sitePromptV1 = "{{/* site prompt, version: 1 */}}Job {{ index .Metadata \"JobName\" }} is {{ index .Metadata \"JobStatus\" }}: {{ .VerdictReason }}\n"
	sitePromptV2 = "{{/* site prompt, version: 2 */}}Say in one line why {{ index .Metadata \"JobName\" }} failed: {{ .VerdictReason }}\n"
)

// eventsBy are a job's coroner Events with the given reason, oldest first.
func eventsBy(t *testing.T, c *testcluster.Cluster, ns, name, reason string) []corev1.Event {
	t.Helper()
	var out []corev1.Event
	for _, e := range coronerEvents(t, c, ns, name) {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// resourceVersion orders two objects of one etcd: a later write has a greater revision.
func resourceVersion(t *testing.T, e corev1.Event) int64 {
	n, err := strconv.ParseInt(e.ResourceVersion, 10, 64)
	require.NoError(t, err)
	return n
}

func TestWatchLLME2E(t *testing.T) {
	env := startWatchE2E(t)
	c, k := env.c, env.kubelet
	srv := startOllama(t)
	// The tiny model with the double quote in its cycle: held to the answer's schema, its
	// answers parse (their words are the alphabet).
	srv.createWith(t, "tiny", tinygguf.WriteQuoting, "")
	prompts := &configMapDir{dir: t.TempDir()}
	prompts.sync(t, c) // as deploy/watch/ applies it: empty, the built-in templates serve
	prompts.setPrompts(t, c, map[string]string{"pytorchjob.tmpl": sitePromptV1})
	dir := t.TempDir()
	args := []string{"-n", "w-llm-1,w-llm-2", "--llm", "--ollama-host", srv.host, "--model", "tiny",
		"--prompt-dir", prompts.dir, "--num-ctx", "2048", "--llm-max-tokens", "400", "--llm-timeout", "60s"}
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	base := filepath.Join(dir, "w-llm-1", "train-job", "20260314T100215Z")
	ruleBased := "coroner: cuda-oom at train-job-worker-4 (rank 5): CUDA out of memory; report " + base + ".html"
	var first *report.Report

	// The sample is already Failed when the watcher starts.
	c.LoadSample(t, sample, "w-llm-1", k)
	w := startWatcher(t, env.kubeconfig, dir, args...)
	t.Run("the bundle and the rule-based Event first, then the narrated report and the model's Event", func(t *testing.T) {
		ev := waitEvent(t, c, "w-llm-1", "train-job", 60*time.Second)
		require.Equal(t, watch.ReasonRootCause, ev.Reason, "the rule-based Event comes first")
		require.Equal(t, ruleBased, ev.Message)
		var narr []corev1.Event
		waitFor(t, 60*time.Second, "the narrative's Event", func() bool {
			narr = eventsBy(t, c, "w-llm-1", "train-job", watch.ReasonNarrative)
			return len(narr) > 0
		})
		require.Len(t, narr, 1)
		require.Less(t, resourceVersion(t, ev), resourceVersion(t, narr[0]), "the model's Event follows the rules'")
		log := w.log.String()
		require.Less(t, strings.Index(log, "msg=diagnosed"), strings.Index(log, "msg=narrated"), "%s", log)

		rep := readReportJSON(t, base+".json")
		require.NotNil(t, rep.LLM, "the report beside the bundle carries the narrative")
		l := rep.LLM
		require.Empty(t, l.Failure)
		require.Equal(t, "tiny", l.Model)
		require.False(t, l.Cached)
		require.Equal(t, filepath.Join(prompts.dir, "pytorchjob.tmpl"), l.Prompt.Source, "the ConfigMap's template")
		require.Equal(t, "1", l.Prompt.Version)
		require.NotEmpty(t, l.Raw)
		t.Logf("the model's Event: %s", narr[0].Message)
		t.Logf("the model's answer: %s", l.Raw)
		require.Equal(t, corev1.EventTypeNormal, narr[0].Type)
		require.Equal(t, "json", l.AnswerFormat)
		require.Equal(t, "abcdefghijklmnopqrstuvwxyz", l.Error)
		require.NotNil(t, l.Healthy)
		require.True(t, *l.Healthy, "the tiny model calls the job healthy")
		require.Equal(t, "model tiny (not coroner's verdict): abcdefghijklmnopqrstuvwxyz; the model disagrees: it says healthy, "+
			"coroner's verdict stays unhealthy (cuda-oom); report "+base+".html", narr[0].Message,
			"the Event carries the model's line, and says that it disagrees and which verdict stands")

		// coroner's verdict, annotations and metrics stay the rules'.
		require.Equal(t, analyze.VerdictUnhealthy, rep.Verdict)
		require.Equal(t, analyze.Category("cuda-oom"), rep.RootCause.Category)
		require.Equal(t, ruleBased, pytorchJob(t, c, "w-llm-1", "train-job").GetAnnotations()[watch.AnnotationSummary])
		page, err := os.ReadFile(base + ".html")
		require.NoError(t, err)
		require.Contains(t, string(page), "abcdefghijklmnopqrstuvwxyz", "the HTML report shows the narrative")
		require.Contains(t, string(page), "The model disagrees", "and the disagreement")
		require.Equal(t, 1.0, w.metric(`coroner_watch_root_causes_total{category="cuda-oom"}`))
		require.Equal(t, 1.0, w.metric("coroner_watch_llm_duration_seconds_count"))
		require.Equal(t, 0.0, w.metric(`coroner_watch_errors_total{step="llm"}`))
		require.Equal(t, 1, srv.chatCalls(1))
		first = rep
		if kubectl, err := exec.LookPath("kubectl"); err == nil {
			out, err := exec.Command(kubectl, "--kubeconfig", env.admin, "describe", "pytorchjob", "train-job", "-n", "w-llm-1").CombinedOutput()
			require.NoError(t, err, "%s", out)
			t.Logf("kubectl describe pytorchjob train-job -n w-llm-1 (its Events):\n%s", string(out)[strings.LastIndex(string(out), "Events:"):])
		}
	})

	t.Run("an edited ConfigMap changes the next prompt, without a restart", func(t *testing.T) {
		require.NotNil(t, first)
		prompts.setPrompts(t, c, map[string]string{"pytorchjob.tmpl": sitePromptV2})
		live := testcluster.Job{Namespace: "w-llm-2", Name: "live", Workers: 2, Running: true}
		c.CreateJob(t, k, live)
		c.FailJob(t, live)
		waitFor(t, 60*time.Second, "the narrative's Event", func() bool {
			return len(eventsBy(t, c, "w-llm-2", "live", watch.ReasonNarrative)) > 0
		})
		bundle := pytorchJob(t, c, "w-llm-2", "live").GetAnnotations()[watch.AnnotationBundle]
		rep := readReportJSON(t, strings.TrimSuffix(bundle, ".tar.gz")+".json")
		require.NotNil(t, rep.LLM)
		require.Empty(t, rep.LLM.Failure)
		require.Equal(t, "2", rep.LLM.Prompt.Version, "the new template")
		require.NotEqual(t, first.LLM.Prompt.Hash, rep.LLM.Prompt.Hash, "a new prompt")
		require.Equal(t, 2, srv.chatCalls(2))
	})

	t.Run("analyze finds the watcher's answer in the same cache", func(t *testing.T) {
		v1 := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(v1, "pytorchjob.tmpl"), []byte(sitePromptV1), 0o644))
		code, out, stderr := e2eRun(t, t.Context(), "analyze", base+".tar.gz", "--llm", "--ollama-host", srv.host, "--model", "tiny",
			"--prompt-dir", v1, "--num-ctx", "2048", "--llm-max-tokens", "400", "--llm-cache-dir", filepath.Join(dir, ".llm-cache"),
			"--stuck-after", "1h", "--format", "json")
		require.Equal(t, 0, code, stderr)
		l := decodeLLM(t, out)
		require.Equal(t, first.LLM.Prompt.Hash, l.Prompt.Hash, "the same prompt as the watcher's")
		require.True(t, l.Cached, "answered from the watcher's cache")
		require.Equal(t, first.LLM.Raw, l.Raw)
		require.Equal(t, 2, srv.chatCalls(2), "no new question")
	})

	t.Run("a restart asks nothing twice", func(t *testing.T) {
		require.NoError(t, w.Stop())
		prompts.setPrompts(t, c, map[string]string{"pytorchjob.tmpl": sitePromptV1})
		// The job as a restart before its annotations finds it: its bundle is written, and
		// the next watcher diagnoses it again.
		_, err := c.Dyn.Resource(testcluster.PyTorchJobs).Namespace("w-llm-1").Patch(t.Context(), "train-job", types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"coroner.dev/bundle":null,"coroner.dev/report":null,"coroner.dev/trigger":null,"coroner.dev/summary":null}}}`),
			metav1.PatchOptions{})
		require.NoError(t, err)
		w = startWatcher(t, env.kubeconfig, dir, args...)
		waitFor(t, 60*time.Second, "the second narrative's Event", func() bool {
			return len(eventsBy(t, c, "w-llm-1", "train-job", watch.ReasonNarrative)) == 2
		})
		rep := readReportJSON(t, base+".json")
		require.NotNil(t, rep.LLM)
		require.True(t, rep.LLM.Cached, "the answer came from the cache on the volume")
		require.Equal(t, first.LLM.Raw, rep.LLM.Raw)
		require.Equal(t, 2, srv.chatCalls(2), "no new question")
		require.Len(t, bundles(t, dir), 2, "and no new bundle")
		require.NoError(t, w.Stop())
	})

	t.Run("Ollama stopped mid-run: a warning and a counted error, nothing else changes", func(t *testing.T) {
		require.NoError(t, w.Stop()) // one leader at a time
		// Long answers: the model is still streaming the first when the second job fails.
		// The tiny model of Write never closes a string: held to the schema, it writes until
		// --llm-max-tokens.
		srv.create(t, "tiny-long")
		long := []string{"-n", "w-llm-3", "--llm", "--ollama-host", srv.host, "--model", "tiny-long", "--prompt-dir", prompts.dir,
			"--num-ctx", "8192", "--llm-max-tokens", "7000", "--llm-timeout", "5m", "--llm-no-cache"}
		dir := t.TempDir()
		w := startWatcher(t, env.kubeconfig, dir, long...)
		one := testcluster.Job{Namespace: "w-llm-3", Name: "one", Workers: 2, Running: true}
		two := testcluster.Job{Namespace: "w-llm-3", Name: "two", Workers: 2, Running: true}
		c.CreateJob(t, k, one)
		c.CreateJob(t, k, two)
		loads := strings.Count(srv.log.String(), "llama runner started")
		c.FailJob(t, one)
		waitEvent(t, c, "w-llm-3", "one", 30*time.Second)
		waitFor(t, 30*time.Second, "the model to be loaded for the first job", func() bool {
			return strings.Count(srv.log.String(), "llama runner started") > loads
		})
		time.Sleep(300 * time.Millisecond) // streaming
		start := time.Now()
		c.FailJob(t, two)
		ev := waitEvent(t, c, "w-llm-3", "two", 30*time.Second)
		t.Logf("the second job's rule-based Event in %.2fs while the model answered the first", time.Since(start).Seconds())
		require.Equal(t, watch.ReasonRootCause, ev.Reason)
		require.Equal(t, 0.0, w.metric("coroner_watch_llm_duration_seconds_count"), "the model had not finished: the rules did not wait for it")

		srv.stop()
		waitFor(t, 60*time.Second, "two counted errors", func() bool { return w.metric(`coroner_watch_errors_total{step="llm"}`) == 2 })
		for _, j := range []testcluster.Job{one, two} {
			require.Empty(t, eventsBy(t, c, j.Namespace, j.Name, watch.ReasonNarrative), "no narrative, no Event of it")
			evs := coronerEvents(t, c, j.Namespace, j.Name)
			require.Len(t, evs, 1)
			ann := pytorchJob(t, c, j.Namespace, j.Name).GetAnnotations()
			require.Equal(t, evs[0].Message, ann[watch.AnnotationSummary])
			rep := readReportJSON(t, strings.TrimSuffix(ann[watch.AnnotationBundle], ".tar.gz")+".json")
			require.Equal(t, analyze.VerdictUnhealthy, rep.Verdict)
			require.Equal(t, analyze.Category("cuda-oom"), rep.RootCause.Category)
			require.NotNil(t, rep.LLM)
			require.NotEmpty(t, rep.LLM.Failure)
			require.Contains(t, rep.Warnings, "no LLM narrative: "+rep.LLM.Failure)
			t.Logf("%s: %s", j.Name, rep.LLM.Failure)
		}
		first := readReportJSON(t, strings.TrimSuffix(pytorchJob(t, c, one.Namespace, one.Name).GetAnnotations()[watch.AnnotationBundle], ".tar.gz")+".json")
		require.Contains(t, first.LLM.Failure, "the answer stream ended before its final chunk", "stopped while it answered")
		require.Equal(t, 2.0, w.metric(`coroner_watch_root_causes_total{category="cuda-oom"}`))
		require.Equal(t, 2.0, w.metric("coroner_watch_bundles_written_total"))
		require.NoError(t, w.Stop())
	})
}
