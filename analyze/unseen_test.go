package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// progress is two training steps: the log trained before it failed.
const progress = "epoch 1 step 10 loss 2.1\nepoch 1 step 20 loss 2.0\n"

// TestFailureClassesOfUnseenLogs: failure wordings first met in logs no rule was written from
// (a spot check of public threads) are named by their class, by a specific rule with all
// tiers and by the vocabulary alone, and the peer a symptom blames is the root rank.
func TestFailureClassesOfUnseenLogs(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tests := []struct {
		name     string
		log      string
		category Category
		ruleID   string // with all tiers
		rank     int    // the root cause's rank with all tiers; -1: none
	}{
		{"an op built at start-up fails to compile, the paste ending at ninja's exit",
			"Building extension module fused_adam...\n" +
				"[rank1]: Traceback (most recent call last):\n" +
				"[rank1]:   File \"/env/lib/python3.11/site-packages/torch/utils/cpp_extension.py\", line 2105, in _run_ninja_build\n" +
				"[rank1]:     subprocess.run(\n" +
				"[rank1]: subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.\n",
			CategoryModuleNotFound, "module-not-found/extension-build-failed", 1},
		{"the RuntimeError torch raises for it",
			"Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n" +
				"RuntimeError: Error building extension 'cpu_adam'\n",
			CategoryModuleNotFound, "module-not-found/extension-build-failed", -1},
		{"a monitored barrier's handshake with rank 0 fails on the other ranks: rank 0 is the one to read",
			progress +
				"2025-12-19 09:03:13,768 INFO Rank 5 successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n" +
				" Original exception:\n" +
				"[../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete\n",
			CategoryCollectiveTimeout, "collective-timeout/monitored-barrier-peer", 0},
		// Failures of the machine under the job, not of its code (the rules' cited examples).
		{"an uncorrectable NVLink error is the hardware, not the CUDA error it is raised as",
			progress + "terminate called after throwing an instance of 'c10::Error'\n" +
				"  what():  CUDA error: uncorrectable NVLink error detected during the execution\n",
			CategoryGPUHardware, "gpu-hardware/nvlink-uncorrectable", -1},
		{"the display watchdog's kill is a CUDA error, not the Python exception it is raised as",
			progress + "Traceback (most recent call last):\n  File \"main.py\", line 30, in train\n" +
				"RuntimeError: cuda runtime error (6) : the launch timed out and was terminated at /work/aten/src/THC/generic/THCTensorCopy.cpp:21\n",
			CategoryCUDAError, "cuda-error/launch-timeout", -1},
		{"GPUs held in exclusive mode, in error 46's older words",
			"THCudaCheck FAIL file=/pytorch/aten/src/THC/THCTensorRandom.cu line=25 error=46 : all CUDA-capable devices are busy or unavailable\n" +
				"Traceback (most recent call last):\n  File \"train.py\", line 289, in train\n" +
				"RuntimeError: cuda runtime error (46) : all CUDA-capable devices are busy or unavailable at /pytorch/aten/src/THC/THCTensorRandom.cu:25\n",
			CategoryCUDAError, "cuda-error/device-busy-unavailable", -1},
		{"ssh cannot resolve a host of the hostfile",
			"ssh: Could not resolve hostname train-worker-1.train-worker: Name or service not known\n",
			CategoryRendezvous, "rendezvous-failure/ssh-host-unresolved", -1},
		{"Slurm has no node that can hold the request",
			"sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
			CategoryScheduling, "scheduling/slurm-node-config-unavailable", -1},
		{"Slurm lost a node of the allocation",
			"salloc: Granted job allocation 4711\nsrun: error: Node failure on gpu-node-17\nsrun: Force Terminated job 4711\n",
			CategoryPreemptedEvicted, "preempted-evicted/slurm-node-failure", -1},
		// Failures of the LLM training stacks (session 16): DeepSpeed's batch check, and a
		// Triton kernel tuned for a GPU with more shared memory.
		{"DeepSpeed's batch sizes written for another world size",
			"[rank0]: Traceback (most recent call last):\n" +
				"[rank0]:   File \"/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/config.py\", line 900, in _batch_assertion\n" +
				"[rank0]: AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 32 != 4 * 2 * 2\n",
			CategoryConfigError, "config-error/deepspeed-batch-size", 0},
		{"a Triton kernel that needs more shared memory than the GPU has",
			progress + "Traceback (most recent call last):\n" +
				"  File \"/usr/local/lib/python3.11/site-packages/triton/compiler/compiler.py\", line 483, in _init_handles\n" +
				"    raise OutOfResources(self.metadata.shared, max_shared, \"shared memory\")\n" +
				"triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 114688, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.\n",
			CategoryCUDAError, "cuda-error/triton-out-of-resources", -1},
		{"a failed verbs call followed only by NCCL's INFO lines",
			"node08:6561:6600 [0] misc/ibvwrap.cc:280 NCCL WARN Call to ibv_create_qp failed\n" +
				"node08:6561:6600 [0] NCCL INFO transport/net_ib.cc:371 -> 2\n" +
				"node08:6563:6563 [1] NCCL INFO Bootstrap : Using [0]ibs3:10.252.0.211<0>\n",
			CategoryCollectiveError, "collective-error/nccl-net-transport", -1},
		// Resuming from a checkpoint (session 17): one saved from a model of another
		// configuration, and one torch.load refuses under weights_only.
		{"a checkpoint saved from a model of another configuration",
			progress + "Traceback (most recent call last):\n  File \"train.py\", line 40, in <module>\n" +
				"    model.load_state_dict(ckpt[\"model\"])\n" +
				"RuntimeError: Error(s) in loading state_dict for TORCHIEKF:\n" +
				"        size mismatch for mes_net.cov_net.4.weight: copying a param with shape torch.Size([64, 32, 5]) from checkpoint, the shape in current model is torch.Size([32, 32, 5]).\n" +
				"        size mismatch for mes_net.cov_net.4.bias: copying a param with shape torch.Size([64]) from checkpoint, the shape in current model is torch.Size([32]).\n",
			CategoryConfigError, "config-error/checkpoint-shape-mismatch", -1},
		{"a resume that torch.load refuses under weights_only",
			progress + "[rank0]: Traceback (most recent call last):\n" +
				"[rank0]:   File \"/env/lib/python3.11/site-packages/accelerate/checkpointing.py\", line 190, in load_accelerator_state\n" +
				"[rank0]:     states = torch.load(input_dir.joinpath(f\"{RNG_STATE_NAME}_{process_index}.pkl\"))\n" +
				"[rank0]: _pickle.UnpicklingError: Weights only load failed. This file can still be loaded, to do so you have two options, do those steps only if you trust the source of the checkpoint.\n",
			CategoryUserCodeError, "user-code-error/torch-load-weights-only", 0},
		{"a resume from a directory without the weights the Trainer loads",
			progress + "Traceback (most recent call last):\n" +
				"  File \"/env/lib/python3.10/site-packages/transformers/trainer.py\", line 2159, in _load_from_checkpoint\n" +
				"    raise ValueError(f\"Can't find a valid checkpoint at {resume_from_checkpoint}\")\n" +
				"ValueError: Can't find a valid checkpoint at ./output/checkpoint-500\n",
			CategoryFileNotFound, "file-not-found/checkpoint-not-valid", -1},
		// Other stacks (session 18): PaddlePaddle's GPU allocator, whose message is the content
		// of a BadAlloc exception raised as a generic SystemError.
		{"Paddle out of GPU memory under the SystemError that carries it",
			progress + "Traceback (most recent call last):\n  File \"train.py\", line 80, in <module>\n" +
				"SystemError: (Fatal) Operator mul raises an paddle::memory::allocation::BadAlloc exception.\n" +
				"The exception content is\n:ResourceExhaustedError:\n\n" +
				"Out of memory error on GPU 0. Cannot allocate 165.586182MB memory on GPU 0, 5.866455GB memory has been allocated and available memory is only 67.937500MB.\n",
			CategoryCUDAOOM, "cuda-oom/paddle-gpu-oom", -1},
		// Environments that do not fit (session 18): a wrapper exception (OSError, TypeError,
		// ValueError, FileNotFoundError) carries a broken environment, not a code or path bug.
		{"a pip wheel built for a newer glibc, raised as OSError by ctypes",
			"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    import pyg_lib\n" +
				"OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.33' not found (required by /env/lib/python3.10/site-packages/libpyg.so)\n",
			CategoryModuleNotFound, "module-not-found/system-library-too-old", -1},
		{"a cuDNN on LD_LIBRARY_PATH older than torch's",
			"Traceback (most recent call last):\n  File \"main.py\", line 56, in <module>\n    model = model.cuda()\n" +
				"RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 5, 0) but found runtime version (8, 3, 3).\n",
			CategoryModuleNotFound, "module-not-found/cudnn-version-mismatch", -1},
		{"protobuf 4 under old generated code",
			"Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    import model_pb2\n" +
				"TypeError: Descriptors cannot not be created directly.\n" +
				"If this call came from a _pb2.py file, your generated code is out of date and must be regenerated with protoc >= 3.19.0.\n",
			CategoryModuleNotFound, "module-not-found/protobuf-generated-code", -1},
		{"numpy's ABI check",
			progress + "Traceback (most recent call last):\n  File \"train.py\", line 2, in <module>\n    import pandas\n" +
				"ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from PyObject\n",
			CategoryModuleNotFound, "module-not-found/numpy-abi-mismatch", -1},
		{"ninja missing for a build at start-up, a FileNotFoundError from subprocess",
			"Traceback (most recent call last):\n  File \"/env/lib/python3.6/subprocess.py\", line 1364, in _execute_child\n" +
				"    raise child_exception_type(errno_num, err_msg, err_filename)\n" +
				"FileNotFoundError: [Errno 2] No such file or directory: 'ninja': 'ninja'\n",
			CategoryModuleNotFound, "module-not-found/build-toolchain-missing", -1},
		{"a data file that is missing is still a missing file",
			progress + "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n" +
				"FileNotFoundError: [Errno 2] No such file or directory: '/data/train.jsonl'\n",
			CategoryFileNotFound, "file-not-found/no-such-file", -1},
		{"a node whose driver is older than the image's CUDA",
			"Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running prestart hook #0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n" +
				"nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version, or use an earlier cuda container: unknown\n",
			CategoryCUDAError, "cuda-error/container-driver-too-old", -1},
		// A server of the job (DistDGL's graph servers, ps-lite's parameter servers) cannot bind
		// the port its configuration names: the processes never find each other.
		{"DistDGL's server cannot bind the address of its ip_config",
			"[11:33:22] /opt/dgl/src/rpc/network/tcp_socket.cc:69: Failed bind on 10.0.0.7:3026 ,errno=99\n" +
				"Traceback (most recent call last):\n  File \"train_dist.py\", line 310, in <module>\n" +
				"dgl._ffi.base.DGLError: [11:33:22] /opt/dgl/src/rpc/network/socket_communicator.cc:197: Cannot bind to 10.0.0.7:3026\n",
			CategoryRendezvous, "rendezvous-failure/server-bind-failed", -1},
		{"a ps-lite parameter server whose port is held",
			"terminate called after throwing an instance of 'dmlc::Error'\n" +
				"  what():  [14:57:01] ps-lite/src/van.cc:70: Check failed: (my_node_.port) != (-1) bind failed\n",
			CategoryRendezvous, "rendezvous-failure/server-bind-failed", -1},
		// A bad_alloc thrown by a GPU memory manager (RAPIDS' RMM) is the GPU's memory.
		{"RMM's device allocator out of memory, raised through Python as a MemoryError",
			progress + "Traceback (most recent call last):\n  File \"prep.py\", line 9, in <module>\n" +
				"MemoryError: std::bad_alloc: CUDA error at: ../include/rmm/mr/device/cuda_memory_resource.hpp:68: cudaErrorMemoryAllocation out of memory\n",
			CategoryCUDAOOM, "cuda-oom/device-bad-alloc", -1},
		{"RMM's pool that cannot grow, in C++'s terminate",
			progress + "terminate called after throwing an instance of 'rmm::bad_alloc'\n" +
				"  what():  std::bad_alloc: RMM failure at:/env/include/rmm/mr/device/pool_memory_resource.hpp:179: Maximum pool size exceeded\n",
			CategoryCUDAOOM, "cuda-oom/device-bad-alloc", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := requireNamedByRule(t, all, tt.log, tt.category, tt.ruleID)
			if tt.rank >= 0 {
				require.Equal(t, tt.rank, res.RootCause.Rank, res.RootCause.Title)
			}
			requireNamedByVocabulary(t, all, tt.log, tt.category)
		})
	}
}

