package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPossibleCausesNameNone: Ray's message for a worker that died without telling why lists
// the causes it might have ("There are some potential root causes. (1) ... OOM killer ... (2)
// ray stop --force ... (3) ... SIGSEGV"). The list's words still name the likeliest category,
// but only at low confidence: the message says what might have happened, not what did, and the
// same warnings are printed by runs that go on to finish. A cause the log names in its own words
// keeps its confidence, and a run that trains on after the warning stays healthy.
func TestPossibleCausesNameNone(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tiers := map[string][]*Rule{"both tiers": all, "second tier alone": WithoutSpecific(all)}
	// ray-project/ray#24495: a nightly shuffle test, worker deaths printed as warnings.
	rayNightly := "2022-05-31 02:32:02,239\tWARNING worker.py:1416 -- A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: 3151cb18cc1f0cc87cded531aedae6a3f3ee62da01000000 Worker ID: b4224f75903ba215a778cd094948924a67a4223946738b39f807165f Node ID: 6adacee77da37be5366cd21b8dafe05263bc4614080c28fed74685ea Worker IP address: 10.0.3.20 Worker port: 10011 Worker PID: 344 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.\n"
	// Unakar/Logic-RL#18: an actor whose worker died, the maintainers unable to say why.
	actorDied := "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.\n"
	for name, rules := range tiers {
		t.Run(name, func(t *testing.T) {
			for _, log := range []string{rayNightly, actorDied} {
				res := analyzeLogs(t, rules, log)
				require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
				require.NotNil(t, res.RootCause)
				require.Equal(t, CategoryHostOOM, res.RootCause.Category)
				require.Equal(t, ConfidenceLow, res.Confidence)
				require.Equal(t, BasisPossibleCauses, res.ConfidenceBasis)
			}

			// The OOM killer's own line under the list names the cause: not lowered.
			res := analyzeLogs(t, rules, rayNightly+"[ 3121.446071] Out of memory: Killed process 344 (ray::IDLE) total-vm:61472316kB, anon-rss:59871204kB, file-rss:0kB\n")
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryHostOOM, res.RootCause.Category)
			require.NotEqual(t, ConfidenceLow, res.Confidence)

			// Training that goes on after the warning: still healthy.
			res = analyzeLogs(t, rules, rayNightly+"epoch 2 step 100 loss 1.9\nepoch 2 step 200 loss 1.8\n")
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		})
	}
}

// TestLowTitleSaysNoLikely: a root cause the second tier named at low confidence (a list of
// possible causes, retries that never end) says "possibly" in its title and explanation; its
// "likely" is the medium tier's word.
func TestLowTitleSaysNoLikely(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// Unakar/Logic-RL#18, as in TestPossibleCausesNameNone.
	actorDied := "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.\n"
	for _, res := range analyzeInEitherTier(t, all, actorDied) {
		require.Equal(t, ConfidenceLow, res.Confidence)
		require.True(t, strings.HasPrefix(res.RootCause.Title, "possibly host-oom: "), res.RootCause.Title)
		require.NotContains(t, res.RootCause.Explanation, "(likely)")
		require.NotContains(t, res.VerdictReason, "likely")
	}
}
