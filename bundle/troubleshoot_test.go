package bundle

import (
	"archive/tar"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tsFixture is a small support bundle in troubleshoot's layout (v0.133.0's collectors): a
// failed master whose logs a logs collector links, a running worker whose log is a link out
// of the bundle, a pending worker whose logs could not be collected, custom resources as a
// bare JSON array with the .yaml link beside it, and analysis.json.
const tsFixture = "testdata/troubleshoot"

// tarTroubleshoot archives dir as the support-bundle CLI does: every entry under the bundle's
// top folder, links kept as links with their relative targets.
func tarTroubleshoot(t *testing.T, dir string, extra ...*tar.Header) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "support-bundle-2026-03-14T15_00_00.tar.gz")
	f, err := os.Create(out)
	require.NoError(t, err)
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Dir(dir), p)
		info, err := os.Lstat(p)
		require.NoError(t, err)
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			link, err = os.Readlink(p)
			require.NoError(t, err)
		}
		hdr, err := tar.FileInfoHeader(info, link)
		require.NoError(t, err)
		hdr.Name = filepath.ToSlash(rel)
		require.NoError(t, tw.WriteHeader(hdr))
		if link == "" {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			_, err = tw.Write(data)
			require.NoError(t, err)
		}
		return nil
	})
	require.NoError(t, err)
	for _, h := range extra {
		h.Name = filepath.Base(dir) + "/" + h.Name
		require.NoError(t, tw.WriteHeader(h))
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return out
}

func TestTroubleshootBundle(t *testing.T) {
	dir := filepath.Join(tsFixture, "support-bundle-2026-03-14T15_00_00")
	for name, p := range map[string]string{
		"its folder":        dir,
		"the folder above":  tsFixture,
		"the CLI's tarball": tarTroubleshoot(t, dir),
	} {
		t.Run(name, func(t *testing.T) {
			b, err := Open(t.Context(), p, DefaultLimits())
			require.NoError(t, err)
			defer b.Close()
			require.Equal(t, Troubleshoot, b.Layout)
			require.Nil(t, b.Manifest)
			var paths []string
			for _, f := range b.Files {
				paths = append(paths, f.Path)
			}
			require.Equal(t, []string{
				"logs/ml/train-job-master-0/pytorch.log",
				"logs/ml/train-job-master-0/pytorch.previous.log",
				"resources/_troubleshoot/custom-resources/pytorchjobs.kubeflow.org/ml.json",
				"resources/_troubleshoot/events/ml.json",
				"resources/_troubleshoot/jobs/ml.json",
				"resources/_troubleshoot/nodes.json",
				"resources/_troubleshoot/pods/ml.json",
			}, paths, "errors files, the .yaml twin, the collector's link and the link out are not read")
			data, err := fs.ReadFile(b.FS, "logs/ml/train-job-master-0/pytorch.log")
			require.NoError(t, err)
			require.Equal(t, "starting training\nepoch 1 step 10 loss 2.31\nRuntimeError: boom\n", string(data))
			require.Equal(t, []Gap{
				{Step: "open", Object: "cluster-resources/pods/logs/ml/train-job-worker-0/pytorch.log", Message: "a link to outside the bundle: not followed"},
				{Step: "logs", Object: "ml/train-job-worker-1/pytorch", Message: `troubleshoot could not collect them: failed to get log stream: container "pytorch" in pod "train-job-worker-1" is waiting to start: ContainerCreating`},
				{Step: "logs", Object: "2 pod(s)", Message: "no logs: no logs collector of the spec kept them, nor did cluster-resources (a pod that never started has none): ml/train-job-worker-0, ml/train-job-worker-1"},
				{Step: "logs", Object: "1 log(s)", Message: "kept by troubleshoot's default spec: only the last 500 lines or 5 MB of each (early lines lost) and no timestamps"},
			}, b.Gaps)
			require.Len(t, b.Analysis, 2)
			require.Equal(t, AnalyzerResult{Tool: "troubleshoot", Severity: "error", Title: "Pod Status",
				Message: "Pod ml/train-job-master-0 is Failed <script>alert(1)</script> [31m red"}, b.Analysis[0], "one line, no control characters")
			require.Equal(t, "debug", b.Analysis[1].Severity)
			var note string
			for _, w := range b.Warnings {
				if strings.HasPrefix(w, "read as a troubleshoot support bundle") {
					note = w
				}
			}
			require.Equal(t, "read as a troubleshoot support bundle (troubleshoot v0.133.0): no manifest, 2 log(s) without timestamps, 7 file(s) of no use to an analysis skipped; its collection gaps say what it lacks", note)
		})
	}
}

