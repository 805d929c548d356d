//go:build e2e

package main

// End-to-end tests of `coroner collect` against a real kube-apiserver (internal/testcluster).
// They run under `make e2e`, which builds kube-apiserver and installs etcd; `go test` alone skips
// them.

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/testcluster"
)

type e2eEnv struct {
	c       *testcluster.Cluster
	kubelet *testcluster.Kubelet
	admin   string // kubeconfig of the admin user
}

func startE2E(t *testing.T) *e2eEnv {
	c := testcluster.Start(t)
	c.InstallCRDs(t, testcluster.TrainingCRDs...)
	k := testcluster.StartKubelet(t)
	return &e2eEnv{c: c, kubelet: k, admin: c.Kubeconfig(t, testcluster.AdminToken, "e2e-admin", "default")}
}

// collectCLI runs `coroner collect ARGS` and returns the exit code, stdout and stderr.
func collectCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(t.Context(), append([]string{"collect"}, args...), &IOStreams{Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

func readManifest(t *testing.T, path string) *bundle.Manifest {
	t.Helper()
	b, err := bundle.Open(t.Context(), path, bundle.DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.NotNil(t, b.Manifest)
	return b.Manifest
}

// expectation is a sample's expected.json: what a correct analysis must conclude.
type expectation struct {
	Description string          `json:"description"`
	Verdict     analyze.Verdict `json:"verdict"`
	RootCause   *struct {
		Category  analyze.Category `json:"category"`
		Pod       string           `json:"pod"`
		Container string           `json:"container"`
	} `json:"rootCause"`
	AlsoFound []analyze.Category `json:"alsoFound"`
	Evidence  string             `json:"evidence"`
	// VerdictReason, RootRank and RootNode, when set, are what the verdict reason must say
	// and the rank and node the root cause must name.
	VerdictReason string `json:"verdictReason"`
	RootRank      *int   `json:"rootRank"`
	RootNode      string `json:"rootNode"`
}

// collectScenarios are samples recreated in the test cluster, one of each seed job kind, and
// the target that collects each.
var collectScenarios = []struct{ sample, target string }{
	{"pytorchjob-cuda-oom-rank", "pytorchjob/train-job"},
	{"trainjob-dataset-init-failed", "trainjobs.trainer.kubeflow.org/llama-sft"},
	{"colossalai-launcher-succeeded", "caij/cai-demo"},
	{"job-disk-full", "job/ckpt-export"},
	{"pytorchjob-master-oomkilled", "pytorchjob/train-job"},
}

func TestCollectE2E(t *testing.T) {
	env := startE2E(t)

	// Each seed job kind, recreated from its sample, collected and analyzed to the sample's verdict.
	t.Run("kinds", func(t *testing.T) {
		for _, tc := range collectScenarios {
			t.Run(tc.sample, func(t *testing.T) {
				ns := strings.ReplaceAll(tc.sample, "_", "-")
				env.c.LoadSample(t, filepath.Join(samplesDir, tc.sample), ns, env.kubelet)
				out := filepath.Join(t.TempDir(), "bundle.tar.gz")
				code, stdout, stderr := collectCLI(t, tc.target, "-n", ns, "--kubeconfig", env.admin, "-o", out)
				require.Equal(t, 0, code, "stderr: %s", stderr)
				require.Contains(t, stdout, out)
				t.Logf("%s%s", stdout, stderr)
				m := readManifest(t, out)
				require.Equal(t, ns, m.Target.Namespace)
				require.Equal(t, "v1.34.1", m.ServerVersion)
				require.True(t, m.Redaction.Enabled)

				var want expectation
				data, err := os.ReadFile(filepath.Join(samplesDir, tc.sample, "expected.json"))
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(data, &want))
				r, _ := analyzeJSON(t, nil, out)
				require.Equal(t, want.Verdict, r.Verdict, "verdict (%s)", r.VerdictReason)
				require.NotNil(t, r.RootCause)
				require.Equal(t, want.RootCause.Category, r.RootCause.Category, "root cause (%s)", r.RootCause.Title)
				require.Equal(t, want.RootCause.Pod, r.RootCause.Pod)
			})
		}
	})
}

func TestCollectE2EFailures(t *testing.T) {
	env := startE2E(t)
	c, k := env.c, env.kubelet

	t.Run("restarted container, redaction", func(t *testing.T) {
		j := testcluster.Job{Namespace: "restarts", Name: "rj", Workers: 2, Restarted: map[int]bool{2: true}}
		c.CreateJob(t, k, j)
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code, _, stderr := collectCLI(t, "pytorchjob/rj", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out)
		require.Equal(t, 0, code, stderr)
		m := readManifest(t, out)
		require.NotNil(t, m.File("logs/restarts/rj-worker-1/pytorch.previous.log"), "the restarted container's previous log")
		require.NotNil(t, m.File("logs/restarts/rj-worker-1/pytorch.log"))
		require.Nil(t, m.File("logs/restarts/rj-worker-0/pytorch.previous.log"), "no previous log without a restart")
		require.Empty(t, m.Errors)
		require.NotNil(t, m.File("resources/scheduling.x-k8s.io/PodGroup/restarts/rj.yaml"), "the job's PodGroup")

		raw := rawTar(t, out)
		require.NotContains(t, string(raw), "hf_abcdefghijklmnopqrstuvwxyz012345", "the token in the logs is redacted")
		require.NotContains(t, string(raw), "0123456789abcdef0123456789abcdef01234567", "the secret env value is redacted")
		require.NotEmpty(t, m.Redaction.Rules)

		r, _ := analyzeJSON(t, nil, out)
		require.Equal(t, analyze.VerdictUnhealthy, r.Verdict)
		require.Equal(t, analyze.CategoryCUDAOOM, r.RootCause.Category)
		require.Equal(t, "rj-worker-1", r.RootCause.Pod)
	})

	t.Run("log larger than the limit keeps head and tail", func(t *testing.T) {
		j := testcluster.Job{Namespace: "biglog", Name: "big", Workers: 2, LogLines: 20000}
		c.CreateJob(t, k, j)
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code, stdout, stderr := collectCLI(t, "pytorchjob/big", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out, "--max-log-bytes", "64Ki")
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, "3 logs (3 truncated)")
		m := readManifest(t, out)
		f := m.File("logs/biglog/big-worker-1/pytorch.log")
		require.NotNil(t, f)
		require.True(t, f.Truncated)
		require.Greater(t, f.TruncatedBytes, int64(1<<20))
		require.LessOrEqual(t, f.Bytes, int64(64<<10+200))
		log := fileInTar(t, out, "logs/biglog/big-worker-1/pytorch.log")
		require.Contains(t, log, "initializing process group", "the head is kept")
		require.Contains(t, log, "CUDA out of memory", "the tail is kept")
		require.Contains(t, log, "bytes cut here")
		r, _ := analyzeJSON(t, nil, out)
		require.Equal(t, analyze.CategoryCUDAOOM, r.RootCause.Category)

		// A total budget across logs: what does not fit is cut or skipped, and said so.
		code, _, stderr = collectCLI(t, "pytorchjob/big", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out,
			"--max-log-bytes", "64Ki", "--max-total-log-bytes", "100Ki", "--concurrency", "1")
		require.Equal(t, 0, code, stderr)
		m = readManifest(t, out)
		var logBytes int64
		for _, f := range m.Files {
			if strings.HasPrefix(f.Path, "logs/") {
				logBytes += f.Bytes
			}
		}
		require.LessOrEqual(t, logBytes, int64(100<<10+3*200))
		require.Contains(t, stderr, "--max-total-log-bytes")

		// --since: the kubelet only sends newer lines (these logs are from March).
		code, _, stderr = collectCLI(t, "pytorchjob/big", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out, "--since", "1h")
		require.Equal(t, 0, code, stderr)
		m = readManifest(t, out)
		require.Equal(t, "1h0m0s", m.Options.Since)
		require.Equal(t, int64(0), m.File("logs/biglog/big-worker-1/pytorch.log").Bytes)
	})

	t.Run("least-privilege RBAC, and events forbidden", func(t *testing.T) {
		rbac, err := os.ReadFile("../../deploy/rbac.yaml")
		require.NoError(t, err)
		kc := c.Kubeconfig(t, testcluster.CollectorToken, "collector", "rbac")
		j := testcluster.Job{Namespace: "rbac", Name: "rb", Workers: 1}
		c.CreateJob(t, k, j)
		out := filepath.Join(t.TempDir(), "b.tar.gz")

		// Before any binding: the job itself is forbidden, which is fatal.
		code, _, stderr := collectCLI(t, "pytorchjob/rb", "--kubeconfig", kc, "-o", out)
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "forbidden")
		require.NoFileExists(t, out)

		// The documented RBAC, minus events.
		noEvents := strings.Replace(strings.ReplaceAll(string(rbac), "namespace: ml", "namespace: rbac"),
			"resources: [pods, events, resourcequotas, limitranges]", "resources: [pods, resourcequotas, limitranges]", 1)
		c.ApplyYAML(t, k, noEvents)
		code, _, stderr = eventually(t, func() (int, string, string) {
			return collectCLI(t, "pytorchjob/rb", "--kubeconfig", kc, "-o", out)
		})
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stderr, "warning: list events in rbac: forbidden by RBAC")
		m := readManifest(t, out)
		// Without deploy/node-agents-rbac.yaml the GPU agents' pods cannot be listed: a gap of
		// its own, after the events'.
		require.Len(t, m.Errors, 2, "%+v", m.Errors)
		require.Equal(t, "node-agents", m.Errors[1].Step)
		require.Equal(t, "events in rbac", m.Errors[0].Object)
		require.Contains(t, m.Errors[0].Message, "forbidden")
		require.NotNil(t, m.File("logs/rbac/rb-worker-0/pytorch.log"), "logs are allowed")
		require.NotNil(t, m.File("resources/core/Node/_cluster/rb-node-0.yaml"), "nodes are allowed")

		// --strict turns the gap into an error, and writes nothing.
		strict := filepath.Join(t.TempDir(), "strict.tar.gz")
		code, _, stderr = collectCLI(t, "pytorchjob/rb", "--kubeconfig", kc, "-o", strict, "--strict")
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "--strict: 1 gap(s)")
		require.NoFileExists(t, strict)
		require.Empty(t, leftovers(t, filepath.Dir(strict)))
	})

	t.Run("node whose kubelet does not answer", func(t *testing.T) {
		j := testcluster.Job{Namespace: "deadnode", Name: "dn", Workers: 3, Nodes: 2}
		c.CreateJob(t, k, j)
		c.SetKubeletPort(t, j.NodeName(1), testcluster.DeadPort(t))
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code, stdout, stderr := collectCLI(t, "pytorchjob/dn", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, "2 logs (0 truncated), 2 gaps")
		m := readManifest(t, out)
		require.Len(t, m.Errors, 2)
		for _, g := range m.Errors {
			require.Equal(t, "logs", g.Step)
			require.Contains(t, g.Message, "logs unavailable")
		}
		require.NotNil(t, m.File("logs/deadnode/dn-master-0/pytorch.log"))
		require.Nil(t, m.File("logs/deadnode/dn-worker-0/pytorch.log"))
	})

	t.Run("log stream that stalls is given up, keeping what arrived", func(t *testing.T) {
		j := testcluster.Job{Namespace: "stall", Name: "st", Workers: 1, LogLines: 2000}
		c.CreateJob(t, k, j)
		k.Stall(j.Namespace, j.PodName(1), "pytorch", 64<<10)
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code, _, stderr := collectCLI(t, "pytorchjob/st", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out, "--log-idle-timeout", "1s")
		require.Equal(t, 0, code, stderr)
		m := readManifest(t, out)
		require.Len(t, m.Errors, 1, "%+v", m.Errors)
		require.Contains(t, m.Errors[0].Message, "the log stream ended early (the log stream sent nothing for too long (1s))")
		log := fileInTar(t, out, "logs/stall/st-worker-0/pytorch.log")
		require.Contains(t, log, "initializing process group", "what arrived is kept")
		require.NotContains(t, log, "CUDA out of memory", "what never arrived is not")
	})

	t.Run("nodes listed by hostname label, the others got by name", func(t *testing.T) {
		// A job on more than a few nodes lists them by the kubelet's hostname label; a node
		// whose label is not its name (--hostname-override) is got by name, and a node that
		// is gone is a gap, as when every node was got by name.
		j := testcluster.Job{Namespace: "hostnames", Name: "hn", Workers: 7, Nodes: 5}
		c.CreateJob(t, k, j)
		relabelled, gone := j.NodeName(1), j.NodeName(2)
		n, err := c.Kube.CoreV1().Nodes().Get(t.Context(), relabelled, metav1.GetOptions{})
		require.NoError(t, err)
		n.Labels["kubernetes.io/hostname"] = "short-1"
		_, err = c.Kube.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.NoError(t, c.Kube.CoreV1().Nodes().Delete(t.Context(), gone, metav1.DeleteOptions{}))
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code, _, stderr := collectCLI(t, "pytorchjob/hn", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out)
		require.Equal(t, 0, code, stderr)
		m := readManifest(t, out)
		for i := range j.Nodes {
			if name := j.NodeName(i); name != gone {
				require.NotNil(t, m.File("resources/core/Node/_cluster/"+name+".yaml"), name)
			}
		}
		require.Nil(t, m.File("resources/core/Node/_cluster/"+gone+".yaml"))
		var gaps []string
		for _, g := range m.Errors {
			gaps = append(gaps, g.Object+": "+g.Message)
		}
		require.Contains(t, gaps, "node/"+gone+": the node is gone")
	})

	t.Run("pod deleted mid-collect", func(t *testing.T) {
		j := testcluster.Job{Namespace: "deleted", Name: "dp", Workers: 2}
		c.CreateJob(t, k, j)
		k.OnRequest(func(ns, pod, container string) {
			if ns == "deleted" && pod == "dp-master-0" {
				require.NoError(t, c.Kube.CoreV1().Pods(ns).Delete(context.Background(), "dp-worker-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
			}
		})
		defer k.OnRequest(nil)
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code, _, stderr := collectCLI(t, "pytorchjob/dp", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out, "--concurrency", "1")
		require.Equal(t, 0, code, stderr)
		m := readManifest(t, out)
		require.Len(t, m.Errors, 1, "%+v", m.Errors)
		require.Equal(t, "pod/dp-worker-1 container pytorch", m.Errors[0].Object)
		require.Contains(t, m.Errors[0].Message, "gone")
		require.NotNil(t, m.File("resources/core/Pod/deleted/dp-worker-1.yaml"), "the pod object was collected before it went")
		require.NotNil(t, m.File("logs/deleted/dp-worker-0/pytorch.log"))
	})

	t.Run("interrupted collect leaves no bundle", func(t *testing.T) {
		j := testcluster.Job{Namespace: "interrupt", Name: "ir", Workers: 1, LogLines: 2000}
		c.CreateJob(t, k, j)
		k.Slow(j.Namespace, j.PodName(1), "pytorch", 50*time.Millisecond)
		dir := t.TempDir()
		out := filepath.Join(dir, "b.tar.gz")
		ctx, cancel := context.WithCancelCause(t.Context())
		go func() {
			for !slices.Contains(k.Calls(), "interrupt/ir-worker-0/pytorch") {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			cancel(&Interrupted{Signal: os.Interrupt})
		}()
		var stdout, stderr bytes.Buffer
		code := Main(ctx, []string{"collect", "pytorchjob/ir", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out}, &IOStreams{Out: &stdout, ErrOut: &stderr})
		require.Equal(t, exitInterrupt, code)
		require.Equal(t, "coroner: interrupted; nothing written\n", stderr.String())
		require.Empty(t, leftovers(t, dir), "no bundle and no temporary file")
	})

	// A kubelet that takes the log request and never answers, not even with a status line. The
	// idle watchdog used to cancel such a request before its first byte, the cancelled request
	// came back from withRetry as a success without a stream, and closing it panicked.
	t.Run("log request that never answers is a gap (--log-idle-timeout)", func(t *testing.T) {
		j := testcluster.Job{Namespace: "hang", Name: "hg", Workers: 1}
		c.CreateJob(t, k, j)
		k.Hang(j.Namespace, j.PodName(1), "pytorch", true)
		dir := t.TempDir()
		out := filepath.Join(dir, "b.tar.gz")
		s := coronerProcess(t, "collect", "pytorchjob/hg", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out, "--log-idle-timeout", "1s")
		require.Equal(t, 0, s.wait(t), s.stderr.String())
		require.NotContains(t, s.stderr.String(), "panic")
		require.Contains(t, s.stderr.String(), "warning: logs pod/hg-worker-0 container pytorch: the log stream sent nothing for too long (1s)")
		m := readManifest(t, out)
		require.Len(t, m.Errors, 1, "%+v", m.Errors)
		require.Equal(t, bundle.Gap{Step: "logs", Object: "pod/hg-worker-0 container pytorch", Message: "the log stream sent nothing for too long (1s)"}, m.Errors[0])
		require.Nil(t, m.File("logs/hang/hg-worker-0/pytorch.log"))
		require.NotNil(t, m.File("logs/hang/hg-master-0/pytorch.log"), "the other logs are collected")
		require.Equal(t, []string{"b.tar.gz"}, leftovers(t, dir), "no temporary file")
	})

	t.Run("SIGTERM while a log request hangs: exit 143, nothing written", func(t *testing.T) {
		j := testcluster.Job{Namespace: "hang-term", Name: "ht", Workers: 1}
		c.CreateJob(t, k, j)
		k.Hang(j.Namespace, j.PodName(1), "pytorch", true)
		dir := t.TempDir()
		out := filepath.Join(dir, "b.tar.gz")
		s := coronerProcess(t, "collect", "pytorchjob/ht", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out)
		pollUntil(t, "the hung log request", func() bool { return slices.Contains(k.Calls(), "hang-term/ht-worker-0/pytorch") })
		time.Sleep(200 * time.Millisecond) // the request is waiting on the kubelet
		require.Equal(t, exitTerminated, s.exit(t, syscall.SIGTERM), s.stderr.String())
		require.Equal(t, "coroner: terminated; nothing written\n", s.stderr.String())
		require.Empty(t, leftovers(t, dir), "no bundle and no temporary file")
	})

	t.Run("unknown custom resource: what it owns, down to pods", func(t *testing.T) {
		c.InstallCRDs(t, testcluster.CRD{Group: "ml.example.com", Version: "v1", Kind: "Experiment", Plural: "experiments"})
		c.ApplyYAML(t, k, `
apiVersion: ml.example.com/v1
kind: Experiment
metadata: {name: exp, namespace: custom, uid: 11111111-0000-0000-0000-000000000001}
spec: {trials: 1}
status: {conditions: [{type: Failed, status: "True", reason: TrialFailed, message: "trial 0 failed"}]}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: exp-trial-0
  namespace: custom
  uid: 11111111-0000-0000-0000-000000000002
  ownerReferences: [{apiVersion: ml.example.com/v1, kind: Experiment, name: exp, uid: 11111111-0000-0000-0000-000000000001}]
spec:
  backoffLimit: 0
  template: {spec: {restartPolicy: Never, containers: [{name: trial, image: trial:1}]}}
---
apiVersion: v1
kind: Pod
metadata:
  name: exp-trial-0-abcde
  namespace: custom
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: exp-trial-0, uid: 11111111-0000-0000-0000-000000000002}]
spec: {restartPolicy: Never, containers: [{name: trial, image: trial:1}]}
status: {phase: Pending, conditions: [{type: PodScheduled, status: "False", reason: Unschedulable, message: "0/8 nodes are available: 8 Insufficient nvidia.com/gpu."}]}
---
apiVersion: v1
kind: Pod
metadata: {name: unrelated, namespace: custom}
spec: {containers: [{name: c, image: x}]}
`)
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code, _, stderr := collectCLI(t, "experiment/exp", "-n", "custom", "--kubeconfig", env.admin, "-o", out)
		require.Equal(t, 0, code, stderr)
		m := readManifest(t, out)
		require.NotNil(t, m.File("resources/ml.example.com/Experiment/custom/exp.yaml"))
		require.NotNil(t, m.File("resources/batch/Job/custom/exp-trial-0.yaml"))
		require.NotNil(t, m.File("resources/core/Pod/custom/exp-trial-0-abcde.yaml"))
		require.Nil(t, m.File("resources/core/Pod/custom/unrelated.yaml"), "a pod the job does not own is left out")
		require.Len(t, m.Errors, 1)
		require.Contains(t, m.Errors[0].Message, "never scheduled")
		r, _ := analyzeJSON(t, nil, out)
		require.Equal(t, analyze.VerdictUnhealthy, r.Verdict)
	})

	t.Run("progress on a terminal only", func(t *testing.T) {
		j := testcluster.Job{Namespace: "progress", Name: "pg", Workers: 1}
		c.CreateJob(t, k, j)
		var stdout, stderr bytes.Buffer
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code := Main(t.Context(), []string{"collect", "pytorchjob/pg", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out},
			&IOStreams{Out: &stdout, ErrOut: &stderr, IsTerminal: true})
		require.Equal(t, 0, code, stderr.String())
		require.Contains(t, stderr.String(), "collecting pg: [####################] ")
		require.Contains(t, stderr.String(), "logs 2/2")
		require.True(t, strings.HasSuffix(stderr.String(), "\r\033[K"), "the bar is cleared before the summary")
		require.NotContains(t, stdout.String(), "collecting")
	})

	t.Run("unknown kind lists the training kinds", func(t *testing.T) {
		code, _, stderr := collectCLI(t, "rayjob/x", "-n", "default", "--kubeconfig", env.admin)
		require.Equal(t, 1, code)
		require.Contains(t, stderr, `the cluster serves no kind "rayjob"; training kinds it serves:`)
		require.Contains(t, stderr, "pytorchjobs.kubeflow.org (PyTorchJob)")
		require.Contains(t, stderr, "trainjobs.trainer.kubeflow.org (TrainJob)")
		require.Contains(t, stderr, "jobs.batch (Job)")
		code, _, stderr = collectCLI(t, "pytorchjob/nope", "-n", "default", "--kubeconfig", env.admin)
		require.Equal(t, 1, code)
		require.Contains(t, stderr, `pytorchjobs.kubeflow.org "nope" not found in namespace default`)
	})
}

// TestCollectE2EPods collects a job of many pods (64, or CORONER_COLLECT_PODS: make
// bench-collect runs 1,024) from the real kube-apiserver and fake kubelet, and prints how long
// it took and how many requests the API server served for it (its apiserver_request_total,
// read before and after): a collect must cost requests in proportion to its pods, never a
// storm of retries, and must honour its client-side rate limit (--concurrency sets both).
func TestCollectE2EPods(t *testing.T) {
	pods := 64
	if v := os.Getenv("CORONER_COLLECT_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "CORONER_COLLECT_PODS")
		require.Greater(t, n, 1, "CORONER_COLLECT_PODS")
		pods = n
	}
	env := startE2E(t)
	j := testcluster.Job{Namespace: "wide", Name: "wide", Workers: pods - 1, Nodes: max(8, pods/8), LogLines: 2000}
	env.c.CreateJob(t, env.kubelet, j)
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	before := apiRequests(t, env)
	start := time.Now()
	code, stdout, stderr := collectCLI(t, "pytorchjob/wide", "-n", j.Namespace, "--kubeconfig", env.admin, "-o", out)
	took := time.Since(start)
	requests := apiRequests(t, env) - before
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, fmt.Sprintf("%d logs (0 truncated), 0 gaps", pods))
	// One log request per pod, two per node (its events; its pods, for the GPU agents), a
	// list of nodes per 64, and a fixed few (discovery, the job, the kinds it may own, quotas,
	// this test's read of the metrics): a collect that retried, or listed per pod or per agent,
	// would cost more.
	require.LessOrEqual(t, requests, pods+2*j.Nodes+(j.Nodes+63)/64+24, "requests the API server served for one collect of %d pods on %d nodes", pods, j.Nodes)
	t.Logf("collect of %d pods (%s): %.2fs, %d API requests (%.2f per pod)", pods, strings.TrimSpace(stdout), took.Seconds(), requests, float64(requests)/float64(pods))
	r, _ := analyzeJSON(t, nil, out)
	require.Equal(t, "wide-worker-1", r.RootCause.Pod)
}

// apiRequests is the API server's count of the requests it served (the sum of its
// apiserver_request_total), read from its /metrics as the admin.
func apiRequests(t *testing.T, env *e2eEnv) int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.c.Config(testcluster.AdminToken))
	require.NoError(t, err)
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	require.NoError(t, err)
	total := 0.0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		require.NoError(t, err, line)
		total += v
	}
	return int(total)
}