// TestManagedPlatformQuotaRefusal: a managed training platform that refuses a job's machines
// for quota started no process; its message names scheduling, and Vertex AI's
// RESOURCE_EXHAUSTED around it is no accelerator's memory. Raised by an SDK, the vocabulary
// alone names it too.
func TestManagedPlatformQuotaRefusal(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for name, log := range map[string]string{
		"vertex status": "\"error\": {\n    \"code\": 429,\n    \"message\": \"The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus\",\n    \"status\": \"RESOURCE_EXHAUSTED\"\n  }\n",
		"sagemaker":     "ResourceLimitExceeded: An error occurred (ResourceLimitExceeded) when calling the CreateTrainingJob operation: The account-level service limit 'ml.g5.12xlarge for training job usage' is 0 Instances, with current utilization of 0 Instances and a request delta of 1 Instances. Please contact AWS support to request an increase for this limit.\n",
	} {
		t.Run(name, func(t *testing.T) {
			requireNamedByRule(t, all, log, CategoryScheduling, "scheduling/platform-quota")
		})
	}
	raised := "Traceback (most recent call last):\n  File \"task.py\", line 40, in <module>\n    job.run(sync=True)\n" +
		"RuntimeError: Training failed with: code: 8 message: \"The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_tpu_v3\"\n"
	requireNamedByRule(t, all, raised, CategoryScheduling, "scheduling/platform-quota")
	requireNamedByVocabulary(t, all, raised, CategoryScheduling)
}

