package analyze

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The agent's lines are torchelastic's, as shun-zheng/Doc2EDAG#24 shows them ("[default]
// Worker group FAILED. 3/3 attempts left; will restart worker group", "Stopping worker
// group", "Rendezvous'ing worker group", "Starting worker group"), and NeMo RL's
// ft-launcher guide the fault-tolerance launcher's ("Worker group FAILED. 3/5 attempts left;
// will restart worker group"). The worker's error is the NCCL error PyTorch's c10d raises;
// the training lines are made up.

// elasticAttempt writes one attempt of a worker group: steps from..to of training (every 10,
// none when to < from), then, when fail, rank 1's NCCL error, its exit and the agent's
// restart with left attempts of 3 left (left < 0: the agent gives up).
func elasticAttempt(b *strings.Builder, from, to int, fail bool, left int) {
	fmt.Fprintln(b, "INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group")
	for s := from; s <= to; s += 10 {
		fmt.Fprintf(b, "step %d | loss %.4f | lr 2.0e-04\n", s, 2.0-float64(s)/10000)
	}
	if !fail {
		return
	}
	b.WriteString("[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n")
	b.WriteString("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 (pid: 2201) of binary: /usr/bin/python\n")
	if left < 0 {
		b.WriteString("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n")
		b.WriteString("============================================================\n")
		b.WriteString("train.py FAILED\n")
		return
	}
	fmt.Fprintf(b, "INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. %d/3 attempts left; will restart worker group\n", left)
	b.WriteString("INFO:torch.distributed.elastic.agent.server.api:[default] Stopping worker group\n")
	// The other workers' end, as the agent stops them (pytorch/pytorch#91278's wording).
	b.WriteString("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2200 closing signal SIGTERM\n")
	b.WriteString("INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous'ing worker group\n")
}

// TestElasticRestartRecovered: a failure after which the elastic agent restarted the worker
// group and the new group trained is reported as recovered, by either tier; what happened
// after the restart decides the verdict.
func TestElasticRestartRecovered(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tiers := map[string][]*Rule{"both tiers": all, "second tier alone": WithoutSpecific(all)}

	var recovered strings.Builder
	elasticAttempt(&recovered, 100, 150, true, 3)
	elasticAttempt(&recovered, 100, 400, false, 0)
	recovered.WriteString("INFO:torch.distributed.elastic.agent.server.api:[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.\n")
	t.Run("recovered and finished", func(t *testing.T) {
		res := analyzeLogs(t, all, recovered.String())
		t.Log(findingsOf(res))
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Nil(t, res.RootCause)
		nccl := categoryFinding(res, CategoryCollectiveError)
		require.NotNil(t, nccl)
		require.Equal(t, SeverityWarning, nccl.Severity)
		require.Contains(t, nccl.Title, "(recovered: worker group restarted, resumed at step 100)")
		require.Contains(t, res.VerdictReason, "every failure seen was recovered from (", "a plain log says what it recovered from, not that nothing matched")
		for name, rules := range tiers {
			res := analyzeLogs(t, rules, recovered.String())
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, res.VerdictReason)
		}
	})
	t.Run("recovered and finished, in a job that succeeded", func(t *testing.T) {
		var b strings.Builder
		at := time.Date(2026, 3, 14, 10, 1, 0, 0, time.UTC)
		for _, l := range strings.Split(strings.TrimSuffix(recovered.String(), "\n"), "\n") {
			fmt.Fprintf(&b, "%s %s\n", at.Format(time.RFC3339Nano), l)
			at = at.Add(5 * time.Second)
		}
		res := analyzeBundle(t, batchJobFiles(b.String()), time.Date(2026, 3, 14, 11, 5, 0, 0, time.UTC), Options{})
		t.Log(findingsOf(res))
		require.Equal(t, VerdictHealthy, res.Verdict, res.VerdictReason)
		requireRecoveredFrom(t, res, "recovered from sft-x1: NCCL")
	})
	t.Run("recovered, then a different failure", func(t *testing.T) {
		var b strings.Builder
		elasticAttempt(&b, 100, 150, true, 3)
		elasticAttempt(&b, 100, 400, false, 0)
		b.WriteString("Traceback (most recent call last):\n")
		b.WriteString("  File \"/workspace/train.py\", line 212, in <module>\n")
		b.WriteString("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n")
		for name, rules := range tiers {
			res := analyzeLogs(t, rules, b.String())
			t.Log(name, findingsOf(res))
			require.Equal(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, res.VerdictReason)
			require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, "%s: %s", name, res.VerdictReason)
		}
		requireRecoveredFrom(t, analyzeLogs(t, all, b.String()), "; recovered from a: NCCL system error")
	})
	t.Run("restarts exhausted", func(t *testing.T) {
		var b strings.Builder
		elasticAttempt(&b, 100, 150, true, 3)
		elasticAttempt(&b, 100, 130, true, 2)
		elasticAttempt(&b, 100, 120, true, 1)
		elasticAttempt(&b, 100, 110, true, -1)
		res := analyzeLogs(t, all, b.String())
		t.Log(findingsOf(res))
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryCollectiveError, res.RootCause.Category, res.VerdictReason)
		require.NotContains(t, res.RootCause.Title, "recovered")
	})
	t.Run("restarted, and the new group never trained", func(t *testing.T) {
		var b strings.Builder
		elasticAttempt(&b, 100, 150, true, 3)
		b.WriteString("torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n")
		res := analyzeLogs(t, all, b.String())
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.NotContains(t, res.VerdictReason, "recovered")
	})
	t.Run("Ray Train's controller retried", func(t *testing.T) {
		// Ray Train's words (ray-project/ray#60376); the worker's error and the steps are
		// made up.
		var b strings.Builder
		b.WriteString("Attempting to start training worker group of size 8 with the following resources: [{'GPU': 1}] * 8\n")
		for s := 100; s <= 150; s += 10 {
			fmt.Fprintf(&b, "step %d | loss 1.9 | lr 2.0e-04\n", s)
		}
		b.WriteString("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n")
		b.WriteString("[FailurePolicy] Decision: FailureDecision.RETRY, Error source: worker group, Error count / maximum errors allowed: 1/3, Error: Training failed due to worker errors:\n")
		b.WriteString("Attempting to start training worker group of size 8 with the following resources: [{'GPU': 1}] * 8\n")
		for s := 100; s <= 400; s += 10 {
			fmt.Fprintf(&b, "step %d | loss 1.8 | lr 2.0e-04\n", s)
		}
		for name, rules := range tiers {
			res := analyzeLogs(t, rules, b.String())
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, res.VerdictReason)
		}
	})
	t.Run("a restart with no attempt left is none", func(t *testing.T) {
		var b strings.Builder
		elasticAttempt(&b, 100, 150, true, 0)
		elasticAttempt(&b, 100, 400, false, 0)
		res := analyzeLogs(t, all, b.String())
		require.NotNil(t, res.RootCause, res.VerdictReason)
		require.Equal(t, CategoryCollectiveError, res.RootCause.Category, res.VerdictReason)
	})
	t.Run("the same error after every restart, no training between", func(t *testing.T) {
		var b strings.Builder
		elasticAttempt(&b, 100, 150, true, 3)
		elasticAttempt(&b, 0, -1, true, 2)
		elasticAttempt(&b, 0, -1, true, 1)
		res := analyzeLogs(t, all, b.String())
		t.Log(findingsOf(res))
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryCollectiveError, res.RootCause.Category, res.VerdictReason)
		require.NotContains(t, res.RootCause.Title, "recovered")
	})
}

