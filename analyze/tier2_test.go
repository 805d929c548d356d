package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/parse"
)

func tailOf(lines ...string) *tailBuf {
	t := &tailBuf{}
	for i, l := range lines {
		text, pre := splitPrefix([]byte(l))
		t.add(i+1, 0, text, pre.stream, pre.rank, false)
	}
	return t
}

// TestTerminalOf: what a log's end says about how its process ended.
func TestTerminalOf(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string // the failure's lines, in order; nil: none
	}{
		{"chained traceback: every exception of the chain, prefixes stripped", []string{
			"[rank1]: Traceback (most recent call last):",
			`[rank1]:   File "train.py", line 3, in <module>`,
			"[rank1]:     main()",
			"[rank1]: torch.OutOfMemoryError: out of memory on device 1",
			"[rank1]: ",
			"[rank1]: The above exception was the direct cause of the following exception:",
			"[rank1]: Traceback (most recent call last):",
			`[rank1]:   File "train.py", line 9, in <module>`,
			"[rank1]: RuntimeError: step failed",
		}, []string{"torch.OutOfMemoryError: out of memory on device 1", "RuntimeError: step failed"}},
		{"what() and a signal", []string{
			"terminate called after throwing an instance of 'std::runtime_error'",
			"  what():  something broke",
			"Fatal Python error: Aborted",
		}, []string{"terminate called after throwing an instance of 'std::runtime_error'", "  what():  something broke", "Fatal Python error: Aborted"}},
		{"torchelastic's summary", []string{
			"Root Cause (first observed failure):",
			"[0]:",
			"  exitcode  : -9 (pid: 812)",
			"  error_file: <N/A>",
			"  traceback : Signal 9 (SIGKILL) received by PID 812",
		}, []string{"Root Cause (first observed failure):", "  exitcode  : -9 (pid: 812)", "  error_file: <N/A>", "  traceback : Signal 9 (SIGKILL) received by PID 812"}},
		{"a shell's Killed", []string{"epoch 1 step 10 loss 2.1", "/bin/sh: line 1:   812 Killed   python train.py"},
			[]string{"/bin/sh: line 1:   812 Killed   python train.py"}},
		{"a wrapped line is rejoined", []string{
			"OSError: [Errno 28] No space left on device while writing the checkpoint of step",
			" 1200 to /ckpt",
		}, []string{"OSError: [Errno 28] No space left on device while writing the checkpoint of step 1200 to /ckpt"}},
		{"a status's indented context continues it", []string{
			"INFO saving checkpoint",
			"Unavailable: Unexpected response code 503",
			"\t when resuming upload gs://bucket/ckpt-1.data",
			"INFO shutting down",
		}, []string{"Unavailable: Unexpected response code 503 when resuming upload gs://bucket/ckpt-1.data"}},
		{"a message that ends in a colon is continued by its next line, indented or not", []string{
			"INFO submitting the job",
			"Status message: Job entrypoint command failed with exit code 127, last available logs (truncated to 20,000 chars):",
			"/bin/bash: /workspace/train.sh: No such file or directory",
			"INFO shutting down",
			"INFO done",
		}, []string{"Status message: Job entrypoint command failed with exit code 127, last available logs (truncated to 20,000 chars): /bin/bash: /workspace/train.sh: No such file or directory"}},
		{"but not by a logger's record of its own", []string{
			"INFO submitting the job",
			"Status message: Job entrypoint command failed with exit code 127, last available logs (truncated to 20,000 chars):",
			"INFO: Started server process [812]",
			"INFO done",
		}, []string{"Status message: Job entrypoint command failed with exit code 127, last available logs (truncated to 20,000 chars):"}},
		{"but not by a traceback's header", []string{
			"ERROR: training failed with the following error:",
			"Traceback (most recent call last):",
			`  File "train.py", line 88, in <module>`,
			"ValueError: bad value",
		}, []string{"ERROR: training failed with the following error:", "ValueError: bad value"}},
		{"a log that ends inside a traceback was raising: its header is the failure", []string{
			"epoch 1 step 10 loss 2.1",
			"save failed, giving up",
			"Traceback (most recent call last):",
			`  File "train.py", line 88, in <module>`,
			"    save(state, path)",
		}, []string{"save failed, giving up", "Traceback (most recent call last):"}},
		{"a traceback logged at ERROR behind a logging header is a traceback", []string{
			"INFO 11-18 18:07:20 model_runner.py:100] Loading model weights took 14.99 GB",
			"ERROR 11-18 18:07:28 engine.py:366] Traceback (most recent call last):",
			`ERROR 11-18 18:07:28 engine.py:366]   File "/app/engine.py", line 12, in run`,
			"ERROR 11-18 18:07:28 engine.py:366]     batch = batches[key]",
			"ERROR 11-18 18:07:28 engine.py:366] KeyError: 'labels'",
		}, []string{"ERROR 11-18 18:07:28 engine.py:366] KeyError: 'labels'"}},
		{"NCCL's error trace: the call failed, the WARN above says why", []string{
			"node-3:2736:2736 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC",
			"node-3:2736:2736 [0] NCCL INFO Ring 00 : 0 -> 1 [send] via NET/Socket/0",
			"node-3:2736:2790 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.7<43121> failed : Connection refused",
			"node-3:2736:2790 [0] NCCL INFO bootstrap.cc:270 -> 2",
			"node-3:2736:2736 [0] NCCL INFO init.cc:1921 (ncclCommInitRankFunc) -> 2 [Async thread]",
		}, []string{
			"node-3:2736:2790 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.7<43121> failed : Connection refused",
			"node-3:2736:2790 [0] NCCL INFO bootstrap.cc:270 -> 2",
			"node-3:2736:2736 [0] NCCL INFO init.cc:1921 (ncclCommInitRankFunc) -> 2 [Async thread]",
		}},
		{"NCCL 2.0-2.2's error trace has no NCCL word before its level", []string{
			"node-3:2123:2230 [3] INFO Ring 00 :    0   1   2   3",
			"node-3:2123:2230 [3] include/socket.h:194 WARN Call to recv failed : Connection reset by peer",
			"node-3:2123:2230 [3] INFO transport/net_ib.cu:555 -> 2",
			"node-3:2123:2230 [3] INFO init.cu:542 -> 2",
		}, []string{
			"node-3:2123:2230 [3] include/socket.h:194 WARN Call to recv failed : Connection reset by peer",
			"node-3:2123:2230 [3] INFO transport/net_ib.cu:555 -> 2",
			"node-3:2123:2230 [3] INFO init.cu:542 -> 2",
		}},
		{"a notebook's traceback cut before its exception: IPython's header names what was raised", []string{
			"epoch 1 step 10 loss 2.1",
			"---------------------------------------------------------------------------",
			"pkg.DeviceError                           Traceback (most recent call last)",
			"/opt/lib/python3/pkg/run.py in step(state, batch)",
			"---> 12     out = compiled.execute(bufs)",
			"     13     return out",
		}, []string{"pkg.DeviceError                           Traceback (most recent call last)"}},
		{"a notebook's whole traceback: its exception line is the failure, not the header", []string{
			"---------------------------------------------------------------------------",
			"KeyError                                  Traceback (most recent call last)",
			"<ipython-input-3-0f1e> in <module>()",
			"----> 1 batch['labels']",
			"",
			"KeyError: 'labels'",
		}, []string{"KeyError: 'labels'"}},
		// Error lines a library then says it retried or replaced are not how a log ended
		// (recovered.go); a failure after the last such line, or the retry line itself at the end, is.
		{"a network plugin that would not initialise, then NCCL picks its socket transport", []string{
			"[1,2]<stdout>:w-1:23:574 [2] nccl_net_ofi_create_plugin:204 NCCL WARN NET/OFI Failed to initialize sendrecv protocol",
			"[1,2]<stdout>:w-1:23:574 [2] nccl_net_ofi_create_plugin:257 NCCL WARN NET/OFI aws-ofi-nccl initialization failed",
			"[1,1]<stdout>:w-1:22:572 [1] NCCL INFO NET/Socket : Using [0]eth0:192.168.60.235<0>",
			"[1,1]<stdout>:w-1:22:572 [1] NCCL INFO Using network Socket",
			"[1,1]<stdout>:w-1:22:572 [1] NCCL INFO comm 0x5581 rank 1 nranks 16 cudaDev 1 busId 20 - Init COMPLETE",
		}, nil},
		{"a rendezvous that keeps retrying to the end still ends in its error", []string{
			"[W socket.cpp:701] The server socket on [node-0]:29500 is not yet listening (errno: 111 - Connection refused), will retry",
			"[W socket.cpp:701] The server socket on [node-0]:29500 is not yet listening (errno: 111 - Connection refused), will retry",
		}, []string{"[W socket.cpp:701] The server socket on [node-0]:29500 is not yet listening (errno: 111 - Connection refused), will retry"}},
		{"an error after the last retry is the failure", []string{
			"WARNING '(ReadTimeoutError(\"HTTPSConnectionPool(host='hub', port=443): Read timed out.\"))' thrown while requesting GET https://hub/a",
			"WARNING Retrying in 1s [Retry 1/5].",
			"{'loss': 2.31, 'epoch': 0.4}",
			"ERROR upload of checkpoint-400 failed: connection refused",
		}, []string{"ERROR upload of checkpoint-400 failed: connection refused"}},
		{"an exception is never forgotten", []string{
			"RuntimeError: CUDA error: an illegal memory access was encountered",
			"falling back to eager mode",
		}, []string{"RuntimeError: CUDA error: an illegal memory access was encountered"}},
		{"a phrase inside a longer word is no retry", []string{
			"ERROR shard 3 unreadable: checksum mismatch",
			"INFO reusing networks from cache",
		}, []string{"ERROR shard 3 unreadable: checksum mismatch"}},
		// An exception Python caught and ignored (sys.unraisablehook) is not how the process
		// ended, whether its traceback was pasted whole or cut before its exception.
		{"an exception Python ignored, and training went on", []string{
			"epoch 1 step 10 loss 2.1",
			"Exception ignored in: <bound method _DataLoaderIter.__del__ of <torch.utils.data.dataloader._DataLoaderIter object at 0x7f03df4789e8>>",
			"Traceback (most recent call last):",
			`  File "/opt/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 399, in __del__`,
			"    self._shutdown_workers()",
			"ConnectionResetError: [Errno 104] Connection reset by peer",
			"epoch 1 step 20 loss 2.0",
		}, nil},
		{"an ignored exception's traceback cut before its exception", []string{
			"Exception ignored in: <function _after_fork at 0x7f3a>",
			"Traceback (most recent call last):",
			`  File "/usr/lib/python3.10/threading.py", line 1537, in _after_fork`,
		}, nil},
		{"a failure after an ignored exception is the failure", []string{
			"Exception ignored in: <function Pool.__del__ at 0x7f3a>",
			"Traceback (most recent call last):",
			`  File "/usr/lib/python3.10/multiprocessing/pool.py", line 268, in __del__`,
			"ResourceWarning: unclosed running multiprocessing pool",
			"Traceback (most recent call last):",
			`  File "train.py", line 9, in <module>`,
			"RuntimeError: step failed",
		}, []string{"RuntimeError: step failed"}},
		// Exceptions whose class name says nothing of failure, named by the module they come
		// from: pyarrow's (huggingface/datasets#4077) chained to a traceback cut before its
		// exception, and dynamo's (pytorch/pytorch#123041).
		{"pyarrow's exception, chained to a traceback cut before its own", []string{
			"Traceback (most recent call last):",
			`  File "pyarrow/error.pxi", line 91, in pyarrow.lib.check_status`,
			"pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer. Either the file is corrupted or this is not a parquet file.",
			"",
			"The above exception was the direct cause of the following exception:",
			"",
			"Traceback (most recent call last):",
			`  File "train.py", line 14, in <module>`,
		}, []string{
			"pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer. Either the file is corrupted or this is not a parquet file.",
			"Traceback (most recent call last):",
		}},
		{"an exception of a package's exceptions module", []string{
			"[rank0]:     raise Unsupported(msg)",
			"[rank0]: torch._dynamo.exc.Unsupported: HigherOrderOperator with body that accepts non-Tensors as input.",
		}, []string{"torch._dynamo.exc.Unsupported: HigherOrderOperator with body that accepts non-Tensors as input."}},
		{"a module path with a lower-case name is no exception", []string{
			"epoch 1 step 10 loss 2.1",
			"metrics.exc.count: 3",
			"torch._dynamo.exc.unimplemented was called",
		}, nil},
		// PaddlePaddle's launcher (launch_utils.py) after a trainer died (PaddlePaddle/Paddle#33074).
		{"PaddlePaddle's launcher summary", []string{
			"INFO 2021-05-24 17:17:14,611 launch_utils.py:307] terminate all the procs",
			"ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers, the trainer process with rank=[3] was aborted. Please check its log.",
			"INFO 2021-05-24 17:17:17,615 launch_utils.py:307] terminate all the procs",
		}, []string{"ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers, the trainer process with rank=[3] was aborted. Please check its log."}},
		// torchelastic's error record of a failed child, printed as JSON under its summary's
		// "msg:" (pytorch/pytorch#65041): the exception inside is the child's end.
		{"torchelastic's error record names the child's exception", []string{
			"  exitcode: 1 (pid: 1092727)",
			"  error_file: /tmp/torchelastic_aeyvjbpe/none_8zuih7tj/attempt_0/0/error.json",
			"  msg:",
			"    {",
			`      "message": "RuntimeError: The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).",`,
			"    }",
		}, []string{ // indented lines after a failure line continue it
			"  exitcode: 1 (pid: 1092727)",
			"  error_file: /tmp/torchelastic_aeyvjbpe/none_8zuih7tj/attempt_0/0/error.json msg: {",
			`      "message": "RuntimeError: The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).", }`,
		}},
		{"a JSON message that is no exception is no error record", []string{
			"epoch 1 step 10 loss 2.1",
			`      "message": "saved checkpoint 10",`,
		}, nil},
		{"a clean log", []string{"epoch 1 step 10 loss 2.1", "training finished", "exit code 0"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tf := terminalOf(tailOf(tt.lines...), "l", "p", "c")
			if tt.want == nil {
				require.Nil(t, tf)
				return
			}
			require.NotNil(t, tf)
			var got []string
			for _, l := range tf.lines {
				got = append(got, string(l.text))
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// analyzeLogs analyzes plain log files as `coroner analyze a.log b.log` does, with rules.
func analyzeLogs(t *testing.T, rules []*Rule, logs ...string) *Result {
	t.Helper()
	rs, err := NewRuleSet(rules)
	require.NoError(t, err)
	return analyzeLogsWith(t, rs, logs...)
}

// analyzeLogsWith is analyzeLogs with a rule set made once (a fuzz target's).
func analyzeLogsWith(t *testing.T, rs *RuleSet, logs ...string) *Result {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, l := range logs {
		p := filepath.Join(dir, string(rune('a'+i))+".log")
		require.NoError(t, os.WriteFile(p, []byte(l), 0o644))
		paths = append(paths, p)
	}
	b, err := bundle.OpenLogs(t.Context(), paths, nil, bundle.DefaultLimits())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	m, err := parse.Load(b)
	require.NoError(t, err)
	res, ix, err := analyzeModel(t.Context(), m, rs, index.BuildOptions{}, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	return res
}

// TestSecondTier: on plain logs, the second tier names what no specific rule matched, says
// how sure it is, and never turns a log that goes on training into a failure. The rows that
// test the tier itself run without the specific rules (as --tiers fallback), so that a rule
// written later for their wording does not hide the tier.
func TestSecondTier(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	progress := "epoch 1 step 10 loss 2.1\nepoch 1 step 20 loss 2.0\n"
	rolloutOOM := "(LLMRayActor pid=347862) CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:56\n(ActorModelRayActor pid=348952) \n"
	cutTraceback := "Traceback (most recent call last):\n  File \"/usr/lib/python3.10/runpy.py\", line 196, in _run_module_as_main\n" +
		"    return _run_code(code, main_globals, None,\n  File \"/usr/lib/python3.10/runpy.py\", line 86, in _run_code\n    exec(code, run_globals)\n"
	tests := []struct {
		name       string
		specific   bool
		log        string
		verdict    Verdict
		category   Category
		confidence Confidence
		title      string
	}{
		{"a bare Killed after training", false, progress + "/bin/sh: line 1:   812 Killed   python train.py\n",
			VerdictUnhealthy, CategoryHostOOM, ConfidenceMedium, "likely host-oom: 'Killed'"},
		// JAX's coordination service, as xla's distributed client logs it (jax-ml/jax#39095,
		// marin-community/levanter#432): a task that could not register, then the agent's error.
		{"a JAX task whose registration with the coordination service timed out", false,
			"Additional GRPC error information from remote target unknown_target_for_coordination_leader while calling /tensorflow.CoordinationService/RegisterTask:\n" +
				":{\"description\":\"Deadline Exceeded\",\"grpc_status\":4}\n" +
				"2024-01-25 19:34:15.371885: E external/xla/xla/pjrt/distributed/client.cc:96] Coordination service agent in error status: DEADLINE_EXCEEDED: Deadline Exceeded\n",
			VerdictUnhealthy, CategoryRendezvous, ConfidenceMedium, "likely rendezvous-failure: 'RegisterTask'"},
		{"a status and the coordination service's RPC it came from", false, "DEADLINE_EXCEEDED: Deadline Exceeded\nRPC: /xla.coordination.CoordinationService/RegisterTask\n",
			VerdictUnhealthy, CategoryRendezvous, ConfidenceMedium, "likely rendezvous-failure: 'RegisterTask'"},
		// horovodrun's driver raises Python's base class with its message, and a paste often
		// keeps only that line (horovod/horovod#1414, #3971).
		{"a bare Exception line that ends a paste", false, "Exception: Timed out waiting for tasks to start. Please check connectivity between servers. You may need to increase the --start-timeout parameter if you have too many servers.\n",
			VerdictUnhealthy, CategoryRendezvous, ConfidenceMedium, "likely rendezvous-failure: 'Timed out waiting for tasks to start', 'check connectivity between servers'"},
		{"a bare Exception line the run went on after", false, "Exception: Timed out waiting for tasks to start.\n" + progress + progress,
			VerdictUnknown, "", "", ""},
		// TensorFlow 1's session names an op's error with a pointer to its traceback above
		// (tensorflow/tensorflow#13463).
		{"a TensorFlow 1 op error that points at its traceback above", false, progress + "DataLossError (see above for traceback): corrupted record at 12\n",
			VerdictUnhealthy, CategoryDataError, ConfidenceMedium, "likely data-error: 'corrupted'"},
		// Ray's job status quotes the entrypoint's last output under a line that ends in a colon
		// (ray-project/ray's `ray job submit` summary).
		{"a job runner's status and the job's own last line it quotes", false,
			"Job 'raysubmit_1' failed\nStatus message: Job entrypoint command failed with exit code 127, last available logs (truncated to 20,000 chars):\n" +
				"/bin/bash: /workspace/train.sh: No such file or directory\n",
			VerdictUnhealthy, CategoryFileNotFound, ConfidenceMedium, "likely file-not-found: 'No such file or directory'"},
		{"a library refusing two options together", false, "ValueError: DeepSpeed Zero-3 is not compatible with passing a `device_map`.\n",
			VerdictUnhealthy, CategoryConfigError, ConfidenceMedium, "likely config-error: 'is not compatible with'"},
		{"a message wrapped at 80 columns", false, progress + "OSError: [Errno 28] No space left on device while writing the checkpoint of step\n 1200 to /ckpt\n",
			VerdictUnhealthy, CategoryDiskFull, ConfidenceMedium, "likely disk-full"},
		{"an exception logged at ERROR before the process exited", false, progress +
			"2024-05-01 10:00:00.123 | ERROR    | train:main:42 - Traceback (most recent call last):\n" +
			"2024-05-01 10:00:00.123 | ERROR    | train:main:42 -   File \"/app/train.py\", line 40, in main\n" +
			"2024-05-01 10:00:00.123 | ERROR    | train:main:42 - KeyError: 'labels'\n",
			VerdictUnhealthy, CategoryUserCodeError, ConfidenceMedium, "likely user-code-error: 'KeyError'"},
		{"an exception logged as a warning was handled: the log ends in it, but it is no failure", false, progress +
			"2024-05-01 10:00:00,123 - loader - WARNING - Traceback (most recent call last):\n" +
			"2024-05-01 10:00:00,123 - loader - WARNING -   File \"/app/load.py\", line 3, in get\n" +
			"2024-05-01 10:00:00,123 - loader - WARNING - KeyError: 'labels'\n",
			VerdictUnknown, "", "", ""},
		{"a log that ends in NCCL's error trace ends in a failed NCCL call", false, progress +
			"node-3:2736:2790 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.7<43121> with error 12, opcode 0, len 0, vendor err 129\n" +
			"node-3:2736:2790 [0] NCCL INFO transport/net.cc:1134 -> 6\n" +
			"node-3:2736:2790 [0] NCCL INFO proxy.cc:1456 -> 6 [Proxy thread]\n",
			VerdictUnhealthy, CategoryCollectiveError, ConfidenceMedium, "likely collective-error"},
		{"a kubectl describe of a Pending pod, pasted", false, "Status:       Pending\nEvents:\n  Type     Reason            Age   From               Message\n  ----     ------            ----  ----               -------\n" +
			"  Warning  FailedScheduling  25m   default-scheduler  0/4 nodes are available: 4 Insufficient nvidia.com/gpu.\n",
			VerdictUnhealthy, CategoryScheduling, ConfidenceMedium, "likely scheduling"},
		{"Slurm cancels a job step", false, progress + "slurmstepd: error: *** STEP 4242.0 ON node-7 CANCELLED AT 2024-05-01T10:00:00 DUE TO PREEMPTION ***\n",
			VerdictUnhealthy, CategoryPreemptedEvicted, ConfidenceMedium, "likely preempted-evicted"},
		{"the shell's Killed glued to the progress bar the process died in", false, progress + " 6%|###       | 3787/62565 [04:47<1:10:53, 13.82it/s]Killed\n",
			VerdictUnhealthy, CategoryHostOOM, ConfidenceMedium, "likely host-oom: 'Killed'"},
		{"a c10 error printed after a progress bar without a newline, cut mid-word", false, progress +
			"Map (num_proc=14):  70%|######5   | 652383/930514 [6:39:53<4:31:33, 17.07 examples/s][E ProcessGroupGloo.cpp:138] Rank 3 successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty r\n",
			VerdictUnhealthy, CategoryCollectiveTimeout, ConfidenceMedium, "likely collective-timeout"},
		{"text after a finished bar that is no failure stays healthy", false, progress +
			"Map:  100%|##########| 930514/930514 [6:39:53<00:00, 17.07 examples/s]Saving the dataset (1/1 shards)\n",
			VerdictUnknown, "", "", ""},
		{"a launcher's summary with only an exit code: failed, cause not in the log", true, progress +
			"Root Cause (first observed failure):\n[0]:\n  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 14661)\n  error_file: <N/A>\n",
			VerdictUnhealthy, CategoryUnknown, ConfidenceLow, "a process failed and its log does not say why"},
		{"a checkpoint upload to an object store fails, in TensorFlow's words", false, progress +
			"INFO:tensorflow:Saving checkpoints for 400 into s3://team/run-7/model.ckpt.\n" +
			"2019-03-02 10:11:12.000001: E tensorflow/core/platform/s3/aws_logging.cc:60] Curl returned error code 28\n" +
			"tensorflow.python.framework.errors_impl.InternalError: : Unable to connect to endpoint\n",
			VerdictUnhealthy, CategoryStorageError, ConfidenceMedium, "likely storage-error: 'Unable to connect to endpoint'"},
		// PyTorch's C++ log lines say their severity in brackets and nothing else of failure:
		// the watchdog's (pytorch/pytorch#97066) and the store's (pytorch/pytorch#85604).
		{"a c10 E line: the watchdog's timeout", false, progress +
			"[E ProcessGroupNCCL.cpp:459] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=10000) ran for 10599 milliseconds before timing out.\n",
			VerdictUnhealthy, CategoryCollectiveTimeout, ConfidenceMedium, "likely collective-timeout"},
		{"a notebook paste cut inside its traceback: the wrapped exception above it says what", false, progress +
			"StackTraceWrapper: RESOURCE_EXHAUSTED: the device could not hold a 2.1G buffer\n\n" +
			"XlaRuntimeError                           Traceback (most recent call last)\n" +
			"/opt/lib/python3/jax/run.py in execute(bufs)\n" +
			"---> 12     out = compiled.execute(bufs)\n",
			VerdictUnhealthy, CategoryCUDAOOM, ConfidenceMedium, "likely cuda-oom"},
		{"a c10 W line is a warning, not the end", false, progress +
			"[W socket.cpp:401] [c10d] The server socket has failed to listen on [::]:47531 (errno: 98 - Address already in use).\n" + progress,
			VerdictUnknown, "", "", ""},
		{"a warning right above the failure names its cause", false, progress +
			"NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000\n" +
			"RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)\n",
			VerdictUnhealthy, CategoryConfigError, ConfidenceMedium, "likely config-error: 'Duplicate GPU detected'"},
		{"a warning above the failure that names its cause less strongly does not decide", false, progress +
			"[W socket.cpp:401] [c10d] The server socket has failed to listen on [::]:47531 (errno: 98 - Address already in use).\n" +
			"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB\n",
			VerdictUnhealthy, CategoryCUDAOOM, ConfidenceMedium, "likely cuda-oom"},
		{"pyarrow's exception at the end names bad data", false, progress +
			"Traceback (most recent call last):\n" +
			"  File \"pyarrow/error.pxi\", line 92, in pyarrow.lib.check_status\n" +
			"pyarrow.lib.ArrowInvalid: JSON parse error: Invalid value. in row 0\n",
			VerdictUnhealthy, CategoryDataError, ConfidenceMedium, "likely data-error: 'ArrowInvalid'"},
		{"PaddlePaddle's launcher summary alone: failed, cause not in the log", false, progress +
			"ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers, the trainer process with rank=[3] was aborted. Please check its log.\n",
			VerdictUnhealthy, CategoryUnknown, ConfidenceLow, "a process failed and its log does not say why"},
		{"torchelastic's error handler logs the child's error record at ERROR", false, progress +
			"ERROR:torch.distributed.elastic.multiprocessing.errors.error_handler:{\n" +
			"  \"message\": {\n" +
			"    \"message\": \"RuntimeError: Address already in use\",\n" +
			"    \"extraInfo\": {\n",
			VerdictUnhealthy, CategoryRendezvous, ConfidenceMedium, "likely rendezvous-failure: 'Address already in use'"},
		// Session 17 (plever3): a proxy that refuses a download (huggingface/transformers#28934),
		// and a decoder's short read of a damaged file (python-pillow/Pillow#1480).
		{"a download whose proxy refused it, raised without the host", true,
			"Traceback (most recent call last):\n  File \"/env/lib/python3.10/site-packages/urllib3/connectionpool.py\", line 776, in urlopen\n    self._prepare_proxy(conn)\n" +
				"urllib3.exceptions.ProxyError: ('Unable to connect to proxy', RemoteDisconnected('Remote end closed connection without response'))\n",
			VerdictUnhealthy, CategoryHubOffline, ConfidenceMedium, "likely hub-offline: 'Unable to connect to proxy'"},
		{"a struct unpack short of bytes in an image decoder", true,
			progress + "Traceback (most recent call last):\n  File \"/env/lib/python3.6/site-packages/PIL/_binary.py\", line 76, in i32be\n    return unpack(\">I\", c[o:o+4])[0]\n" +
				"struct.error: unpack requires a buffer of 4 bytes\n",
			VerdictUnhealthy, CategoryDataError, ConfidenceMedium, "likely data-error: 'unpack requires a buffer of'"},
		{"a failure training went on after is not the end", false, "/bin/sh: line 1:   812 Killed   python prepare.py\n" + progress,
			VerdictUnknown, "", "", ""},
		{"a specific rule is sure", true, progress + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
			VerdictUnhealthy, CategoryCUDAOOM, ConfidenceHigh, ""},
		{"words no category knows: could not tell", true, progress + "Traceback (most recent call last):\n  File \"t.py\", line 1\nFooBarError: the frobnicator gave up\n",
			VerdictUnhealthy, CategoryUserCodeError, ConfidenceLow, ""},
		// vLLM's allocator prints its C++ error when a woken rollout engine cannot map its memory
		// back (vllm-project/vllm#12981); the trainer's bar it interrupted and its traceback, cut
		// before the exception, follow.
		{"a rollout engine's OOM above the bar the trainer's traceback interrupted", false, rolloutOOM + "Episode [1/16]:   0%|          | 0/309 [03:58<?, ?it/s]\n" + cutTraceback,
			VerdictUnhealthy, CategoryCUDAOOM, ConfidenceMedium, "likely cuda-oom: 'CUDA Error: out of memory'"},
		{"the same OOM line with training going on after it", false, rolloutOOM + "Episode [1/16]:   3%|          | 9/309 [03:58<1:02, 4.1s/it]\n" +
			"Episode [1/16]:   3%|          | 10/309 [04:02<1:02, 4.1s/it]\n" + cutTraceback,
			VerdictUnhealthy, CategoryUnknown, ConfidenceLow, ""},
		// A bar between the error and the failure that did work after the error: finished, or
		// moved on within one line through carriage returns (tqdm without a terminal).
		{"the same OOM line above a bar that finished", false, rolloutOOM + "Train: 100%|##########| 309/309 [02:00<00:00, 2.57it/s]\n" + cutTraceback,
			VerdictUnhealthy, CategoryUnknown, ConfidenceLow, ""},
		{"the same OOM line above a bar that moved on one line", false, rolloutOOM + "Train:   0%| | 0/309 [00:00<?, ?it/s]\rTrain:  50%| | 155/309 [01:00<01:00, 2it/s]\n" + cutTraceback,
			VerdictUnhealthy, CategoryUnknown, ConfidenceLow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := all
			if !tt.specific {
				rules = WithoutSpecific(all)
			}
			res := analyzeLogs(t, rules, tt.log)
			require.Equal(t, tt.verdict, res.Verdict, res.VerdictReason)
			if tt.category == "" {
				require.Nil(t, res.RootCause)
				return
			}
			require.NotNil(t, res.RootCause)
			require.Equal(t, tt.category, res.RootCause.Category, res.RootCause.Title)
			require.Equal(t, tt.confidence, res.Confidence)
			if tt.title != "" {
				require.True(t, strings.HasPrefix(res.RootCause.Title, tt.title), res.RootCause.Title)
			}
			if tt.confidence == ConfidenceMedium {
				require.Equal(t, SecondTierRuleID+string(tt.category), res.RootCause.RuleID)
				require.Contains(t, res.RootCause.Explanation, "scored", "the explanation shows the score")
				require.NotEmpty(t, res.RootCause.Evidence)
			}
		})
	}
}

// TestSecondTierAlone: with the specific rules off (--tiers fallback) the vocabulary names
// what a specific rule names with them; of the specific rules only those that know a
// recovery stay, for that alone.
func TestSecondTierAlone(t *testing.T) {
	rules, err := DefaultRules()
	require.NoError(t, err)
	kept := WithoutSpecific(rules)
	for _, r := range kept {
		k := r.Kind()
		require.True(t, k == "progress" || k == "fact" || r.Role.Generic() || r.Role.Fallback() || r.Category == CategoryUnknown ||
			r.recoveryOnly && len(r.Match.Streak.Recover) > 0, r.ID)
	}
	require.Less(t, len(kept), len(rules))
	res := analyzeLogs(t, kept, "step 10 loss 2.1\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category)
	require.Equal(t, ConfidenceMedium, res.Confidence)
}

// TestSecondTierNeverFailsAHealthyJob: a pod that succeeded (or runs) whose log ends in words
// the vocabulary knows stays healthy: the job's own status outranks the tier. The same pod
// failed is named by the tier.
func TestSecondTierNeverFailsAHealthyJob(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	rs, err := NewRuleSet(WithoutSpecific(all))
	require.NoError(t, err)
	for _, phase := range []string{"Succeeded", "Running", "Failed"} {
		t.Run(phase, func(t *testing.T) {
			files := map[string]string{
				"resources/core/Pod/ml/p.yaml": podYAML("p", "n1", phase, "", 0),
				"logs/ml/p/c.log": "2026-03-14T10:00:03Z epoch 1 step 10 loss 2.1\n" +
					"2026-03-14T10:00:04Z /bin/sh: line 1:   812 Killed   python eval.py\n",
			}
			fsys := fstest.MapFS{}
			var list []bundle.File
			for _, p := range []string{"logs/ml/p/c.log", "resources/core/Pod/ml/p.yaml"} {
				fsys[p] = &fstest.MapFile{Data: []byte(files[p])}
				list = append(list, bundle.File{Path: p, Size: int64(len(files[p]))})
			}
			m, err := parse.Load(&bundle.Bundle{Source: "test", FS: fsys, Files: list, Limits: bundle.DefaultLimits()})
			require.NoError(t, err)
			res, ix, err := analyzeModel(t.Context(), m, rs, index.BuildOptions{}, Options{})
			require.NoError(t, err)
			t.Cleanup(func() { ix.Close() })
			if phase == "Failed" {
				require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
				require.Equal(t, CategoryHostOOM, res.RootCause.Category)
				require.Equal(t, ConfidenceMedium, res.Confidence)
				return
			}
			require.Equal(t, VerdictHealthy, res.Verdict, res.VerdictReason)
			require.Nil(t, res.RootCause)
		})
	}
}

// TestBarNotStarted: a progress bar shows work done after an error above it by its percentage,
// or without one by its last count, or by an update after a carriage return.
func TestBarNotStarted(t *testing.T) {
	for line, want := range map[string]bool{
		"Episode [1/16]:   0%|          | 0/309 [03:58<?, ?it/s]":      true,
		"Episode [1/16]:   3%|          | 9/309 [03:58<1:02, 4.1s/it]": false,
		"Train: 100%|##########| 309/309 [02:00<00:00, 2.57it/s]":      false,
		"Train:   0%| | 0/309\rTrain:  50%| | 155/309":                 false,
		"progress 0.0% (0/1000)":                                       true,
		"progress 0.5% (5/1000)":                                       false,
		"Episode 0/309":                                                true,
		"Epoch 1/3 step 12/309":                                        false,
		"epoch 1 step 20 loss 2.0":                                     false,
	} {
		require.Equal(t, want, barNotStarted([]byte(line)), line)
	}
}

// TestViewSizeIsTheCodes: PyTorch's view() of a tensor its strides do not allow says "is not
// compatible with", the words of two options refused together; it is the code's shape error.
func TestViewSizeIsTheCodes(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "RuntimeError: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.\n"
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.RootCause.Title)
	}
}

// analyzeInEitherTier analyzes one log with all the rules and with the second tier alone.
func analyzeInEitherTier(t *testing.T, all []*Rule, log string) []*Result {
	return []*Result{analyzeLogs(t, all, log), analyzeLogs(t, WithoutSpecific(all), log)}
}

// requireNotUnhealthyInEitherTier: a healthy look-alike stays so, whichever tier reads it.
func requireNotUnhealthyInEitherTier(t *testing.T, all []*Rule, log string) {
	t.Helper()
	for _, res := range analyzeInEitherTier(t, all, log) {
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	}
}

// TestLauncherArgvEchoIsNoArgumentError: DeepSpeed's launcher echoes the argv it started a worker
// with, '--local_rank=N' among the quoted arguments, when it kills the workers; cut before its
// exit code (haotian-liu/LLaVA#1085's line) the words are no argument error, whichever tier
// speaks. An argparse error about --local_rank still is one, and a healthy run whose launcher
// printed its command stays healthy.
func TestLauncherArgvEchoIsNoArgumentError(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	echo := "[2024-02-06 06:23:39,509] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 2442\n" +
		"[2024-02-06 06:23:39,510] [ERROR] [launch.py:321:sigkill_handler] ['/mnt/d/anaconda3/envs/llava2/bin/python', '-u', '/home/ubuntu/code/LLaVA-main/llava/train/train_mem.py', '--local_rank=7', '--deepspeed', './scripts/zero2.json', '--model_name_or_path', '/mnt/d/models/vicuna-7b-v1.5', '--version', 'plain'\n"
	for _, res := range analyzeInEitherTier(t, all, echo) {
		if res.RootCause != nil {
			require.NotEqual(t, CategoryConfigError, res.RootCause.Category, res.RootCause.Title)
			require.NotEqual(t, ConfidenceHigh, res.Confidence, res.RootCause.Title)
			require.NotEqual(t, ConfidenceMedium, res.Confidence, res.RootCause.Title)
		}
	}
	res := analyzeLogs(t, all, echo)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryCrashSignal, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, ConfidenceLow, res.Confidence)
	require.Contains(t, res.RootCause.Evidence[0].Text, "sigkill_handler")

	res = analyzeLogs(t, WithoutSpecific(all), "train.py: error: unrecognized arguments: --local_rank=0\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryConfigError, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, ConfidenceMedium, res.Confidence)

	healthy := "[2023-05-29 10:43:30,991] [INFO] [runner.py:550:main] cmd = /opt/conda/envs/lmflow/bin/python -u -m deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMCwgMSwgMl19 --master_addr=127.0.0.1 --master_port=11000 --enable_each_rank_log=None examples/finetune.py --model_name_or_path pinkmanlove/llama-7b-hf\n" +
		"{'loss': 1.3562, 'learning_rate': 2e-05, 'epoch': 0.01}\n{'loss': 1.2911, 'learning_rate': 2e-05, 'epoch': 0.02}\n"
	requireNotUnhealthyInEitherTier(t, all, healthy)
}

// TestModelScopeDownloadFailure: ms-swift, Qwen and InternVL download from ModelScope by default;
// its host and urllib3's retries running out on its 5xx answers name the download
// (modelscope/modelscope#1396's line). Its cache directory does not: every error about a
// model's files quotes it (a mistyped local path, review of session 22). A log that only
// downloaded from it and trained stays healthy.
func TestModelScopeDownloadFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for name, log := range map[string]string{
		"requests' RetryError on the hub's host": "requests.exceptions.RetryError: HTTPSConnectionPool(host='www.modelscope.cn', port=443): Max retries exceeded with url: /api/v1/models/Qwen/QwQ-32B/repo/files?Revision=master&Recursive=True (Caused by ResponseError('too many 500 error responses'))\n",
	} {
		for _, res := range analyzeInEitherTier(t, all, log) {
			require.Equal(t, VerdictUnhealthy, res.Verdict, name)
			require.Equal(t, CategoryHubOffline, res.RootCause.Category, "%s: %s", name, res.RootCause.Title)
			require.Equal(t, ConfidenceMedium, res.Confidence, name)
		}
	}
	healthy := "Downloading Model to directory: /root/.cache/modelscope/hub/qwen/Qwen2-VL-7B-Instruct\n" +
		"[INFO:swift] Loading the model using model_dir: /root/.cache/modelscope/hub/qwen/Qwen2-VL-7B-Instruct\n" +
		"Train:   1%|          | 10/1000 [00:30<49:30,  3.00s/it]\n{'loss': 1.2034, 'grad_norm': 3.1, 'learning_rate': 1e-05, 'epoch': 0.01}\n"
	requireNotUnhealthyInEitherTier(t, all, healthy)
	path := "OSError: Incorrect path_or_model_id: '/root/.cache/modelscope/hub/Qwen/Qwen2-VL-7B-Instruc'. Please provide either the path to a local folder or the repo_id of a model on the Hub.\n"
	for _, res := range analyzeInEitherTier(t, all, path) {
		require.NotEqual(t, CategoryHubOffline, res.RootCause.Category, res.RootCause.Title)
	}
}

// TestStoreResetWhileSettingUpNCCLIsNoNCCLFailure: a rank fetching the NCCL id from rank 0's c10d
// store finds the connection reset, which PyTorch says "may indicate a possible application crash
// on rank 0 or a network set up issue" (hiyouga/LlamaFactory#2470's line): NCCL's name in it does
// not make it the library's failure; with rank 0's kill beside it, the kill is the cause.
func TestStoreResetWhileSettingUpNCCLIsNoNCCLFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	reset := "RuntimeError: [14] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer. This may indicate a possible application crash on rank 0 or a network set up issue.\n"
	res := analyzeLogs(t, WithoutSpecific(all), reset)
	if res.RootCause != nil {
		require.NotEqual(t, CategoryCollectiveError, res.RootCause.Category, res.RootCause.Title)
	}
	killed := reset + "[2023-11-17 07:24:11,710] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 0 (pid: 3382) of binary: /usr/bin/python\n"
	for _, res := range analyzeInEitherTier(t, all, killed) {
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryHostOOM, res.RootCause.Category, res.RootCause.Title)
	}
}

