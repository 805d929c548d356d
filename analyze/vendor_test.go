package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFailuresInOtherVendorsWords: a failure printed by AMD's (ROCm, HIP, amdgpu), Intel's
// (XPU, Gaudi), Huawei's (HCCL) or the fabric's (UCX over mlx5) stack lands in the category of its NVIDIA
// counterpart. The lines are the rules' cited examples from public threads; ruleID "" means
// the second tier names it (no specific rule does), alone that the second tier alone can tell
// too (the log ends in a failure message it reads).
func TestFailuresInOtherVendorsWords(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	const progress = "epoch 1 step 10 loss 2.1\nepoch 1 step 20 loss 2.0\n"
	const traceback = "Traceback (most recent call last):\n  File \"train.py\", line 42, in <module>\n    loss.backward()\n"
	tests := []struct {
		name, log string
		category  Category
		ruleID    string
		alone     bool
	}{
		{"PyTorch on an Intel GPU runs out of XPU memory",
			progress + traceback +
				"torch.OutOfMemoryError: XPU out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 15.11 GiB. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.\n",
			CategoryCUDAOOM, "cuda-oom/torch-alloc", true},
		{"XLA's ROCm stream executor cannot allocate device memory",
			"2024-06-24 17:01:13.933585: E external/xla/xla/stream_executor/rocm/rocm_driver.cc:1268] failed to allocate 154.06GiB (165425291480 bytes) from device: HIP_ERROR_OutOfMemory\n",
			CategoryCUDAOOM, "cuda-oom/tf-device-alloc-failed", false},
		{"Gaudi's PyTorch bridge cannot allocate device memory",
			progress + traceback +
				"RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::234881024 (224)MB\n",
			CategoryCUDAOOM, "", true},
		{"a ROCm wheel without kernels for the GPU's gfx target",
			traceback + "RuntimeError: HIP error: invalid device function\n" +
				"HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n" +
				"For debugging consider passing AMD_SERIALIZE_KERNEL=3\n",
			CategoryCUDAError, "cuda-error/no-kernel-image", true},
		{"the HSA runtime aborts on a GPU memory access fault",
			progress +
				"Memory access fault by GPU node-2 (Agent handle: 0x55fea5592860) on address 0x7fc133800000. Reason: Page not present or supervisor privilege.\n" +
				"Aborted (core dumped)\n",
			CategoryCUDAError, "cuda-error/hsa-memory-access-fault", true},
		{"the amdgpu driver times out a ring and resets the GPU",
			"[ 2679.300365] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=502589, emitted seq=502591\n" +
				"[ 2679.300601] amdgpu 0000:0c:00.0: amdgpu: GPU reset begin!\n",
			CategoryGPUHardware, "gpu-hardware/amdgpu-gpu-reset", false},
		{"an Instinct GPU reports an uncorrectable hardware error",
			"[Sat Jan  7 14:25:56 2023] amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!\n",
			CategoryGPUHardware, "gpu-hardware/amdgpu-gpu-reset", false},
		{"the ROCm runtime's GPU hang exception under torchrun",
			progress +
				"HW Exception by GPU node-4 (Agent handle: 0x1ebc04e0) reason :GPU Hang\n" +
				"HW Exception by GPU node-4 (Agent handle: 0x2df30600) reason :GPU Hang\n",
			CategoryGPUHardware, "gpu-hardware/hsa-gpu-hang", false},
		{"UCX's mlx5 transport gives up on a peer",
			"[g07r1n14:27251:0:27251] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)\n" +
				"[g07r1n14:27251:0:27251] ib_mlx5_log.c:143  DCI QP 0x10f3a wqe[446]: SEND s-e [rqpn 0x32ca rlid 19352] [inl len 20]\n",
			CategoryCollectiveError, "collective-error/ucx-error", false},
		{"an HCCL task on an Ascend NPU waits past its timeout for a peer",
			progress +
				"        The error from device(chipId:5, dieId:0), serial number is 17, hccl fftsplus task timeout occurred during task execution, stream_id:7, sq_id:7, task_id:9865, stuck notify num:3, timeout:1836.[FUNC:ProcessStarsHcclFftsPlusTimeoutErrorInfo][FILE:device_error_proc.cc][LINE:1657]\n",
			CategoryCollectiveTimeout, "collective-timeout/hccl-task-timeout", false},
		{"a Gaudi HPU another process holds",
			traceback + "RuntimeError: synStatus=20 [Device already acquired] Device acquire failed.\n",
			CategoryCUDAError, "cuda-error/device-busy-unavailable", false},
		// pspot25 (session 22): the ROCm runtime's own check when a binary holds no code
		// object for the GPU (ROCm/hip#2187), before the abort it causes; and a process group
		// that has no backend for an Ascend NPU's tensors (ray-project/ray#49024).
		{"the ROCm runtime finds no code object for the GPU and aborts",
			"2021-03-18 17:08:24.639375: I tensorflow/stream_executor/platform/default/dso_loader.cc:49] Successfully opened dynamic library libamdhip64.so\n" +
				"/src/external/hip-on-vdi/rocclr/hip_code_object.cpp:120: guarantee(false && \"hipErrorNoBinaryForGpu: Coudn't find binary for current devices!\")\n" +
				"Aborted (core dumped)\n",
			CategoryCUDAError, "cuda-error/no-kernel-image", false},
		{"a process group with no backend for Ascend NPU tensors",
			traceback + "RuntimeError: No backend type associated with device type npu\n",
			CategoryConfigError, "config-error/no-collective-backend-for-device", true},
		{"a framework cannot load the HIP runtime",
			traceback + "OSError: libamdhip64.so.6: cannot open shared object file: No such file or directory\n",
			CategoryModuleNotFound, "", true},
		// pspot28 (session 23): an exception of an Ascend NPU's core, as CANN's runtime reports
		// it under torch_npu (vllm-project/vllm-ascend#1972, #8360; hw-native-sys/PTOAS#864);
		// and
		// RCCL out of device memory, which is the memory's, not the library's (an RCCL
		// allocation, NVIDIA/TensorRT-LLM#1670 in NCCL's words); oneCCL failing to start its
		// worker threads (intel/intel-xpu-backend-for-triton#7686).
		{"an Ascend NPU's vector core raises an exception",
			progress +
				"[rank7]:[W723 10:35:57.462407611 compiler_depend.ts:57] Warning: EZ9999: Inner Error!\n" +
				"EZ9999: [PID: 14897] 2025-07-23-10:35:42.381.401 The error from device(chipId:7, dieId:0), serial number is 2, there is an aivec error exception, core id is 5, error code = 0, dump info: pc start: 0x1240441f2000, current: 0x1240441f29f8, vec error info: 0x5b01e58e9c, mte error info: 0xf33dbfea8f, ifu error info: 0x1717333978700, ccu error info: 0xffebd8603fc494df, cube error info: 0, biu error info: 0, aic error mask: 0x6500020bd000288, para base: 0x1241004fe800.[FUNC:ProcessStarsCoreErrorInfo][FILE:device_error_proc.cc][LINE:1434]\n",
			CategoryCUDAError, "cuda-error/ascend-core-exception", false},
		{"an Ascend NPU's AI core fails a kernel task",
			"[ERROR] aclrtSynchronizeStream(stream) failed: 507015\n" +
				"       Kernel task happen error, retCode=0x26, [aicore exception].[FUNC:PreCheckTaskErr][FILE:davinci_kernel_task.cc][LINE:1729]\n",
			CategoryCUDAError, "cuda-error/ascend-core-exception", false},
		{"oneCCL cannot start its worker thread",
			progress + traceback +
				"RuntimeError: oneCCL: exec.cpp:122 start_workers: EXCEPTION: failed to start worker # 0\n",
			CategoryCollectiveError, "collective-error/oneccl-worker-start", false},
		{"RCCL cannot allocate device memory",
			"/longer_pathname_so_that_rpms_can_support_packaging_the_debug_info_for_all_os_profiles/src/out/ubuntu-22.04/22.04/build/rccl/hipify/src/allocator.cc:92 NCCL WARN Cuda failure 'out of memory'\n",
			CategoryCUDAOOM, "cuda-oom/cuda-error-oom", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireNamedAs(t, all, tt.log, tt.category, tt.ruleID, tt.alone) })
	}
}

