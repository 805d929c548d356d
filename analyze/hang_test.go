package analyze

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stepLog writes rank's step lines from step `from` to `to`, one every period from t.
func stepLog(b *strings.Builder, rank int, from, to int, t time.Time, period time.Duration) time.Time {
	for s := from; s <= to; s++ {
		fmt.Fprintf(b, "%s [rank%d]: step %d | loss 2.1 | lr 1e-4\n", t.Format(time.RFC3339Nano), rank, s)
		t = t.Add(period)
	}
	return t
}

const (
	oomLine      = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free."
	watchdogLine = "[Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out."
)

// TestRestartIsOneRank: a rank whose container restarted has a previous and a current log;
// they are one rank across the restart, never compared as two, and the restart is no stall.
// The CUDA OOM that ended it stays the root cause.
func TestRestartIsOneRank(t *testing.T) {
	t0, _ := time.Parse(time.RFC3339, "2026-03-14T10:00:00Z")
	var prev, cur, other strings.Builder
	// Before the restart: steps 1100 to 1180, then the container was killed (its last
	// buffered lines lost).
	end := stepLog(&prev, 12, 1100, 1180, t0, 10*time.Second)
	// After it: resumed from the checkpoint at step 1100, back to step 1180, then the OOM.
	t1 := end.Add(2 * time.Minute)
	end = stepLog(&cur, 12, 1100, 1180, t1, 10*time.Second)
	fmt.Fprintf(&cur, "%s [rank12]: %s\n", end.Format(time.RFC3339Nano), oomLine)
	// Another rank went through both attempts with it.
	e := stepLog(&other, 3, 1100, 1180, t0, 10*time.Second)
	stepLog(&other, 3, 1100, 1180, e.Add(2*time.Minute), 10*time.Second)
	fmt.Fprintf(&other, "%s [rank3]:[E314 10:40:00.000000 ProcessGroupNCCL.cpp:616] "+watchdogLine+"\n", end.Add(10*time.Minute).Format(time.RFC3339Nano), 3)

	res := analyzeFiles(t, map[string]string{
		"logs/ml/w12/c.previous.log": prev.String(),
		"logs/ml/w12/c.log":          cur.String(),
		"logs/ml/w3/c.log":           other.String(),
	})
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, "w12", res.RootCause.Pod)
	for _, f := range res.Findings {
		require.NotEqual(t, CategoryHang, f.Category, "a restart is not a stall: %s", f.Title)
	}
}

// TestLagIsNoStall: at 1,024 and 4,096 ranks, ranks whose last step line is 1-2 s behind the
// others (a few step periods: ranks are not in lockstep to the second) are neither the root
// cause nor a finding of their own; rank 5's CUDA OOM stays the root cause. Rank 7's last
// lines are missing, as a killed process's buffered output is.
func TestLagIsNoStall(t *testing.T) {
	for _, n := range []int{1024, 4096} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			if n > 1024 && testing.Short() {
				t.Skip("4,096 logs")
			}
			t0, _ := time.Parse(time.RFC3339, "2026-03-14T10:00:00Z")
			period := 250 * time.Millisecond
			files := map[string]string{}
			for r := range n {
				var b strings.Builder
				last := 60
				switch {
				case r == 7:
					last = 53 // 1.75 s behind
				case r%97 == 0:
					last = 56 // 1 s behind
				}
				end := stepLog(&b, r, 1, last, t0.Add(time.Duration(r%10)*time.Millisecond), period)
				if r == 5 {
					fmt.Fprintf(&b, "%s [rank5]: %s\n", end.Format(time.RFC3339Nano), oomLine)
				} else {
					fmt.Fprintf(&b, "%s [rank%d]:[E314 10:10:16.000000 ProcessGroupNCCL.cpp:616] "+watchdogLine+"\n", t0.Add(10*time.Minute+16*time.Second).Format(time.RFC3339Nano), r, r)
				}
				files[fmt.Sprintf("logs/ml/w%04d/c.log", r)] = b.String()
			}
			res := analyzeFiles(t, files)
			require.NotNil(t, res.RootCause)
			require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, res.RootCause.Title)
			require.Equal(t, 5, res.RootCause.Rank)
			for _, f := range res.Findings {
				require.NotEqual(t, CategoryHang, f.Category, "%s: %s", f.ID, f.Title)
				if f.Rank == 7 || f.Rank == 97 {
					require.Equal(t, CategoryCollectiveTimeout, f.Category, "no finding of its own for a lagging rank: %s", f.Title)
				}
			}
		})
	}
}

