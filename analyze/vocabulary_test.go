package analyze

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestVocabularyExamples runs the built-in vocabulary's examples, as `coroner rules lint` does.
func TestVocabularyExamples(t *testing.T) {
	v, err := DefaultVocabulary()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range v.Lint() {
		t.Error(p)
	}
	if v.Examples() < 2*len(v.Categories()) {
		t.Errorf("%d examples for %d categories: each needs a match and a notMatch example", v.Examples(), len(v.Categories()))
	}
}

func TestVocabularyClassify(t *testing.T) {
	v, err := DefaultVocabulary()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, failure, context string
		want                   Category
		terms                  []string
	}{
		// The longer phrase wins the overlap: "CUDA out of memory" is not host memory.
		{"phrase beats word", "RuntimeError: CUDA out of memory while running the model", "", CategoryCUDAOOM, []string{"CUDA out of memory"}},
		// "/dev/shm" speaks against disk-full and for shared memory.
		{"negative term", "OSError: [Errno 28] No space left on device: '/dev/shm/sem.mp-abc'", "", CategoryShmBusError, nil},
		{"killed and exit code", "Killed\nexit code -9", "", CategoryHostOOM, []string{"exit code -9", "Killed"}},
		// Word boundaries: "nan" inside "finance" and "inf" inside "INFO" say nothing.
		{"word boundary", "ValueError: finance INFO", "", CategoryUnknown, nil},
		{"could not tell", "Error: something went wrong", "", CategoryUnknown, nil},
		// The context counts at half weight: alone it does not decide.
		{"context is weaker", "RuntimeError: failed", "unrecognized arguments", CategoryUnknown, nil},
		// A wrapper's echo of the command it ran holds arguments, not the failure's words: the
		// master port of a launch command is no rendezvous failure, an s3:// output path no
		// storage error, the argv of DeepSpeed's launcher no hub download; the words outside the
		// command still count.
		{"called process command", "subprocess.CalledProcessError: Command 'python -m torch.distributed.launch --master_addr algo-1 --master_port 55555 train.py' returned non-zero exit status 1.", "", CategoryUnknown, nil},
		{"called process argv", "subprocess.CalledProcessError: Command '['pyflyte-execute', '--inputs', 's3://bucket/metadata/inputs.pb']' returned non-zero exit status 1.", "", CategoryUnknown, nil},
		{"sagemaker command", "AlgorithmError: ExecuteUserScriptError: Command \"/opt/conda/bin/python train.py --dist_backend nccl --master_port 29500\"", "", CategoryUnknown, nil},
		{"launcher argv", "[ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', '--data_path', 'Dahoas/rm-static'] exits with return code = -9", "", CategoryHostOOM, []string{"return code = -9"}},
		// The same echo when a signal ended the command: the words of its argv (a "--gpu-ids"
		// list, a checkpoint path) say nothing, the signal after it does.
		{"called process signal", "subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', './train.py', '--local_rank=3', '--resume-from=./work_dirs/latest.pth', '--launcher=pytorch', '--gpu-ids', '0', '1', '2', '3']' died with <Signals.SIGKILL: 9>.", "", CategoryHostOOM, []string{"died with <Signals.SIGKILL: 9>"}},
		{"called process signal, words inside", "subprocess.CalledProcessError: Command '['python', 'train.py', '--oom-killer', 'cuda']' died with <Signals.SIGSEGV: 11>.", "", CategoryCrashSignal, []string{"SIGSEGV"}},
		{"words after the command", "subprocess.CalledProcessError: Command 'python train.py' returned non-zero exit status 1. RuntimeError: CUDA out of memory", "", CategoryCUDAOOM, []string{"CUDA out of memory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := v.Classify(tt.failure, tt.context)
			if got.Category != tt.want {
				t.Fatalf("Classify(%q) = %s (best %s %v, runner-up %s %v), want %s", tt.failure, got.Category, got.Best, got.Score, got.RunnerUp, got.RunnerUpScore, tt.want)
			}
			var terms []string
			for _, m := range got.Terms {
				terms = append(terms, m.Text)
			}
			for _, w := range tt.terms {
				if !strings.Contains(strings.Join(terms, "\x00")+"\x00", w+"\x00") {
					t.Errorf("terms %q lack %q", terms, w)
				}
			}
		})
	}
}

func TestLoadVocabularyErrors(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"no apiVersion", "minScore: 3\nminMargin: 1\ncategories: []\n", `v/a.yaml: no apiVersion: a vocabulary file of schema v1 starts with "apiVersion: coroner.dev/vocabulary/v1"`},
		{"rule file", "apiVersion: coroner.dev/rules/v1\nrules: []\n", `v/a.yaml: apiVersion "coroner.dev/rules/v1" is not coroner.dev/vocabulary/v1`},
		{"unknown field", "minScore: 3\nminMargin: 1\nbogus: 1\ncategories: []\n", "bogus"},
		{"bad category", "minScore: 3\nminMargin: 1\ncategories:\n- {category: nope, title: t, fault: user, retry: permanent, terms: [{text: a, weight: 1}]}\n", `category "nope"`},
		{"zero weight", "minScore: 3\nminMargin: 1\ncategories:\n- {category: host-oom, title: t, fault: user, retry: permanent, terms: [{text: a, weight: 0}]}\n", "no weight"},
		{"no threshold", "categories: []\n", "minScore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if !strings.Contains(file, "apiVersion") && tt.name != "no apiVersion" {
				file = "apiVersion: coroner.dev/vocabulary/v1\n" + file
			}
			_, err := LoadVocabulary(fstest.MapFS{"v/a.yaml": {Data: []byte(file)}}, "v")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}