// requireNamedByRule: with all tiers, log is unhealthy and its root cause is ruleID's finding
// of category, at high confidence.
func requireNamedByRule(t *testing.T, all []*Rule, log string, category Category, ruleID string) *Result {
	t.Helper()
	res := analyzeLogs(t, all, log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.NotNil(t, res.RootCause)
	require.Equal(t, category, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, ruleID, res.RootCause.RuleID)
	require.Equal(t, ConfidenceHigh, res.Confidence)
	return res
}

// requireNamedByVocabulary: with the specific rules off, the second tier names category at
// medium confidence.
func requireNamedByVocabulary(t *testing.T, all []*Rule, log string, category Category) {
	t.Helper()
	alone := analyzeLogs(t, WithoutSpecific(all), log)
	require.NotNil(t, alone.RootCause, alone.VerdictReason)
	require.Equal(t, category, alone.RootCause.Category, alone.RootCause.Title)
	require.Equal(t, ConfidenceMedium, alone.Confidence)
}

// TestPastedDescribeOfAnUnscheduledPod: a describe whose Conditions say PodScheduled False is
// a pod the scheduler could not place, with or without its events; when a FailedScheduling
// event says why, that event is the root cause and the condition follows it.
func TestPastedDescribeOfAnUnscheduledPod(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	describe := "Name:         gpu-pod\nNode:         <none>\nStatus:       Pending\n" +
		"Conditions:\n  Type           Status\n  PodScheduled   False\n"
	res := analyzeLogs(t, all, describe)
	require.Equal(t, VerdictUnhealthy, res.Verdict)
	require.Equal(t, CategoryScheduling, res.RootCause.Category)
	require.Equal(t, "scheduling/pod-not-scheduled", res.RootCause.RuleID)

	res = analyzeLogs(t, all, describe+"Events:\n"+
		"  Warning  FailedScheduling  3m (x4 over 10m)   default-scheduler  0/1 nodes are available: 1 Insufficient nvidia.com/gpu.\n")
	require.Equal(t, "scheduling/insufficient-resource", res.RootCause.RuleID)
	require.Contains(t, res.VerdictReason, "pending for 10 min")

	res = analyzeLogs(t, all, "Conditions:\n  Type           Status\n  PodScheduled   True\n  Ready          True\n")
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, "a scheduled pod")
}

