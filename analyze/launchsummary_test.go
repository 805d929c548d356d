package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// torchelastic's failure table of a worker that died of SIGKILL, as lzhxmu/CPPO#6 shows it
// (its row and agent line as hpcaitech/ColossalAI#3172 prints them, the agent's traceback cut).
const sigkillTable = `ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 14750) of binary: /usr/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
src/open_r1/grpo_gsm.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-05-21_15:43:03
  host      : mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker
  rank      : 0 (local_rank: 0)
  exitcode  : -9 (pid: 14750)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 14750
============================================================
`

// TestTorchelasticSigkill: torchrun's report of a SIGKILL with nothing above it names host-oom,
// the usual cause, at medium and says why; a worker's exception above it is the failure (the
// table's "Root Cause" is whichever process the agent listed first when no worker calls
// @record, often a peer it killed), by either tier. The exceptions are made up.
func TestTorchelasticSigkill(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tiers := map[string][]*Rule{"both tiers": all, "second tier alone": WithoutSpecific(all)}
	raised := "Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n    main(cfg)\n" +
		"  File \"train.py\", line 61, in main\n    raise ValueError(f\"unknown scheduler {cfg.sched}\")\nValueError: unknown scheduler cosine_warm\n"
	for name, rules := range tiers {
		t.Run(name, func(t *testing.T) {
			res := analyzeLogs(t, rules, "step 40 | loss 1.93\n"+sigkillTable)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
			require.Equal(t, ConfidenceMedium, res.Confidence)
			if name == "both tiers" {
				require.Equal(t, BasisUsualCause, res.ConfidenceBasis)
			}

			res = analyzeLogs(t, rules, "step 40 | loss 1.93\n"+raised+sigkillTable)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryUserCodeError, res.RootCause.Category, findingsOf(res))
			require.Contains(t, res.RootCause.Evidence[0].Text, "ValueError: unknown scheduler", findingsOf(res))
			require.Equal(t, ConfidenceLow, res.Confidence)

			// An exception training went on past is no cause of the kill after it.
			res = analyzeLogs(t, rules, raised+"step 40 | loss 1.93\nstep 50 | loss 1.90\n"+sigkillTable)
			require.Equal(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
		})
	}
}

// TestTorchelasticSummaryLookAlikes: a SIGTERM row (a peer the agent stopped) is not a
// SIGKILL, and neither is the table's exit-code row alone (a -9 there is as often a peer the
// agent killed: pspot16 028 in docs/corpus-notes.md).
func TestTorchelasticSummaryLookAlikes(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, log := range []string{
		strings.ReplaceAll(strings.ReplaceAll(sigkillTable, "Signal 9 (SIGKILL)", "Signal 15 (SIGTERM)"), "exitcode: -9", "exitcode: -15"),
		sigkillTable[strings.Index(sigkillTable, "Root Cause"):strings.Index(sigkillTable, "  error_file")],
	} {
		res := analyzeLogs(t, all, log)
		if res.RootCause != nil {
			require.NotEqual(t, CategoryHostOOM, res.RootCause.Category, "%s\n%s", log, findingsOf(res))
		}
	}
}
