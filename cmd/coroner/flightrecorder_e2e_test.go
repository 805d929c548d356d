//go:build e2e

package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/collect"
	"github.com/coroner-dev/coroner/frtrace"
	"github.com/coroner-dev/coroner/internal/testcluster"
	"github.com/coroner-dev/coroner/watch"
)

// execGaps are a manifest's gaps of step exec, as "object: message".
func execGaps(m *bundle.Manifest) []string {
	var out []string
	for _, g := range m.Errors {
		if g.Step == "exec" {
			out = append(out, g.Object+": "+g.Message)
		}
	}
	return out
}

// sampleDump is rank r's dump of samples/pytorchjob-hang-flight-recorder: a pickle as torch
// writes it. Pod i of a testcluster.Job with three workers holds rank i there too.
func sampleDump(t *testing.T, rank int) []byte {
	t.Helper()
	pods := []string{"llama-ft-master-0", "llama-ft-worker-0", "llama-ft-worker-1", "llama-ft-worker-2"}
	b, err := os.ReadFile(filepath.Join("../../samples/pytorchjob-hang-flight-recorder/flightrecorder/ml", pods[rank], "comm_lib_trace_rank_"+strconv.Itoa(rank)))
	require.NoError(t, err)
	return b
}

// requireSampleDumps checks that the bundle at path holds, for pods 0 to last of the job,
// rank i's sample dump (sampleDump) as pod i's, read back whole: the same entries, the last
// one in the same state.
func requireSampleDumps(t *testing.T, path string, job testcluster.Job, last int) {
	t.Helper()
	for i := 0; i <= last; i++ {
		name := "flightrecorder/" + job.Namespace + "/" + job.PodName(i) + "/comm_lib_trace_rank_" + strconv.Itoa(i)
		got, err := frtrace.Decode([]byte(fileInTar(t, path, name)), frtrace.DefaultLimits())
		require.NoError(t, err, name)
		want, err := frtrace.Decode(sampleDump(t, i), frtrace.DefaultLimits())
		require.NoError(t, err)
		require.Equal(t, len(want.Entries), len(got.Entries), name)
		require.Equal(t, want.Entries[len(want.Entries)-1].State, got.Entries[len(got.Entries)-1].State, name)
	}
}

// startCollectorE2E starts the harness with deploy/rbac.yaml applied in namespace ns (and no
// opt-in), and returns the kubeconfig of its collector user.
func startCollectorE2E(t *testing.T, ns string) (*testcluster.Cluster, *testcluster.Kubelet, string) {
	env := startE2E(t)
	rbac, err := os.ReadFile("../../deploy/rbac.yaml")
	require.NoError(t, err)
	env.c.ApplyYAML(t, env.kubelet, strings.ReplaceAll(string(rbac), "namespace: ml", "namespace: "+ns))
	return env.c, env.kubelet, env.c.Kubeconfig(t, testcluster.CollectorToken, "collector", ns)
}

