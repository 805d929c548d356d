package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeGather writes a sample bundle in a must-gather's layout (`oc adm inspect`: pods with
// their YAML and logs/current.log per container, other objects one file each per resource
// plural, cluster-scoped ones apart, a timestamp file) or a crust-gather's (objects by
// apiVersion and kind, pod/<pod>/<ctr>/current.log, collected.timestamp), one folder down as
// must-gather writes it.
func writeGather(t *testing.T, sample, layout string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "must-gather.local.1", "quay-io-openshift-must-gather")
	src := filepath.Join(samplesDir, sample)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		var dst string
		switch {
		case parts[0] == "logs" && len(parts) == 4:
			ns, pod, ctr := parts[1], parts[2], strings.TrimSuffix(parts[3], ".log")
			file := "current.log"
			if c, ok := strings.CutSuffix(ctr, ".previous"); ok {
				ctr, file = c, "previous.log"
			}
			dst = filepath.Join("namespaces", ns, "pods", pod, ctr, ctr, "logs", file)
			if layout == "crust-gather" {
				dst = filepath.Join("namespaces", ns, "pod", pod, ctr, file)
			}
		case parts[0] == "resources" && len(parts) == 5:
			group, kind, ns, name := parts[1], parts[2], parts[3], parts[4]
			plural := strings.ToLower(kind) + "s"
			switch {
			case layout == "crust-gather" && ns == "_cluster":
				dst = filepath.Join("cluster", group, kind, name)
			case layout == "crust-gather":
				dst = filepath.Join("namespaces", ns, group, kind, name)
			case ns == "_cluster":
				dst = filepath.Join("cluster-scoped-resources", group, plural, name)
			case kind == "Pod":
				pod := strings.TrimSuffix(name, ".yaml")
				dst = filepath.Join("namespaces", ns, "pods", pod, name)
			default:
				dst = filepath.Join("namespaces", ns, group, plural, name)
			}
		default:
			return nil // manifest.json, expected.json: a gather has none
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		dst = filepath.Join(root, dst)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		return os.WriteFile(dst, data, 0o644)
	})
	require.NoError(t, err)
	marker := "timestamp"
	if layout == "crust-gather" {
		marker = "collected.timestamp"
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, marker), []byte("2026-03-14 15:00:00 +0000 UTC\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "event-filter.html"), []byte("<html></html>"), 0o644))
	return filepath.Dir(root)
}

// TestGathersAnswerAsTheBundle: a must-gather or crust-gather of a scenario gives the root
// cause, pod, container and rank of coroner's own bundle of it, and says which layout it read.
func TestGathersAnswerAsTheBundle(t *testing.T) {
	if testing.Short() {
		t.Skip("analyzes samples in every layout; skipped with -short (make test and CI run it)")
	}
	for _, s := range []string{"pytorchjob-cuda-oom-rank", "pytorchjob-hang-seqnum", "pytorchjob-evicted", "pytorchjob-image-pull"} {
		want, _ := analyzeJSON(t, nil, filepath.Join(samplesDir, s), "--no-cache")
		for _, layout := range []string{"must-gather", "crust-gather"} {
			t.Run(s+"/"+layout, func(t *testing.T) {
				got, _ := analyzeJSON(t, nil, writeGather(t, s, layout), "--no-cache")
				require.Equal(t, rootOf(want), rootOf(got))
				require.Equal(t, want.Job.Kind+" "+want.Job.Name, got.Job.Kind+" "+got.Job.Name)
				warningWith(t, got, "read as a "+layout+": no manifest")
				if s != "pytorchjob-cuda-oom-rank" {
					return
				}
				// Redacted, the tree is a tarball of the same layout that reads as itself.
				out := filepath.Join(t.TempDir(), "redacted.tar.gz")
				code, _, stderr := run(t, "redact", writeGather(t, s, layout), "-o", out)
				require.Equal(t, 0, code, "stderr: %s", stderr)
				red, _ := analyzeJSON(t, nil, out, "--no-cache")
				require.Equal(t, rootOf(want), rootOf(red), "the redacted "+layout)
			})
		}
	}
}