// TestVocabularyOfDataStorageAndTrainerFailures: failures of data pipelines, remote file
// systems and trainer libraries that no specific rule names are named by the vocabulary, the
// same with all tiers as with the second tier alone, at medium confidence. The lines are those
// of the public threads the terms cite.
func TestVocabularyOfDataStorageAndTrainerFailures(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tests := []struct {
		name     string
		log      string
		category Category
	}{
		{"a shard whose tar stream ends early",
			progress + "Traceback (most recent call last):\n" +
				"  File \"/usr/lib/python3.8/tarfile.py\", line 2312, in next\n" +
				"    raise ReadError(\"unexpected end of data\")\n" +
				"tarfile.ReadError: unexpected end of data\n",
			CategoryDataError},
		{"fsspec's timeout on a remote file system, re-raised from a DataLoader worker",
			progress + "fsspec.exceptions.FSTimeoutError: Caught FSTimeoutError in DataLoader worker process 2.\n",
			CategoryStorageError},
		{"a ZeRO checkpoint saved at another data-parallel size",
			progress + "[rank5]: deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded used a DP world size of 8 " +
				"but the current world size is 16. Automatic adjustment of ZeRO's optimizer state partitioning with a new world size is not currently supported.\n",
			CategoryConfigError},
		{"DataLoader workers out of file descriptors",
			progress + "Traceback (most recent call last):\n" +
				"  File \"/usr/lib/python3.8/multiprocessing/reduction.py\", line 164, in recvfds\n" +
				"RuntimeError: received 0 items of ancdata\n",
			CategoryConfigError},
		{"a worker of datasets' multiprocess map dies",
			"Running tokenizer on dataset (num_proc=64):  98%|#########8| 81273/82730\n" +
				"RuntimeError: One of the subprocesses has abruptly died during map operation.To debug the error, disable multiprocessing.\n",
			CategoryHostOOM},
		{"TensorFlow 1's op error naming its traceback above, of nvJPEG that cannot decode an image",
			progress + "InternalError (see above for traceback): Critical error in pipeline: Error in thread 0: NVJPEG error \"3\"\n" +
				"Current pipeline object is no longer valid.\n",
			CategoryDataError},
		{"PIL meeting a damaged image in a DataLoader worker",
			progress + "OSError: Caught OSError in DataLoader worker process 3.\n" +
				"Original Traceback (most recent call last):\n" +
				"  File \"/env/lib/python3.8/site-packages/PIL/ImageFile.py\", line 269, in load\n" +
				"    raise OSError(\"broken data stream when reading image file\")\n" +
				"OSError: broken data stream when reading image file\n",
			CategoryDataError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireNamedBySecondTier(t, all, tt.log, tt.category) })
	}
}

