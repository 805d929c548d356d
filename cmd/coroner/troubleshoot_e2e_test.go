//go:build e2e

package main

// End-to-end parity with troubleshoot: its real `support-bundle` CLI (scripts/support-bundle.sh
// builds it from its Go module; make e2e sets CORONER_SUPPORT_BUNDLE) collects the scenarios of
// coroner's own collect e2e from the same kube-apiserver and fake kubelet, and coroner must
// answer on its bundle as on coroner's own.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/report"
)

// supportBundleBin is the support-bundle CLI, or a skip (a failure under make e2e) without one.
func supportBundleBin(t *testing.T) string {
	bin := os.Getenv("CORONER_SUPPORT_BUNDLE")
	if bin == "" {
		if os.Getenv("CORONER_E2E") == "1" {
			t.Fatal("CORONER_SUPPORT_BUNDLE is not set: run make e2e (scripts/support-bundle.sh builds it)")
		}
		t.Skip("no support-bundle CLI: set CORONER_SUPPORT_BUNDLE (scripts/support-bundle.sh builds it), or run make e2e")
	}
	return bin
}

// supportBundle runs the support-bundle CLI with spec against kubeconfig and returns the
// tarball it wrote. No network beyond the test cluster: no self-update, no upload, no specs
// from the cluster.
func supportBundle(t *testing.T, bin, kubeconfig, spec string) string {
	t.Helper()
	dir := t.TempDir()
	specFile := filepath.Join(dir, "spec.yaml")
	require.NoError(t, os.WriteFile(specFile, []byte(spec), 0o644))
	out := filepath.Join(dir, "support-bundle")
	cmd := exec.CommandContext(t.Context(), bin, specFile, "--kubeconfig", kubeconfig, "--interactive=false",
		"--auto-update=false", "--load-cluster-specs=false", "-o", out)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "TROUBLESHOOT_AUTO_UPDATE=false")
	got, err := cmd.CombinedOutput()
	require.NoError(t, err, "support-bundle: %s", got)
	t.Logf("support-bundle: %s", strings.TrimSpace(string(got)))
	tarballs, _ := filepath.Glob(filepath.Join(dir, "*.tar.gz"))
	require.Len(t, tarballs, 1, "the support bundle: %s", got)
	return tarballs[0]
}

// spec is a support bundle spec for the namespace: cluster-resources alone (troubleshoot's
// default: the logs of the pods it judges unhealthy, the last 500 lines or 5 MB of each), or
// with a logs collector that keeps every line of every container of the namespace's pods
// (maxAge wins over the collector's default 10,000 lines and 5 MB).
func spec(ns string, logs bool) string {
	s := `apiVersion: troubleshoot.sh/v1beta2
kind: SupportBundle
metadata:
  name: coroner-parity
spec:
  collectors:
    - clusterResources:
        namespaces: [` + ns + `]
`
	if logs {
		s += `    - logs:
        name: job-logs
        namespace: ` + ns + `
        limits:
          maxAge: 87600h
`
	}
	return s
}

// evidenceOf is the root cause's first evidence line: its source, log file, line, object and text.
func evidenceOf(r *report.Report) string {
	if r.RootCause == nil || len(r.RootCause.Evidence) == 0 {
		return ""
	}
	e := r.RootCause.Evidence[0]
	file := e.File
	if e.Source != "log" {
		file = "" // a resource's file is where each layout keeps it (a pod's YAML, a PodList)
	}
	return strings.Join([]string{string(e.Source), file, strconv.Itoa(e.Line), e.Object, e.Text}, " | ")
}

func TestTroubleshootE2E(t *testing.T) {
	bin := supportBundleBin(t)
	env := startE2E(t)
	for _, tc := range collectScenarios {
		t.Run(tc.sample, func(t *testing.T) {
			ns := "ts-" + tc.sample
			env.c.LoadSample(t, filepath.Join(samplesDir, tc.sample), ns, env.kubelet)
			own := filepath.Join(t.TempDir(), "bundle.tar.gz")
			code, _, stderr := collectCLI(t, tc.target, "-n", ns, "--kubeconfig", env.admin, "-o", own)
			require.Equal(t, 0, code, "stderr: %s", stderr)
			want, _ := analyzeJSON(t, nil, own)

			pinned := supportBundle(t, bin, env.admin, spec(ns, true))
			got, _ := analyzeJSON(t, nil, pinned)
			require.Equal(t, want.Verdict, got.Verdict, "verdict (%s / %s)", want.VerdictReason, got.VerdictReason)
			require.Equal(t, rootOf(want), rootOf(got))
			require.Equal(t, evidenceOf(want), evidenceOf(got), "the root cause's evidence line")
			require.Equal(t, bundle.Troubleshoot, got.Bundle.Layout)
			warningWith(t, got, "read as a troubleshoot support bundle (troubleshoot v")

			// Redacted, the CLI's tarball still reads as itself.
			redacted := filepath.Join(t.TempDir(), "redacted.tar.gz")
			code, _, stderr = run(t, "redact", pinned, "-o", redacted)
			require.Equal(t, 0, code, "stderr: %s", stderr)
			red, _ := analyzeJSON(t, nil, redacted)
			require.Equal(t, rootOf(want), rootOf(red), "the redacted support bundle")
			require.Equal(t, bundle.Troubleshoot, red.Bundle.Layout)

			def := supportBundle(t, bin, env.admin, spec(ns, false))
			got, _ = analyzeJSON(t, nil, def)
			warningWith(t, got, "read as a troubleshoot support bundle")
			kept := map[string]bool{}
			for _, l := range got.Logs {
				kept[l.Pod] = true
			}
			if want.RootCause != nil && kept[want.RootCause.Pod] {
				require.Equal(t, rootOf(want), rootOf(got), "the failing pod's logs were kept")
			} else if want.RootCause != nil {
				t.Logf("default spec: no logs of %s kept; root cause %s", want.RootCause.Pod, rootOf(got))
			}
			if len(kept) < len(want.Logs) || len(got.Logs) < len(want.Logs) {
				requireGap(t, got, "troubleshoot's default spec keeps the logs only of pods it judges unhealthy")
			}
			if len(got.Logs) > 0 {
				requireGap(t, got, "only the last 500 lines or 5 MB of each (early lines lost) and no timestamps")
			}
		})
	}
}

func requireGap(t *testing.T, r *report.Report, sub string) {
	t.Helper()
	for _, g := range r.Bundle.Gaps {
		if strings.Contains(g.Message, sub) {
			return
		}
	}
	t.Fatalf("no gap says %q: %+v", sub, r.Bundle.Gaps)
}
