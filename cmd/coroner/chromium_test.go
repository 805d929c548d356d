package main

import (
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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

var (
	titleRE = regexp.MustCompile(`(?s)<title>(.*?)</title>`)
	// plantedElement finds elements (a real "<", not "&lt;") that only the bundle could add
	// (the report draws its own <svg>; a planted one would carry an on... attribute).
	plantedElement = regexp.MustCompile(`(?i)<(?:script|img|iframe)\b|<a\s[^>]*href="javascript|<style>(?:title|body)|<[a-z]+\s[^<>]*\son[a-z]+=`)
	warningsRE     = regexp.MustCompile(`invalid YAML|does not decode`)
)

// TestHTMLReportRunsNoBundleScript renders the report of a bundle full of markup in headless
// Chromium: no planted script runs (the title stays the report's own), and no planted
// element exists in the DOM, with the page's Content-Security-Policy and without it.
func TestHTMLReportRunsNoBundleScript(t *testing.T) {
	chromium := chromiumPath(t)
	domOf := func(page string) string {
		out, _ := runChromium(t, chromium, "--dump-dom", "file://"+page)
		return out
	}
	title := func(page string) string {
		m := titleRE.FindStringSubmatch(page)
		require.NotNil(t, m, "a title")
		return html.UnescapeString(m[1]) // the text, however the browser serialises it
	}

	// The control: in this browser a script does change the title.
	dir := t.TempDir()
	control := filepath.Join(dir, "control.html")
	require.NoError(t, os.WriteFile(control, []byte(`<!DOCTYPE html><html><head><title>before</title></head><body><script>document.title='pwned'</script></body></html>`), 0o644))
	require.Equal(t, "pwned", title(domOf(control)), "scripts run in this headless Chromium")

	report := filepath.Join(dir, "report.html")
	code, _, stderr := run(t, "analyze", hostileMarkupBundle(t), "-o", report, "-q")
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(report)
	require.NoError(t, err)
	require.Contains(t, string(data), "Content-Security-Policy")
	noCSP := filepath.Join(dir, "report-no-csp.html")
	require.NoError(t, os.WriteFile(noCSP, regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`).ReplaceAll(data, nil), 0o644))

	want := title(string(data))
	require.Contains(t, want, "</title><script>document.title='pwned-job'", "the job name is in the title, as text")
	for _, page := range []string{report, noCSP} {
		got := domOf(page)
		require.Equal(t, want, title(got), "%s: a planted script changed the title", filepath.Base(page))
		require.Empty(t, plantedElement.FindAllString(got, -1), "%s: planted markup became an element", filepath.Base(page))
		require.Empty(t, warningsRE.FindAllString(got, -1), "the bundle is valid: every object is read")
		require.Contains(t, got, "&lt;script&gt;document.title='pwned-log'&lt;/script&gt;", "and is shown as text")
		require.Contains(t, got, "CUDA out of memory", "the report is whole")
		for _, text := range []string{"pwned-pod", "pwned-node", "pwned-event'", "pwned-event-reason", "pwned-link", "pwned-condition", "pwned-evidence", "pwned-reason"} {
			require.Contains(t, got, text, "the planted text is shown")
		}
	}
}

// chromiumPath finds Chromium, or skips the test outside CI (.ci/run installs it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is needed for this test in CI: .ci/run installs it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium); the HTML escaping is still checked by TestReportsEscapeBundleText")
	return ""
}

// runChromium runs headless Chromium with a fresh profile and nothing of its own on the
// network that can be turned off, and returns its stdout and stderr.
func runChromium(t *testing.T, chromium string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "chromium %v: %s", args, errOut.String())
	return out.String(), errOut.String()
}