// requireNamedBySecondTier: with all tiers and with the second alone, log's root cause is
// category, named by the vocabulary at medium (no specific rule knows its words).
func requireNamedBySecondTier(t *testing.T, all []*Rule, log string, category Category) {
	t.Helper()
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.NotNil(t, res.RootCause)
		require.Equal(t, category, res.RootCause.Category, res.RootCause.Title)
		require.Equal(t, SecondTierRuleID+string(category), res.RootCause.RuleID)
		require.Equal(t, ConfidenceMedium, res.Confidence)
	}
}

// TestReraisedFromWorker: an exception a DataLoader worker (or a DataParallel replica) raised is
// printed by the main process first as its re-raise, then as the worker's own traceback; the
// worker's exception, not the re-raise, is the root cause, named by its own line, with all
// tiers and with the second alone.
func TestReraisedFromWorker(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// After sgrvinod/a-PyTorch-Tutorial-to-Transformers#1 and milesial/Pytorch-UNet#250.
	modern := progress + "Traceback (most recent call last):\n" +
		"  File \"train.py\", line 89, in train_net\n    for batch in train_loader:\n" +
		"  File \"/opt/conda/lib/python3.8/site-packages/torch/_utils.py\", line 428, in reraise\n    raise self.exc_type(msg)\n" +
		"KeyError: Caught KeyError in DataLoader worker process 0.\n" +
		"Original Traceback (most recent call last):\n" +
		"  File \"/opt/conda/lib/python3.8/site-packages/torch/utils/data/_utils/worker.py\", line 178, in _worker_loop\n    data = fetcher.fetch(index)\n" +
		"  File \"/content/datasets.py\", line 67, in __getitem__\n    img = Image.open(self.images[i], mode='r')\n" +
		"KeyError: 0\n"
	// After cedias/Hierarchical-Sentiment#6: PyTorch 0.4 raised the worker's class with its
	// formatted traceback as the message.
	old := progress + "Traceback (most recent call last):\n" +
		"  File \"/env/lib/python3.6/site-packages/torch/utils/data/dataloader.py\", line 307, in _process_next_batch\n    raise batch.exc_type(batch.exc_msg)\n" +
		"TypeError: Traceback (most recent call last):\n" +
		"  File \"/env/lib/python3.6/site-packages/torch/utils/data/dataloader.py\", line 57, in _worker_loop\n    samples = collate_fn([dataset[i] for i in batch_indices])\n" +
		"TypeError: object of type 'int' has no len()\n"
	for _, tt := range []struct{ name, log, line string }{
		{"a worker's KeyError under its re-raise", modern, "KeyError: 0"},
		{"a worker's TypeError in PyTorch 0.4's words", old, "TypeError: object of type 'int' has no len()"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
				res := analyzeLogs(t, rules, tt.log)
				require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
				require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.RootCause.Title)
				require.Equal(t, tt.line, res.RootCause.Evidence[0].Text, res.RootCause.Title)
			}
		})
	}
}

