package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
)

// rankedReport is a job of n ranks (pod w-i, rank i): rank 5 runs out of GPU memory (f1, the
// root cause); every rank then times out in NCCL, a second after the one before, and its
// watchdog aborts the process (each abort follows its own rank's timeout); `also` more
// processes log one warning of a rule of their own.
func rankedReport(n, also int) *Report {
	t0 := time.Date(2026, 3, 14, 10, 47, 0, 0, time.UTC)
	at := func(s int) *time.Time { t := t0.Add(time.Duration(s) * time.Second); return &t }
	ev := func(pod string, line int, s int, text string) []Evidence {
		return []Evidence{{Source: analyze.SourceLog, File: "logs/ml/" + pod + "/pytorch.log", Line: line, Time: at(s), Text: text,
			Before: []ContextLine{{Line: line - 1, Text: "step 100"}}}}
	}
	rank := func(i int) *int { return &i }
	r := &Report{FormatVersion: formatVersionUnfoldedPods, Job: Job{Kind: "PyTorchJob", Name: "big"}}
	root := &Finding{ID: "f1", RuleID: "cuda-oom/torch", Category: "cuda-oom", Severity: analyze.SeverityCritical, Title: "CUDA out of memory",
		Pod: "w-5", Container: "pytorch", Rank: rank(5), Time: at(0), Count: 1, Evidence: ev("w-5", 40, 0, "torch.OutOfMemoryError")}
	r.Findings = append(r.Findings, root)
	r.RootCause = &RootCause{Finding: *root, Symptoms: n}
	id := 2
	next := func() string { id++; return fmt.Sprintf("f%d", id-1) }
	for i := 0; i < n; i++ {
		pod := fmt.Sprintf("w-%d", i)
		to := &Finding{ID: next(), RuleID: "collective-timeout/nccl-watchdog", Category: "collective-timeout", Severity: analyze.SeverityError,
			Title: "NCCL ALLREDUCE timed out", Pod: pod, Container: "pytorch", Rank: rank(i), Time: at(2 + i), Count: 2,
			Evidence: ev(pod, 50, 2+i, fmt.Sprintf("[rank%d] Watchdog caught collective operation timeout", i)), SecondaryOf: "f1"}
		ab := &Finding{ID: next(), RuleID: "collective-timeout/nccl-abort", Category: "collective-timeout", Severity: analyze.SeverityError,
			Title: "NCCL watchdog took the process down", Pod: pod, Container: "pytorch", Rank: rank(i), Time: at(3 + i), Count: 1,
			Evidence: ev(pod, 51, 3+i, "terminate called after throwing"), SecondaryOf: to.ID}
		r.Findings = append(r.Findings, to, ab)
		r.Timeline = append(r.Timeline, TimelineEntry{Time: *to.Time, Kind: "finding", Pod: pod, Text: to.Title, FindingID: to.ID},
			TimelineEntry{Time: *ab.Time, Kind: "finding", Pod: pod, Text: ab.Title, FindingID: ab.ID})
	}
	for i := 0; i < also; i++ {
		pod := fmt.Sprintf("w-%d", i)
		r.Findings = append(r.Findings, &Finding{ID: next(), RuleID: "warn/slow", Category: "unknown", Severity: analyze.SeverityWarning,
			Title: "slow <dataloader>", Pod: pod, Container: "pytorch", Rank: rank(i), Time: at(1), Count: 1, Evidence: ev(pod, 9, 1, "slow")})
	}
	return r
}

