package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// elasticTable is torchrun's failure summary: the other failed processes under "Failures:",
// then the first one under "Root Cause (first observed failure):".
func elasticTable(others, root string) string {
	return "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" +
		"============================================================\n" +
		"train.py FAILED\n" +
		"------------------------------------------------------------\n" +
		"Failures:\n" + others +
		"------------------------------------------------------------\n" +
		"Root Cause (first observed failure):\n" + root +
		"============================================================\n"
}

func elasticRow(n, rank int, exit, traceback string) string {
	return "[" + itoa(n) + "]:\n" +
		"  time      : 2026-09-07_13:02:58\n" +
		"  host      : localhost\n" +
		"  rank      : " + itoa(rank) + " (local_rank: " + itoa(rank) + ")\n" +
		"  exitcode  : " + exit + "\n" +
		"  error_file: <N/A>\n" +
		"  traceback : " + traceback + "\n"
}

func itoa(n int) string { return string(rune('0' + n)) }

// TestElasticTableOtherFailuresSIGKILL: when a worker fails, torchelastic's agent stops the
// others with SIGTERM and then SIGKILL (pytorch/pytorch#160908) and lists them under
// "Failures:". Such a SIGKILL row is the agent's teardown, not the kernel's OOM killer: the
// root cause stays the first failure (here an exit code alone, so low confidence). The root
// cause's own SIGKILL row still names host-oom, with or without peers killed beside it.
func TestElasticTableOtherFailuresSIGKILL(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	const notes = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
	const killed = "Signal 9 (SIGKILL) received by PID 14689"
	const termed = "Signal 15 (SIGTERM) received by PID 14691"

	// A peer SIGKILLed in teardown after rank 1 exited with 1.
	res := analyzeLogs(t, all, elasticTable(
		elasticRow(1, 3, "1 (pid: 14692)", notes)+elasticRow(2, 0, "-9 (pid: 14689)", killed)+elasticRow(3, 2, "-15 (pid: 14691)", termed),
		elasticRow(0, 1, "1 (pid: 14690)", notes)))
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.NotNil(t, res.RootCause)
	require.NotEqual(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
	require.NotEqual(t, ConfidenceHigh, res.Confidence)

	// A peer SIGKILLed, or SIGTERMed, alone under "Failures:": neither tier reads the agent's
	// signal as the failure (review, session 22: the second tier named host-oom at medium, and
	// preempted-evicted for torch 2.9's SIGTERM rows).
	for _, peer := range []struct {
		row string
		not Category
	}{
		{elasticRow(1, 0, "-9 (pid: 14689)", killed), CategoryHostOOM},
		{elasticRow(1, 0, "-15 (pid: 14691)", termed), CategoryPreemptedEvicted},
	} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, elasticTable(peer.row, elasticRow(0, 1, "1 (pid: 14690)", notes)))
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.NotEqual(t, peer.not, res.RootCause.Category, findingsOf(res))
			require.Equal(t, ConfidenceLow, res.Confidence, findingsOf(res))
		}
	}

	// The root cause itself was SIGKILLed, alone or with a peer killed after it.
	for _, others := range []string{"  <NO_OTHER_FAILURES>\n", elasticRow(1, 1, "-9 (pid: 14690)", killed)} {
		res = analyzeLogs(t, all, elasticTable(others, elasticRow(0, 0, "-9 (pid: 14689)", killed)))
		require.NotNil(t, res.RootCause, res.VerdictReason)
		require.Equal(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
		require.Equal(t, "host-oom/torchelastic-sigkill", res.RootCause.RuleID)
	}

	// A SIGKILL row of a table cut before its "Failures:" heading still names it.
	res = analyzeLogs(t, all, elasticRow(0, 0, "-9 (pid: 14689)", killed))
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Equal(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
}