// TestKubernetesRefusalsInPastes: the API server's and the kubelet's refusals as users paste
// them: kubectl's "The Job ... is invalid" (not only the controllers' "Job.batch ..."), and a
// pod the kubelet rejected at device admission, its message wrapped in the pasted status.
func TestKubernetesRefusalsInPastes(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tt := range []struct {
		name, log, ruleID string
		category          Category
	}{
		{"kubectl create of a Job the API server refuses",
			"$ kubectl create -f job.yaml\n" +
				"The Job \"netpol\" is invalid: spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"\n",
			"config-error/object-invalid", CategoryConfigError},
		{"a pod status whose admission message a paste wrapped",
			"status:\n  message: Pod Allocate failed due to rpc error: code = Unavailable desc = transport\n" +
				"    is closing, which is unexpected\n  phase: Failed\n  reason: UnexpectedAdmissionError\n",
			"scheduling/device-admission", CategoryScheduling},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tt.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, tt.ruleID, res.RootCause.RuleID)
			require.Equal(t, tt.category, res.RootCause.Category)
		})
	}
}

// TestPastedNodeNotReady: a pasted kubectl get nodes whose node is NotReady (after
// kubernetes/kubernetes#98511) says the node stopped reporting; a Ready listing says nothing.
func TestPastedNodeNotReady(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	head := "NAME                  STATUS     ROLES                  AGE   VERSION\n" +
		"cdh-k8s-1.novalocal   Ready      control-plane,master   15d   v1.20.0\n"
	res := analyzeLogs(t, all, head+"cdh-k8s-3.novalocal   NotReady   <none>                 9d    v1.20.0\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "preempted-evicted/node-not-ready-message", res.RootCause.RuleID)

	res = analyzeLogs(t, all, head+"cdh-k8s-3.novalocal   Ready      <none>                 9d    v1.20.0\n")
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}

// TestMPIRankSignal: mpirun's notice that a rank died on a signal says the rank crashed, not
// that the communication library failed: a segmentation fault is a crash (the vocabulary
// agreeing, at medium confidence), and a more specific cause the rank printed (a DataLoader
// worker's bus error) is the root cause.
func TestMPIRankSignal(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	const notice = "--------------------------------------------------------------------------\n" +
		"mpirun noticed that process rank 3 with PID 10243 on node node042 exited on signal 11 (Segmentation fault).\n" +
		"--------------------------------------------------------------------------\n"
	res := analyzeLogs(t, all, progress+notice)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryCrashSignal, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, "crash-signal/mpi-rank-signal", res.RootCause.RuleID)
	require.Equal(t, ConfidenceMedium, res.Confidence)

	res = analyzeLogs(t, all, progress+
		"ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"+
		"mpirun noticed that process rank 1 with PID 0 on node worker-0 exited on signal 7 (Bus error).\n")
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryShmBusError, res.RootCause.Category, res.RootCause.Title)

	// Pasted into a ticket with the PID and the host blanked out, the line still names the rank
	// and the signal, and mpirun's abort summary above it is not the answer.
	const summary = "Primary job  terminated normally, but 1 process returned\n" +
		"a non-zero exit code. Per user-direction, the job has been aborted.\n"
	res = analyzeLogs(t, all, progress+summary+
		"mpirun noticed that process rank 1 with PID xxxxxx on node xxxxxxxx exited on signal 9 (Killed).\n")
	require.NotNil(t, res.RootCause)
	require.Equal(t, "host-oom/mpi-rank-sigkill", res.RootCause.RuleID, res.RootCause.Title)
	require.Contains(t, res.RootCause.Title, "rank 1")
	res = analyzeLogs(t, all, progress+summary+
		"mpirun noticed that process rank 0 with PID 0 on node exited on signal 11 (Segmentation fault).\n")
	require.NotNil(t, res.RootCause)
	require.Equal(t, "crash-signal/mpi-rank-signal", res.RootCause.RuleID, res.RootCause.Title)

	// The rank's own exception before Open MPI's summary (its lines tagged [1,2]<stderr>) is the
	// cause; the summary, whose words name none, follows from it (a review of session 26).
	res = analyzeLogs(t, all, progress+
		"[1,2]<stderr>:Traceback (most recent call last):\n"+
		"[1,2]<stderr>:  File \"train.py\", line 40, in <module>\n"+
		"[1,2]<stderr>:    x = dataset[idx]\n"+
		"[1,2]<stderr>:KeyError: 'label'\n"+summary+
		"mpirun noticed that process rank 2 with PID 0 on node worker-1 exited on signal 6 (Aborted).\n")
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.RootCause.Title)
	require.Contains(t, res.RootCause.Evidence[0].Text, "KeyError: 'label'")
}

