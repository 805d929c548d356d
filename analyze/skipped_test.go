package analyze

import (
	"fmt"
	"testing"
	"time"

	"github.com/coroner-dev/coroner/rules"
	"github.com/stretchr/testify/require"
)

// deepSpeedSummaries is a DeepSpeed run's step summaries of steps 10..400 (every 10 steps)
// whose cumulative count of skipped steps is skipped(step).
func deepSpeedSummaries(skipped func(step int) int) string {
	return trainerLog(func(step int) string {
		return fmt.Sprintf("[INFO] [logging.py:96:log_dist] [Rank 0] step=%d, skipped=%d, lr=[1.2e-05], mom=[(0.9, 0.999)]", step, skipped(step))
	})
}

// TestMostStepsSkipped: a job that succeeded although the loss scaler skipped nearly every
// step trained nothing (unhealthy, nan-loss); one that skipped a few steps while calibrating
// is healthy.
func TestMostStepsSkipped(t *testing.T) {
	collected := time.Date(2026, 3, 14, 11, 5, 0, 0, time.UTC)
	t.Run("nearly every step skipped", func(t *testing.T) {
		res := analyzeBundle(t, batchJobFiles(deepSpeedSummaries(func(step int) int { return step - 3 })), collected, Options{})
		t.Log(findingsOf(res))
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryNaNLoss, res.RootCause.Category)
		require.Equal(t, "nan-loss/most-steps-skipped", res.RootCause.RuleID)
		require.Contains(t, res.VerdictReason, "the job succeeded but fp16 overflow skipped 397 of 400 steps")
	})
	t.Run("three steps skipped while calibrating", func(t *testing.T) {
		res := analyzeBundle(t, batchJobFiles(deepSpeedSummaries(func(step int) int { return min(3, step/10) })), collected, Options{})
		t.Log(findingsOf(res))
		require.Equal(t, VerdictHealthy, res.Verdict, res.VerdictReason)
		for _, f := range res.Findings {
			require.NotEqual(t, "nan-loss/most-steps-skipped", f.RuleID)
		}
	})
	t.Run("many skips early, then training went on", func(t *testing.T) {
		// 150 skips by step 200 (75%), none after: the last summary says 150 of 400.
		res := analyzeBundle(t, batchJobFiles(deepSpeedSummaries(func(step int) int { return min(150, step*3/4) })), collected, Options{})
		t.Log(findingsOf(res))
		require.Equal(t, VerdictHealthy, res.Verdict, res.VerdictReason)
	})
}

// TestConditionComparesFields: a comparison may name another field of the same line or
// fact, times a factor; a field that is missing or not a number does not hold.
func TestConditionComparesFields(t *testing.T) {
	for _, tc := range []struct {
		cond   string
		v      string
		fields map[string]string
		want   bool
	}{
		{">=0.5*step", "1995", map[string]string{"step": "2000"}, true},
		{">=0.5*step", "3", map[string]string{"step": "2000"}, false},
		{"<step", "3", map[string]string{"step": "2000"}, true},
		{"<step", "2000", map[string]string{"step": "2000"}, false},
		{">=0.5*step", "3", map[string]string{}, false},
		{">=0.5*step", "3", map[string]string{"step": "n/a"}, false},
		{"!>=0.5*step", "3", map[string]string{"step": "2000"}, true},
		{"0|>=0.9*step", "0", map[string]string{"step": "2000"}, true},
	} {
		c, err := compileCond(rules.Cond(tc.cond))
		require.NoError(t, err, tc.cond)
		require.Equal(t, tc.want, c.holds(tc.v, tc.fields), "%s on %s with %v", tc.cond, tc.v, tc.fields)
	}
	for _, bad := range []string{">=0.5*", ">=*step", ">=0.5*step+1", ">=x*step", ">=NaN*step"} {
		_, err := compileCond(rules.Cond(bad))
		require.Error(t, err, bad)
	}
}

// TestStreakLastNamesGroups: a streak's last condition on, or comparing with, a group no
// pattern has is a problem, not a condition that never holds.
func TestStreakLastNamesGroups(t *testing.T) {
	spec := func(last rules.Where) *rules.Spec {
		return &rules.Spec{
			ID: "nan-loss/test-skips", Title: "t", Severity: "error", Layer: "execution", Fault: "user", Retry: "permanent",
			Match: rules.Match{Streak: &rules.Streak{
				Patterns: []string{`step=(?P<step>\d+), skipped=(?P<skipped>\d+)`},
				Min:      1, ToEnd: true, Last: last,
			}},
		}
	}
	_, err := newRule(spec(rules.Where{"skipped": ">=0.5*step"}))
	require.NoError(t, err)
	_, err = newRule(spec(rules.Where{"skipped": ">=0.5*steps"}))
	require.ErrorContains(t, err, "no streak pattern has a group (?P<steps>...)")
	_, err = newRule(spec(rules.Where{"skiped": ">=0.5*step"}))
	require.ErrorContains(t, err, "(?P<skiped>...)")
	_, err = newRule(spec(nil))
	require.ErrorContains(t, err, "streak min must be at least 2")
}
