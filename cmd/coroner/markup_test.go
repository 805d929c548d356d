package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostileMarkupBundle plants script, image, javascript: link and CSS injections where a
// bundle puts text into the report: job, pod and node names, labels, event reasons and
// messages, and log lines. Each script would change the page title.
func hostileMarkupBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	pod := `x<img src=x onerror="document.title='pwned-pod'">`
	job := `j</title><script>document.title='pwned-job'</script>`
	write("manifest.json", `{"formatVersion":1,"target":{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","namespace":"ml","name":"`+strings.ReplaceAll(job, `"`, `\"`)+`"},"files":[]}`)
	write("resources/kubeflow.org/PyTorchJob/ml/job.yaml", `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: "`+job+`"
  namespace: ml
  uid: j1
  labels: {team: "<script>document.title='pwned-label'</script>"}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: x}]}}}
status:
  conditions: [{type: Failed, status: "True", reason: "<style>title{display:block}</style>", message: "<script>document.title='pwned-condition'</script>"}]
`)
	writeJSON := func(rel string, obj any) {
		data, err := json.Marshal(obj)
		require.NoError(t, err)
		write(rel, string(data))
	}
	writeJSON("resources/core/Pod/ml/pod.json", map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": pod, "namespace": "ml", "uid": "p1",
			"labels": map[string]any{"training.kubeflow.org/replica-type": "master", "training.kubeflow.org/job-name": job,
				"evil": "<svg onload=document.title='pwned-svg'>"},
			"ownerReferences": []any{map[string]any{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": job, "uid": "j1"}}},
		"spec": map[string]any{"nodeName": "n<iframe src=javascript:parent.document.title='pwned-node'>",
			"containers": []any{map[string]any{"name": "pytorch", "image": "x"}}},
		"status": map[string]any{"phase": "Failed", "containerStatuses": []any{map[string]any{"name": "pytorch", "restartCount": 0,
			"state": map[string]any{"terminated": map[string]any{"exitCode": 137, "reason": "OOMKilled<script>document.title='pwned-reason'</script>"}}}}},
	})
	writeJSON("resources/core/Event/ml/e1.json", map[string]any{
		"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "e1", "namespace": "ml"},
		"involvedObject": map[string]any{"kind": "Pod", "name": pod, "namespace": "ml"},
		"type":           "Warning", "reason": "<img src=x onerror=document.title='pwned-event-reason'>",
		"message":        "Back-off <script>document.title='pwned-event'</script> <a href=\"javascript:document.title='pwned-link'\">retry</a>",
		"firstTimestamp": "2026-03-14T10:00:00Z",
	})
	write("logs/ml/x<img src=x onerror=document.title='pwned-path'>/pytorch.log",
		"2026-03-14T10:00:01Z <script>document.title='pwned-log'</script>\n"+
			"2026-03-14T10:00:02Z </pre><a href=\"javascript:document.title='pwned-link'\">x</a><style>body{background:url(javascript:1)}</style>\n"+
			"2026-03-14T10:00:03Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB <img src=x onerror=\"document.title='pwned-evidence'\">\n")
	return dir
}

// plantedElement finds elements (a real "<", not "&lt;") that only the bundle could add
// (the report draws its own <svg>; a planted one would carry an on... attribute).
var plantedElement = regexp.MustCompile(`(?i)<(?:script|img|iframe)\b|<a\s[^>]*href="javascript|<style>(?:title|body)|<[a-z]+\s[^<>]*\son[a-z]+=`)
