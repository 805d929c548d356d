package analyze

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/coroner-dev/coroner/internal/literal"
	"github.com/stretchr/testify/require"
)

// TestRecoveredIsNoFailure: plain logs whose alarming lines the run survived are not called
// a failure by either tier.
func TestRecoveredIsNoFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	logs := map[string]string{
		// aws/aws-ofi-nccl#715, aws/aws-k8s-tester#454: NCCL went on over sockets.
		"a network plugin that would not initialise": "algo-1:17774:17853 [1] nccl_net_ofi_create_plugin:259 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n" +
			"algo-1:17780:17851 [7] NCCL INFO NET/Socket : Using [0]eth0:10.0.227.37<0>\n" +
			"algo-1:17774:17853 [1] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n" +
			"algo-1:17780:17851 [7] NCCL INFO Using non-device net plugin version 0\n" +
			"algo-1:17780:17851 [7] NCCL INFO Using network Socket\n",
		// GOATmessi8/RFBNet#71, quark0/darts#26: a DataLoader iterator's teardown traceback
		// that Python printed as ignored while training went on.
		"an exception Python ignored": "07/31 05:43:39 PM train 050 1.986851e+00 26.960785 81.188728\n" +
			"07/31 05:52:04 PM train 100 1.871319e+00 29.965965 84.189354\n" +
			"Exception ignored in: <bound method _DataLoaderIter.__del__ of <torch.utils.data.dataloader._DataLoaderIter object at 0x7fc27522edd8>>\n" +
			"Traceback (most recent call last):\n" +
			"  File \"/opt/conda/lib/python3.6/site-packages/torch/utils/data/dataloader.py\", line 399, in __del__\n" +
			"    self._shutdown_workers()\n" +
			"  File \"/opt/conda/lib/python3.6/site-packages/torch/utils/data/dataloader.py\", line 378, in _shutdown_workers\n" +
			"    self.worker_result_queue.get()\n",
		// pytorch/pytorch#14343: the same teardown pasted whole, down to the exception that
		// closes it, which the catch-all Python exception rule would otherwise name.
		"an ignored exception, pasted whole": "Exception ignored in: <bound method _DataLoaderIter.__del__ of <torch.utils.data.dataloader._DataLoaderIter object at 0x114accb70>>\n" +
			"Traceback (most recent call last):\n" +
			"  File \"/Users/powerz/anaconda3/lib/python3.6/site-packages/torch/utils/data/dataloader.py\", line 399, in __del__\n" +
			"    self._shutdown_workers()\n" +
			"  File \"/Users/powerz/anaconda3/lib/python3.6/multiprocessing/queues.py\", line 337, in get\n" +
			"    return _ForkingPickler.loads(res)\n" +
			"RuntimeError: Interrupted system call at /Users/soumith/miniconda2/conda-bld/pytorch_1532623076075/work/torch/lib/libshm/core.cpp:99\n",
		// wandb/wandb#4155 (its atexit frames; the epoch line before them is made up): an
		// exception an atexit callback raised after the program ended, which Python reports
		// and ignores.
		"an exception an atexit callback raised": "epoch 59 step 606960 loss 5.90\n" +
			"Error in atexit._run_exitfuncs:\n" +
			"Traceback (most recent call last):\n" +
			"  File \"/home/emi/Projects/authory-page-extraction-ml/deep-model/virtual_env/lib/python3.8/site-packages/wandb/sdk/wandb_run.py\", line 1805, in _atexit_cleanup\n" +
			"    self._on_finish()\n" +
			"  File \"/home/emi/Projects/authory-page-extraction-ml/deep-model/virtual_env/lib/python3.8/site-packages/wandb/sdk/wandb_run.py\", line 1951, in _on_finish\n" +
			"    self.history._flush()\n" +
			"Exception: The wandb backend process has shutdown\n",
		// p-e-w/heretic#362: a batch-size probe catches the OOM of the sizes that do not fit
		// and picks the largest that does (this row is also in the session-13 spot set).
		"a batch-size probe": "Determining optimal batch size...\n" +
			"* Trying batch size 128... Ok (814 tokens/s)\n" +
			"* Trying batch size 256... Failed (CUDA out of memory...)\n" +
			"* Trying batch size 192... Ok (902 tokens/s)\n" +
			"* Trying batch size 248... Failed (CUDA out of memory...)\n" +
			"* Chosen batch size: 240\n",
		// pytorch/PiPPy#158: c10d's warning about one connect attempt to the store, which it
		// retries until its timeout; the lines after it, a run going on, are made up.
		"a store connect attempt, then the run": "[W socket.cpp:558] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).\n" +
			"GPU available: True (cuda), used: True\n" +
			"Epoch 0:  12%|#2        | 120/1000 [00:30<03:40,  4.00it/s, loss=2.31]\n",
		// BioinfoMachineLearning/bio-diffusion#7: the trainer catches an out-of-memory error,
		// skips the batch and trains on.
		"an out-of-memory batch skipped": "Skipping training batch with index 43 due to OOM error...\n" +
			"/home/ai4s-liuhaifeng/anaconda3/envs/bio-diffusion/lib/python3.9/site-packages/pytorch_lightning/loops/optimization/optimizer_loop.py:135: UserWarning: `training_step` returned `None`. If this was on \n" +
			"purpose, ignore this warning...\n" +
			"Epoch 210/4999 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╸━━━━━━━━━ 44/57 0:02:03 • 0:00:35 0.38it/s loss: 3.88\n",
		// The same in fairseq's words (its trainer.py; the numbers made up): the CUDA error's
		// own rule names it, and the skip says it was caught.
		"an out-of-memory batch skipped, fairseq": "| WARNING: ran out of memory with exception: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 15.75 GiB total capacity; 11.71 GiB already allocated; 584.94 MiB free; 2.38 GiB cached);\n" +
			" Skipping batch\n" +
			"| epoch 001:   1%|▍  | 594/72115 [02:39<5:20:01,  3.72it/s, loss=11.02, oom=0.0017]\n",
		// wandb/wandb#2130: wandb's file-stream thread dies during training, its traceback cut
		// before its exception; the thread ended, not the run.
		"a thread's cut traceback": "wandb: Network error (ReadTimeout), entering retry loop. See wandb/debug-internal.log for full traceback.\n" +
			"Exception in thread Thread-5:\n" +
			"Traceback (most recent call last):\n" +
			"  File \"/home/bne215/anaconda3/lib/python3.8/threading.py\", line 932, in _bootstrap_inner\n" +
			"    self.run()\n" +
			"  File \"/home/bne215/anaconda3/lib/python3.8/threading.py\", line 870, in run\n" +
			"    self._target(*self._args, **self._kwargs)\n" +
			"  File \"/home/bne215/anaconda3/lib/python3.8/site-packages/wandb/sdk/internal/file_stream.py\", line 260, in _thread_body\n" +
			"    self._handle_response(\n",
		// A pull that failed, then the same image pulled and its container created (the
		// kubelet's event wording, the pod made up), in one pod's kubectl describe.
		"an image pulled on a retry": "Name:         trainer-0\n" +
			"Namespace:    ml\n" +
			"Events:\n" +
			"  Type     Reason   Age                From     Message\n" +
			"  ----     ------   ----               ----     -------\n" +
			"  Warning  Failed   5m                 kubelet  Failed to pull image \"registry.local/ml/train:1.2\": rpc error: code = NotFound desc = failed to pull and unpack image \"registry.local/ml/train:1.2\": failed to resolve reference \"registry.local/ml/train:1.2\": registry.local/ml/train:1.2: not found\n" +
			"  Warning  Failed   5m                 kubelet  Error: ErrImagePull\n" +
			"  Normal   Pulling  4m                 kubelet  Pulling image \"registry.local/ml/train:1.2\"\n" +
			"  Normal   Pulled   4m                 kubelet  Successfully pulled image \"registry.local/ml/train:1.2\" in 2.1s\n" +
			"  Normal   Created  4m                 kubelet  Created container pytorch\n" +
			"  Normal   Started  4m                 kubelet  Started container pytorch\n",
		// A retry the log went on from without another failure.
		"a retried upload, then training": "wandb: Network error (ConnectionError), entering retry loop.\n" +
			"{'loss': 1.8125, 'grad_norm': 2.41, 'learning_rate': 1.9e-05, 'epoch': 0.31}\n" +
			"{'loss': 1.7731, 'grad_norm': 2.20, 'learning_rate': 1.9e-05, 'epoch': 0.32}\n",
	}
	for name, log := range logs {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, log)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: root cause: %+v", name, res.RootCause)
		}
	}
}

