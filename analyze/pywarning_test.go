package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPythonWarningIsNoFailure: the message lines of a warning the warnings module printed,
// between its header and the source line under it, are no failure whatever words they hold;
// a failure after the warning, a warning whose source line never comes, and the header itself
// are read as before.
func TestPythonWarningIsNoFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// jax-ml/jax#22281's cache warning, writing where the job may not: the storage's refusal
	// runs over two lines.
	jaxWarning := "/env/lib/python3.10/site-packages/jax/_src/compiler.py:522: UserWarning: Error writing persistent compilation cache entry for 'jit_train_step': OSError: Forbidden: 403 POST https://storage.googleapis.com/upload/storage/v1/b/my-bucket/o\n" +
		"Permission denied on the bucket.\n" +
		"  warnings.warn(\n"
	// pytorch/pytorch#3601's device warning: the message goes on indented, then the source line.
	torchWarning := "/scratch/pytorch/torch/cuda/__init__.py:87: UserWarning: Found GPU0 Quadro GP100 which requires CUDA_VERSION >= 8000 for\n" +
		"     optimal performance and fast startup time, but your PyTorch was compiled\n" +
		"     with CUDA_VERSION 7500. Please install the correct PyTorch binary\n" +
		"     using instructions from http://pytorch.org\n" +
		"  warnings.warn(error_str % (d, name, 8000, CUDA_VERSION))\n"
	for _, log := range []string{jaxWarning, progress + jaxWarning, torchWarning} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, log)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s\n%s", res.VerdictReason, log)
		}
	}

	// Near misses: what follows the warning's source line is read, and so is what follows a
	// header whose source line never comes.
	oom := "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n" +
		"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.90 GiB total capacity)\n"
	res := analyzeLogs(t, all, torchWarning+oom)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category)
	// The header is read as before: torch's warning that CUDA could not start, which the
	// process then runs on without.
	initFailed := "/env/lib/python3.10/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 802: system not yet initialized (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:109.)\n" +
		"  return torch._C._cuda_getDeviceCount() > 0\n"
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, initFailed)
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	}
	cut := "/x/compiler.py:522: UserWarning: cache entry not written\n" +
		"[E ProcessGroupNCCL.cpp:414] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n"
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, cut)
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryCollectiveTimeout, res.RootCause.Category)
	}
	// A header whose source line never comes, then a logger's error lines and an indented
	// status line: the logger's lines are no warning's message (they carry a header of their
	// own), and an indented line is no source line of the warning.
	logged := "step 1200 loss 0.41\n" +
		"train.py:212: UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.\n" +
		"ERROR: rank 3 lost its connection to the store: no ptx compilation provider is available\n" +
		"ERROR: giving up\n" +
		"  exit status: 1\n"
	res = analyzeLogs(t, WithoutSpecific(all), logged)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryModuleNotFound, res.RootCause.Category)
	require.False(t, isWarningSource([]byte("  3%|▎         | 30/1000 [00:01<00:40, 24.00it/s]")))
}

// TestWarningHeaderGate: a warning's first line is told by its class and the ':' after it,
// whatever precedes it, and a line without "Warning:" in its first 512 bytes never is one
// (isWarningHeader looks for that before the ".py:" every number's '.' may start).
func TestWarningHeaderGate(t *testing.T) {
	long := "/x/" + strings.Repeat("a", 520) + ".py:3: UserWarning: late"
	for _, tt := range []struct {
		line string
		want bool
	}{
		{"/usr/lib/python3/site-packages/torch/nn/modules/module.py:1511: UserWarning: the flag is deprecated", true},
		{`C:\\x\\image.py:13: UserWarning: Failed to load image Python extension`, true},
		{"2026-03-14 train.py:88: FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated", true},
		{"train.py:88: FutureWarning no colon after the class", false},
		{"train.py:88: userWarning: a class starts with a capital", false},
		{"step 81 | loss 3.2569 | lr 3.00e-04 | grad_norm 1.141 | mem 62.9GiB", false},
		{"Warning: train.py:88: the class comes after the file", false},
		{long, false},
	} {
		require.Equal(t, tt.want, isWarningHeader([]byte(tt.line)), tt.line)
	}
}