// TestFlashAttentionOnAPreAmpereGPU: FlashAttention 2 refuses a GPU older than Ampere (V100, T4,
// Turing cards; Dao-AILab/flash-attention#762, hiyouga/LlamaFactory#3508): the attention
// implementation the job chose does not fit the GPU, a configuration to change, whichever rank
// and wrapper raise it. A run that warned about flash attention and fell back trains on.
func TestFlashAttentionOnAPreAmpereGPU(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "[rank1]:   File \"/usr/local/lib/python3.10/dist-packages/flash_attn/flash_attn_interface.py\", line 51, in _flash_attn_forward\n" +
		"[rank1]:     out, q, k, v, out_padded, softmax_lse, S_dmask, rng_state = flash_attn_cuda.fwd(\n" +
		"[rank1]: RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n"
	for _, res := range analyzeInEitherTier(t, all, log) {
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryConfigError, res.RootCause.Category, res.RootCause.Title)
		require.Equal(t, ConfidenceMedium, res.Confidence)
		require.Contains(t, res.RootCause.Evidence[0].Text, "only supports Ampere")
	}
	healthy := "You are attempting to use Flash Attention 2.0 with a model not initialized on GPU. Make sure to move the model to GPU after initializing it on CPU with `model.to('cuda')`.\n" +
		"{'loss': 1.9911, 'learning_rate': 2e-05, 'epoch': 0.01}\n{'loss': 1.8023, 'learning_rate': 2e-05, 'epoch': 0.02}\n"
	requireNotUnhealthyInEitherTier(t, all, healthy)
	// The run above is healthy by its progress whatever its warning's words say: read as a
	// failure's words, the warning must still not name the GPU-too-old config error the
	// exception names, or the term would fire on the healthy wording.
	v, err := defaultVocabulary()
	require.NoError(t, err)
	require.Equal(t, CategoryConfigError, v.classify("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "", true).Category)
	warning, _, _ := strings.Cut(healthy, "\n")
	require.NotEqual(t, CategoryConfigError, v.classify(warning, "", true).Category)
}

// TestAllocationOnDeviceIsGPUMemory: torch.OutOfMemoryError's message when the caching
// allocator refuses an allocation is "Allocation on device"; ComfyUI-based trainers log it
// without the exception's type, "!!! Exception during processing !!! Allocation on device"
// (Comfy-Org/ComfyUI#4880's line), in a logging handler's columns or rich's: the GPU's memory
// ran out, at the vocabulary's confidence, the evidence the line that says so. A run that
// loaded its model partially to fit and went on stays healthy.
func TestAllocationOnDeviceIsGPUMemory(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for name, log := range map[string]string{
		"logging's columns": "2024-09-11 11:51:35,206 - root - INFO - 0 models unloaded.\n" +
			"2024-09-11 11:51:36,769 - root - ERROR - !!! Exception during processing !!! Allocation on device \n" +
			"2024-09-11 11:51:36,772 - root - ERROR - Traceback (most recent call last):\n",
		"rich's columns": "2025-07-08 10:39:40 ERROR    !!! Exception during processing !!! Allocation on device                   execution.py:430\n" +
			"                    ERROR    Traceback (most recent call last):                                         execution.py:431\n",
	} {
		for _, res := range analyzeInEitherTier(t, all, log) {
			require.Equal(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, res.VerdictReason)
			require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, "%s: %s", name, res.RootCause.Title)
			require.Equal(t, ConfidenceMedium, res.Confidence, name)
			require.Contains(t, res.RootCause.Evidence[0].Text, "Allocation on device", name)
		}
	}
	healthy := "2024-09-11 11:50:30,198 - root - INFO - Requested to load Flux\n" +
		"2024-09-11 11:50:30,198 - root - INFO - Loading 1 new model\n" +
		"2024-09-11 11:51:35,123 - root - INFO - loaded partially 11337.904888916015 11337.8525390625 1\n" +
		"2024-09-11 11:51:35,150 - root - WARNING - Allocation on device 0 would exceed allowed memory, offloading 12 blocks to CPU\n" +
		"2024-09-11 11:51:35,196 - root - INFO - Unloading models for lowram load.\n" +
		"Epoch 1/134 - steps:   1%|          | 16/1600 [00:40<1:06:00,  2.50s/it, avr_loss=0.412]\n" +
		"2024-09-11 11:53:08,240 - root - INFO - Prompt executed in 158.07 seconds\n"
	requireNotUnhealthyInEitherTier(t, all, healthy)
}