// TestCollectFlightRecorderE2E: `collect --flight-recorder-exec` against a real kube-apiserver,
// whose pods/exec the fake kubelet serves with the streaming protocol, into the in-memory
// filesystems of running containers. Without the opt-in RBAC (deploy/flight-recorder-exec.yaml)
// the API server refuses pods/exec and each running container that names a dump prefix is a
// gap saying so; with it the dumps are copied from the container for real (the pickles come
// back byte for byte and are kept as their JSON form), a dump over --max-flight-record-bytes is
// a gap, a prefix with no dump is a gap. A container that is not running is a gap without any
// exec, and an exec into it fails as a kubelet makes it fail. Without the flag, coroner never
// execs.
func TestCollectFlightRecorderE2E(t *testing.T) {
	const ns = "frns"
	c, k, kc := startCollectorE2E(t, ns)
	hang := testcluster.Job{Namespace: ns, Name: "hang", Workers: 3, Running: true, FlightRecorder: "/fr/comm_lib_trace_rank_"}
	c.CreateJob(t, k, hang)
	done := testcluster.Job{Namespace: ns, Name: "done", Workers: 1, FlightRecorder: "/fr/comm_lib_trace_rank_"}
	c.CreateJob(t, k, done)
	// Ranks 0 to 2 wrote their dump to the volume; rank 3's dump is huge (over the bound);
	// worker 2 also holds a file that is not a dump. No container of the failed job runs.
	for i := 0; i <= 2; i++ {
		k.Container(ns, hang.PodName(i), "pytorch").WriteFile("/fr/comm_lib_trace_rank_"+strconv.Itoa(i), sampleDump(t, i))
	}
	big := k.Container(ns, hang.PodName(3), "pytorch")
	big.WriteFile("/fr/comm_lib_trace_rank_3", bytes.Repeat([]byte{0x80}, 2<<20))
	big.WriteFile("/fr/notes.txt", []byte("not a dump"))
	k.Container(ns, done.PodName(0), "pytorch").WriteFile("/fr/comm_lib_trace_rank_0", sampleDump(t, 0))

	collectTo := func(target string, args ...string) string {
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code, _, stderr := eventually(t, func() (int, string, string) {
			return collectCLI(t, append([]string{target, "--kubeconfig", kc, "-o", out}, args...)...)
		})
		require.Equal(t, 0, code, "stderr: %s", stderr)
		return out
	}
	collectGaps := func(target string, args ...string) []string {
		return execGaps(readManifest(t, collectTo(target, args...)))
	}

	require.Empty(t, collectGaps("pytorchjob/hang"), "no exec without --flight-recorder-exec")
	require.Empty(t, k.Container(ns, hang.PodName(0), "pytorch").Execs())

	gaps := collectGaps("pytorchjob/hang", "--flight-recorder-exec")
	require.Len(t, gaps, 4, "%q", gaps)
	for _, g := range gaps {
		require.Contains(t, g, "flight recorder dumps /fr/comm_lib_trace_rank_*: forbidden")
	}
	require.Empty(t, k.Container(ns, hang.PodName(0), "pytorch").Execs(), "RBAC refused the exec before the kubelet")

	gaps = collectGaps("pytorchjob/done", "--flight-recorder-exec")
	require.Len(t, gaps, 2, "%q", gaps)
	require.Contains(t, gaps[0], "pod/done-master-0 container pytorch: not running")
	require.Empty(t, k.Container(ns, done.PodName(0), "pytorch").Execs(), "no exec into a container that is not running")

	grant, err := os.ReadFile("../../deploy/flight-recorder-exec.yaml")
	require.NoError(t, err)
	c.ApplyYAML(t, k, strings.ReplaceAll(string(grant), "namespace: ml", "namespace: "+ns))
	var path string
	waitFor(t, 15*time.Second, "the exec grant to reach the authorizer", func() bool {
		path = collectTo("pytorchjob/hang", "--flight-recorder-exec", "--max-flight-record-bytes", "1MiB")
		gaps = execGaps(readManifest(t, path))
		return len(gaps) == 0 || !strings.Contains(gaps[0], "forbidden")
	})
	require.Equal(t, []string{"pod/hang-worker-2 container pytorch: flight recorder dump comm_lib_trace_rank_3 is over 1048576 bytes: not kept"}, gaps)
	require.Equal(t, [][]string{{"ls", "-1", "--", "/fr"}, {"cat", "--", "/fr/comm_lib_trace_rank_0"}}, k.Container(ns, hang.PodName(0), "pytorch").Execs()[0:2])
	requireSampleDumps(t, path, hang, 2)

	// An exec into a terminated container fails at the kubelet, as a real one makes it fail.
	cfg := c.Config(testcluster.CollectorToken)
	clients, err := collect.NewClients(cfg)
	require.NoError(t, err)
	var out bytes.Buffer
	err = collect.NewExecer(cfg, clients.Kube)(t.Context(), ns, done.PodName(0), "pytorch", []string{"cat", "--", "/fr/comm_lib_trace_rank_0"}, &out)
	require.ErrorContains(t, err, `container not found ("pytorch")`)
	require.Zero(t, out.Len())
	// And into a running one, a command that fails is its exit code, not a copy.
	err = collect.NewExecer(cfg, clients.Kube)(t.Context(), ns, hang.PodName(0), "pytorch", []string{"cat", "--", "/fr/none"}, &out)
	require.ErrorContains(t, err, "exit code 1")
	require.ErrorContains(t, err, "No such file or directory")
}