// eventually retries a collect while RBAC bindings propagate to the authorizer's cache.
func eventually(t *testing.T, fn func() (int, string, string)) (int, string, string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out, errOut := fn()
		if code == 0 || time.Now().After(deadline) {
			return code, out, errOut
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// coronerProcess runs coroner ARGS as a process of its own (this test binary, which TestMain
// turns into coroner when CORONER_TEST_RUN_MAIN=1): a panic or a signal is seen as a user
// sees it, in the exit code and on stderr.
func coronerProcess(t *testing.T, args ...string) *started {
	t.Helper()
	bin, err := os.Executable()
	require.NoError(t, err)
	s := &started{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	s.cmd.Env = append(os.Environ(), "CORONER_TEST_RUN_MAIN=1")
	s.cmd.Stderr = &s.stderr
	require.NoError(t, s.cmd.Start())
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() { _ = s.cmd.Process.Kill() })
	return s
}

func leftovers(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func fileInTar(t *testing.T, path, name string) string {
	tr := tar.NewReader(bytes.NewReader(rawTar(t, path)))
	for {
		h, err := tr.Next()
		require.NoError(t, err, "%s not in %s", name, path)
		if h.Name == name {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			return string(b)
		}
	}
}

// TestCollectE2ELeastPrivilege collects with exactly the shipped RBAC (deploy/rbac.yaml) and
// --strict, in a cluster whose kubeflow.org group also serves kinds the RBAC does not grant
// (Notebooks, Katib Trials) and the mpi-operator's MPIJob in kubeflow.org/v2beta1 beside the
// training operator's v1 kinds. Before, collect listed every kind of the job's group, so a
// least-privilege user always had a "forbidden" gap and --strict always failed, and the MPIJob
// could not be named at all ("the cluster serves no kind mpijob").
func TestCollectE2ELeastPrivilege(t *testing.T) {
	env := startE2E(t)
	c, k := env.c, env.kubelet
	c.InstallCRDs(t,
		testcluster.CRD{Group: "kubeflow.org", Version: "v1", Kind: "Notebook", Plural: "notebooks"},
		testcluster.CRD{Group: "kubeflow.org", Version: "v1beta1", Kind: "Trial", Plural: "trials"})
	rbac, err := os.ReadFile("../../deploy/rbac.yaml")
	require.NoError(t, err)
	const ns = "least"
	c.ApplyYAML(t, k, strings.ReplaceAll(string(rbac), "namespace: ml", "namespace: "+ns))
	// The opt-in read of the GPU agents, where the GPU Operator runs them: without it, one
	// node-agents gap (TestCollectE2ENodeAgents).
	agents, err := os.ReadFile("../../deploy/node-agents-rbac.yaml")
	require.NoError(t, err)
	c.ApplyYAML(t, k, "apiVersion: v1\nkind: Namespace\nmetadata: {name: gpu-operator}\n---\n"+string(agents))
	kc := c.Kubeconfig(t, testcluster.CollectorToken, "collector", ns)

	pj := testcluster.Job{Namespace: ns, Name: "pj", Workers: 2}
	c.CreateJob(t, k, pj)
	mpi := testcluster.Job{Namespace: ns, Name: "mpi", Kind: "MPIJob", Workers: 2}
	c.CreateJob(t, k, mpi)
	// Unrelated things of the same group in the namespace, with pods the collector may read
	// but owners it may not.
	c.ApplyYAML(t, k, `
apiVersion: kubeflow.org/v1
kind: Notebook
metadata: {name: nb, namespace: least, uid: 22222222-0000-0000-0000-000000000001}
spec: {}
---
apiVersion: kubeflow.org/v1beta1
kind: Trial
metadata: {name: tr, namespace: least, uid: 22222222-0000-0000-0000-000000000002}
spec: {}
---
apiVersion: v1
kind: Pod
metadata:
  name: nb-0
  namespace: least
  ownerReferences: [{apiVersion: kubeflow.org/v1, kind: Notebook, name: nb, uid: 22222222-0000-0000-0000-000000000001}]
spec: {containers: [{name: notebook, image: jupyter}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: tr-0
  namespace: least
  ownerReferences: [{apiVersion: kubeflow.org/v1beta1, kind: Trial, name: tr, uid: 22222222-0000-0000-0000-000000000002}]
spec: {containers: [{name: trial, image: trial}]}
`)

	for _, tc := range []struct{ target, pod, file string }{
		{"pytorchjob/pj", "pj-worker-0", "resources/kubeflow.org/PyTorchJob/least/pj.yaml"},
		{"mpijob/mpi", "mpi-worker-0", "resources/kubeflow.org/MPIJob/least/mpi.yaml"},
		{"mpijobs.v2beta1.kubeflow.org/mpi", "mpi-worker-0", "resources/kubeflow.org/MPIJob/least/mpi.yaml"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "b.tar.gz")
			code, stdout, stderr := eventually(t, func() (int, string, string) {
				return collectCLI(t, tc.target, "--kubeconfig", kc, "-o", out, "--strict")
			})
			require.Equal(t, 0, code, "stderr: %s", stderr)
			require.Contains(t, stdout, ", 0 gaps")
			m := readManifest(t, out)
			require.Empty(t, m.Errors)
			require.NotNil(t, m.File(tc.file))
			require.NotNil(t, m.File("logs/least/"+tc.pod+"/"+map[bool]string{true: "mpi", false: "pytorch"}[strings.HasPrefix(tc.pod, "mpi")]+".log"))
			require.Nil(t, m.File("resources/core/Pod/least/nb-0.yaml"), "another owner's pod is left out")
			require.Nil(t, m.File("resources/core/Pod/least/tr-0.yaml"))
			r, _ := analyzeJSON(t, nil, out)
			require.Equal(t, "unhealthy", string(r.Verdict))
		})
	}
}

// TestCollectE2EOwnerChain: a custom resource whose pods are owned through another kind of its
// group (an Experiment's Trials) is collected down to its pods by following the pods' owner
// references, without listing the group's kinds.
func TestCollectE2EOwnerChain(t *testing.T) {
	env := startE2E(t)
	c, k := env.c, env.kubelet
	c.InstallCRDs(t,
		testcluster.CRD{Group: "ml.example.com", Version: "v1", Kind: "Experiment", Plural: "experiments"},
		testcluster.CRD{Group: "ml.example.com", Version: "v1", Kind: "Trial", Plural: "trials"})
	c.ApplyYAML(t, k, `
apiVersion: ml.example.com/v1
kind: Experiment
metadata: {name: exp, namespace: chain, uid: 33333333-0000-0000-0000-000000000001}
spec: {trials: 1}
status: {conditions: [{type: Failed, status: "True", reason: TrialFailed, message: "trial 0 failed"}]}
---
apiVersion: ml.example.com/v1
kind: Trial
metadata:
  name: exp-t0
  namespace: chain
  uid: 33333333-0000-0000-0000-000000000002
  ownerReferences: [{apiVersion: ml.example.com/v1, kind: Experiment, name: exp, uid: 33333333-0000-0000-0000-000000000001}]
spec: {}
---
apiVersion: ml.example.com/v1
kind: Trial
metadata: {name: other-t0, namespace: chain, uid: 33333333-0000-0000-0000-000000000003}
spec: {}
---
apiVersion: v1
kind: Pod
metadata:
  name: exp-t0-pod
  namespace: chain
  ownerReferences: [{apiVersion: ml.example.com/v1, kind: Trial, name: exp-t0, uid: 33333333-0000-0000-0000-000000000002}]
spec: {containers: [{name: trial, image: trial:1}]}
status: {phase: Pending, conditions: [{type: PodScheduled, status: "False", reason: Unschedulable, message: "0/8 nodes are available: 8 Insufficient nvidia.com/gpu."}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: other-t0-pod
  namespace: chain
  ownerReferences: [{apiVersion: ml.example.com/v1, kind: Trial, name: other-t0, uid: 33333333-0000-0000-0000-000000000003}]
spec: {containers: [{name: trial, image: trial:1}]}
`)
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	code, _, stderr := collectCLI(t, "experiment/exp", "-n", "chain", "--kubeconfig", env.admin, "-o", out)
	require.Equal(t, 0, code, stderr)
	m := readManifest(t, out)
	require.NotNil(t, m.File("resources/ml.example.com/Trial/chain/exp-t0.yaml"), "the Trial between the Experiment and its pod")
	require.NotNil(t, m.File("resources/core/Pod/chain/exp-t0-pod.yaml"))
	require.Nil(t, m.File("resources/ml.example.com/Trial/chain/other-t0.yaml"), "another Experiment's Trial is left out")
	require.Nil(t, m.File("resources/core/Pod/chain/other-t0-pod.yaml"))
}