// TestStallIsLong: a rank whose progress stops while another goes on is a hang only when the
// other went on long against the step period, and never when the rank's own error ended it.
func TestStallIsLong(t *testing.T) {
	t0, _ := time.Parse(time.RFC3339, "2026-03-14T10:00:00Z")
	build := func(stoppedAt, lead int, ownError string) map[string]string {
		var a, b strings.Builder
		stepLog(&a, 0, 1, stoppedAt+lead, t0, 10*time.Second)
		end := stepLog(&b, 1, 1, stoppedAt, t0, 10*time.Second)
		if ownError != "" {
			fmt.Fprintf(&b, "%s [rank1]: %s\n", end.Format(time.RFC3339Nano), ownError)
		}
		return map[string]string{"logs/ml/a/c.log": a.String(), "logs/ml/b/c.log": b.String()}
	}
	hang := func(res *Result) *Finding {
		for _, f := range res.Findings {
			if f.Category == CategoryHang {
				return f
			}
		}
		return nil
	}
	// 30 steps of 10 s (5 min) more on rank 0: rank 1 stalled.
	stalled := analyzeFiles(t, build(40, 30, ""))
	f := hang(stalled)
	require.NotNil(t, f)
	require.Equal(t, 1, f.Rank)
	require.Equal(t, "rank 1 stopped making progress at step 40 while rank 0 went on (to step 70)", f.Title)
	require.Same(t, f, stalled.RootCause)
	// 6 steps (1 min): under the rule's periods and atLeast.
	require.Nil(t, hang(analyzeFiles(t, build(40, 6, ""))))
	// Rank 1's own OOM ended its progress: that is the root cause, no hang.
	res := analyzeFiles(t, build(40, 30, oomLine))
	require.Nil(t, hang(res))
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category)
}

// TestDesyncReportNamesTheCollective: a desync report's line names the lagging rank, not the
// collective; the finding names the collective the waiting ranks' watchdogs report, never
// "collective #0" (NVIDIA/nccl#2213's lines).
func TestDesyncReportNamesTheCollective(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	res := analyzeLogs(t, all, "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1155874, OpType=ALLREDUCE, NumelIn=9445376, NumelOut=9445376, Timeout(ms)=1800000) ran for 1800002 milliseconds before timing out.\n"+
		"[1] finished collective #1155873, but didn't join collective #1155874\n")
	require.NotNil(t, res.RootCause)
	require.Equal(t, "Rank 1 held up collective #1155874 (ALLREDUCE): the desync report names it", res.RootCause.Title)
	require.Equal(t, 1, res.RootCause.Rank)
}