// TestFailureAfterRecovery: what a run survived is forgotten, never what came after it: an
// exception raised after an ignored one, an out-of-memory error after a batch-size finder
// (the run at the size it chose did not fit either) are how the process ended, by either tier.
func TestFailureAfterRecovery(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, c := range []struct {
		name, log, category, evidence string
		high                          bool // a specific rule names it: high confidence with every rule
	}{
		// pytorch/pytorch#14343's ignored teardown, then a crash of the training loop.
		{"raised after an ignored exception", "Exception ignored in: <bound method _DataLoaderIter.__del__ of <torch.utils.data.dataloader._DataLoaderIter object at 0x114accb70>>\n" +
			"Traceback (most recent call last):\n" +
			"  File \"/Users/powerz/anaconda3/lib/python3.6/site-packages/torch/utils/data/dataloader.py\", line 399, in __del__\n" +
			"    self._shutdown_workers()\n" +
			"RuntimeError: Interrupted system call at /Users/soumith/miniconda2/conda-bld/pytorch_1532623076075/work/torch/lib/libshm/core.cpp:99\n" +
			"epoch 3 step 120 loss 1.25\n" +
			"Traceback (most recent call last):\n" +
			"  File \"train.py\", line 88, in <module>\n" +
			"    batch = batch[\"input_ids\"]\n" +
			"KeyError: 'input_ids'\n", "user-code-error", "KeyError", false},
		// The exception that ended the program, then an atexit callback's (wandb/wandb#4155's
		// frames): the ignored one after it does not hide it.
		{"raised before an atexit callback's exception", "Traceback (most recent call last):\n" +
			"  File \"train.py\", line 88, in <module>\n" +
			"    batch = batch[\"input_ids\"]\n" +
			"KeyError: 'input_ids'\n" +
			"Error in atexit._run_exitfuncs:\n" +
			"Traceback (most recent call last):\n" +
			"  File \"/home/emi/Projects/authory-page-extraction-ml/deep-model/virtual_env/lib/python3.8/site-packages/wandb/sdk/wandb_run.py\", line 1805, in _atexit_cleanup\n" +
			"    self._on_finish()\n" +
			"Exception: The wandb backend process has shutdown\n", "user-code-error", "KeyError", false},
		// Lightning-AI/pytorch-lightning#18426: the finder's lines, then the run at its size.
		{"out of memory after a batch-size finder", "Batch size 8 succeeded, trying batch size 16\n" +
			"Batch size 16 failed, trying batch size 8\n" +
			"Finished batch size finder, will continue with full run using batch size 16\n" +
			"Traceback (most recent call last):\n" +
			"  File \"train.py\", line 40, in <module>\n" +
			"    trainer.fit(model)\n" +
			"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.12 GiB is free.\n",
			"cuda-oom", "OutOfMemoryError", true},
		// An ignored traceback cut before its exception line, then the traceback that ended
		// the run: the second header is not the ignored one's, and the specific rule names it.
		{"a cut ignored traceback, then the real one", "epoch 1 step 40 loss 2.10\n" +
			"Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f3b2c1d0ee0>\n" +
			"Traceback (most recent call last):\n" +
			"  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1479, in __del__\n" +
			"Traceback (most recent call last):\n" +
			"  File \"train.py\", line 88, in <module>\n" +
			"    loss.backward()\n" +
			"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.12 GiB is free.\n",
			"cuda-oom", "OutOfMemoryError", true},
		// ofsoundof/GRL-Image-Restoration#27 (its lines, without the launcher's prefix): the
		// store's connect attempts, then c10d gives up.
		{"connect attempts that gave up", "[W socket.cpp:558] [c10d] The client socket has failed to connect to [::ffff:0.0.0.5]:40323 (errno: 110 - Connection timed out).\n" +
			"[W socket.cpp:558] [c10d] The client socket has failed to connect to 0.0.0.5:40323 (errno: 110 - Connection timed out).\n" +
			"[E socket.cpp:610] [c10d] The client socket has failed to connect to any network address of (05, 40323).\n",
			"rendezvous-failure", "failed to connect", false},
		// A skipped batch's out-of-memory error (BioinfoMachineLearning/bio-diffusion#7's line),
		// then the next batch runs out too and is not caught (made up): the handler did not save
		// the run, and both tiers name the error it could not handle.
		{"out of memory after a skipped batch", "Skipping training batch with index 43 due to OOM error...\n" +
			"Traceback (most recent call last):\n" +
			"  File \"train.py\", line 40, in <module>\n" +
			"    trainer.fit(model)\n" +
			"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.12 GiB is free.\n",
			"cuda-oom", "OutOfMemoryError", true},
		// A helper thread's traceback with its exception (the lines made up, the gloo message
		// as its rule's examples print it): what stopped the thread may stop the run, and is
		// read as any exception.
		{"a thread's exception", "Exception in thread Thread-2:\n" +
			"Traceback (most recent call last):\n" +
			"  File \"train.py\", line 61, in receive\n" +
			"    dist.recv(buf, src=0)\n" +
			"RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete\n",
			"collective-timeout", "Timed out waiting", false},
		// A log that ends retrying ends in its error: the store's connect attempts are its
		// last lines (ofsoundof/GRL-Image-Restoration#27, cut before c10d gave up).
		{"a retry the log ends in", "epoch 0 step 10 loss 2.10\n" +
			"[W socket.cpp:558] [c10d] The client socket has failed to connect to [::ffff:0.0.0.5]:40323 (errno: 110 - Connection timed out).\n" +
			"[W socket.cpp:558] [c10d] The client socket has failed to connect to 0.0.0.5:40323 (errno: 110 - Connection timed out).\n",
			"rendezvous-failure", "failed to connect", false},
		// A watchdog's line, then training went on, then a traceback: the line above the
		// progress was survived and says nothing of how the log ended (it was the second
		// tier's cause before, at medium confidence, even with every rule).
		{"an error line training went on after", "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600123 milliseconds before timing out.\n" +
			"epoch 1 step 10 loss 2.10\nepoch 1 step 20 loss 2.05\nepoch 1 step 30 loss 2.01\n" +
			"Traceback (most recent call last):\n" +
			"  File \"train.py\", line 88, in <module>\n" +
			"    batch = next(it)\n" +
			"ValueError: too many values to unpack (expected 2)\n", "user-code-error", "ValueError", false},
		// Blank lines after the last retry are no sign that the log went on.
		{"a retry the log ends in, then blank lines", "epoch 0 step 10 loss 2.10\n" +
			"[W socket.cpp:558] [c10d] The client socket has failed to connect to [::ffff:0.0.0.5]:40323 (errno: 110 - Connection timed out).\n" +
			"[W socket.cpp:558] [c10d] The client socket has failed to connect to 0.0.0.5:40323 (errno: 110 - Connection timed out).\n" +
			" \n\t\n",
			"rendezvous-failure", "failed to connect", false},
	} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, c.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, c.name)
			require.NotNil(t, res.RootCause, c.name)
			require.Equal(t, c.category, string(res.RootCause.Category), c.name)
			require.Contains(t, res.RootCause.Evidence[0].Text, c.evidence, c.name)
			if c.high && len(rules) == len(all) {
				require.Equal(t, ConfidenceHigh, res.Confidence, "%s: a specific rule names it", c.name)
			}
		}
	}
}

