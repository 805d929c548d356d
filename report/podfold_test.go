package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
)

// podsReport is a job of n worker pods (w-i, rank i, on node-(i/8)) that all failed the same
// way at 14:10, with a pod created, scheduled, started and terminated each on the timeline and
// one log each, except: w-37 ran out of GPU memory (the root cause), w-3 restarted, w-500 is
// still running, w-9 has a warning of its own, and w-700 failed first.
func podsReport(n int) *Report {
	t0 := time.Date(2026, 3, 14, 8, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }
	one := func(i int) *int { return &i }
	r := &Report{FormatVersion: formatVersionUnfoldedPods, Job: Job{Kind: "PyTorchJob", Name: "big"}}
	rep := Replica{Role: "Worker", Created: n}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("w-%d", i)
		node := fmt.Sprintf("node-%d", i/8)
		p := Pod{Name: name, Phase: "Failed", Node: node, Ended: "Error, exit 1", ExitCode: one(1), Rank: one(i),
			Created: at(0), Started: at(20 * time.Second), Finished: at(6*time.Hour + time.Duration(i%60)*time.Second)}
		switch i {
		case 3:
			p.Restarts = 1
		case 500:
			p.Phase, p.Ended, p.ExitCode, p.Finished = "Running", "", nil, nil
		case 700:
			p.Finished = at(5 * time.Hour)
		}
		rep.Pods = append(rep.Pods, p)
		r.Timeline = append(r.Timeline,
			TimelineEntry{Time: *at(0), Kind: "pod", Pod: name, Text: "pod created"},
			TimelineEntry{Time: *at(time.Second), Kind: "pod", Pod: name, Text: "scheduled on " + node})
		r.Logs = append(r.Logs, LogSummary{Path: "logs/ml/" + name + "/pytorch.log", Pod: name, Container: "pytorch",
			Bytes: 100, Lines: 10, First: at(20 * time.Second), Last: at(6 * time.Hour), Findings: 1, Truncated: i == 10})
	}
	r.Job.Replicas = []Replica{rep}
	root := &Finding{ID: "f1", RuleID: "cuda-oom/torch", Category: "cuda-oom", Severity: analyze.SeverityCritical,
		Title: "CUDA out of memory", Pod: "w-37", Container: "pytorch", Rank: one(37), Time: at(5 * time.Hour), Count: 1}
	warn := &Finding{ID: "f2", RuleID: "x/warn", Category: "other", Severity: analyze.SeverityWarning,
		Title: "a warning", Pod: "w-9", Container: "pytorch", Rank: one(9), Time: at(time.Hour), Count: 1}
	r.Findings = []*Finding{root, warn}
	r.RootCause = &RootCause{Finding: *root}
	return r
}

func TestFoldPodsKeepsThePodsThatDiffer(t *testing.T) {
	r := podsReport(1000)
	require.True(t, r.foldPods())
	rep := r.Job.Replicas[0]
	var kept []string
	for _, p := range rep.Pods {
		kept = append(kept, p.Name)
	}
	require.Equal(t, []string{"w-3", "w-9", "w-37", "w-500", "w-700"}, kept, "restarted, own finding, root cause, still running, first failure")
	require.Len(t, rep.Groups, 1)
	g := rep.Groups[0]
	require.Equal(t, "Worker/1", g.ID)
	require.Equal(t, 995, g.Count)
	require.Equal(t, "0-2,4-8,10-36,38-499,501-699,701-999", g.Ranks)
	require.Equal(t, 125, g.Nodes)
	require.Equal(t, "Failed", g.Phase)
	require.Equal(t, "Error, exit 1", g.Ended)
	require.Len(t, g.Pods, MaxFoldPods)
	require.Equal(t, "w-0", g.Pods[0])
	require.Equal(t, "2026-03-14T14:00:00Z", g.FirstFinished.Format(time.RFC3339))
	require.Equal(t, "2026-03-14T14:00:59Z", g.LastFinished.Format(time.RFC3339))

	// The timeline: each kept pod's entries as they were, one entry per kind of the group's.
	var grouped []TimelineEntry
	perPod := 0
	for _, e := range r.Timeline {
		if e.Group != "" {
			grouped = append(grouped, e)
		} else if e.Pod != "" {
			perPod++
		}
	}
	require.Equal(t, 2*5, perPod)
	require.Len(t, grouped, 2)
	require.Equal(t, "pod created", grouped[0].Text)
	require.Equal(t, 995, grouped[0].Count)
	require.Equal(t, "scheduled on 125 nodes", grouped[1].Text)
	require.Equal(t, 995, grouped[1].Count)

	// The logs: the kept pods' one by one, the group's summed.
	require.Len(t, r.Logs, 5)
	require.Equal(t, []LogGroup{{Group: "Worker/1", Container: "pytorch", Count: 995, Bytes: 99500, Lines: 9950,
		First: r.Logs[0].First, Last: r.Logs[0].Last, Truncated: 1, Findings: 995}}, r.LogGroups)
	require.Equal(t, 1000, r.LogCount())
}

func TestFoldPodsLeavesSmallJobs(t *testing.T) {
	for _, n := range []int{1, FoldOver, FoldOver + 5} {
		r := podsReport(n)
		if n > FoldOver {
			// Every pod differs from the others: none folds.
			for i := range r.Job.Replicas[0].Pods {
				r.Job.Replicas[0].Pods[i].Restarts = i
			}
		}
		before, err := json.Marshal(r)
		require.NoError(t, err)
		require.False(t, r.foldPods(), "%d pods", n)
		after, err := json.Marshal(r)
		require.NoError(t, err)
		require.Equal(t, string(before), string(after), "%d pods", n)
	}
}

// TestFoldPodsRoundTrip: pod groups read back from the JSON contract and render in every
// format with their exact counts, from the JSON alone.
func TestFoldPodsRoundTrip(t *testing.T) {
	r := podsReport(1000)
	r.foldPods()
	r.FormatVersion = FormatVersion
	var buf bytes.Buffer
	require.NoError(t, Render(&buf, r, "json"))
	require.Contains(t, buf.String(), `"formatVersion": 3`)
	var back Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, 995, back.Job.Replicas[0].Groups[0].Count)
	require.Equal(t, r.LogGroups, back.LogGroups)

	for _, rep := range []*Report{r, &back} {
		var md, html, text bytes.Buffer
		require.NoError(t, Render(&md, rep, "md"))
		require.NoError(t, Render(&html, rep, "html"))
		require.NoError(t, RenderText(&text, rep))
		require.Contains(t, md.String(), "995 × ")
		require.Contains(t, md.String(), "ranks 0-2,4-8,10-36,38-499,501-699,701-999")
		require.Contains(t, md.String(), "1,000 logs")
		require.Contains(t, md.String(), "995 logs: group Worker/1, pytorch")
		require.Contains(t, html.String(), "<strong>995</strong>")
		require.Contains(t, html.String(), "995 ranks", "the group's lane")
		require.Contains(t, html.String(), "995 logs: group Worker/1, pytorch")
		require.NotContains(t, html.String(), "w-998", "a pod of the group past the names it lists")
		require.True(t, strings.Contains(html.String(), "w-700"), "the first failure keeps its row")
		require.Contains(t, html.String(), "995 pods: group Worker/1</td><td>scheduled on 125 nodes", "the group's timeline row")
	}
}

func TestFoldPodsDeterministic(t *testing.T) {
	render := func() string {
		r := podsReport(300)
		r.foldPods()
		var buf bytes.Buffer
		require.NoError(t, Render(&buf, r, "html"))
		return buf.String()
	}
	require.Equal(t, render(), render())
}
