package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEnvironmentFailuresOnlyARuleNames: two environment failures that only a specific rule
// names (TestFailureClassesOfUnseenLogs has those the vocabulary names too): a GPU build in a
// container without the driver says no exception the second tier reads, and a launcher's
// remote python without the package ends in the launcher's ssh line, which the second tier
// reads as the launcher's failure. numpy 2 under a module built for numpy 1 only the second
// tier names, and only when the process failed: torch prints the same block and runs on.
// numpy's older RuntimeWarning of its ABI check is a warning.
func TestEnvironmentFailuresOnlyARuleNames(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)

	res := analyzeLogs(t, all, "/usr/bin/tensorflow_model_server: error while loading shared libraries: libcuda.so.1: cannot open shared object file: No such file or directory\n")
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Equal(t, "cuda-error/driver-library-missing", res.RootCause.RuleID, res.RootCause.Title)
	require.Equal(t, "NVIDIA driver library libcuda.so.1 not available: no GPU driver in the container", res.RootCause.Title)

	res = analyzeLogs(t, all, "host-1: /usr/bin/python: No module named deepspeed.pt\npdsh@id: host-1: ssh exited with exit code 1\n")
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Equal(t, "module-not-found/python-m-no-module", res.RootCause.RuleID, res.RootCause.Title)
	require.Equal(t, ConfidenceHigh, res.Confidence)

	// numpy 2 under a module built for numpy 1: the second tier names the environment when the
	// log ends in it.
	numpy2 := "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.0 as it may crash. To support both 1.x and 2.x\n" +
		"Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n    import cv2\nAttributeError: _ARRAY_API not found\n"
	res = analyzeLogs(t, all, numpy2)
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Equal(t, CategoryModuleNotFound, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, ConfidenceMedium, res.Confidence)

	// torch prints numpy 2's block with the traceback of its import, warns and runs on: a log
	// cut there shows no exception, and the words of the warning name no cause.
	warned := "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.0 as it may crash. To support both 1.x and 2.x\n\n" +
		"Traceback (most recent call last):  File \"/app/train.py\", line 1, in <module>\n    import torch\n" +
		"  File \"/opt/conda/lib/python3.10/site-packages/torch/nn/modules/transformer.py\", line 20, in <module>\n" +
		"    device: torch.device = torch.device(torch._C._get_default_device()),  # torch.device('cpu'),\n" +
		"/opt/conda/lib/python3.10/site-packages/torch/nn/modules/transformer.py:20: UserWarning: Failed to initialize NumPy: _ARRAY_API not found " +
		"(Triggered internally at ../torch/csrc/utils/tensor_numpy.cpp:84.)\n"
	res = analyzeLogs(t, all, warned)
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.NotEqual(t, CategoryModuleNotFound, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, ConfidenceLow, res.Confidence)
	// The same block, then the exception the process died of: numpy is the cause.
	res = analyzeLogs(t, all, warned+"Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    x = t.numpy()\nRuntimeError: Numpy is not available\n")
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Equal(t, CategoryModuleNotFound, res.RootCause.Category, res.RootCause.Title)

	res = analyzeLogs(t, all, "/usr/lib/python3/dist-packages/scipy/special/__init__.py:640: RuntimeWarning: numpy.dtype size changed, may indicate binary incompatibility. Expected 96, got 88\n"+progress)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}

// TestMissingProgramIsAMissingFile: subprocess's error for a program it could not start names
// the path twice; a script or program of the job's own is a missing file, said with a rule's
// confidence, and only a build tool (by name, or in a bin directory) is a missing toolchain.
func TestMissingProgramIsAMissingFile(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	const tb = "Traceback (most recent call last):\n  File \"prep.py\", line 10, in <module>\n" +
		"    subprocess.run([prog], check=True)\nFileNotFoundError: [Errno 2] No such file or directory: "
	for path, rule := range map[string]string{
		"/workspace/scripts/preprocess.sh": "file-not-found/no-such-file",
		"/ckpt/cc":                         "file-not-found/no-such-file",
		"torchrun":                         "file-not-found/no-such-file",
		"ninja":                            "module-not-found/build-toolchain-missing",
		"/usr/local/cuda/bin/nvcc":         "module-not-found/build-toolchain-missing",
	} {
		res := analyzeLogs(t, all, tb+"'"+path+"': '"+path+"'\n")
		require.NotNil(t, res.RootCause, res.VerdictReason)
		require.Equal(t, rule, res.RootCause.RuleID, path)
		require.Equal(t, ConfidenceHigh, res.Confidence, path)
	}
}