// TestSSHResolveRetriedIsRecovered: the MPI operator's launcher starts before its workers
// are in DNS; ssh's resolve failure, then a later try that reached the worker (ssh added its
// key), is a recovered warning, and neither it nor the attempt's other lines are the root
// cause (kubeflow/mpi-operator#481's lines). The same failure with nothing reached after it
// is still the launcher's failure (ECP-copa/ExaMPM#56).
func TestSSHResolveRetriedIsRecovered(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// The second tier alone knows it too: a failure the process got past is no terminal
	// failure for it to classify, and one it did not get past is still named.
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, "Warning: Permanently added 'pi-worker-0.pi-worker,10.244.0.26' (ECDSA) to the list of known hosts.\n"+
			"ssh: Could not resolve hostname pi-worker-1.pi-worker: Name or service not known\n"+
			"Warning: Permanently added 'pi-worker-0.pi-worker,10.244.0.26' (ECDSA) to the list of known hosts.\n"+
			"Warning: Permanently added 'pi-worker-1.pi-worker,10.244.0.28' (ECDSA) to the list of known hosts.\n"+
			"Workers: 2\n"+
			"Rank 0 on host pi-worker-0\n"+
			"Rank 1 on host pi-worker-1\n"+
			"pi is approximately 3.1410376000000002\n")
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "root cause: %+v", res.RootCause)
		require.Contains(t, findingsOf(res), "rendezvous-failure/ssh-host-unresolved warning")

		// Another host reached is no recovery: worker-1 never resolved.
		res = analyzeLogs(t, rules, "ssh: Could not resolve hostname pi-worker-1.pi-worker: Name or service not known\n"+
			"Warning: Permanently added 'pi-worker-0.pi-worker,10.244.0.26' (ECDSA) to the list of known hosts.\n"+
			"ORTE was unable to reliably start one or more daemons.\n")
		require.Equal(t, VerdictUnhealthy, res.Verdict)
		require.Equal(t, "rendezvous-failure", string(res.RootCause.Category))
		for _, f := range res.Findings {
			require.NotContains(t, f.Title, "recovered", "finding %s", f.ID)
		}

		res = analyzeLogs(t, rules, "# mpirun --hostfile ./hostlist.txt --allow-run-as-root -N 2 ./DamBreak 0.05 2 0 0.001 1.0 50 serial\n"+
			"ssh: Could not resolve hostname metricset-sample-w-0-0: Temporary failure in name resolution\n"+
			"--------------------------------------------------------------------------\n"+
			"ORTE was unable to reliably start one or more daemons.\n")
		require.Equal(t, VerdictUnhealthy, res.Verdict)
		require.Equal(t, "rendezvous-failure", string(res.RootCause.Category))
	}
}

