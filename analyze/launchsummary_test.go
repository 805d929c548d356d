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

// TestLauncherExitBelowWorkerError: a launcher's report of a worker's exit, printed after the
// worker's exception with the launcher's INFO lines between, is not the failure's words, by
// either tier: paddle.distributed.launch prints the failed container (PaddlePaddle/
// PaddleDetection#7380's wording), the worker log's tail after "ERROR LOG DETAIL" and "Exit
// code N" (its controller); the DeepSpeed launcher kills the other ranks and reports the
// first one's return code (hostmem.yaml's sources). The exceptions are made up.
func TestLauncherExitBelowWorkerError(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	raised := "Traceback (most recent call last):\n  File \"tools/train.py\", line 172, in <module>\n    main()\n" +
		"ValueError: unknown scheduler cosine_warm\n"
	paddle := "LAUNCH INFO 2022-11-21 02:35:54,384 Pod failed\n" +
		"LAUNCH ERROR 2022-11-21 02:35:54,385 Container failed !!!\n" +
		"Container rank 0 status failed cmd ['/usr/bin/python3', '-u', 'tools/train.py', '-c', 'configs/keypoint/tiny_pose/tinypose_256x192_wholebody-v2-0921-1021-1108-1121.yml', '--eval'] code 1 log log/workerlog.0\n" +
		"env {'NV_LIBCUBLAS_VERSION': '11.3.0.106-1', 'NVIDIA_VISIBLE_DEVICES': 'all'}\n" +
		"LAUNCH INFO 2022-11-21 02:35:54,386 ------------------------- ERROR LOG DETAIL -------------------------\n" +
		raised +
		"LAUNCH INFO 2022-11-21 02:35:57,390 Exit code 1\n"
	deepspeed := raised +
		"[2024-02-06 06:23:36,102] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 20131\n" +
		"[2024-02-06 06:23:36,311] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 20132\n" +
		"[2024-02-06 06:23:39,510] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train_mem.py', '--local_rank=7'] exits with return code = 1\n"
	for name, log := range map[string]string{"paddle": paddle, "deepspeed": deepspeed} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, "step 40 | loss 1.93\n"+log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, name)
			require.Equal(t, CategoryUserCodeError, res.RootCause.Category, "%s\n%s", name, findingsOf(res))
			require.Contains(t, res.RootCause.Evidence[0].Text, "ValueError: unknown scheduler", name)
			require.Equal(t, ConfidenceLow, res.Confidence, name)
		}
	}
}

// TestCaughtExceptionAboveAKill: an exception the worker caught and printed on past (its own
// message, a log record) is not what the launcher's SIGKILL report below is of: the kill
// stays host-oom at medium (review, session 22: a caught KeyError took the blame at medium).
func TestCaughtExceptionAboveAKill(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	caught := "Traceback (most recent call last):\n  File \"finetune.py\", line 41, in get_rank_info\n    x = cfg[\"opt\"]\n" +
		"KeyError: 'opt'\nno optimizer config, using defaults\n2024-06-29 00:05:00,001 - INFO - loading checkpoint\n"
	for name, kill := range map[string]string{
		"torchrun": "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 14750) of binary: /usr/bin/python\n" +
			"Root Cause (first observed failure):\n[0]:\n  time      : 2025-05-21_15:43:03\n  host      : worker-0\n  rank      : 0 (local_rank: 0)\n" +
			"  exitcode  : -9 (pid: 14750)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 14750\n",
		"mpirun": "--------------------------------------------------------------------------\n" +
			"mpirun noticed that process rank 3 with PID 0 on node node-2 exited on signal 9 (Killed).\n",
	} {
		res := analyzeLogs(t, all, caught+kill)
		require.Equal(t, VerdictUnhealthy, res.Verdict, name)
		require.Equal(t, CategoryHostOOM, res.RootCause.Category, "%s\n%s", name, findingsOf(res))
		require.Equal(t, ConfidenceMedium, res.Confidence, name)
	}
}

// TestRaisedTermsAboveAFailure: a warning right above a failure names its cause only by the
// terms that name one in a warning too. Terms the vocabulary counts only when raised (a
// missing optional xFormers, a video the decoder skips: DAMO-NLP-SG/VideoLLaMA2#20's wording)
// are the warning of a run that went on, until a kill or an exception of its own: the second
// tier no longer names them at medium (both session-21 review findings).
func TestRaisedTermsAboveAFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tc := range []struct{ log, not string }{
		{"step 10 | loss 2.1\nWARNING:root:xformers is not available, falling back to the default attention\nKilled\n", "module-not-found"},
		{"step 10 | loss 2.1\nWARNING: failed to load video /data/k400/abc.mp4: [11:37:01] /github/workspace/src/video/video_reader.cc:151: Check failed: st_nb >= 0 (-1381258232 vs. 0) ERROR cannot find video stream with wanted index: -1. Skipping.\n" +
			"Traceback (most recent call last):\n  File \"train.py\", line 50, in <module>\n    main()\n" +
			"RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n", "data-error"},
	} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, tc.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict)
			require.NotEqual(t, Category(tc.not), res.RootCause.Category, "%s\n%s", tc.log, findingsOf(res))
		}
	}
}