// TestStackDumpIsLowHang: a pasted stack dump of a live process (py-spy dump, gdb's thread
// apply all bt, faulthandler's timer, the traceback of a Ctrl-C) and nothing else is a hang the user dumped, said at low confidence, and the
// words of its frames or of the source lines gdb lists ("wait(%s): timed out") are not read as
// a failure's. An error in the same text is the cause instead.
func TestStackDumpIsLowHang(t *testing.T) {
	rules, err := DefaultRules()
	require.NoError(t, err)
	pyspy := "Thread 4888 (idle): \"MainThread\"\n" +
		"    backward (torch/autograd/__init__.py:289)\n" +
		"    training_loop (train.py:411)\n" +
		"Thread 8287 (active)\n" +
		"    all_gather_into_tensor (torch/distributed/distributed_c10d.py:2709)\n"
	gdb := "Thread 1 (Thread 0x7f384e2dc740 (LWP 237)):\n" +
		" 357                        delay = min(delay * 2, remaining, .05)\n" +
		">358                        _sleep(delay)\n" +
		" 361                            self._note(\"%s.wait(%s): timed out\", self, timeout)\n" +
		"(gdb) py-bt\n"
	// A Ctrl-C after the progress bar stopped, the main thread waiting on the DataLoader.
	ctrlC := "eval:   0%|          | 0/943 [00:00<?, ?it/s]^CTraceback (most recent call last):\n" +
		"  File \"torch/utils/data/dataloader.py\", line 779, in _try_get_data\n" +
		"    data = self._data_queue.get(timeout=timeout)\n" +
		"KeyboardInterrupt\n"
	// faulthandler.dump_traceback_later's stacks after its timeout.
	timer := "Timeout (0:05:00)!\nThread 0x00007f809fc98340 (most recent call first):\n" +
		"  File \"torch/distributed/distributed_c10d.py\", line 2477 in barrier\n"
	for name, log := range map[string]string{"py-spy": pyspy, "gdb": gdb, "ctrl-c": ctrlC, "faulthandler": timer} {
		t.Run(name, func(t *testing.T) {
			res := analyzeLogs(t, rules, log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.NotNil(t, res.RootCause)
			require.Equal(t, CategoryHang, res.RootCause.Category)
			require.Equal(t, ConfidenceLow, res.Confidence)
		})
	}
	t.Run("a backtrace of a crashed process is the crash", func(t *testing.T) {
		// gdb's words on a segfault (mesnico/TERN#5), then its thread list.
		res := analyzeLogs(t, rules, "Thread 1 \"python3\" received signal SIGSEGV, Segmentation fault.\n"+
			"0x00007fb8000055ae in ?? ()\n(gdb) thread apply all bt\n\n"+
			"Thread 2 (Thread 0x7f54612d3700 (LWP 8125)):\n"+
			"#0  0x00007f550ed13ad3 in futex_wait_cancelable () from /lib64/libpthread.so.0\n")
		require.NotNil(t, res.RootCause)
		require.Equal(t, CategoryCrashSignal, res.RootCause.Category)
	})
	t.Run("a crash above a thread list longer than the tail is the crash", func(t *testing.T) {
		// gdb's signal line, then "thread apply all bt" over 40 threads: the signal line is
		// far above the end of the log, and the dump under it is of a dead process.
		var b strings.Builder
		b.WriteString("Thread 1 \"python\" received signal SIGSEGV, Segmentation fault.\n" +
			"0x00007f0042a1b2c3 in ncclProxyProgress () from libnccl.so.2\n(gdb) thread apply all bt\n")
		for i := 40; i > 0; i-- {
			fmt.Fprintf(&b, "\nThread %d (Thread 0x7f0048fff%03d (LWP %d)):\n", i, i, 20200+i)
			for j := range 8 {
				fmt.Fprintf(&b, "#%d  0x00007f00a1e2d376 in pthread_cond_wait@@GLIBC_2.3.2 () from /lib/x86_64-linux-gnu/libpthread.so.0\n", j)
			}
		}
		for _, log := range []string{b.String(), strings.Replace(b.String(), "received signal SIGSEGV", "received signal SIGBUS", 1)} {
			res := analyzeLogs(t, rules, log)
			require.NotNil(t, res.RootCause)
			require.Equal(t, CategoryCrashSignal, res.RootCause.Category, res.VerdictReason)
		}
		// A core file's words (gdb python core) say the same.
		res := analyzeLogs(t, rules, "Core was generated by `/opt/conda/bin/python train.py'.\n"+
			"Program terminated with signal SIGSEGV, Segmentation fault.\n"+strings.SplitN(b.String(), "(gdb)", 2)[1])
		require.Equal(t, CategoryCrashSignal, res.RootCause.Category, res.VerdictReason)
	})
	t.Run("another log's failure is the cause", func(t *testing.T) {
		// Rank 0 interrupted in a collective (or dumped) while rank 1 had died at the end of
		// its log: rank 1's failure is why rank 0 waited, whichever log comes first.
		const progress = "2024-05-01T10:00:00Z step 100 loss 2.31\n"
		ctrlCRank0 := progress + "2024-05-01T10:30:00Z ^CTraceback (most recent call last):\n" +
			"  File \"train.py\", line 90, in <module>\n    dist.all_reduce(t)\nKeyboardInterrupt\n"
		oom := progress + "2024-05-01T10:00:05Z FATAL: vram exhausted, kv cache does not fit in gpu memory\n"
		fatal := progress + "2024-05-01T10:00:05Z FATAL: connection to server lost: host unreachable, network is down\n"
		for _, dump := range []string{ctrlCRank0, pyspy} {
			res := analyzeLogs(t, rules, dump, oom)
			require.NotNil(t, res.RootCause)
			require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, res.VerdictReason)
			require.Equal(t, ConfidenceMedium, res.Confidence)
			res = analyzeLogs(t, rules, oom, dump)
			require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, res.VerdictReason)
		}
		// A failure the vocabulary cannot name still says more than the dump: a process failed.
		res := analyzeLogs(t, rules, ctrlCRank0, fatal)
		require.NotNil(t, res.RootCause)
		require.Equal(t, CategoryUnknown, res.RootCause.Category, res.VerdictReason)
		require.Contains(t, res.RootCause.Evidence[0].Text, "connection to server lost")
		// Another log's progress alone changes nothing.
		res = analyzeLogs(t, rules, ctrlCRank0, progress)
		require.Equal(t, CategoryHang, res.RootCause.Category, res.VerdictReason)
	})
	t.Run("an error in the same text is the cause", func(t *testing.T) {
		res := analyzeLogs(t, rules, pyspy+"[rank1]:[E1127 10:00:00.000000 ProcessGroupNCCL.cpp:616] "+fmt.Sprintf(watchdogLine, 1)+"\n")
		require.NotNil(t, res.RootCause)
		require.Equal(t, CategoryCollectiveTimeout, res.RootCause.Category)
	})
}