// TestOtherStartIsNoRecovery: a container creation ends only its own pod's start-up waits,
// and an image that failed to pull only its own container's: two pods' describe output
// pasted together, one pod whose sidecar started after the trainer's image failed to pull
// (the kubelet starts a pod's other containers when one container's pull fails).
func TestOtherStartIsNoRecovery(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, c := range []struct{ name, log, category string }{
		{"another pod's describe", "Name:         trainer-0\n" +
			"Namespace:    ml\n" +
			"Status:       Pending\n" +
			"Events:\n" +
			"  Type     Reason       Age               From     Message\n" +
			"  ----     ------       ----              ----     -------\n" +
			"  Warning  FailedMount  2m (x9 over 20m)  kubelet  MountVolume.SetUp failed for volume \"data\" : mount failed: exit status 32\n" +
			"Name:         trainer-1\n" +
			"Namespace:    ml\n" +
			"Status:       Running\n" +
			"Events:\n" +
			"  Type     Reason   Age   From     Message\n" +
			"  ----     ------   ----  ----     -------\n" +
			"  Normal   Created  20m   kubelet  Created container pytorch\n" +
			"  Normal   Started  20m   kubelet  Started container pytorch\n", "storage-error"},
		{"a sidecar started after the trainer's pull failed", "Events:\n" +
			"  Type     Reason   Age                From     Message\n" +
			"  ----     ------   ----               ----     -------\n" +
			"  Normal   Pulling  3m (x4 over 5m)    kubelet  Pulling image \"registry.local/ml/train:1.2\"\n" +
			"  Warning  Failed   3m (x4 over 5m)    kubelet  Failed to pull image \"registry.local/ml/train:1.2\": rpc error: code = NotFound desc = failed to pull and unpack image \"registry.local/ml/train:1.2\": failed to resolve reference \"registry.local/ml/train:1.2\": registry.local/ml/train:1.2: not found\n" +
			"  Warning  Failed   3m (x4 over 5m)    kubelet  Error: ErrImagePull\n" +
			"  Normal   Pulled   5m                 kubelet  Container image \"docker.io/istio/proxyv2:1.20.0\" already present on machine\n" +
			"  Normal   Created  5m                 kubelet  Created container istio-proxy\n" +
			"  Normal   Started  5m                 kubelet  Started container istio-proxy\n", "image-pull"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := analyzeLogs(t, all, c.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
			require.Equal(t, Category(c.category), res.RootCause.Category, findingsOf(res))
			require.Equal(t, ConfidenceHigh, res.Confidence)
		})
	}
}