// requireRecoveredFrom checks that the verdict's reason says what the job recovered from
// (from) and how: the worker group restarted and trained from step 100.
func requireRecoveredFrom(t *testing.T, res *Result, from string) {
	t.Helper()
	require.Contains(t, res.VerdictReason, from)
	require.Contains(t, res.VerdictReason, "worker group restarted, resumed at step 100")
}

// categoryFinding is the first finding of category c, nil when none.
func categoryFinding(res *Result, c Category) *Finding {
	for _, f := range res.Findings {
		if f.Category == c {
			return f
		}
	}
	return nil
}

// TestGlogHeaderTimesFinding: a failure logged behind a c10 header (no year) is timed by
// its header, the year from the log's other timestamps, not by the last full timestamp
// above it; without any, it has no time rather than a guessed year.
func TestGlogHeaderTimesFinding(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	watchdog := "[rank1]:[E1120 10:05:00.000000 123 ProcessGroupNCCL.cpp:1484] [PG 0 Rank 1] Process group watchdog thread terminated with exception: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
	res := analyzeLogs(t, all, "[2026-11-20 10:00:01,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Starting worker group\n"+watchdog)
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Equal(t, CategoryCollectiveError, res.RootCause.Category)
	require.NotNil(t, res.RootCause.Time)
	require.Equal(t, time.Date(2026, 11, 20, 10, 5, 0, 0, time.UTC), res.RootCause.Time.UTC())

	res = analyzeLogs(t, all, watchdog)
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Nil(t, res.RootCause.Time)
}