// TestUnifiedRuntimeOutOfResourcesNamesNoCause: PyTorch on Intel GPUs raises "UR backend
// failed ... (UR_RESULT_ERROR_OUT_OF_RESOURCES)" when the device's or the host's memory ran
// out (intel/ipex-llm#12872, intel/torch-xpu-ops#1324) as well as for a kernel's launch
// (intel/torch-xpu-ops#1761): no category is named at medium or high for it.
func TestUnifiedRuntimeOutOfResourcesNamesNoCause(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "  0%|          | 1/290 [00:04<22:02,  4.58s/it]\nTraceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n" +
		"RuntimeError: UR backend failed. UR backend returns:40 (UR_RESULT_ERROR_OUT_OF_RESOURCES)\n"
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, log)
		if res.RootCause != nil {
			require.Equal(t, ConfidenceLow, res.Confidence, res.RootCause.Title)
		}
	}
}

// requireNamedAs: log is unhealthy for category, named by the rule ruleID with high confidence
// or, when ruleID is "", by the second tier with medium confidence; alone, the second tier
// alone names the category too.
func requireNamedAs(t *testing.T, all []*Rule, log string, category Category, ruleID string, alone bool) {
	t.Helper()
	want, conf := ruleID, ConfidenceHigh
	if ruleID == "" {
		want, conf = SecondTierRuleID+string(category), ConfidenceMedium
	}
	res := analyzeLogs(t, all, log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.NotNil(t, res.RootCause)
	require.Equal(t, category, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, want, res.RootCause.RuleID)
	require.Equal(t, conf, res.Confidence)
	if alone {
		res = analyzeLogs(t, WithoutSpecific(all), log)
		require.NotNil(t, res.RootCause, res.VerdictReason)
		require.Equal(t, category, res.RootCause.Category, res.RootCause.Title)
		require.Equal(t, ConfidenceMedium, res.Confidence)
	}
}

// TestCPUTensorToNCCLIsNoBackendConfig: a cpu tensor handed to an NCCL group fails with
// c10d's "No backend type associated with device type cpu", which is the program's bug
// (mistralai/mistral-inference#252), not the group's configuration: the accelerator form's
// rule leaves it out and it stays a low-confidence exception.
func TestCPUTensorToNCCLIsNoBackendConfig(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	res := analyzeLogs(t, all, "epoch 1 step 10 loss 2.1\nTraceback (most recent call last):\n  File \"train.py\", line 42, in <module>\n    dist.broadcast(length_tensor, src=0)\nRuntimeError: No backend type associated with device type cpu\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.NotNil(t, res.RootCause)
	require.NotEqual(t, "config-error/no-collective-backend-for-device", res.RootCause.RuleID)
	require.NotEqual(t, CategoryConfigError, res.RootCause.Category)
}

// TestOtherVendorsChatterIsNoFailure: the start-up lines of RCCL, the AWS OFI plugin over EFA,
// the amdgpu driver and Gaudi's PyTorch bridge, their advisory WARNs included, are no failure.
func TestOtherVendorsChatterIsNoFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "" +
		// https://github.com/ROCm/rccl/issues/2188
		"node [0] NCCL INFO Kernel version: 6.8.0-136-generic\n" +
		"[2026-08-23 09:56:58] node [0] /app/rccl/build/release/hipify/src/init.cc:213 NCCL WARN Missing \"iommu=pt\" from kernel command line which can lead to system instablity or hang!\n" +
		"node [0] NCCL INFO Dmabuf feature disabled without NCCL_DMABUF_ENABLE=1\n" +
		"node [0] NCCL INFO RCCL version : 2.27.7-HEAD:29e1567\n" +
		"node [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. \n" +
		"node [0] NCCL INFO NET/IB : No device found.\n" +
		// https://github.com/aws/aws-ofi-nccl/issues/889
		"ip-10-36-22-140:86:2501 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 4 nics)\n" +
		"ip-10-36-22-140:86:2501 [0] NCCL INFO NET/OFI Setting FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES not supported.\n" +
		// https://github.com/ublue-os/bazzite/issues/5729
		"Sep 03 23:07:26 bazzite kernel: [drm] Initialized amdgpu 3.64.0 for 0000:12:00.0 on minor 0\n" +
		// https://github.com/huggingface/optimum-habana/issues/1469
		"============================= HABANA PT BRIDGE CONFIGURATION ===========================\n" +
		" PT_HPU_LAZY_MODE = 1\n" +
		// https://github.com/vllm-project/vllm-ascend/issues/541 (torch_npu's own notices)
		"/usr/local/python3.10/lib/python3.10/site-packages/torch_npu/distributed/distributed_c10d.py:112: UserWarning: HCCL doesn't support gather at the moment. Implemented with allgather instead.\n" +
		"    The backend in torch.distributed.init_process_group set to hccl now..\n" +
		"epoch 1 step 10 loss 2.1\nepoch 1 step 20 loss 2.0\nepoch 1 step 30 loss 1.9\n"
	res := analyzeLogs(t, all, log)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}

// TestOFIPluginWithoutEFAIsNoFailure: the AWS OFI plugin failing to load where there is no EFA
// device is a warning, after which NCCL, or the Neuron runtime's CCOM, uses sockets and the
// run trains (aws/aws-k8s-tester#454; aws-neuron/aws-neuron-sdk#851 for CCOM): neither tier
// names it a library failure, though it is the last line of the log.
func TestOFIPluginWithoutEFAIsNoFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, warn := range []string{
		"[1,9]<stdout>:bert-mpi-training-worker-1:22:572 [1] nccl_net_ofi_create_plugin:257 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n",
		"2024-May-21 16:14:20.0020 58091:58701 [0] nccl_net_ofi_init:1415 CCOM WARN NET/OFI aws-ofi-nccl initialization failed\n" +
			"2024-May-21 16:14:20.0020 58091:58701 [0] init.cc:137 CCOM WARN OFI plugin initNet() failed is EFA enabled?\n",
	} {
		log := "  0%|          | 1/290 [00:04<22:02,  4.58s/it]\n" + warn
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, log)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		}
	}
}