// TestOtherRankSkipIsNoCatch: a batch skipped on one rank does not catch another rank's
// out-of-memory crash, and "oom" inside a longer word is no out-of-memory error.
func TestOtherRankSkipIsNoCatch(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "[rank0]: epoch 1 step 100 loss 2.31\n" +
		"[rank1]: Traceback (most recent call last):\n" +
		"[rank1]:   File \"train.py\", line 88, in <module>\n" +
		"[rank1]:     loss.backward()\n" +
		"[rank1]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 23.64 GiB of which 1.12 GiB is free.\n" +
		"[rank0]: Skipping batch 101: loss is NaN\n" +
		"[rank0]: epoch 1 step 102 loss 2.29\n"
	res := analyzeLogs(t, all, log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, findingsOf(res))
	require.Equal(t, ConfidenceHigh, res.Confidence)
	require.Equal(t, 1, res.RootCause.Rank, findingsOf(res))
	res = analyzeLogs(t, WithoutSpecific(all), log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, findingsOf(res))

	// On its own stream, a skip far below the error, about no memory, catches nothing either.
	log = "[rank0]: Traceback (most recent call last):\n" +
		"[rank0]:   File \"train.py\", line 88, in <module>\n" +
		"[rank0]:     loss.backward()\n" +
		"[rank0]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.12 GiB is free.\n" +
		"[rank0]: epoch 1 step 98 loss 2.31\n[rank0]: epoch 1 step 99 loss 2.31\n[rank0]: epoch 1 step 100 loss 2.30\n" +
		"[rank0]: Skipping batch 101: loss is NaN\n" +
		"[rank0]: epoch 1 step 102 loss 2.29\n"
	res = analyzeLogs(t, all, log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, findingsOf(res))

	// "oom" is a word of its own: not the one in "room" or "Bloom".
	require.True(t, literal.Any(oomWords, []byte("Skipping training batch with index 43 due to OOM error...")))
	require.False(t, isOOMLine([]byte("not enough room in the queue")))
	require.False(t, isOOMLine([]byte("loading bigscience/bloom-560m")))
	require.True(t, isOOMLine([]byte("Skipping training batch with index 43 due to OOM error...")))
}

// TestLLMStackProgressAfterError: MaxText's "completed step" lines and verl's step metrics
// are training progress, so an exception printed before them (a metrics upload that failed,
// a rollout worker's traceback) is not the end of the log: the run goes on, and the verdict
// is not unhealthy. The same exception after the last step still ends the log. (The exception
// is one only the second tier reads: the catch-all rule's own exceptions are not recovered by
// later progress of a plain log.)
func TestLLMStackProgressAfterError(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	exc := "Traceback (most recent call last):\n" +
		"  File \"/app/upload.py\", line 12, in upload\n" +
		"    stub.Upload(data)\n" +
		"grpc._channel._MultiThreadedRendezvous: <_MultiThreadedRendezvous of RPC that terminated with: status = StatusCode.UNAVAILABLE>\n"
	// The step line of https://github.com/AI-Hypercomputer/maxtext/pull/2232 under glog heads.
	maxtext := ""
	for i, ts := range []string{"21:54:55", "21:55:46", "21:56:37"} {
		maxtext += fmt.Sprintf("I0811 %s.531340 138304841739136 metric_logger.py:226] completed step: %d, seconds: 5.667, "+
			"TFLOP/s/device: 134.924, Tokens/s/device: 8672.758, total_weights: 196608, loss: 10.374\n", ts, 9+i)
	}
	// https://github.com/verl-project/verl/issues/1208's step line, shortened.
	verl := ""
	for i := range 3 {
		verl += fmt.Sprintf("(TaskRunner pid=16292) step:%d - global_seqlen/min:538646.000 - global_seqlen/max:556412.000 - actor/kl_loss:0.001 - actor/pg_loss:0.001\n", 2+i)
	}
	for name, steps := range map[string]string{"maxtext": maxtext, "verl": verl} {
		res := analyzeLogs(t, all, exc+steps)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, findingsOf(res))
		res = analyzeLogs(t, all, steps+exc)
		require.Equal(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, findingsOf(res))
	}
}