// TestWatchFlightRecorderHangE2E: `coroner watch --fr-trigger-after` against a real
// kube-apiserver. A running job whose containers set TORCH_NCCL_DEBUG_INFO_PIPE_FILE has
// printed nothing for longer than the threshold: the watcher writes each rank's debug pipe
// through pods/exec (the fake kubelet's containers "dump" when their pipe is written, as torch
// does), waits for the dumps, collects them, diagnoses the job and posts the Event, all while
// the job still runs. The logs alone say nothing (every rank printed steps, then nothing); the
// dumps name rank 2, whose kernel never started. A running job that set no pipe is never
// exec'd into, and the job is not triggered twice.
func TestWatchFlightRecorderHangE2E(t *testing.T) {
	env := startWatchE2E(t)
	c, k := env.c, env.kubelet
	const ns = "frhang"
	grant, err := os.ReadFile("../../deploy/flight-recorder-exec.yaml")
	require.NoError(t, err)
	c.ApplyYAML(t, k, strings.ReplaceAll(string(grant), "namespace: ml", "namespace: "+ns))
	job := testcluster.Job{Namespace: ns, Name: "llama", Workers: 3, Running: true, FlightRecorder: "/fr/comm_lib_trace_rank_", DebugPipe: "/fr/fr_dump_pipe_"}
	c.CreateJob(t, k, job)
	quiet := testcluster.Job{Namespace: ns, Name: "nopipe", Workers: 1, Running: true, FlightRecorder: "/fr/comm_lib_trace_rank_"}
	c.CreateJob(t, k, quiet)
	start := time.Date(2026, 3, 14, 10, 5, 0, 0, time.UTC)
	for i := 0; i <= job.Workers; i++ {
		var log strings.Builder
		for s := 0; s <= 481; s++ {
			at := start.Add(time.Duration(s) * 2 * time.Second).Add(time.Duration(i) * time.Millisecond)
			log.WriteString(at.Format(time.RFC3339Nano) + " " + "[rank" + strconv.Itoa(i) + "]:step " + strconv.Itoa(s) + " loss 1.8 lr 2e-5\n")
		}
		k.SetLog(ns, job.PodName(i), "pytorch", false, []byte(log.String()))
		rank := i
		k.Container(ns, job.PodName(i), "pytorch").MakePipe("/fr/fr_dump_pipe_"+strconv.Itoa(rank)+".pipe", func(ct *testcluster.Container, _ []byte) {
			ct.WriteFile("/fr/comm_lib_trace_rank_"+strconv.Itoa(rank), sampleDump(t, rank))
		})
	}

	dir := t.TempDir()
	startWatcher(t, env.kubeconfig, dir, "-n", ns, "--leader-elect=false", "--flight-recorder-exec",
		"--fr-trigger-after", "2s", "--fr-trigger-wait", "30s", "--pending-after", "0")
	ev := waitEvent(t, c, ns, "llama", 2*time.Minute)
	t.Log(ev.Message)
	require.Equal(t, corev1.EventTypeWarning, ev.Type)
	require.Equal(t, watch.TriggerHang, pytorchJob(t, c, ns, "llama").GetAnnotations()[watch.AnnotationTrigger])

	for i := 0; i <= job.Workers; i++ {
		execs := k.Container(ns, job.PodName(i), "pytorch").Execs()
		require.Contains(t, execs, []string{"dd", "if=/dev/zero", "of=/fr/fr_dump_pipe_" + strconv.Itoa(i) + ".pipe", "bs=1", "count=1", "conv=nocreat,notrunc", "oflag=nonblock"}, "pod %d", i)
	}
	got := bundles(t, dir)
	require.Len(t, got, 1, "%q", got)
	path := filepath.Join(dir, got[0])
	requireSampleDumps(t, path, job, job.Workers)
	rep := readReportJSON(t, strings.TrimSuffix(path, ".tar.gz")+".json")
	require.NotNil(t, rep.RootCause)
	require.Equal(t, "llama-worker-1", rep.RootCause.Pod)
	require.NotNil(t, rep.RootCause.Rank)
	require.Equal(t, 2, *rep.RootCause.Rank)
	require.Contains(t, ev.Message, "llama-worker-1")

	require.Empty(t, k.Container(ns, quiet.PodName(0), "pytorch").Execs(), "a job without a debug pipe is never exec'd into")
	require.Empty(t, coronerEvents(t, c, ns, "nopipe"))
	time.Sleep(3 * time.Second)
	require.Len(t, coronerEvents(t, c, ns, "llama"), 1, "a hung job is triggered once")
}