// TestCaughtExceptionThenTraining: a catch-all exception after which its process trained on
// for minutes (a callback's exception caught and logged) is recovered when the progress
// lines say when they were printed; without times the lines after it may be the buffered
// stdout of a process that died of it, so it stays the root cause, at low confidence; and an
// exception that ends the log is its end whatever came before.
func TestCaughtExceptionThenTraining(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	exception := "Traceback (most recent call last):\n" +
		"  File \"/workspace/callbacks.py\", line 40, in on_log\n" +
		"ValueError: could not convert string to float: 'n/a'\n"
	steps := func(timed bool, from, to int) string {
		var b strings.Builder
		at := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC).Add(time.Duration(from) * 2 * time.Second)
		for s := from; s <= to; s += 10 {
			if timed {
				b.WriteString(at.Format("2006-01-02 15:04:05,000") + " - INFO - ")
			}
			fmt.Fprintf(&b, "step %d | loss %.4f | lr 2.0e-04\n", s, 2.0-float64(s)/10000)
			at = at.Add(20 * time.Second)
		}
		return b.String()
	}
	res := analyzeLogs(t, all, steps(true, 10, 90)+exception+steps(true, 100, 390))
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	f := categoryFinding(res, CategoryUserCodeError)
	require.NotNil(t, f)
	require.Contains(t, f.Title, "ValueError (recovered: resumed at step 100)")

	res = analyzeLogs(t, all, steps(false, 10, 90)+exception+steps(false, 100, 390))
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, ConfidenceLow, res.Confidence)

	res = analyzeLogs(t, all, steps(true, 10, 90)+exception+steps(true, 100, 390)+exception)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryUserCodeError, res.RootCause.Category)
}

// TestExitBarrierTimeoutIsNoRendezvousFailure: torchelastic's agent, done with its own
// workers, waits at an exit barrier for the other nodes' agents and logs "Error waiting on
// exit barrier" with the store's "Socket Timeout" under it when they never come
// (pytorch/pytorch#69520 shows the line and its traceback, pytorch/pytorch#195543 the fixed
// 300 s it waits). Another node is gone or still running: the store timed out in the barrier,
// not at the start, so it is no rendezvous failure, and the line names no cause of its own.
// The same store timeout at the start of a job stays a rendezvous failure.
func TestExitBarrierTimeoutIsNoRendezvousFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	barrier := "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 0 (pid: 4121) of binary: /usr/bin/python3\n" +
		"ERROR:torch.distributed.elastic.agent.server.api:Error waiting on exit barrier. Elapsed: 315.7792458534241 seconds\n" +
		"Traceback (most recent call last):\n" +
		"  File \"/usr/local/lib/python3.9/site-packages/torch/distributed/elastic/agent/server/api.py\", line 906, in _exit_barrier\n" +
		"    store_util.barrier(\n" +
		"  File \"/usr/local/lib/python3.9/site-packages/torch/distributed/elastic/utils/store.py\", line 78, in barrier\n" +
		"    synchronize(store, data, rank, world_size, key_prefix, barrier_timeout)\n" +
		"  File \"/usr/local/lib/python3.9/site-packages/torch/distributed/elastic/utils/store.py\", line 64, in synchronize\n" +
		"    agent_data = get_all(store, rank, key_prefix, world_size)\n" +
		"  File \"/usr/local/lib/python3.9/site-packages/torch/distributed/elastic/utils/store.py\", line 34, in get_all\n" +
		"    data = store.get(f\"{prefix}{idx}\")\n" +
		"RuntimeError: Socket Timeout\n"
	res := analyzeLogs(t, all, barrier)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.NotNil(t, res.RootCause)
	require.NotEqual(t, CategoryRendezvous, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, ConfidenceLow, res.Confidence, res.RootCause.Title)
	require.Contains(t, res.RootCause.Evidence[0].Text, "Error waiting on exit barrier")

	// An agent whose group finished and whose peers all came is healthy.
	done := "step 400 | loss 1.9600 | lr 2.0e-04\n" +
		"INFO:torch.distributed.elastic.agent.server.api:[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.\n" +
		"INFO:torch.distributed.elastic.agent.server.api:Local worker group finished (SUCCEEDED). Waiting 300 seconds for other agents to finish\n" +
		"INFO:torch.distributed.elastic.agent.server.api:Done waiting for other agents. Elapsed: 0.00020599365234375 seconds\n"
	require.NotEqual(t, VerdictUnhealthy, analyzeLogs(t, all, done).Verdict)

	// The store's timeout while ranks gather at the start is still a rendezvous failure.
	start := "torch.distributed.DistStoreError: Socket Timeout\n"
	res = analyzeLogs(t, all, start)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryRendezvous, res.RootCause.Category, res.RootCause.Title)
}

// TestElasticHeading: the headings of torchelastic's failure table, whose first byte the
// heading check looks at before it compares them.
func TestElasticHeading(t *testing.T) {
	for _, tt := range []struct {
		line          string
		opens, closes bool
	}{
		{"Failures:", true, false},
		{"Root Cause (first observed failure):", false, true},
		{"------------------------------------------------------------", false, true},
		{"============================================================", false, true},
		{"", false, false},
		{"Failures: 2", false, false},
		{"failures:", false, false},
		{"[0]:", false, false},
		{"step 81 | loss 3.2569", false, false},
		{"Root", false, false},
	} {
		opens, closes := elasticHeading([]byte(tt.line))
		require.Equal(t, tt.opens, opens, tt.line)
		require.Equal(t, tt.closes, closes, tt.line)
	}
}
