package main

import (
	"archive/tar"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/samplegen"
	"github.com/coroner-dev/coroner/internal/tartest"
)

// writeTroubleshoot writes a sample in the layout of troubleshoot v0.133.0's support-bundle
// CLI (its cluster_resources and logs collectors): PodLists, EventLists and JobLists by
// namespace, the NodeList, custom resources as bare JSON arrays with a .yaml link beside each,
// logs without timestamps under cluster-resources/pods/logs, linked from <collector>/<pod>/
// when a logs collector kept them.
func writeTroubleshoot(t *testing.T, sample string, collector bool) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "support-bundle-2026-03-14T15_00_00")
	src := filepath.Join(samplesDir, sample)
	lists := map[string][]any{} // file -> items
	write := func(rel string, data []byte) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		switch {
		case parts[0] == "logs" && len(parts) == 4:
			ns, pod, ctr := parts[1], parts[2], strings.TrimSuffix(parts[3], ".log")
			if c, ok := strings.CutSuffix(ctr, ".previous"); ok {
				ctr = c + "-previous"
			}
			var lines []string
			for _, l := range strings.SplitAfter(string(data), "\n") {
				_, rest, _ := strings.Cut(l, " ") // the kubelet's timestamp: troubleshoot asks for none
				lines = append(lines, rest)
			}
			in := filepath.Join("cluster-resources/pods/logs", ns, pod, ctr+".log")
			write(in, []byte(strings.Join(lines, "")))
			if collector {
				link := filepath.Join(root, "job-logs", pod, ctr+".log")
				require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
				require.NoError(t, os.Symlink(filepath.Join("../..", in), link))
			}
		case parts[0] == "resources" && len(parts) == 5:
			group, kind, ns := parts[1], parts[2], parts[3]
			var obj map[string]any
			require.NoError(t, yaml.Unmarshal(data, &obj))
			var file string
			switch {
			case kind == "Node":
				file = "nodes.json"
			case group == "core" && kind == "Pod":
				file = "pods/" + ns + ".json"
			case group == "core" && kind == "Event":
				file = "events/" + ns + ".json"
			case group == "batch" && kind == "Job":
				file = "jobs/" + ns + ".json"
			case ns == "_cluster":
				file = "custom-resources/" + strings.ToLower(kind) + "s." + group + ".json"
			default:
				file = "custom-resources/" + strings.ToLower(kind) + "s." + group + "/" + ns + ".json"
			}
			lists[file] = append(lists[file], obj)
		}
		return nil
	})
	require.NoError(t, err)
	files := make([]string, 0, len(lists))
	for f := range lists {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		var v any = lists[f]
		if !strings.HasPrefix(f, "custom-resources/") {
			kind := map[string]string{"nodes.json": "NodeList", "pods": "PodList", "events": "EventList", "jobs": "JobList"}
			k := kind[f]
			if k == "" {
				k = kind[strings.Split(f, "/")[0]]
			}
			v = map[string]any{"kind": k, "apiVersion": "v1", "metadata": map[string]any{}, "items": lists[f]}
		}
		data, err := json.MarshalIndent(v, "", "  ")
		require.NoError(t, err)
		write("cluster-resources/"+f, data)
		if yamlName, ok := strings.CutSuffix(f, ".json"); ok && strings.HasPrefix(f, "custom-resources/") {
			require.NoError(t, os.Symlink(filepath.Base(f), filepath.Join(root, "cluster-resources", yamlName+".yaml")))
		}
	}
	write("version.yaml", []byte("apiVersion: troubleshoot.sh/v1beta2\nkind: SupportBundleVersion\nspec:\n  versionNumber: v0.133.0\n"))
	write("analysis.json", []byte("[]"))
	return root
}

// TestTroubleshootAnswersAsTheBundle: a support bundle of a scenario, as a folder or the CLI's
// tarball (links archived as links), gives the root cause, pod, container and rank of
// coroner's own bundle of it, and says which layout it read.
func TestTroubleshootAnswersAsTheBundle(t *testing.T) {
	if testing.Short() {
		t.Skip("analyzes samples in every layout; skipped with -short (make test and CI run it)")
	}
	for _, s := range []string{"pytorchjob-cuda-oom-rank", "pytorchjob-hang-seqnum", "pytorchjob-evicted", "pytorchjob-image-pull"} {
		want, _ := analyzeJSON(t, nil, filepath.Join(samplesDir, s), "--no-cache")
		t.Run(s, func(t *testing.T) {
			dir := writeTroubleshoot(t, s, true)
			tarball := filepath.Join(t.TempDir(), filepath.Base(dir)+".tar.gz")
			require.NoError(t, samplegen.TarDir(dir, tarball, filepath.Base(dir)+"/"))
			for _, in := range []string{dir, tarball} {
				got, _ := analyzeJSON(t, nil, in, "--no-cache")
				require.Equal(t, rootOf(want), rootOf(got), in)
				require.Equal(t, want.Verdict, got.Verdict)
				require.Equal(t, want.Job.Kind+" "+want.Job.Name, got.Job.Kind+" "+got.Job.Name)
				require.Equal(t, bundle.Troubleshoot, got.Bundle.Layout)
				warningWith(t, got, "read as a troubleshoot support bundle (troubleshoot v0.133.0): no manifest")
			}
		})
	}
}

// TestRedactTroubleshootKeepsItsLayout: `coroner redact` of a support bundle (a folder, or the
// CLI's tarball) masks its secrets and writes a support bundle that reads as the original:
// the same root cause, its links kept as links inside it.
func TestRedactTroubleshootKeepsItsLayout(t *testing.T) {
	const secret = "hf_Q7vLmN2pXr8sTz4wYk6bJc1dFg3hEa5u"
	dir := writeTroubleshoot(t, "pytorchjob-cuda-oom-rank", true)
	logs, err := filepath.Glob(filepath.Join(dir, "cluster-resources/pods/logs/ml/*/pytorch.log"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	f, err := os.OpenFile(logs[0], os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("export HF_TOKEN=" + secret + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	tarball := filepath.Join(t.TempDir(), filepath.Base(dir)+".tar.gz")
	require.NoError(t, samplegen.TarDir(dir, tarball, filepath.Base(dir)+"/"))
	want, _ := analyzeJSON(t, nil, dir, "--no-cache")

	for _, in := range []string{dir, tarball} {
		out := filepath.Join(t.TempDir(), "redacted.tar.gz")
		code, _, stderr := run(t, "redact", in, "-o", out)
		require.Equal(t, 0, code, "stderr: %s", stderr)
		got, _ := analyzeJSON(t, nil, out, "--no-cache")
		require.Equal(t, rootOf(want), rootOf(got), in)
		require.Equal(t, want.Verdict, got.Verdict)
		require.Equal(t, bundle.Troubleshoot, got.Bundle.Layout)

		links := map[string]string{}
		for _, e := range tartest.Entries(t, out) {
			if e.Header.Typeflag == tar.TypeSymlink {
				links[e.Header.Name] = e.Header.Linkname
			}
			require.NotContains(t, string(e.Body), secret, "%s of the redacted bundle", e.Header.Name)
		}
		require.Equal(t, "ml.json", links["cluster-resources/custom-resources/pytorchjobs.kubeflow.org/ml.yaml"], in)
		require.Equal(t, "../../cluster-resources/pods/logs/ml/train-job-worker-4/pytorch.log", links["job-logs/train-job-worker-4/pytorch.log"], in)
	}
}
