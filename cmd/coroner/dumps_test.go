package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/report"
)

// sampleLog is one container log of a sample bundle.
type sampleLog struct {
	path, pod, container string
	lines                []string
}

// sampleLogs reads a sample's current container logs (logs/NS/POD/CONTAINER.log).
func sampleLogs(t *testing.T, sample string) []sampleLog {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(samplesDir, sample, "logs", "*", "*", "*.log"))
	require.NoError(t, err)
	sort.Strings(files)
	var out []sampleLog
	for _, f := range files {
		if strings.HasSuffix(f, ".previous.log") {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		text := strings.TrimSuffix(string(data), "\n")
		out = append(out, sampleLog{path: f, pod: filepath.Base(filepath.Dir(f)),
			container: strings.TrimSuffix(filepath.Base(f), ".log"), lines: strings.Split(text, "\n")})
	}
	return out
}

// kubectlDump is `kubectl logs -l ... --prefix --timestamps` of the logs: one pod's
// container after the other, each line after "[pod/POD/CONTAINER] ".
func kubectlDump(logs []sampleLog) []byte {
	var b bytes.Buffer
	for _, l := range logs {
		for _, line := range l.lines {
			fmt.Fprintf(&b, "[pod/%s/%s] %s\n", l.pod, l.container, line)
		}
	}
	return b.Bytes()
}

// sternDump is `stern --timestamps` of the logs: lines of all pods as they came (by their
// timestamps), each after "POD CONTAINER ", with stern's notes of the containers it follows.
func sternDump(logs []sampleLog) []byte {
	type line struct {
		ts, text string
		i        int
	}
	var all []line
	var b bytes.Buffer
	for _, l := range logs {
		fmt.Fprintf(&b, "+ %s › %s\n", l.pod, l.container)
		for _, text := range l.lines {
			ts, _, _ := strings.Cut(text, " ")
			all = append(all, line{ts, l.pod + " " + l.container + " " + text, len(all)})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].ts < all[j].ts })
	for _, l := range all {
		b.WriteString(l.text + "\n")
	}
	return b.Bytes()
}

// rootOf says what a report blames: category, pod, container and rank.
func rootOf(r *report.Report) string {
	rc := r.RootCause
	if rc == nil {
		return "no root cause (" + string(r.Verdict) + ")"
	}
	rank := "-"
	if rc.Rank != nil {
		rank = fmt.Sprint(*rc.Rank)
	}
	return fmt.Sprintf("%s %s/%s rank %s", rc.Category, rc.Pod, rc.Container, rank)
}

// TestDumpsAnswerAsTheBundle: the logs of every sample whose root cause a log shows give the
// bundle's root cause, pod, container and rank however they are handed over: the per-pod
// files as saved from the bundle (same base names, told apart by their directories), one
// `kubectl logs --prefix --timestamps` dump, one stern dump; from standard input too.
func TestDumpsAnswerAsTheBundle(t *testing.T) {
	if testing.Short() {
		t.Skip("analyzes samples in every layout; skipped with -short (make test and CI run it)")
	}
	checked := 0
	for _, s := range sampleNames(t) {
		bundleReport, _ := analyzeJSON(t, nil, filepath.Join(samplesDir, s), "--no-cache")
		rc := bundleReport.RootCause
		if rc == nil || len(rc.Evidence) == 0 || rc.Evidence[0].Source != "log" {
			continue // the objects tell the answer: logs alone cannot
		}
		logs := sampleLogs(t, s)
		if len(logs) < 2 {
			continue
		}
		t.Run(s, func(t *testing.T) {
			want := rootOf(bundleReport)
			dir := t.TempDir()
			kubectl, stern := filepath.Join(dir, "all.log"), filepath.Join(dir, "stern.txt")
			require.NoError(t, os.WriteFile(kubectl, kubectlDump(logs), 0o644))
			require.NoError(t, os.WriteFile(stern, sternDump(logs), 0o644))
			var files []string
			for _, l := range logs {
				files = append(files, l.path)
			}
			for _, in := range []struct {
				name string
				args []string
			}{
				{"per-pod files", files},
				{"kubectl --prefix dump", []string{kubectl}},
				{"stern dump", []string{stern}},
			} {
				r, _ := analyzeJSON(t, nil, append(in.args, "--no-cache")...)
				if in.name == "per-pod files" && !sameBase(files) {
					// Files of different names are pods of their own names: the rest agrees.
					require.Equal(t, rc.Category, r.RootCause.Category, in.name)
					require.Equal(t, rc.Rank, r.RootCause.Rank, in.name)
					continue
				}
				require.Equal(t, want, rootOf(r), in.name)
			}
			data, err := os.ReadFile(stern)
			require.NoError(t, err)
			r, _ := analyzeJSON(t, bytes.NewReader(data), "-", "--no-cache")
			require.Equal(t, want, rootOf(r), "a stern dump on standard input")
		})
		checked++
	}
	require.GreaterOrEqual(t, checked, 5, "samples whose root cause is in a log of several")
}

// TestDumpNamesItsStreams: a dump's evidence names the pod and container and the dump it came
// from, and the lanes are the pods without what their names share.
func TestDumpNamesItsStreams(t *testing.T) {
	logs := sampleLogs(t, "pytorchjob-hang-seqnum")
	p := filepath.Join(t.TempDir(), "kprefix-all.log")
	require.NoError(t, os.WriteFile(p, kubectlDump(logs), 0o644))
	out := requireExit(t, exitOK, "", "analyze", p, "--no-cache")
	require.Contains(t, out, "Evidence:    llama-ft-worker-1/pytorch (kprefix-all.log):485\n")
	require.Contains(t, out, "\n  worker-1  ", "the lane of the root's pod")
	require.Contains(t, out, "in llama-ft-worker-1/pytorch (kprefix-all.log), rank 2\n")
}

func sameBase(files []string) bool {
	for _, f := range files {
		if filepath.Base(f) != filepath.Base(files[0]) {
			return false
		}
	}
	return true
}