// TestCrashAfterDoneWordsIsFailure: a reviewer's inputs of session 19 (made up, each
// UNHEALTHY before a crash after a line that said the training finished was lowered as the
// teardown's): a per-epoch or per-iteration "training completed/finished", an HF Trainer's
// "Training completed." before its evaluation, a help text, another rank's line, a SIGKILL, a
// bus error, an exit 137 and a Fatal Python error dump are each the run's failure, with every
// rule and with the second tier alone (the mechanism was reverted: no line tells a teardown's
// crash from the run's).
func TestCrashAfterDoneWordsIsFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, c := range []struct {
		name, log, category, category2 string
	}{
		{"F1 e1: per-epoch 'Epoch 1/10 training completed in', more epochs, then a segfault", "Epoch 1/10 training completed in 341.2s, loss 2.31\n" +
			"Epoch 2: 100%|██████████| 500/500 [05:40<00:00, 1.47it/s, loss=2.10]\n" +
			"Epoch 2: 12%|█▏        | 60/500 [00:41<05:00, 1.46it/s, loss=2.05]\n" +
			"Segmentation fault (core dumped)\n",
			"crash-signal", "crash-signal"},
		{"F1 e4: per-epoch 'training completed', then a segfault", "Epoch 1 training completed, loss 2.31\n" +
			"step 600 loss 2.10\n" +
			"step 700 loss 2.05\n" +
			"step 800 loss 2.01\n" +
			"Segmentation fault (core dumped)\n",
			"crash-signal", "crash-signal"},
		{"F1 ray2: Ray Train's 'Training finished iteration N' each iteration, then a segfault", "Training finished iteration 1 at 2023-06-22 22:44:43. Total running time: 8s\n" +
			"Training saved a checkpoint for iteration 1 at: /home/ray/ray_results/TorchTrainer_2023-06-22_22-44-34/checkpoint_000000\n" +
			"(RayTrainWorker pid=4121) Epoch 2: step 100 loss 41.2\n" +
			"(RayTrainWorker pid=4121) Epoch 2: step 200 loss 39.8\n" +
			"Segmentation fault (core dumped)\n",
			"crash-signal", "crash-signal"},
		{"F1 e3: HF Trainer's 'Training completed.', evaluation, then a segfault", "{'train_runtime': 3600.1, 'train_samples_per_second': 12.3, 'train_loss': 1.23, 'epoch': 3.0}\n" +
			"\n" +
			"\n" +
			"Training completed. Do not forget to share your model on huggingface.co/models =)\n" +
			"\n" +
			"\n" +
			"Running evaluation\n" +
			"  5%|▌         | 3/60 [00:01<00:30, 1.9it/s]\n" +
			"Segmentation fault (core dumped)\n",
			"crash-signal", "crash-signal"},
		{"F1 e7: a help text that says 'POST here when training finished', then a segfault", "usage: train.py [--epochs N] [--save-after-training] \n" +
			"  --notify-url URL   POST here when training finished\n" +
			"step 10 loss 3.2\n" +
			"step 20 loss 3.1\n" +
			"Segmentation fault (core dumped)\n",
			"crash-signal", "crash-signal"},
		{"F1 r2: one rank's 'Training finished', another rank's segfault", "[default0]:step 9990 loss 1.02\n" +
			"[default1]:step 9990 loss 1.03\n" +
			"[default0]:Training finished. Saving model to /ckpt/final\n" +
			"[default1]:Segmentation fault (core dumped)\n",
			"crash-signal", "crash-signal"},
		{"F2 o1: 'I FINISHED Optimization', then Killed", "I FINISHED Optimization - training time: 15:58:24\n" +
			"I Test of Epoch 15 - WER: 0.21\n" +
			"I Exporting the model...\n" +
			"Killed\n",
			"host-oom", "host-oom"},
		{"F2 e5: 'Finished training epoch 3/20', then Killed", "rank0: Finished training epoch 3/20 (loss 1.92)\n" +
			"Epoch 4: 100%|██████████| 500/500 [05:40<00:00, 1.47it/s, loss=2.10]\n" +
			"Epoch 5: 100%|██████████| 500/500 [05:40<00:00, 1.47it/s, loss=2.10]\n" +
			"Killed\n",
			"host-oom", "host-oom"},
		{"F2 d1: 'Finished training epoch 12', then Bus error", "Epoch 12: 100%|██████████| 500/500 [05:40<00:00, 1.47it/s, loss=0.91]\n" +
			"Finished training epoch 12\n" +
			"Epoch 13:  37%|███▋      | 185/500 [02:05<03:33, 1.47it/s, loss=0.90]\n" +
			"Epoch 13:  38%|███▊      | 190/500 [02:08<03:29, 1.47it/s, loss=0.90]\n" +
			"Bus error (core dumped)\n",
			"shm-bus-error", "shm-bus-error"},
		{"F3 m1: 'Epoch 1 training completed', then exit code 137 under mpirun's lost daemon", "[1,0]<stdout>:Epoch 1 training completed, val acc 0.71\n" +
			"[1,0]<stdout>:Epoch 2 step 100 loss 0.88\n" +
			"[1,0]<stdout>:Epoch 2 step 200 loss 0.85\n" +
			"command terminated with exit code 137\n" +
			"--------------------------------------------------------------------------\n" +
			"ORTE has lost communication with a remote daemon.\n",
			"crash-signal", "host-oom"},
		{"F4 e2: a stage's 'pretraining finished', then a Fatal Python error dump", "[stage 1/3] pretraining finished, starting stage 2\n" +
			"step 100 loss 1.92\n" +
			"step 200 loss 1.88\n" +
			"step 300 loss 1.85\n" +
			"Fatal Python error: Segmentation fault\n" +
			"\n" +
			"Thread 0x00007f3a (most recent call first):\n" +
			"  File \"/usr/lib/python3.10/site-packages/torch/nn/functional.py\", line 2515 in batch_norm\n" +
			"  File \"train.py\", line 120 in train_step\n" +
			"Segmentation fault (core dumped)\n",
			"crash-signal", "crash-signal"},
		{"F4 ray1: Ray Train's iteration results, then a worker's Fatal Python error dump", "Training finished iteration 1 at 2023-06-22 22:44:43. Total running time: 8s\n" +
			"╭─────────────────────────────────────────────────╮\n" +
			"│ Training result                                 │\n" +
			"├─────────────────────────────────────────────────┤\n" +
			"│ time_this_iter_s                        5.42888 │\n" +
			"│ training_iteration                            1 │\n" +
			"│ loss                                         50 │\n" +
			"╰─────────────────────────────────────────────────╯\n" +
			"Training saved a checkpoint for iteration 1 at: /home/ray/ray_results/TorchTrainer_2023-06-22_22-44-34/checkpoint_000000\n" +
			"(RayTrainWorker pid=4121) Epoch 2: step 100 loss 41.2\n" +
			"(RayTrainWorker pid=4121) Epoch 2: step 200 loss 39.8\n" +
			"(RayTrainWorker pid=4121) Fatal Python error: Segmentation fault\n" +
			"(RayTrainWorker pid=4121) Segmentation fault (core dumped)\n",
			"crash-signal", "crash-signal"},
		{"F4 r1: rank 0's 'Training finished.', rank 1's Fatal Python error dump", "[default0]:step 9990 loss 1.02\n" +
			"[default1]:step 9990 loss 1.03\n" +
			"[default0]:Training finished. Saving model to /ckpt/final\n" +
			"[default1]:Fatal Python error: Segmentation fault\n" +
			"[default1]:Segmentation fault (core dumped)\n",
			"crash-signal", "crash-signal"},
	} {
		for i, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, c.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, "%s (tier %d)", c.name, i+1)
			require.NotNil(t, res.RootCause, c.name)
			want := c.category
			if i == 1 {
				want = c.category2
			}
			require.Equal(t, want, string(res.RootCause.Category), "%s (tier %d)", c.name, i+1)
		}
	}
}

