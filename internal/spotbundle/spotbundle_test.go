package spotbundle

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestBuildIsDeterministic: the same row and excerpt give the same files and manifest.
func TestBuildIsDeterministic(t *testing.T) {
	row := Row{ID: "001", Label: "cuda-oom", RootRank: "2", Framework: "pytorch"}
	log := []byte("2024-05-01 10:00:00,000 step 1\ntorch.OutOfMemoryError: CUDA out of memory.\n")
	a, ma, ba := Build(row, log, Options{})
	b, mb, _ := Build(row, log, Options{})
	if len(a) != len(b) || len(ma.Files) != len(mb.Files) || !ma.CollectedAt.Equal(*mb.CollectedAt) {
		t.Fatalf("two builds differ")
	}
	for i := range a {
		if a[i].Path != b[i].Path || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Fatalf("%s differs between two builds", a[i].Path)
		}
	}
	if ba.Pod != "train-job-worker-2" || ba.State != "failed" || ba.ExitCode != 1 {
		t.Fatalf("got %+v, want the excerpt in worker-2, failed with exit code 1", ba)
	}
}

// TestExitCodeFromTheExcerpt: what the excerpt says of the process's end is its container's
// exit code; OOMKilled only from the kubelet's own word.
func TestExitCodeFromTheExcerpt(t *testing.T) {
	for _, c := range []struct {
		log    string
		code   int
		reason string
	}{
		{"Traceback (most recent call last):\nValueError: bad\n", 1, "Error"},
		{"loading shards\nKilled\n", 137, "Error"},
		{"train.sh: line 3:  4242 Segmentation fault      (core dumped) python train.py\n", 139, "Error"},
		{"exitcode  : -9 (pid: 1234)\n", 1, "Error"},
		{"Process exited with exit code 2\n", 2, "Error"},
		{"    Reason:       OOMKilled\n    Exit Code:    137\n", 137, "OOMKilled"},
	} {
		code, reason := exitOf([]byte(c.log))
		if code != c.code || reason != c.reason {
			t.Errorf("%q: got %d %s, want %d %s", c.log, code, reason, c.code, c.reason)
		}
	}
}

// TestHangCollectedFortyMinutesLater: a hang row's pods run, and the bundle is collected 40
// minutes after the excerpt's last time.
func TestHangCollectedFortyMinutesLater(t *testing.T) {
	log := []byte("[2024-05-01 10:00:00,000] step 1\n[2024-05-01 10:05:00,000] step 2\n")
	files, m, b := Build(Row{ID: "9", Label: "hang", RootRank: "-", Framework: "pytorch"}, log, Options{})
	want := time.Date(2024, 5, 1, 10, 45, 0, 0, time.UTC)
	if !m.CollectedAt.Equal(want) || b.State != "hang" {
		t.Fatalf("collected %v, state %s; want %v, hang", m.CollectedAt, b.State, want)
	}
	for _, f := range files {
		if strings.HasPrefix(f.Path, "resources/core/Pod/") && !bytes.Contains(f.Data, []byte("phase: Running")) {
			t.Errorf("%s: not running", f.Path)
		}
	}
}
