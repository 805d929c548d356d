package compare

import (
	"bytes"
	"regexp"
	"strings"
)

// versionPatterns are how logs print the versions of what a training job runs on, as their
// tools print them: each names the component and captures its version. The examples, from
// public issue threads, are versionPatternExamples (tested).
var versionPatterns = []struct {
	component string
	re        *regexp.Regexp
}{
	// NCCL's banner with NCCL_DEBUG=INFO: "NCCL version 2.14.3+cuda11.8".
	{"nccl", regexp.MustCompile(`(?i)\bnccl version:?\s+v?(\d+\.\d+\.\d+[0-9a-z.+_-]*)`)},
	// nvidia-smi's header and `nvidia-smi -a`: "Driver Version: 580.126.09", "Driver Version : 440.59".
	{"driver", regexp.MustCompile(`(?i)\bdriver version\s*:\s*(\d+\.\d+(?:\.\d+)?)`)},
	// torch.utils.collect_env: "Nvidia driver version: 418.67".
	{"driver", regexp.MustCompile(`(?i)\bnvidia driver version:\s*(\d+\.\d+(?:\.\d+)?)`)},
	// nvidia-smi: "CUDA Version: 13.0" (the newest CUDA the driver supports).
	{"cuda (driver)", regexp.MustCompile(`(?i)\bcuda version\s*:\s*(\d+\.\d+)`)},
	// collect_env: "CUDA used to build PyTorch: 12.1"; ds_report: "torch cuda version ...... 12.1".
	{"cuda (torch)", regexp.MustCompile(`(?i)\b(?:cuda used to build pytorch:|torch cuda version \.+)\s*(\d+\.\d+)`)},
	// collect_env: "PyTorch version: 2.4.1+cu121"; ds_report: "torch version ..... 2.3.0+cu121";
	// pip lists: "[pip3] torch==1.1.0".
	{"torch", regexp.MustCompile(`(?i)(?:\bpytorch version:|\btorch version \.+|\btorch==)\s*(\d+\.\d+(?:\.\d+)?[0-9a-z.+_-]*)`)},
	// ds_report: "deepspeed info ..... 0.15.5+46d7d0d1, 46d7d0d1, patch-1"; DeepSpeed's engine:
	// "DeepSpeed info: version=0.9.5, git-hash=unknown, git-branch=unknown".
	{"deepspeed", regexp.MustCompile(`(?i)\bdeepspeed info(?: \.+ |: version=)(\d+\.\d+\.\d+[0-9a-z.+_-]*)`)},
	// A model config the Trainer logs: "transformers_version": "4.36.0"; transformers-cli env:
	// "- `transformers` version: 4.35.2"; pip lists: "transformers==4.35.2".
	{"transformers", regexp.MustCompile("(?i)(?:\"transformers_version\":\\s*\"|`transformers` version:\\s*|\\btransformers==)(\\d+\\.\\d+\\.\\d+[0-9a-z.+_-]*)")},
}