// TestHydraBadTermination: MPICH's and Intel MPI's launcher report a rank's segfault in their
// BAD TERMINATION banner (exit code 139); the cleanup lines after it carry hydra's source paths
// (tools/bootstrap/...), which are no launch failure. A hydra banner for exit code 9 is left to
// the SIGKILL vocabulary.
func TestHydraBadTermination(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	const banner = "===================================================================================\n" +
		"=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n" +
		"=   PID 2671 RUNNING AT master-node00\n" +
		"=   EXIT CODE: 139\n" +
		"=   CLEANING UP REMAINING PROCESSES\n" +
		"=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n" +
		"===================================================================================\n" +
		"[mpiexec@master-node00] HYDT_bscu_wait_for_completion (tools/bootstrap/utils/bscu_wait.c:75): one of the processes terminated badly; aborting\n" +
		"[mpiexec@master-node00] HYDT_bsci_wait_for_completion (tools/bootstrap/src/bsci_wait.c:22): launcher returned error waiting for completion\n"
	res := analyzeLogs(t, all, progress+banner)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryCrashSignal, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, "crash-signal/hydra-bad-termination", res.RootCause.RuleID)
	require.Contains(t, res.RootCause.Evidence[0].Text, "EXIT CODE: 139")

	res = analyzeLogs(t, all, progress+strings.Replace(banner, "EXIT CODE: 139", "EXIT CODE: 9", 1)+
		"YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n")
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryHostOOM, res.RootCause.Category, res.RootCause.Title)

	// A healthy run launched by hydra prints no banner.
	res = analyzeLogs(t, all, "mpiexec -n 2 python train.py\n"+progress)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}

// TestMPINotEnoughSlots: Open MPI refusing to start more ranks than it has slots for is a
// misconfigured launch (after horovod/horovod#978); the allocation table of a run that started
// is no failure.
func TestMPINotEnoughSlots(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	res := analyzeLogs(t, all, "--------------------------------------------------------------------------\n"+
		"There are not enough slots available in the system to satisfy the 2 slots\n"+
		"that were requested by the application:\n  python\n\n"+
		"Either request fewer slots for your application, or make more slots available\nfor use.\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryConfigError, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, "config-error/mpi-not-enough-slots", res.RootCause.RuleID)
	require.Contains(t, res.RootCause.Title, "2 processes")

	res = analyzeLogs(t, all, " Data for JOB [12345,1] offset 0 Total slots allocated 16\n"+progress)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}

// TestTorchrunTableRowOfSIGKILLAlone: torchrun's failure table lists every failed process, and
// a -9 row there is as often a peer the agent killed after another rank's exception as the
// process's own death: the row alone names no host-oom, and a KeyError before the table stays
// the cause.
func TestTorchrunTableRowOfSIGKILLAlone(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	table := "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n" +
		"============================================================\n" +
		"train.py FAILED\n" +
		"------------------------------------------------------------\n" +
		"Failures:\n" +
		"[1]:\n" +
		"  time      : 2025-03-12_10:00:35\n" +
		"  host      : worker-0\n" +
		"  rank      : 1 (local_rank: 1)\n" +
		"  exitcode  : -9 (pid: 156)\n"
	res := analyzeLogs(t, all, table)
	require.NotEqual(t, CategoryHostOOM, res.RootCause.Category, res.VerdictReason)
	keyError := "[rank0]: Traceback (most recent call last):\n" +
		"[rank0]:   File \"/app/train.py\", line 70, in main\n" +
		"[rank0]:     batch = collate(samples)\n" +
		"[rank0]: KeyError: 'input_ids'\n" +
		"E0312 10:00:35.400000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 155) of binary: /usr/bin/python3\n"
	res = analyzeLogs(t, all, keyError+table)
	require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.VerdictReason)
}

