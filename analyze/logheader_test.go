package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogMessage takes off the error-level headers of common logging libraries, and nothing
// else: the formats are the libraries' documented defaults.
func TestLogMessage(t *testing.T) {
	for line, want := range map[string]string{
		// Python logging: basicConfig's default, the cookbook's "%(asctime)s - %(name)s - %(levelname)s - %(message)s".
		"ERROR:root:Traceback (most recent call last):":               "Traceback (most recent call last):",
		"CRITICAL:__main__:ValueError: bad shape":                     "ValueError: bad shape",
		"2024-05-01 10:00:00,123 - trainer - ERROR - RuntimeError: x": "RuntimeError: x",
		"[2024-05-01 10:00:00] ERROR: OSError: [Errno 28] No space":   "OSError: [Errno 28] No space",
		"2024-05-01T10:00:00Z ERROR KeyError: 'labels'":               "KeyError: 'labels'",
		// loguru's default.
		"2024-05-01 10:00:00.123 | ERROR    | train:main:42 - ZeroDivisionError: division by zero": "ZeroDivisionError: division by zero",
		// vLLM and SGLang: "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s".
		"ERROR 11-18 18:07:28 engine.py:366]   File \"/x/worker.py\", line 493, in f": "  File \"/x/worker.py\", line 493, in f",
		// DeepSpeed's logger.
		"[2023-03-01 10:00:00,123] [ERROR] [launch.py:321:sigkill_handler] ['python', 'train.py'] exits with return code = 1": "['python', 'train.py'] exits with return code = 1",
		// glog, TensorFlow's C++ logging, PyTorch's c10.
		"E0613 01:17:08.886805   12345 server.cc:123] Check failed: ok":                      "Check failed: ok",
		"2019-06-13 01:17:08.886805: F tensorflow/core/kernels/x.cc:672] Check failed: ok":   "Check failed: ok",
		"[E ProcessGroupNCCL.cpp:737] [Rank 3] Watchdog caught collective operation timeout": "[Rank 3] Watchdog caught collective operation timeout",
		// No error-level header: the line itself.
		"2024-05-01 10:00:00,123 - trainer - WARNING - ValueError: retrying": "2024-05-01 10:00:00,123 - trainer - WARNING - ValueError: retrying",
		"Got an ERROR from the server: ValueError: x":                        "Got an ERROR from the server: ValueError: x",
		"ValueError: ERROR in config":                                        "ValueError: ERROR in config",
		"RuntimeError: FATAL: cannot open":                                   "RuntimeError: FATAL: cannot open",
		"ERRORS: 3":                                                          "ERRORS: 3",
		"step 100 loss 1.23":                                                 "step 100 loss 1.23",
	} {
		require.Equal(t, want, string(logMessage([]byte(line))), line)
	}
}

// FuzzLogMessage: any line gives a suffix of itself, never a panic.
func FuzzLogMessage(f *testing.F) {
	for _, s := range []string{"ERROR:root:x", "[E x.cpp:1] y", "1: E a.cc:2] z", "2024 | ERROR | a:b:1 - c", "[1] [ERROR] [a] b", "ERROR 1 a.py:2]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg := logMessage(line)
		require.True(t, len(msg) <= len(line) && string(line[len(line)-len(msg):]) == string(msg), "%q -> %q", line, msg)
	})
}