// TestSchedulingRefusalThenRunning: a scheduler's refusals (Volcano's gang complaints)
// followed, in the same paste, by a status field that says the pod group runs were a wait
// the job got past: neither tier calls them the cause. A status that says it still waits,
// or a paste of several pods, keeps them.
func TestSchedulingRefusalThenRunning(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// volcano-sh/volcano#519: a pod's gang events, then its PodGroup's status.
	gang := "Events:\n" +
		"  Type     Reason            Age   From     Message\n" +
		"  ----     ------            ----  ----     -------\n" +
		"  Warning  FailedScheduling  111s  volcano  10/6 tasks in gang unschedulable: job is not ready, 10 minAvailable, 6 Pending.\n" +
		"  Warning  FailedScheduling  104s  volcano  10/10 tasks in gang unschedulable: job is not ready, 10 Pending, 10 minAvailable.\n" +
		"  Warning  FailedScheduling  97s   volcano  10/16 tasks in gang unschedulable: job is not ready, 10 minAvailable, 16 Pending.\n"
	ran := map[string]string{
		"volcano-sh/volcano#519": gang +
			"Status:\n" +
			"  Phase:    Running\n" +
			"  Running:  12\n",
		// volcano-sh/volcano#153: a PodGroup's YAML keeps the gang condition above its phase.
		"volcano-sh/volcano#153": "status:\n" +
			"  conditions:\n" +
			"  - lastTransitionTime: \"2019-05-10T03:24:42Z\"\n" +
			"    message: '1/0 tasks in gang unschedulable: 0 nodes are available'\n" +
			"    reason: NotEnoughResources\n" +
			"    status: \"True\"\n" +
			"    transitionID: 267427e7-72d3-11e9-9d5d-02ff18c45811\n" +
			"    type: Unschedulable\n" +
			"  phase: Running\n" +
			"  running: 2\n",
	}
	for _, log := range ran {
		requireNotUnhealthyInEitherTier(t, all, log)
	}
	waits := map[string]string{
		// The same events, then a group that still waits (the phases are Volcano's).
		"a pod group still pending": gang +
			"Status:\n" +
			"  Phase:    Pending\n",
		// volcano-sh/volcano#1094: a PodGroup that waited 26 hours, its condition and its
		// events the same gang complaint, its phase Inqueue (its Status: True is the condition's).
		"a pod group still inqueue": "Status:\n" +
			"  Conditions:\n" +
			"    Last Transition Time:  2020-10-15T09:01:46Z\n" +
			"    Message:               1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable.\n" +
			"    Reason:                NotEnoughResources\n" +
			"    Status:                True\n" +
			"    Transition ID:         a6e36d8a-1672-406e-a9f5-f113174114fe\n" +
			"    Type:                  Unschedulable\n" +
			"  Phase:                   Inqueue\n" +
			"Events:\n" +
			"  Type     Reason         Age                    From     Message\n" +
			"  ----     ------         ----                   ----     -------\n" +
			"  Warning  Unschedulable  69s (x78789 over 26h)  volcano  1/1 tasks in gang unschedulable: pod group is not ready, 1 Pending, 1 minAvailable.\n",
		// Two pods' refusals in one events listing: a status after them says which object
		// runs no more than a listing row would.
		"two pods, then a status": "LAST SEEN   TYPE      REASON             OBJECT                  MESSAGE\n" +
			"2m          Warning   FailedScheduling   pod/trainer-worker-0    0/4 nodes are available: 4 Insufficient nvidia.com/gpu.\n" +
			"2m          Warning   FailedScheduling   pod/trainer-worker-1    0/4 nodes are available: 4 Insufficient nvidia.com/gpu.\n" +
			"Status:  Running\n",
		// The review's cases: a Running status below a default scheduler's refusal is another
		// object's. Argo keeps a workflow Running while its pod cannot be scheduled
		// (argoproj/argo-workflows#525), with the node's own phase Pending between.
		"a workflow running, its pod not scheduled": "status:\n" +
			"  nodes:\n" +
			"    train-llm-7x2kq:\n" +
			"      message: 'Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.'\n" +
			"      phase: Pending\n" +
			"      type: Pod\n" +
			"  phase: Running\n",
		"a pod's refusal, then its Volcano Job running": "Name:         mnist-worker-1\n" +
			"Status:       Pending\n" +
			"Events:\n" +
			"  Warning  FailedScheduling  3m (x41 over 23m)   volcano  0/4 nodes are available: 4 Insufficient nvidia.com/gpu.\n" +
			"status:\n" +
			"  running: 1\n" +
			"  state:\n" +
			"    phase: Running\n",
		"one pod's refusal, another pod's phase": "LAST SEEN   TYPE      REASON             OBJECT                    MESSAGE\n" +
			"2m          Warning   FailedScheduling   pod/pytorch-worker-1      0/2 nodes are available: 2 Insufficient nvidia.com/gpu.\n" +
			"  phase: Running\n",
		// A gang refusal whose own group is Pending, then another object Running: the first
		// status below a refusal is its object's.
		"a gang refusal, its group pending, then another running": gang +
			"Status:\n" +
			"  Phase:    Pending\n" +
			"---\n" +
			"Status:\n" +
			"  Phase:    Running\n",
	}
	for name, log := range waits {
		res := analyzeLogs(t, all, log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, name)
		require.Equal(t, CategoryScheduling, res.RootCause.Category, name)
	}
}