// TestHorovodStallIsAHang: Horovod's stall inspector warns, every 60 s, that some ranks have
// not submitted a collective the others wait in; Horovod keeps waiting, so no collective timed
// out. A log that ends in its warnings is a hang (at medium: the words name no cause), not a
// collective timeout; a rank's own error before it is the root cause; training that goes on
// after the warning is no failure.
func TestHorovodStallIsAHang(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// https://github.com/horovod/horovod/issues/1890 (the warning, wrapped by the paste)
	const stall = "[1,0]<stderr>:[2020-04-20 20:29:29. 89665: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to subm\n" +
		"[1,0]<stderr>:Missing ranks:\n" +
		"[1,0]<stderr>:1: [allreduce.c_d1.bias, allreduce.c_d1.weight]\n"
	const epoch = "[1,0]<stdout>:epoch 1 step 200 loss 0.41\n"

	res := analyzeLogs(t, all, epoch+stall+stall)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "hang/horovod-stall", res.RootCause.RuleID, findingsOf(res))
	require.Equal(t, CategoryHang, res.RootCause.Category)
	require.Equal(t, ConfidenceMedium, res.Confidence)

	// The rank that stopped submitting says why: its exception is the root cause.
	res = analyzeLogs(t, all, epoch+
		"[1,1]<stderr>:FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/epoch-1.h5'\n"+stall)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryFileNotFound, res.RootCause.Category, findingsOf(res))

	// A slow first checkpoint: rank 0 saves, the inspector warns, the epochs go on.
	res = analyzeLogs(t, all, epoch+stall+
		"[1,0]<stdout>:epoch 2 step 400 loss 0.37\n"+
		"[1,0]<stdout>:epoch 3 step 600 loss 0.35\n"+
		"[1,0]<stdout>:epoch 4 step 800 loss 0.33\n")
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s %s", res.VerdictReason, findingsOf(res))
	// One step after it is enough for Horovod's own report: no rank passes the collective
	// it waited on until every rank joined.
	res = analyzeLogs(t, all, epoch+stall+"[1,0]<stdout>:epoch 2 step 400 loss 0.37\n")
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s %s", res.VerdictReason, findingsOf(res))

	// A stack dump of a process stuck in a collective (faulthandler's dump_traceback_later),
	// then one step line of another rank: ranks are not in lockstep to the line, the stall
	// stands (the review's case).
	res = analyzeLogs(t, all, "[rank0]: step 500 loss 2.31 lr 3.0e-04\n[rank1]: step 500 loss 2.30 lr 3.0e-04\n"+
		"Timeout (0:30:00)!\n"+
		"Thread 0x00007f3c9b1a4740 (most recent call first):\n"+
		"  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py\", line 2050 in all_reduce\n"+
		"  File \"/workspace/train.py\", line 120 in train_step\n"+
		"[rank0]: step 501 loss 2.29 lr 3.0e-04\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, "%s %s", res.VerdictReason, findingsOf(res))
	require.Equal(t, CategoryHang, res.RootCause.Category, findingsOf(res))
}