// versionPatternExamples are lines of public logs each pattern must read, with the version.
var versionPatternExamples = []struct{ source, line, component, version string }{
	{"github.com/NVIDIA/nccl/issues/1212", "(RayTrainWorker pid=355353) NCCL version 2.14.3+cuda11.8", "nccl", "2.14.3+cuda11.8"},
	{"github.com/pytorch/pytorch/pull/111215 (c10d logs the NCCL version)", "node-0:1234:1234 [0] NCCL INFO NCCL version 2.18.1+cuda12.1", "nccl", "2.18.1+cuda12.1"},
	{"github.com/kubernetes-sigs/dra-driver-nvidia-gpu/pull/889", "| NVIDIA-SMI 580.126.09             Driver Version: 580.126.09     CUDA Version: 13.0     |", "driver", "580.126.09"},
	{"github.com/NVIDIA/nvidia-docker/issues/1237", "Driver Version                      : 440.59", "driver", "440.59"},
	{"github.com/torch-points3d/torch-points3d/pull/66", "Nvidia driver version: 418.67", "driver", "418.67"},
	{"github.com/NVIDIA/nvidia-docker/issues/1042", "CUDA Version                        : 10.1", "cuda (driver)", "10.1"},
	{"github.com/kubernetes-sigs/dra-driver-nvidia-gpu/pull/889", "| NVIDIA-SMI 580.126.09             Driver Version: 580.126.09     CUDA Version: 13.0     |", "cuda (driver)", "13.0"},
	{"github.com/pytorch/pytorch/issues/134366", "CUDA used to build PyTorch: 12.1", "cuda (torch)", "12.1"},
	{"github.com/deepspeedai/DeepSpeed/pull/6762", "torch cuda version ............... 12.1", "cuda (torch)", "12.1"},
	{"github.com/pytorch/pytorch/issues/134366", "PyTorch version: 2.4.1+cu121", "torch", "2.4.1+cu121"},
	{"github.com/deepspeedai/DeepSpeed/pull/6762", "torch version .................... 2.3.0+cu121", "torch", "2.3.0+cu121"},
	{"github.com/torch-points3d/torch-points3d/pull/66", "[pip3] torch==1.1.0", "torch", "1.1.0"},
	{"github.com/deepspeedai/DeepSpeed/pull/6762", "deepspeed info ................... 0.15.5+46d7d0d1, 46d7d0d1, patch-1", "deepspeed", "0.15.5+46d7d0d1"},
	{"DeepSpeed's engine banner (deepspeed/runtime/engine.py)", "[2024-01-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=0.9.5, git-hash=unknown, git-branch=unknown", "deepspeed", "0.9.5"},
	{"github.com/vllm-project/vllm/pull/5259 (collect_env lists transformers)", "[pip3] transformers==4.41.2", "transformers", "4.41.2"},
	{"github.com/huggingface/optimum/pull/101 (configs carry transformers_version)", `  "transformers_version": "4.36.0",`, "transformers", "4.36.0"},
}

// versionWords are in every line a pattern reads (lower case): a cheap test before the
// patterns run.
var versionWords = [][]byte{[]byte("version"), []byte("=="), []byte("deepspeed info"), []byte("cuda used to build")}

// mayHaveVersion reports whether a lower-case line may print a version.
func mayHaveVersion(lower []byte) bool {
	for _, w := range versionWords {
		if bytes.Contains(lower, w) {
			return true
		}
	}
	return false
}

// maxVersions bounds the distinct versions of one component kept per log.
const maxVersions = 16

// readVersions adds the versions a line prints to vs (component -> versions).
func readVersions(text []byte, vs map[string]map[string]bool) {
	for _, p := range versionPatterns {
		m := p.re.FindSubmatch(text)
		if m == nil {
			continue
		}
		v := strings.TrimRight(string(m[1]), ".,;:-_")
		set := vs[p.component]
		if set == nil {
			set = map[string]bool{}
			vs[p.component] = set
		}
		if len(set) < maxVersions {
			set[v] = true
		}
	}
}

// versionScore ranks a changed version among the spec's changes: a new driver, NCCL, CUDA or
// torch changes what every collective and kernel runs on, just below a new image (which
// usually brings it); a library above a command line.
var versionScore = map[string]int{
	"driver": 890, "nccl": 880, "cuda (torch)": 875, "cuda (driver)": 870, "torch": 870, "deepspeed": 860, "transformers": 855,
}

// versionFields adds the versions a run's logs printed to its spec fields, by role: "Worker
// version nccl".
func versionFields(r *Run, out map[string]*field) {
	if r == nil || r.Curves == nil || r.Model == nil {
		return
	}
	for i, ls := range r.Model.Logs {
		lc := r.Curves.log(i)
		if lc == nil || len(lc.versions) == 0 {
			continue
		}
		role := ""
		if r.Model.Job != nil {
			if p := r.Model.Pod(ls.Namespace, ls.Pod); p != nil {
				role = r.Model.Job.RoleOf(p)
			}
		}
		prefix := role
		if prefix == "" {
			prefix = "logs"
		}
		for _, comp := range sortedKeys(lc.versions) {
			key := prefix + " version " + comp
			f := out[key]
			if f == nil {
				f = &field{kind: "version", role: role, values: map[string]bool{}, score: versionScore[comp]}
				out[key] = f
			}
			for v := range lc.versions[comp] {
				f.values[v] = true
			}
		}
	}
}
