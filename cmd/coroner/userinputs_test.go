package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// compressFile compresses src into dst with a compression tool of the machine (xz, zstd and
// bzip2 as people make them), skipping the test when the tool is missing.
func compressFile(t *testing.T, tool, src, dst string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s is not installed (apt-get install %s): it makes the compressed inputs", tool, tool)
	}
	out, err := exec.Command(tool, "-c", src).Output()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, out, 0o644))
}

// TestCompressedInputsAnswerAsTheirContent: a bundle tarred and compressed with xz, zstd or
// bzip2 gives the report of the bundle, and a rotated log.gz that of the log.
func TestCompressedInputsAnswerAsTheirContent(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	want, _ := analyzeJSON(t, nil, sample, "--no-cache")
	dir := t.TempDir()
	tarball := filepath.Join(dir, "b.tar")
	out, err := exec.Command("tar", "-C", samplesDir, "-cf", tarball, "pytorchjob-cuda-oom-rank").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, c := range []struct{ tool, ext string }{{"xz", ".xz"}, {"zstd", ".zst"}, {"bzip2", ".bz2"}} {
		t.Run(c.tool, func(t *testing.T) {
			p := tarball + c.ext
			compressFile(t, c.tool, tarball, p)
			got, _ := analyzeJSON(t, nil, p, "--no-cache")
			require.Equal(t, rootOf(want), rootOf(got))
			require.Equal(t, want.RootCause.Evidence[0].Text, got.RootCause.Evidence[0].Text)
			require.Equal(t, want.Findings, got.Findings)
			hits := requireExit(t, exitOK, "", "search", p, "OutOfMemoryError", "--no-cache")
			require.Contains(t, hits, "OutOfMemoryError")
		})
	}
	t.Run("a rotated log", func(t *testing.T) {
		log := filepath.Join(samplesDir, "logs", "train-plain.log")
		data, err := os.ReadFile(log)
		require.NoError(t, err)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, err = zw.Write(data)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		p := filepath.Join(dir, "train-plain.log.gz")
		require.NoError(t, os.WriteFile(p, gz.Bytes(), 0o644))
		want, _ := analyzeJSON(t, nil, log, "--no-cache")
		got, _ := analyzeJSON(t, nil, p, "--no-cache")
		require.Equal(t, rootOf(want), rootOf(got))
		require.Equal(t, "train-plain.log.gz:170", got.RootCause.Evidence[0].Location())
	})
}

// TestBinaryInputsAreRefused: a screenshot or a PDF handed over instead of a log is an error
// naming what it is, never an UNKNOWN verdict with exit 0.
func TestBinaryInputsAreRefused(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"error.png":  "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01",
		"report.pdf": "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n",
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		what := map[string]string{"error.png": "a PNG image", "report.pdf": "a PDF document"}[name]
		requireExit(t, exitError, "coroner: "+p+": "+what+", not a log: expected log lines", "analyze", p, "--fail-on", "error")
		requireExit(t, exitError, "coroner: "+p+": "+what+", not a log", "search", p, "x", "--no-cache")
	}
}

// TestObjectsAsInputs: a pod saved with kubectl get -o yaml is read as a pod, alone or beside
// logs: its terminated exit code is a finding; a job's YAML gives its Failed condition.
func TestObjectsAsInputs(t *testing.T) {
	dir := t.TempDir()
	pod := filepath.Join(dir, "pod.yaml")
	require.NoError(t, os.WriteFile(pod, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: train-worker-1
  namespace: ml
spec:
  containers:
  - name: pytorch
    image: pytorch:2.4
status:
  phase: Failed
  containerStatuses:
  - name: pytorch
    image: pytorch:2.4
    imageID: ""
    ready: false
    restartCount: 0
    state:
      terminated:
        exitCode: 137
        reason: OOMKilled
        startedAt: "2026-03-14T10:00:00Z"
        finishedAt: "2026-03-14T10:05:00Z"
`), 0o644))
	r, _ := analyzeJSON(t, nil, pod, "--no-cache")
	require.Equal(t, "unhealthy", string(r.Verdict))
	require.Equal(t, "host-oom train-worker-1/pytorch rank -", rootOf(r))
	requireExit(t, exitFailOn, "", "analyze", pod, "--fail-on", "error", "--no-cache")

	list := filepath.Join(dir, "pods.json")
	require.NoError(t, os.WriteFile(list, []byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"w-0","namespace":"ml"},"status":{"phase":"Failed","containerStatuses":[{"name":"c","image":"i","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":1,"reason":"Error","finishedAt":"2026-03-14T10:05:00Z"}}}]}}]}`), 0o644))
	r, _ = analyzeJSON(t, nil, list, filepath.Join(samplesDir, "logs", "train-plain.log"), "--no-cache")
	require.Equal(t, "cuda-oom", string(r.RootCause.Category), "the log says why")
	var exit bool
	for _, f := range r.Findings {
		exit = exit || f.Pod == "w-0"
	}
	require.True(t, exit, "the pod's exit is a finding beside the log's")

	job, err := filepath.Glob(filepath.Join(samplesDir, "pytorchjob-nan-loss", "resources", "kubeflow.org", "PyTorchJob", "*", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, job, 1)
	r, _ = analyzeJSON(t, nil, job[0], "--no-cache")
	require.Equal(t, "PyTorchJob", r.Job.Kind)
	require.Equal(t, "Failed", r.Job.Status)
}