// TestPodSlashIsIndex: podSlash finds the first "pod/" as bytes.Index does, whatever stands
// around it, and podNamed reads the reference from it.
func TestPodSlashIsIndex(t *testing.T) {
	for _, s := range []string{
		"", "/", "pod", "pod/", "/pod/", "po/d/pod/x", "pod//pod/", "ppod/", "a/b/c pod/trainer-0 d/e",
		"step 81 | loss 3.2569 | tokens/s 41800", "Error from server (NotFound): pods \"x\" not found",
		"warning: pod/trainer-0 evicted, pod/trainer-1 too", "xpod/a pod/b",
	} {
		require.Equal(t, bytes.Index([]byte(s), []byte("pod/")), podSlash([]byte(s)), s)
	}
	const alphabet = "pod/ x"
	for n := range 20000 { // every string of up to six of these bytes, and some of seven
		var b []byte
		for m := n; m > 0; m /= len(alphabet) {
			b = append(b, alphabet[m%len(alphabet)])
		}
		require.Equal(t, bytes.Index(b, []byte("pod/")), podSlash(b), string(b))
	}
	require.Equal(t, "pod/trainer-0", string(podNamed([]byte("Events for pod/trainer-0\tNormal"))))
	require.Nil(t, podNamed([]byte("xpod/a pod/b")), "the first pod/ is not after a blank")
	require.Nil(t, podNamed([]byte("step 81 | tokens/s 41800")))
}
