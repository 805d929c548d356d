package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKernelToolchainFailures: what compiles or loads GPU code while the job runs fails in its
// own words, which a specific rule names at high confidence instead of the catch-all Python
// exception that carries it: NVRTC or the driver's PTX JIT refusing the GPU, no PTX compiler at
// all, FP8 asked of a GPU without it, bitsandbytes' and xFormers' missing native code, and a
// JIT-built op whose ninja build failed in a notebook's traceback.
func TestKernelToolchainFailures(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	const tb = "Traceback (most recent call last):\n  File \"train.py\", line 42, in <module>\n    main()\n"
	for log, rule := range map[string]string{
		tb + "RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)\n\nnvrtc compilation failed: \n": "cuda-error/gpu-code-compile-failed",
		"2024-01-01 10:00:00.000001: E external/xla/xla/stream_executor/cuda/cuda_driver.cc:548] failed to load PTX text as a module: CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid\n" +
			"jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to load PTX text as a module: CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid\n": "cuda-error/gpu-code-compile-failed",
		tb + "jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: No PTX compilation provider is available. Neither ptxas/nvlink nor nvjtlink is available.\n":                    "module-not-found/ptx-compiler-missing",
		tb + "    with te.fp8_autocast(enabled=True):\nAssertionError: Device compute capability 9.x required for FP8 execution.\n":                                              "config-error/fp8-unsupported-gpu",
		tb + "    import bitsandbytes as bnb\nRuntimeError:\n        CUDA Setup failed despite GPU being available. Please run the following command to get more information:\n": "module-not-found/bitsandbytes-native-library",
		tb + "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n     query       : shape=(1, 2, 1, 40) (torch.float16)\n" +
			"`cutlassF` is not supported because:\n    xFormers wasn't build with CUDA support\n": "module-not-found/xformers-without-cuda",
	} {
		res := analyzeLogs(t, all, log)
		require.NotNil(t, res.RootCause, res.VerdictReason)
		require.Equal(t, rule, res.RootCause.RuleID, log)
		require.Equal(t, ConfidenceHigh, res.Confidence, log)
	}
}

// TestKernelToolchainNoticesOfHealthyRuns: the same toolchains print warnings on runs that go
// on: XLA falling back to the driver when its ptxas is old or missing, ptxas's own "fatal" line
// quoted in that warning, an op built with ninja on first use, bitsandbytes >= 0.43 logging at
// import that its library did not load (peft imports it on runs that never use it), Inductor's
// autotuning. None is a failure.
func TestKernelToolchainNoticesOfHealthyRuns(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, log := range []string{
		"2024-01-01 10:00:00.000001: W external/xla/xla/stream_executor/gpu/asm_compiler.cc:230] Falling back to the CUDA driver for PTX compilation; ptxas does not support CC 8.6\n",
		"2024-01-01 10:00:00.000001: W tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc:70] Can't find ptxas binary in ${CUDA_DIR}/bin.  Will back to the GPU driver for PTX -> sass compilation.\n",
		"2024-01-01 10:00:00.000001: W tensorflow/stream_executor/gpu/asm_compiler.cc:235] Your CUDA software stack is old. We fallback to the NVIDIA driver for some compilation. The ptxas error was: ptxas fatal   : Value 'sm_90' is not defined for option 'gpu-name'\n",
		"Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\nEmitting ninja build file /root/.cache/torch_extensions/py310_cu121/fused_adam/build.ninja...\n" +
			"Building extension module fused_adam...\nninja: no work to do.\nLoading extension module fused_adam...\nTime to load fused_adam op: 0.05 seconds\n",
		"Could not load bitsandbytes native library: /opt/conda/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cpu.so: cannot open shared object file: No such file or directory\n",
		"AUTOTUNE mm(1024x1024, 1024x1024)\n  triton_mm_1 0.0123 ms 100.0%\n  mm 0.0150 ms 82.0%\nSingleProcess AUTOTUNE benchmarking takes 1.2 seconds and 0.8 seconds precompiling\n",
	} {
		res := analyzeLogs(t, all, log+progress)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s\n%s", log, res.VerdictReason)
	}
}

// TestStoppedBuildsAndRetriedQuotasAreNotFailures: the frame that runs ninja is in the
// traceback of a build a signal stopped (a preempted job), not only of one that failed; Transformer
// Engine's FP8 check's words printed as a test's skip reason on a run that goes on; a platform's
// quota refusal a launcher retried, after which the job trained. None is named at high.
func TestStoppedBuildsAndRetriedQuotasAreNotFailures(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	steps := "step 100/1000 loss=2.31 lr=1e-4\nstep 200/1000 loss=2.10 lr=1e-4\nstep 300/1000 loss=1.98 lr=1e-4\n"
	for name, log := range map[string]string{
		"preempted build": "Building extension module fused_adam...\nTraceback (most recent call last):\n" +
			"  File \"/usr/lib/python3/dist-packages/torch/utils/cpp_extension.py\", line 1893, in _run_ninja_build\n" +
			"    subprocess.run(\n  File \"/usr/lib/python3.10/subprocess.py\", line 505, in run\n    stdout, stderr = process.communicate(input, timeout=timeout)\n" +
			"KeyboardInterrupt\n",
		"fp8 skip reason": steps + "tests/pytorch/test_fp8.py::test_fp8_gemm SKIPPED (Device compute capability 8.9 or higher required for FP8 execution.)\n" + steps,
		"quota retried": "I1128 10:00:00 launcher.py:88] Submitting job (attempt 1/5)\n" +
			"W1128 10:00:01 launcher.py:95] google.api_core.exceptions.ResourceExhausted: 429 The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus; retrying in 600s\n" +
			"I1128 10:10:01 launcher.py:88] Submitting job (attempt 2/5)\n" + steps,
	} {
		res := analyzeLogs(t, all, log)
		if res.RootCause != nil {
			require.NotEqual(t, ConfidenceHigh, res.Confidence, "%s: %s", name, res.RootCause.RuleID)
			require.NotContains(t, []string{"module-not-found/extension-build-failed", "config-error/fp8-unsupported-gpu", "scheduling/platform-quota"}, res.RootCause.RuleID, name)
		}
	}
}
