package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coroner-dev/coroner/analyze"
)

// manyRanks is a job of n workers that trained for six hours; worker-3 ran out of GPU memory
// and the others timed out in NCCL ten minutes later.
func manyRanks(n int) *Report {
	t0 := time.Date(2026, 3, 14, 8, 0, 0, 0, time.UTC)
	fail := t0.Add(6 * time.Hour)
	at := func(d time.Duration) *time.Time { t := fail.Add(d); return &t }
	start := t0.Add(20 * time.Second)
	r := &Report{Job: Job{Kind: "PyTorchJob", Namespace: "ml", Name: "big", Status: "Failed", Created: &t0,
		Conditions: []Condition{{Type: "Failed", Status: "True", Time: at(11 * time.Minute)}}}}
	rep := Replica{Role: "Worker"}
	root := &Finding{ID: "f1", RuleID: "cuda-oom/torch-alloc", Category: analyze.CategoryCUDAOOM, Severity: analyze.SeverityError,
		Title: "CUDA out of memory", Pod: "big-worker-3", Time: at(0), Count: 1}
	r.RootCause = &RootCause{Finding: *root}
	r.Findings = []*Finding{root}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("big-worker-%d", i)
		rank, code := i, 1
		end := at(10*time.Minute + time.Duration(i)*time.Millisecond)
		if i == 3 {
			end = at(2 * time.Second)
		} else {
			r.Findings = append(r.Findings, &Finding{ID: fmt.Sprintf("f%d", i+2), RuleID: "collective-timeout/nccl-watchdog",
				Category: "collective-timeout", Severity: analyze.SeverityError, Title: "NCCL ALLREDUCE timed out", Pod: name,
				Time: at(10*time.Minute - time.Second + time.Duration(i)*time.Millisecond), Count: 1, SecondaryOf: "f1"})
		}
		rep.Pods = append(rep.Pods, Pod{Name: name, Phase: "Failed", Ended: "Error, exit 1", Rank: &rank, Created: &t0, Started: &start, Finished: end, ExitCode: &code})
	}
	r.Job.Replicas = []Replica{rep}
	return r
}

func TestLanesFoldIdenticalRanks(t *testing.T) {
	r := manyRanks(20)
	s := buildLanes(r, r.Groups(), foldPolicy{minPods: foldLanesOver, maxLanes: maxSVGLanes})
	var got []string
	for _, l := range s.Roles[0].Lanes {
		got = append(got, s.label(l)+" | "+s.sublabel(l)+" | "+s.summary(l, true))
	}
	want := []string{
		"19 ranks | ranks 0-2,4-19 | NCCL ALLREDUCE timed out at 14:09:59; Error, exit 1",
		"worker-3 | rank 3 | CUDA out of memory at 14:00:00 (root cause); Error, exit 1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lanes (-want +got):\n%s", diff)
	}
	if s.PodCount != 20 || s.Shown != 2 {
		t.Errorf("%d pods in %d lanes, want 20 in 2", s.PodCount, s.Shown)
	}
	// Few pods keep a lane each.
	r = manyRanks(8)
	if s := buildLanes(r, r.Groups(), foldPolicy{minPods: foldLanesOver, maxLanes: maxSVGLanes}); s.Shown != 8 {
		t.Errorf("8 pods drawn in %d lanes, want 8", s.Shown)
	}
}

func TestScaleCutsUneventfulHours(t *testing.T) {
	r := manyRanks(4)
	s := buildLanes(r, r.Groups(), foldPolicy{minPods: 1, maxLanes: 8})
	sc := newScale(s.instants(), 0, 100, 3, s.cuttable)
	gaps := sc.Gaps()
	if len(gaps) != 1 || gaps[0].t1.Sub(gaps[0].t0) < 5*time.Hour {
		t.Fatalf("the six hours of training are cut: %+v", gaps)
	}
	// The failure's ten minutes get most of the width.
	fail := r.RootCause.Time
	if w := sc.X(fail.Add(10*time.Minute)) - sc.X(*fail); w < 60 {
		t.Errorf("ten minutes of failure take %.0f of 100 columns", w)
	}
	// A wait is the story: pods pending for hours keep their hours.
	for i := range r.Job.Replicas[0].Pods {
		p := &r.Job.Replicas[0].Pods[i]
		p.Phase, p.Started, p.Finished = "Pending", nil, nil
	}
	collected := r.Job.Created.Add(7 * time.Hour)
	r.Bundle.CollectedAt, r.Job.Conditions, r.Job.Status = &collected, nil, "Created"
	s = buildLanes(r, r.Groups(), foldPolicy{minPods: 1, maxLanes: 8})
	if gaps := newScale(s.instants(), 0, 100, 3, s.cuttable).Gaps(); len(gaps) != 0 {
		t.Errorf("a wait is cut: %+v", gaps)
	}
	if got := r.Story(); got != "4 pods pending for 7 h" {
		t.Errorf("Story = %q", got)
	}
}

func TestTextChartIsDeterministicAndPlain(t *testing.T) {
	r := manyRanks(20)
	chart := func() string {
		s := buildLanes(r, r.Groups(), foldPolicy{minPods: 1, maxLanes: 6})
		return strings.Join(textChart(s, chartOptions{Width: 100, Indent: "  "}), "\n")
	}
	a := chart()
	if b := chart(); a != b {
		t.Fatalf("two charts differ:\n%s\n%s", a, b)
	}
	for _, want := range []string{"Timeline:    2026-03-14 08:00:00 → 14:11:00 UTC (6 h 11 min)", "  job ", "  19 ranks ", "≈", "✖", "Failed 11 min after the first error"} {
		if !strings.Contains(a, want) {
			t.Errorf("chart lacks %q:\n%s", want, a)
		}
	}
	if strings.Contains(a, "\x1b") {
		t.Errorf("colour without a painter:\n%s", a)
	}
}