// TestCollectFlightRecorderReaderE2E: the containers of a failed job are gone, and its dumps
// sit on the PersistentVolumeClaim each pod mounted at its dump prefix. `collect
// --flight-recorder-reader-image` reads them with a short-lived reader pod per claim, which the
// harness's kubelet runs (its claim mounted, its fixed argv run by the real coroner), and
// deletes it afterwards. Without the opt-in RBAC (deploy/flight-recorder-reader.yaml) creating
// the pod is refused and each container is a gap saying so.
func TestCollectFlightRecorderReaderE2E(t *testing.T) {
	const ns = "frreader"
	c, k, kc := startCollectorE2E(t, ns)
	job := testcluster.Job{Namespace: ns, Name: "gone", Workers: 1, FlightRecorder: "/fr/comm_lib_trace_rank_", DumpClaims: "fr-dumps"}
	c.CreateJob(t, k, job)
	for i := 0; i <= job.Workers; i++ {
		k.Claim(ns, "fr-dumps-"+strconv.Itoa(i)).WriteFile("/comm_lib_trace_rank_"+strconv.Itoa(i), sampleDump(t, i))
	}
	var mu sync.Mutex
	var ran [][]string
	k.RunPods(t, collect.ReaderLabel, func(ctx context.Context, args []string, root string, out io.Writer) int {
		mu.Lock()
		ran = append(ran, append([]string(nil), args...))
		mu.Unlock()
		// The container's filesystem is under root: its paths are root+path.
		args = append([]string(nil), args...)
		args[len(args)-1] = root + args[len(args)-1]
		return Main(ctx, args, &IOStreams{Out: out, ErrOut: io.Discard})
	})

	collectTo := func() string {
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		code, _, stderr := eventually(t, func() (int, string, string) {
			return collectCLI(t, "pytorchjob/gone", "--kubeconfig", kc, "-o", out, "--flight-recorder-reader-image", "registry.local/coroner:test")
		})
		require.Equal(t, 0, code, "stderr: %s", stderr)
		return out
	}
	gaps := execGaps(readManifest(t, collectTo()))
	require.Len(t, gaps, 2, "%q", gaps)
	for _, g := range gaps {
		require.Contains(t, g, "flight recorder dumps /fr/comm_lib_trace_rank_*: forbidden by RBAC: reader pod for claim fr-dumps-")
	}

	grant, err := os.ReadFile("../../deploy/flight-recorder-reader.yaml")
	require.NoError(t, err)
	c.ApplyYAML(t, k, strings.ReplaceAll(string(grant), "namespace: ml", "namespace: "+ns))
	var path string
	waitFor(t, 60*time.Second, "the reader grant to reach the authorizer", func() bool {
		path = collectTo()
		gaps = execGaps(readManifest(t, path))
		return len(gaps) == 0 || !strings.Contains(gaps[0], "forbidden")
	})
	require.Empty(t, gaps)
	requireSampleDumps(t, path, job, job.Workers)
	mu.Lock()
	require.Len(t, ran, 2)
	require.Equal(t, collect.ReaderArgs("/fr/comm_lib_trace_rank_", collect.DefaultMaxFlightRecordBytes), ran[0])
	mu.Unlock()
	left, err := c.Kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + collect.ReaderLabel})
	require.NoError(t, err)
	require.Empty(t, left.Items, "the reader pods are deleted")
}