// TestFoldAcrossRanks: a class of finding on more than FoldOver processes becomes one finding
// with the exact count, its ranks, its pods, its first and last time and three samples; the
// root cause keeps its own; the symptoms of the folded symptoms fold and follow it; a class on
// FoldOver processes or fewer is left as it was.
func TestFoldAcrossRanks(t *testing.T) {
	r := rankedReport(20, FoldOver)
	r.foldFindings()

	require.Len(t, r.Findings, 1+2+FoldOver, "root, two folded classes, the warnings one by one")
	root := r.Findings[0]
	require.Equal(t, "f1", root.ID)
	require.Equal(t, "w-5", root.Pod)
	require.Zero(t, root.Folded)
	require.Equal(t, "torch.OutOfMemoryError", root.Evidence[0].Text)

	to, ab := r.Findings[1], r.Findings[2]
	require.Equal(t, "f2", to.ID)
	require.Equal(t, 20, to.Folded)
	require.Equal(t, 20, to.Processes)
	require.Equal(t, 40, to.Count, "the exact total of the folded counts")
	require.Equal(t, "0-19", to.Ranks)
	require.Equal(t, 20, to.PodCount)
	require.Len(t, to.Pods, MaxFoldPods)
	require.Equal(t, "w-0", to.Pods[0])
	require.Empty(t, to.Pod)
	require.Nil(t, to.Rank)
	require.Equal(t, "f1", to.SecondaryOf)
	require.Equal(t, "10:47:02", to.FirstTime.Format("15:04:05"))
	require.Equal(t, "10:47:21", to.LastTime.Format("15:04:05"))
	require.Equal(t, to.FirstTime, to.Time)
	var samples []string
	for _, e := range to.Evidence {
		samples = append(samples, e.File)
	}
	require.Equal(t, []string{"logs/ml/w-0/pytorch.log", "logs/ml/w-5/pytorch.log", "logs/ml/w-19/pytorch.log"}, samples,
		"the first in time, the root cause's pod, the last")

	require.Equal(t, 20, ab.Folded)
	require.Equal(t, "f2", ab.SecondaryOf, "the aborts follow the folded timeouts")
	for _, f := range r.Findings[3:] {
		require.Zero(t, f.Folded)
		require.NotEmpty(t, f.Pod)
	}

	var entries []TimelineEntry
	for _, e := range r.Timeline {
		if e.FindingID != "" {
			entries = append(entries, e)
		}
	}
	require.Len(t, entries, 2, "one timeline entry a folded finding")
	require.Equal(t, "NCCL ALLREDUCE timed out (20 ranks)", entries[0].Text)

	var text bytes.Buffer
	require.NoError(t, RenderText(&text, r))
	require.Contains(t, text.String(), "NCCL ALLREDUCE timed out — on 20 ranks: 0-19 (x40)")
	var html bytes.Buffer
	require.NoError(t, Render(&html, r, "html"))
	require.Contains(t, html.String(), "on 20 ranks: 0-19")
	require.Contains(t, html.String(), "40 findings follow from it", "a folded finding counts as the findings it stands for")
	require.Contains(t, html.String(), "slow &lt;dataloader&gt;")
	require.Contains(t, html.String(), "logs/ml/w-19/pytorch.log:50", "the last sample is shown")
	require.NotContains(t, html.String(), "logs/ml/w-7/pytorch.log:50", "the evidence of the others is not")
}

// TestFoldKeepsFactsApart: findings that differ in anything but where and when (here the
// severity, and so the finding the next ones follow from) are not one fact, whatever their
// number.
func TestFoldKeepsFactsApart(t *testing.T) {
	r := rankedReport(2*FoldOver, 0)
	for i, f := range r.Findings {
		if f.RuleID == "collective-timeout/nccl-watchdog" && i%4 == 1 {
			f.Severity = analyze.SeverityWarning
		}
	}
	r.foldFindings()
	folded := 0
	for _, f := range r.Findings {
		if f.Folded > 0 {
			folded++
		}
	}
	require.Zero(t, folded, "the timeouts, half warnings and half errors on %d ranks each, do not fold; nor the aborts, each following its own rank's timeout", FoldOver)
	require.Len(t, r.Findings, 1+2*2*FoldOver)
}

// TestFoldRoundTrip: a folded finding reads back from the JSON contract as it was written,
// and a version 1 report (no folded finding) still reads and renders.
func TestFoldRoundTrip(t *testing.T) {
	r := rankedReport(12, 0)
	r.foldFindings()
	var buf bytes.Buffer
	require.NoError(t, Render(&buf, r, "json"))
	require.Contains(t, buf.String(), `"formatVersion": 2`)
	var back Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, r.Findings[1].Ranks, back.Findings[1].Ranks)
	require.Equal(t, 12, back.Findings[1].Processes)
	var text bytes.Buffer
	require.NoError(t, RenderText(&text, &back))
	require.Contains(t, text.String(), "on 12 ranks: 0-11")

	v1 := strings.Replace(buf.String(), `"formatVersion": 2`, `"formatVersion": 1`, 1)
	old := rankedReport(12, 0)
	old.FormatVersion = 1
	buf.Reset()
	require.NoError(t, Render(&buf, old, "json"))
	require.NotContains(t, buf.String(), `"folded"`)
	var back1 Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back1))
	require.Len(t, back1.Findings, 1+2*12)
	require.NotEmpty(t, v1)
}

// TestAliasesOfAnyID: a folded finding's alias is found whatever its id: the analysis's
// ("f" and a number up to the count of findings, kept in a slice) and any other (a map).
func TestAliasesOfAnyID(t *testing.T) {
	a := newAliases(3)
	ids := []string{"f1", "f3", "f4", "f0", "f01", "f", "fx", "g2", "f99999999999", ""}
	for i, id := range ids {
		a.set(id, "to"+strconv.Itoa(i))
	}
	for i, id := range ids {
		require.Equal(t, "to"+strconv.Itoa(i), a.of(id), id)
	}
	require.Empty(t, a.of("f2"))
	require.Equal(t, []string{"", "to0", "", "to1"}, a.byNum, "only f1 to f3 in the slice")
}
