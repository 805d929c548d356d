package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExpertParallelKernelFailures: the MoE stacks of Megatron-core, Megatron-Bridge and
// TorchTitan move tokens between experts with DeepEP over NVSHMEM, and run FP8/FP4 GEMMs as
// CUTLASS kernels. Their failures are named in their own words at high confidence, with the
// line a user would point at as evidence: DeepEP's dispatch timeouts (DeepEP#158, PR#181,
// Megatron-Bridge#1335), NVSHMEM that cannot connect its transport (DeepEP#38, #17),
// DeepEP's assertion on the queue pairs per peer (sglang#6017, sglang PR#6832), a segfault
// in the banner of tvm_ffi's handler that FlashInfer and CuTe DSL kernels load (vllm#27868,
// vllm#44780), and a CUTLASS kernel built without its arch-specific target (tritonbench
// PR#691, cutlass#2819).
func TestExpertParallelKernelFailures(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	const tb = "Traceback (most recent call last):\n  File \"pretrain_gpt.py\", line 42, in <module>\n    pretrain()\n"
	tests := []struct {
		name, log string
		category  Category
		ruleID    string
		evidence  string
	}{
		{"DeepEP's kernels report which dispatch channel waited",
			progress +
				"DeepEP dispatch forwarder timeout (RDMA meta), channel: 2, RDMA: 1, nvl: 7, src RDMA lane: 3, dst NVL: 7, meta: 0, 0, 0, 0\n" +
				"DeepEP dispatch NVL receiver timeout, channel: 0, RDMA: 0, nvl: 7, src RDMA: 1, src nvl: 1, start: 0, end: 0\n",
			CategoryCollectiveTimeout, "collective-timeout/deepep-dispatch-timeout", "DeepEP dispatch"},
		{"Megatron's flex dispatcher raises DeepEP's CPU-side timeout",
			progress + tb +
				"[rank428]:   File \"/opt/venv/lib/python3.12/site-packages/deep_ep/buffer.py\", line 581, in internode_dispatch\n" +
				"[rank428]:     recv_src_meta, send_rdma_head, send_nvl_head, event = self.runtime.internode_dispatch(\n" +
				"[rank428]: RuntimeError: DeepEP error: timeout (dispatch CPU)\n",
			CategoryCollectiveTimeout, "collective-timeout/deepep-dispatch-timeout", "DeepEP error: timeout (dispatch CPU)"},
		{"NVSHMEM cannot connect its endpoints under DeepEP",
			"Allocating buffer size: 2116.2912 MB ...\n" +
				"/root/nvshmem_src/src/modules/transport/ibgda/ibgda.cpp:3005: non-zero status: 7 ibgda_rc_init2rtr failed on RC #0.\n" +
				"/root/nvshmem_src/src/host/transport/transport.cpp:400: non-zero status: 7 connect EPS failed\n" +
				"/root/nvshmem_src/src/host/init/init.cu:1001: non-zero status: 7\n" +
				"\n" +
				"nvshmem setup connections failed\n",
			CategoryCollectiveError, "collective-error/nvshmem-setup-failed", "nvshmem setup connections failed"},
		{"DeepEP's buffer has fewer queue pairs than channels",
			"Assertion failed: /sgl-workspace/DeepEP/csrc/kernels/internode.cu:483, condition: ibgda_get_state()->num_rc_per_pe >= num_channels\n",
			CategoryConfigError, "config-error/deepep-qps-per-rank", "num_rc_per_pe >= num_channels"},
		{"DeepEP's kernel traps after its timeout: the CUDA error that follows is the trap's (DeepEP#274)",
			"WARN: IB: read failed in ib_roce_get_version_num: Invalid argument\n" +
				"DeepEP dispatch NVL receiver timeout, channel: 6, RDMA: 0, nvl: 0, src NVL: 5, head: 315, tail: 315\n" +
				"DeepEP dispatch NVL receiver timeout, channel: 10, RDMA: 0, nvl: 0, src NVL: 5, head: 300, tail: 300\n" +
				"terminate called after throwing an instance of 'EPException'\n" +
				"  what():  Failed: CUDA error /workspace/DeepEP/csrc/deep_ep.cpp:83 'unspecified launch failure'\n",
			CategoryCollectiveTimeout, "collective-timeout/deepep-dispatch-timeout", "DeepEP dispatch NVL receiver timeout, channel: 6"},
		{"tvm_ffi's handler reports a segfault while a checkpoint is written",
			progress +
				"!!!!!!! Segfault encountered !!!!!!!\n" +
				"  File \"<unknown>\", line 0, in crc32_16bytes(void const*, unsigned long, unsigned int)\n" +
				"  File \"<unknown>\", line 0, in mz_zip_writer_add_mem_ex_v2\n",
			CategoryCrashSignal, "crash-signal/segfault", "Segfault encountered"},
		{"a CUTLASS FP8 kernel built without the arch-specific target",
			progress + "ERROR : Arch conditional MMA instruction used without targeting appropriate compute capability. Aborting.\n",
			CategoryCUDAError, "cuda-error/no-kernel-image", "Arch conditional MMA instruction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tt.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.NotNil(t, res.RootCause)
			require.Equal(t, tt.category, res.RootCause.Category, res.RootCause.Title)
			require.Equal(t, tt.ruleID, res.RootCause.RuleID)
			require.Equal(t, ConfidenceHigh, res.Confidence)
			require.Contains(t, res.RootCause.Evidence[0].Text, tt.evidence)
		})
	}
}