// hvdStallAt is Horovod's stall report as NVIDIA/OpenSeq2Seq#456 pasted it (one report, "not
// sure the impact"), at the given time of day.
func hvdStallAt(at string) string {
	return "[2019-06-04 " + at + ": W horovod/common/operations.cc:588] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock.\n" +
		"Stalled ops:Loss_Optimization/all_reduce/HorovodAllreduce_Loss_Optimization_mul_1_0 [missing ranks: 0]\n"
}

// TestHorovodLoneStall: Horovod's stall inspector repeats its report at every check for as
// long as the ranks do not come. One report as a plain log's last words is a wait of a minute
// or more, which a healthy run prints too (a slow first batch or checkpoint, an evaluation on
// one rank: horovod/horovod#2315; on 80 nodes "the similar warning message comes once, short
// later, I can see the training progress", horovod/horovod#100, whose maintainers ask in #86
// and #100 whether training went on, as the warning cannot say): low, with the reason, not a
// hang at medium. Reports that repeat are a stall that lasted: medium, as before.
func TestHorovodLoneStall(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)

	// NVIDIA/OpenSeq2Seq#456, as docker compose printed it.
	res := analyzeLogs(t, all, "1469.worker.1  | [2019-06-04T16:49:20Z] [2019-06-04 16:49:19.737850: W horovod/common/operations.cc:588] One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock.\n"+
		"1469.worker.1  | [2019-06-04T16:49:20Z] Stalled ops:Loss_Optimization/all_reduce/HorovodAllreduce_Loss_Optimization_mul_1_0 [missing ranks: 0]\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "hang/horovod-stall", res.RootCause.RuleID, findingsOf(res))
	require.Equal(t, ConfidenceLow, res.Confidence)
	require.Equal(t, BasisLoneStall, res.ConfidenceBasis)
	require.Contains(t, res.RootCause.Evidence[0].Text, "waiting for remainder of ranks")

	// horovod/horovod#100: the older "WARNING: " form, once.
	res = analyzeLogs(t, all, "WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause deadlock. Stalled ops: HorovodBroadcast_fc1_fc1_beta_Adam_1_0 [ready ranks: 44, 90, 183, 148, 71, 83, 158, ...\n")
	require.Equal(t, CategoryHang, res.RootCause.Category, findingsOf(res))
	require.Equal(t, ConfidenceLow, res.Confidence)

	// The report repeated a minute later: the stall lasted, as far as the log shows.
	res = analyzeLogs(t, all, hvdStallAt("16:49:19.737850")+hvdStallAt("16:50:19.738018"))
	require.Equal(t, "hang/horovod-stall", res.RootCause.RuleID, findingsOf(res))
	require.Equal(t, ConfidenceMedium, res.Confidence)
	require.Equal(t, BasisSymptom, res.ConfidenceBasis)
}