// TestBadAllocOfTheHostOrOfACUDAError: a std::bad_alloc that names no device allocator is the
// host's memory, and RMM's bad_alloc carrying a CUDA status other than out of memory is that
// CUDA error, not memory of either kind.
func TestBadAllocOfTheHostOrOfACUDAError(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	requireNamedByRule(t, all, progress+"terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n",
		CategoryHostOOM, "host-oom/bad-alloc")
	res := analyzeLogs(t, all, progress+"terminate called after throwing an instance of 'rmm::bad_alloc'\n"+
		"  what():  std::bad_alloc: CUDA error at: /opt/conda/include/rmm/mr/device/cuda_memory_resource.hpp:70: cudaErrorIllegalAddress an illegal memory access was encountered\n")
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Equal(t, CategoryCUDAError, res.RootCause.Category, res.RootCause.Title)
}

// TestC10LineOfAMonthBeforeOctober: PyTorch's C++ logging does not pad the month, so a
// watchdog's error line from January to September has a three-digit date ("[E513 ...]"); it
// is an error line all the same, and the vocabulary alone names its timeout. Four digits or
// none were already one; two and five are not a c10 head.
func TestC10LineOfAMonthBeforeOctober(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	line := "[rank2]:[E513 13:25:57.714781669 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: " +
		"WorkNCCL(SeqNum=532339, OpType=BROADCAST, NumelIn=5164000, NumelOut=5164000, Timeout(ms)=1800000) ran for 1800042 milliseconds before timing out.\n"
	requireNamedByVocabulary(t, all, progress+line, CategoryCollectiveTimeout)
	require.True(t, c10Head([]byte("[E513 13:25:57.714781669 ProcessGroupNCCL.cpp:616] x"), 'E'))
	require.True(t, c10Head([]byte("[E1206 18:44:12.715588844 ProcessGroupNCCL.cpp:607] x"), 'E'))
	require.False(t, c10Head([]byte("[E51 13:25:57.714781669 ProcessGroupNCCL.cpp:616] x"), 'E'))
	require.False(t, c10Head([]byte("[E51234 13:25:57.714781669 ProcessGroupNCCL.cpp:616] x"), 'E'))
}

// TestOpNamespaceWithoutItsOp: an AttributeError of a torch.ops namespace says the op library
// did not load (an extension built for another torch), which the vocabulary alone names as
// module-not-found; an AttributeError of the code's own object stays the code's.
func TestOpNamespaceWithoutItsOp(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tb := "Traceback (most recent call last):\n  File \"train.py\", line 29, in <module>\n    import fbgemm_gpu\n"
	requireNamedByVocabulary(t, all, tb+"AttributeError: '_OpNamespace' 'fbgemm' object has no attribute 'jagged_2d_to_dense'\n",
		CategoryModuleNotFound)
	res := analyzeLogs(t, WithoutSpecific(all), progress+tb+"AttributeError: 'NoneType' object has no attribute 'jagged'\n")
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.RootCause.Title)
}

// TestTorchSharedFileIsShmNotDisk (pspot34): torch.multiprocessing passes a tensor between a
// DataLoader worker or a queue's feeder and its reader through a file </torch_PID_...> in
// /dev/shm, so "unable to write to file </torch_...>: No space left on device (28)" is a full
// shared memory, at high confidence, never a full disk; older releases print it without the
// errno. A checkpoint write on a full volume stays disk-full, and a run that only reports its
// /dev/shm size stays healthy.
func TestTorchSharedFileIsShmNotDisk(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, line := range []string{
		"RuntimeError: unable to write to file </torch_31911_952036340_6686>: No space left on device (28)",
		"RuntimeError: unable to write to file </torch_5845_4138295531>",
	} {
		res := analyzeLogs(t, all, progress+
			"Traceback (most recent call last):\n"+
			"  File \"/usr/lib/python3.10/multiprocessing/queues.py\", line 244, in _feed\n"+
			"    obj = _ForkingPickler.dumps(obj)\n"+
			line+"\n")
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.NotNil(t, res.RootCause)
		require.Equal(t, CategoryShmBusError, res.RootCause.Category, res.RootCause.Title)
		require.Equal(t, "shm-bus-error/torch-shared-file", res.RootCause.RuleID)
		require.Equal(t, ConfidenceHigh, res.Confidence)
		require.Equal(t, line, res.RootCause.Evidence[0].Text)
	}

	res := analyzeLogs(t, all, progress+"OSError: [Errno 28] No space left on device: '/output/checkpoint-2000/optimizer.pt'\n")
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryDiskFull, res.RootCause.Category, res.RootCause.Title)

	res = analyzeLogs(t, all, progress+"shm                      64M     0   64M   0% /dev/shm\n"+progress)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}