// TestTroubleshootLinks: a link is followed only to a regular file of the same bundle.
func TestTroubleshootLinks(t *testing.T) {
	tr := &tree{
		files: map[string]string{"a/f.log": "/x/a/f.log"},
		links: map[string]string{
			"a/in.log":    "a/f.log",
			"a/chain.log": "a/in.log",
			"a/out.log":   "../etc/passwd",
			"a/abs.log":   "/etc/passwd",
			"a/dir.log":   "a",
			"a/loop1.log": "a/loop2.log",
			"a/loop2.log": "a/loop1.log",
		},
	}
	for link, want := range map[string]string{
		"a/in.log":    "a/f.log",
		"a/chain.log": "a/f.log",
		"a/out.log":   "a link to outside the bundle: not followed",
		"a/abs.log":   "a link to outside the bundle: not followed",
		"a/dir.log":   "a link to no regular file of the bundle: not followed",
		"a/loop1.log": "a loop of links: not followed",
	} {
		got, err := tr.resolve(link)
		if err != nil {
			got = err.Error()
		}
		require.Equal(t, want, got, link)
	}
}

// TestTroubleshootTarballLinks: links in a tarball are never extracted; one that climbs out
// of the bundle's top folder is a gap, and a coroner bundle with a link is still refused.
func TestTroubleshootTarballLinks(t *testing.T) {
	dir := filepath.Join(tsFixture, "support-bundle-2026-03-14T15_00_00")
	p := tarTroubleshoot(t, dir,
		&tar.Header{Name: "cluster-resources/pods/logs/ml/train-job-worker-2/pytorch.log", Typeflag: tar.TypeSymlink, Linkname: "../../../../../../support-bundle-x/version.yaml"},
		&tar.Header{Name: "cluster-resources/pods/logs/ml/train-job-worker-3/pytorch.log", Typeflag: tar.TypeSymlink, Linkname: "../train-job-master-0/pytorch.log"},
	)
	b, err := Open(t.Context(), p, DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	require.Contains(t, b.Gaps, Gap{Step: "open", Object: "cluster-resources/pods/logs/ml/train-job-worker-2/pytorch.log", Message: "a link to outside the bundle: not followed"})
	data, err := fs.ReadFile(b.FS, "logs/ml/train-job-worker-3/pytorch.log")
	require.NoError(t, err, "a link inside the bundle is read as its target")
	require.Contains(t, string(data), "RuntimeError: boom")
}

// TestTroubleshootDefaultSpecGaps: without a logs collector, the gaps say that troubleshoot's
// default spec kept no logs of the running pods and cut those it kept.
func TestTroubleshootDefaultSpecGaps(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods.json")
	require.NoError(t, os.WriteFile(pods, []byte(`{"kind":"PodList","items":[
		{"metadata":{"namespace":"ml","name":"w-0"}},{"metadata":{"namespace":"ml","name":"w-1"}},
		{"metadata":{"namespace":"ml","name":"w-2"}}]}`), 0o644))
	tr := &tree{
		files: map[string]string{"cluster-resources/pods/ml.json": pods, "cluster-resources/pods/logs/ml/w-1/c.log": "/nonexistent"},
		sizes: map[string]int64{"cluster-resources/pods/ml.json": 200},
	}
	b := &Bundle{Files: []File{{Path: "logs/ml/w-1/c.log"}}}
	b.gapsOfTroubleshoot(tr, map[string]string{"logs/ml/w-1/c.log": "cluster-resources/pods/logs/ml/w-1/c.log"}, nil)
	require.Equal(t, []Gap{
		{Step: "logs", Object: "2 pod(s)", Message: "no logs: troubleshoot's default spec keeps the logs only of pods it judges unhealthy, so running ranks have none (a logs collector on the job's pods keeps them all): ml/w-0, ml/w-2"},
		{Step: "logs", Object: "1 log(s)", Message: "kept by troubleshoot's default spec: only the last 500 lines or 5 MB of each (early lines lost) and no timestamps"},
	}, b.Gaps)
}

// TestTroubleshootTarballWithoutTopFolder: a support bundle written without its top folder (as
// `coroner redact` writes one) reads as itself whatever its first entry: a logs collector's
// link, or troubleshoot's execution-data (its files come in the order the collectors ran).
func TestTroubleshootTarballWithoutTopFolder(t *testing.T) {
	log := "epoch 1 step 10 loss 2.1\n"
	files := []entry{
		file("execution-data/summary.txt", "{}"),
		file("cluster-resources/pods/logs/ml/train-job-worker-0/pytorch.log", log),
		file("version.yaml", "apiVersion: troubleshoot.sh/v1beta2\nkind: SupportBundleVersion\nspec:\n  versionNumber: 0.100.0\n"),
	}
	link := entry{hdr: tar.Header{Name: "job-logs/train-job-worker-0/pytorch.log", Typeflag: tar.TypeSymlink,
		Linkname: "../../cluster-resources/pods/logs/ml/train-job-worker-0/pytorch.log"}}
	for name, entries := range map[string][]entry{
		"link first":           append([]entry{link}, files...),
		"execution-data first": append(append([]entry{}, files...), link),
	} {
		t.Run(name, func(t *testing.T) {
			b, err := Open(t.Context(), writeTarGz(t, entries...), DefaultLimits())
			require.NoError(t, err)
			defer b.Close()
			require.Equal(t, Troubleshoot, b.Layout)
			data, err := fs.ReadFile(b.FS, "logs/ml/train-job-worker-0/pytorch.log")
			require.NoError(t, err)
			require.Equal(t, log, string(data))
		})
	}
}
