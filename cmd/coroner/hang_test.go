package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/samplegen"
	"github.com/coroner-dev/coroner/report"
)

// TestHangSampleThreeForms: the four logs of the hang sample name the same culprit whether
// they come as the bundle, as plain files, or as the bundle without its Pod objects: rank 2,
// which stopped at step 480 at 10:17:30, thirty minutes before the others' watchdogs fired.
// The root cause is dated when it stopped, and its lane is drawn stalled from then.
func TestHangSampleThreeForms(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-hang-seqnum")
	plain := t.TempDir()
	var files []string
	for _, pod := range []string{"llama-ft-master-0", "llama-ft-worker-0", "llama-ft-worker-1", "llama-ft-worker-2"} {
		data, err := os.ReadFile(filepath.Join(sample, "logs", "ml", pod, "pytorch.log"))
		require.NoError(t, err)
		p := filepath.Join(plain, pod+".log")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		files = append(files, p)
	}
	noPods := filepath.Join(t.TempDir(), "bundle")
	copyDir(t, sample, noPods)
	require.NoError(t, os.RemoveAll(filepath.Join(noPods, "resources", "core", "Pod")))

	for _, tt := range []struct {
		name string
		args []string
	}{
		{"bundle", []string{sample}},
		{"plain logs", files},
		{"bundle without pods", []string{noPods}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := analyzeJSON(t, nil, append(tt.args, "--no-cache")...)
			rc := r.RootCause
			require.NotNil(t, rc)
			require.Equal(t, "collective-timeout/rank-behind", rc.RuleID)
			require.NotNil(t, rc.Rank)
			require.Equal(t, 2, *rc.Rank)
			require.Contains(t, rc.Pod, "llama-ft-worker-1")
			require.Equal(t, "Rank 2 held up collective #2890 (ALLREDUCE): it stopped at 10:17:30 (step 480); the other 3 ranks timed out 30 min later", rc.Title)
			require.NotNil(t, rc.Time)
			require.Equal(t, "10:17:30", rc.Time.UTC().Format("15:04:05"), "dated when the culprit stopped, not by the watchdog")

			text := requireExit(t, exitOK, "", append([]string{"analyze", "--no-cache"}, tt.args...)...)
			require.Contains(t, text, "2026-03-14 10:17:30", "the root-cause card")
			lane := laneOf(t, text, "(root cause)")
			require.Regexp(t, `✖┄+`, lane, "the text lane is stalled after the culprit stopped")
			require.NotContains(t, lane, "timed out 30 min later at 10:", "the lane does not date the root twice")

			page := requireExit(t, exitOK, "", append([]string{"analyze", "--no-cache", "--format", "html"}, tt.args...)...)
			require.Regexp(t, `class="stall"[^>]*>\s*<title>no progress from 10:17:30`, page, "the HTML lane is stalled from 10:17:30")
		})
	}
}

// laneOf returns the text chart's line that contains s.
func laneOf(t *testing.T, text, s string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line with %q in:\n%s", s, text)
	return ""
}

// rankMention is a rank or a list of ranks a sentence names: "rank 3", "ranks 0, 1 and 3".
var rankMention = regexp.MustCompile(`(?i)(local )?\branks? (\d+(?:(?:, | and )\d+)*)`)

// comparesWithItself says whether a finding's sentence names its subject rank (the first
// rank it names) again among the others it compares it with: "rank 12 stopped ... while
// rank 12 went on".
func comparesWithItself(title string) bool {
	var subject string
	for _, m := range rankMention.FindAllStringSubmatch(title, -1) {
		if m[1] != "" {
			continue // a local rank is another numbering
		}
		nums := regexp.MustCompile(`\d+`).FindAllString(m[2], -1)
		if subject == "" {
			if len(nums) == 1 {
				subject = nums[0]
				continue
			}
			return false
		}
		for _, n := range nums {
			if n == subject {
				return true
			}
		}
	}
	return false
}

func TestComparesWithItself(t *testing.T) {
	require.True(t, comparesWithItself("rank 12 stopped making progress at step 1180 while rank 12 went on (to step 1180)"))
	require.True(t, comparesWithItself("Rank 2 held up collective #9 (ALLREDUCE): ranks 0, 2 and 3 timed out waiting for it"))
	require.False(t, comparesWithItself("Rank 2 held up collective #9 (ALLREDUCE): ranks 0, 1 and 3 timed out waiting for it"))
	require.False(t, comparesWithItself("rank 3 stopped making progress at step 10 while rank 0 went on (to step 30)"))
}

// TestFindingsNeverCompareARankWithItself: no finding of any sample, nor of generated
// bundles of 8 and 64 ranks, compares a rank with itself.
func TestFindingsNeverCompareARankWithItself(t *testing.T) {
	check := func(t *testing.T, r *report.Report) {
		for _, f := range r.Findings {
			require.False(t, comparesWithItself(f.Title), "%s: %q", f.ID, f.Title)
		}
	}
	for _, name := range sampleNames(t) {
		t.Run(name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("analyzes every sample again; skipped with -short (analyze's TestSamples holds their findings as goldens)")
			}
			r, _ := analyzeJSON(t, nil, filepath.Join(samplesDir, name), "--no-cache")
			check(t, r)
		})
	}
	for _, ranks := range []int{8, 64} {
		t.Run("generated-"+strconv.Itoa(ranks), func(t *testing.T) {
			if testing.Short() {
				t.Skip("generates a bundle; skipped with -short")
			}
			dir := filepath.Join(t.TempDir(), "bundle")
			require.NoError(t, samplegen.Generate(dir, ranks, int64(ranks)*64<<10, 3))
			r, _ := analyzeJSON(t, nil, dir, "--no-cache")
			check(t, r)
			require.NotNil(t, r.RootCause)
			require.Equal(t, "cuda-oom", string(r.RootCause.Category))
		})
	}
}
