package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAbortAgreeingWithItself: a library's error report above "Aborted (core dumped)" is the
// abort's cause; when no rule or term names it, the vocabulary reads only the abort's own words
// ("aborted", "core dumped") and agrees with the abort rule. That is the same evidence twice, not
// a cause: the process aborted, at low confidence, never "likely" at medium.
func TestAbortAgreeingWithItself(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// ROCm/rocBLAS#1339: rocBLAS without a Tensile library for the GPU.
	tensile := "rocBLAS error: Cannot read /opt/rocm-5.4.0/lib/rocblas/library/TensileLibrary.dat: Illegal seek\nAborted (core dumped)\n"
	// ROCm/legacy-rocm-build#3015: the same abort for a gfx1036 iGPU, the library files listed.
	gfx1036 := "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1036\n" +
		" List of available TensileLibrary Files : \n" +
		"\"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat\"\n" +
		"\"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat\"\n" +
		"Aborted (core dumped)\n"
	for _, log := range []string{tensile, gfx1036} {
		for _, res := range analyzeInEitherTier(t, all, log) {
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.NotNil(t, res.RootCause)
			require.Equal(t, CategoryCrashSignal, res.RootCause.Category)
			require.Equal(t, "Aborted (core dumped)", res.RootCause.Evidence[0].Text)
			require.Equal(t, ConfidenceLow, res.Confidence)
		}
	}
	// A run that stops on purpose and finishes is no abort.
	requireNotUnhealthyInEitherTier(t, all, "step 1000 loss 1.20\nAborting training: max_steps reached\nTraining completed. Saving model.\n")
}

// TestAbortSpreadOverLines: an abort printed over lines the abort rule does not cite (absl's
// signal handler and Python's faulthandler, vllm-project/vllm#5458; torchelastic's failure row,
// open-compass/VLMEvalKit#1131 and open-mmlab/mmsegmentation#3106) says only that the process
// aborted, as the one-line form does: crash-signal at low, never "likely" at medium.
func TestAbortSpreadOverLines(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	absl := "*** SIGABRT received at time=1718198436 on cpu 25 ***\n" +
		"PC: @     0x79bbf20969fc  (unknown)  pthread_kill\n" +
		"    @     0x79bbf2042520  (unknown)  (unknown)\n" +
		"[2024-06-12 13:20:36,731 E 78636 81939] logging.cc:343: *** SIGABRT received at time=1718198436 on cpu 25 ***\n" +
		"[2024-06-12 13:20:36,731 E 78636 81939] logging.cc:343: PC: @     0x79bbf20969fc  (unknown)  pthread_kill\n" +
		"[2024-06-12 13:20:36,731 E 78636 81939] logging.cc:343:     @     0x79bbf2042520  (unknown)  (unknown)\n" +
		"Fatal Python error: Aborted\n\n\n"
	elastic := "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n" +
		"======================================================\n" +
		"run.py FAILED\n" +
		"------------------------------------------------------\n" +
		"Failures:\n" +
		"[1]:\n" +
		"  time      : 2025-07-10_21:46:37\n" +
		"  host      : ip-172-31-21-134.ec2.internal\n" +
		"  rank      : 1 (local_rank: 1)\n" +
		"  exitcode  : -6 (pid: 32051)\n" +
		"  error_file: <N/A>\n" +
		"  traceback : Signal 6 (SIGABRT) received by PID 32051\n"
	mmseg := "Root Cause (first observed failure):\n" +
		"[0]:\n" +
		"  time      : 2023-06-14_22:36:10\n" +
		"  host      : neptun.informatik.uni-kl.de\n" +
		"  rank      : 0 (local_rank: 0)\n" +
		"  exitcode  : -6 (pid: 2385922)\n" +
		"  error_file: <N/A>\n" +
		"  traceback : Signal 6 (SIGABRT) received by PID 2385922\n"
	for _, log := range []string{absl, elastic, mmseg} {
		for _, res := range analyzeInEitherTier(t, all, log) {
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.NotNil(t, res.RootCause)
			require.Equal(t, CategoryCrashSignal, res.RootCause.Category, findingsOf(res))
			require.Equal(t, ConfidenceLow, res.Confidence, findingsOf(res))
		}
	}
	// A segmentation fault names a crash of its own: it keeps its confidence.
	res := analyzeLogs(t, all, strings.Replace(elastic, "exitcode  : -6", "exitcode  : -11", 1))
	require.Equal(t, CategoryCrashSignal, res.RootCause.Category, findingsOf(res))
}

// TestAssertionAboveAbort: glibc's assert() prints the condition that failed, then the
// process aborts. The assertion is the cause and its own evidence line (user-code-error at
// low, as any failure no specific rule names), not the abort below it (tmbdev/clstm#130,
// AlexeyAB/darknet#4227). A CUDA kernel's assertion stays cuda-error's, and a run that only
// mentions assertions stays healthy.
func TestAssertionAboveAbort(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	clstm := "pstring.h:43: std::__cxx11::wstring {anonymous}::utf8_to_utf32(std::__cxx11::string): Assertion `w != 0' failed.\n" +
		"./train.sh: line 17: 13912 Aborted                 (core dumped) ./clstmocrtrain train valid\n"
	darknet := " 49: 1336.996094, 1546.744385 avg loss, 0.000000 rate, 1.790012 seconds, 1568 images\n" +
		"darknet: ./src/cuda.c:36: check_error: Assertion `0' failed.\n" +
		"Aborted (core dumped)\n"
	torchrun := "[rank0]: step 200 loss 2.12\n" +
		"python: /workspace/src/tensor_ops.cpp:212: void check_shape(const Tensor&): Assertion `t.dim() == 4' failed.\n" +
		"terminate called after throwing an instance of 'std::runtime_error'\n" +
		"Fatal Python error: Aborted\n" +
		"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 0 (pid: 2231) of binary: /usr/bin/python3\n"
	for _, log := range []string{clstm, darknet, torchrun} {
		assertion := ""
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "Assertion `") {
				assertion = l
			}
		}
		for _, res := range analyzeInEitherTier(t, all, log) {
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.NotNil(t, res.RootCause)
			require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.RootCause.Title)
			require.True(t, strings.HasPrefix(res.RootCause.Title, "Assertion failed: "), res.RootCause.Title)
			require.Equal(t, assertion, res.RootCause.Evidence[0].Text)
			require.Equal(t, ConfidenceLow, res.Confidence)
		}
	}
	device := "/opt/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\n" +
		"RuntimeError: CUDA error: device-side assert triggered\n" +
		"Aborted (core dumped)\n"
	res := analyzeLogs(t, all, device)
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryCUDAError, res.RootCause.Category)
	requireNotUnhealthyInEitherTier(t, all, "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"+
		"step 1000 loss 1.20\nassert_on_overflow: false\nTraining completed. Saving model.\n")
}