// TestStallRepeatedIsNotYoung: a stall is young by when it was first reported. Horovod's
// report repeated every minute for half an hour, the last a minute before the collection, in
// a job still running, is a hang shown: high, not recent-stall. The same report first seen a
// minute before the collection is young: medium, recent-stall.
func TestStallRepeatedIsNotYoung(t *testing.T) {
	running := `  phase: Running
  startTime: "2026-03-14T10:00:10Z"
  containerStatuses:
  - {name: pytorch, image: "registry.local/ml/trainer:v2", imageID: "registry.local/ml/trainer@sha256:1", ready: true, restartCount: 0, state: {running: {startedAt: "2026-03-14T10:00:20Z"}}}
`
	// timed prefixes each line of Horovod's report at at with the time kubectl logs
	// --timestamps gives it.
	timed := func(at time.Time) string {
		var b strings.Builder
		for l := range strings.SplitSeq(strings.TrimSuffix(hvdStallAt(at.Format("15:04:05.000000")), "\n"), "\n") {
			b.WriteString(at.Format(time.RFC3339) + " " + l + "\n")
		}
		return b.String()
	}
	const step = "2026-03-14T10:29:00Z Epoch 3 step 1200 loss 2.3104\n"
	t0 := time.Date(2026, 3, 14, 10, 30, 0, 0, time.UTC)
	var log strings.Builder
	log.WriteString(step)
	for m := 1; m <= 30; m++ {
		log.WriteString(timed(t0.Add(time.Duration(m) * time.Minute)))
	}
	files := map[string]string{
		"resources/kubeflow.org/PyTorchJob/ml/train.yaml": pytorchJobYAML(1, "Running", "2026-03-14T10:00:30Z"),
		"resources/core/Pod/ml/train-worker-0.yaml":       workerPodYAML(0, running),
		"logs/ml/train-worker-0/pytorch.log":              log.String(),
	}
	collected := t0.Add(31 * time.Minute)
	res := analyzeBundle(t, files, collected, Options{})
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "hang/horovod-stall", res.RootCause.RuleID, findingsOf(res))
	require.Equal(t, ConfidenceHigh, res.Confidence)
	require.Empty(t, res.ConfidenceBasis)

	// Two reports, the first two minutes before the collection: young, medium, recent-stall.
	files["logs/ml/train-worker-0/pytorch.log"] = step + timed(collected.Add(-2*time.Minute)) + timed(collected.Add(-time.Minute))
	res = analyzeBundle(t, files, collected, Options{})
	require.Equal(t, "hang/horovod-stall", res.RootCause.RuleID, findingsOf(res))
	require.Equal(t, ConfidenceMedium, res.Confidence)
	require.Equal(t, BasisRecentStall, res.ConfidenceBasis)

	// One report a minute before the collection, as a healthy run's slow first checkpoint
	// draws (horovod/horovod#2315): could not tell, low, lone-stall.
	files["logs/ml/train-worker-0/pytorch.log"] = step + timed(collected.Add(-time.Minute))
	res = analyzeBundle(t, files, collected, Options{})
	require.Equal(t, "hang/horovod-stall", res.RootCause.RuleID, findingsOf(res))
	require.Equal(t, ConfidenceLow, res.Confidence)
	require.Equal(t, BasisLoneStall, res.ConfidenceBasis)
}