// TestMPIRealLauncherSigkill: Horovod's and the MPI operator's images run Open MPI's launcher as
// mpirun.real behind a wrapper, and its summaries name it so (horovod/horovod#642). Its
// report of a rank killed by SIGKILL is the kill (host-oom at medium), not the abort summary
// above it; its command line in a healthy launcher log is no failure.
func TestMPIRealLauncherSigkill(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	killed := "train-mpijob-launcher-x7k2p   1/1   CrashLoopBackOff   2   3m\n" +
		"-------------------------------------------------------\n" +
		"Primary job  terminated normally, but 1 process returned\n" +
		"a non-zero exit code. Per user-direction, the job has been aborted.\n" +
		"-------------------------------------------------------\n" +
		"mpirun.real noticed that process rank 2 with PID 77 on node train-mpijob-worker-2 exited on signal 9 (Killed).\n"
	res := analyzeLogs(t, all, killed)
	require.Equal(t, VerdictUnhealthy, res.Verdict)
	require.Equal(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
	require.Equal(t, ConfidenceMedium, res.Confidence)
	require.Contains(t, res.RootCause.Evidence[0].Text, "mpirun.real noticed that process rank 2")

	healthy := "+ mpirun.real --allow-run-as-root -np 2 -bind-to none python train.py\n" +
		"Epoch 1/3 step 100 loss 0.91\nEpoch 1/3 step 200 loss 0.85\nEpoch 1/3 step 300 loss 0.80\n"
	res = analyzeLogs(t, all, healthy)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
}

// TestTorchelasticSigkillAfterTimeout: a SIGKILL torchrun reports after its own log's NCCL
// watchdog timeout (pspot33 002, hpcaitech/ColossalAI#2531's form) did not start that
// half-hour wait, so the usual cause is not sure: still host-oom, at low, and the timeout is
// among the findings; the kill alone stays at medium. The lines are made up in the forms
// torch prints.
func TestTorchelasticSigkillAfterTimeout(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	timeout := "[E ProcessGroupNCCL.cpp:737] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802117 milliseconds before timing out.\n" +
		"[E ProcessGroupNCCL.cpp:414] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process down.\n"
	kill := "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 (pid: 40211) of binary: /usr/bin/python3\n"

	res := analyzeLogs(t, all, "step 40 | loss 1.93\n"+timeout+kill)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
	require.Contains(t, res.RootCause.Evidence[0].Text, "failed (exitcode: -9)", findingsOf(res))
	require.Equal(t, ConfidenceLow, res.Confidence)
	require.Equal(t, BasisKillAfterTimeout, res.ConfidenceBasis)
	require.Contains(t, findingsOf(res), "collective-timeout")

	// A timeout of an earlier attempt, before torchrun restarted the worker group, did not
	// start the new group's wait: the new group's kill stays medium.
	restart := "INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 2/3 attempts left; will restart worker group\n" +
		"INFO:torch.distributed.elastic.agent.server.api:[default] Stopping worker group\n" +
		"INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group\n"
	res = analyzeLogs(t, all, "step 40 | loss 1.93\n"+timeout+restart+"step 10 | loss 2.10\n"+kill)
	require.Equal(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
	require.Equal(t, ConfidenceMedium, res.Confidence, res.VerdictReason)

	// The kill alone stays medium.
	res = analyzeLogs(t, all, "step 40 | loss 1.93\n"+kill)
	require.Equal(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
	require.Equal(t, ConfidenceMedium, res.Confidence)
	require.Equal(t, BasisUsualCause, res.ConfidenceBasis)

	// PyTorch's generic abort lines are printed for a peer's NCCL error too, with no wait
	// (tatsu-lab/stanford_alpaca#207's form): no timeout, the kill stays medium.
	peerGone := "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n" +
		"[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down.\n" +
		"terminate called after throwing an instance of 'std::runtime_error'\n" +
		"  what():  NCCL error: remote process exited or there was a network error, NCCL version 2.14.3\n" +
		"ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
	res = analyzeLogs(t, all, "step 40 | loss 1.93\n"+peerGone+kill)
	require.Equal(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
	require.Equal(t, ConfidenceMedium, res.Confidence, findingsOf(res))
	require.Equal(t, BasisUsualCause, res.ConfidenceBasis)

	// Another log's timeout (rank 0's, the launcher's report in a log of its own) is no part
	// of the launcher log's order: the kill stays medium.
	res = analyzeLogs(t, all, "step 40 | loss 1.93\n"+timeout, "step 40 | loss 1.93\n"+kill)
	require.Equal(t, CategoryHostOOM, res.RootCause.Category, findingsOf(res))
	require.Equal(t, ConfidenceMedium, res.Confidence, findingsOf(res))
}

// TestColossalaiRunSSHAuth: `colossalai run` starts each node's torchrun over ssh (paramiko)
// and prints the exception after the command; paramiko's "No authentication methods
// available" (hpcaitech/ColossalAI#3066, #2959) is the login the node refused, permission-
// denied at high, though the local node's torchrun banner follows. OpenSSH's debug line
// before its own "Permission denied (...)" is no failure alone. The lines are made up in the
// forms the launchers print.
func TestColossalaiRunSSHAuth(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "Error: failed to run torchrun --nproc_per_node=8 --nnodes=2 --node_rank=1 --master_addr=10.0.3.11 --master_port=29500 train.py on node-b, is localhost: False, exception: No authentication methods available\n" +
		"WARNING:torch.distributed.run:\n*****************************************\n" +
		"Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.\n" +
		"*****************************************\n"
	res := requireNamedByRule(t, all, log, CategoryPermissionDenied, "permission-denied/ssh-auth")
	require.Contains(t, res.RootCause.Evidence[0].Text, "No authentication methods available", findingsOf(res))

	res = analyzeLogs(t, all, "debug1: Authentications that can continue: publickey\ndebug1: No more authentication methods to try.\n")
	if res.RootCause != nil {
		require.NotEqual(t, CategoryPermissionDenied, res.RootCause.Category, findingsOf(res))
	}
}