// TestDeepEPTimeoutAfterAnotherRanksFailure: a DeepEP dispatch timeout is a symptom, as
// NCCL's watchdog timeout is: when a rank ran out of GPU memory first, that is the cause.
func TestDeepEPTimeoutAfterAnotherRanksFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	res := analyzeLogs(t, all, progress+
		"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free.\n"+
		"[rank5]: RuntimeError: DeepEP error: timeout (dispatch CPU)\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, res.RootCause.Title)
}

// TestDeepEPTimeoutWithTheSecondTierAlone: DeepEP's host-side timeout raised as a
// RuntimeError is a collective timeout to the second tier too, at medium, not the catch-all
// exception at low.
func TestDeepEPTimeoutWithTheSecondTierAlone(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	res := analyzeLogs(t, WithoutSpecific(all), progress+
		"[rank428]:   File \"/opt/venv/lib/python3.12/site-packages/deep_ep/buffer.py\", line 581, in internode_dispatch\n"+
		"[rank428]: RuntimeError: DeepEP error: timeout (dispatch CPU)\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryCollectiveTimeout, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, ConfidenceMedium, res.Confidence)
}

// TestExpertParallelStackNoticesOfHealthyRuns: what these stacks print on runs that go on is
// no failure: NVSHMEM's INFO lines and its warning that a transport or a device did not come
// up while another did, DeepEP's configuration and buffer allocation, a CUTLASS kernel's
// build flags, the dispatcher's name in a config dump, tvm_ffi's banner quoted in prose.
func TestExpertParallelStackNoticesOfHealthyRuns(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, log := range []string{
		"gpu-node-6:1696:1696 [4] NVSHMEM INFO NVSHMEM_ENABLE_NIC_PE_MAPPING = 0, device 0 setting dev_id = 5\n" +
			"WARN: init failed for remote transport: ibrc\n" +
			"WARN: Failed to initialize all selected devices. Perf may be limited.\n",
		"Allocating buffer size: 2115.111296 MB ...\n" +
			"    moe_flex_dispatcher_backend=\"deepep\",\n" +
			"NVSHMEM_IB_ENABLE_IBGDA=1\n",
		"Note the `!!!!!!! Segfault encountered !!!!!!!` banner is tvm_ffi's signal handler\n",
		"-- Grid Dependency Control (GDC) is enabled for SM100 kernels (required for programmatic dependent launches).\n" +
			"-- CUDA Compilation Architectures: 90a\n",
	} {
		res := analyzeLogs(t, all, log+progress)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s\n%s", log, res.VerdictReason)
	}
}

// TestNVSHMEMInitExitNamesNoTransport: NVSHMEM's last line after any failure of its init
// ("aborting due to error in nvshmemi_init_thread") follows a bootstrap plugin it could not
// load as well as a transport that did not connect (NVSHMEM's troubleshooting FAQ): it is no
// evidence of a transport failure at high confidence.
func TestNVSHMEMInitExitNamesNoTransport(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	res := analyzeLogs(t, all,
		"src/bootstrap/bootstrap_loader.cpp:46: NULL value Bootstrap unable to load 'nvshmem_bootstrap_mpi.so'\n"+
			"    nvshmem_bootstrap_mpi.so: cannot open shared object file: No such file or directory\n"+
			"src/bootstrap/bootstrap.cpp:26: non-zero status: -1 bootstrap_loader_init returned error\n"+
			"src/init/init.cpp:101: non-zero status: 7 bootstrap_init failed\n"+
			"src/init/init.cpp:767: non-zero status: 7 nvshmem_bootstrap failed\n"+
			"src/init/init.cpp:792: non-zero status: 7: Success, exiting... aborting due to error in nvshmemi_init_thread\n")
	if res.RootCause != nil {
		require.NotEqual(t, "collective-error/nvshmem-setup-failed", res.RootCause.RuleID)
	}
}
