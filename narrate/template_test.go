package narrate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuiltinTemplates(t *testing.T) {
	ts, err := LoadTemplates(t.Context(), "")
	require.NoError(t, err)
	var names []string
	for _, tmpl := range ts.List() {
		names = append(names, tmpl.Name)
		require.NotEmpty(t, tmpl.Version, "%s.tmpl has a version line", tmpl.Name)
		require.Equal(t, BuiltIn, tmpl.Source)
		require.True(t, strings.HasPrefix(tmpl.Hash, "sha256:"))
	}
	require.Equal(t, []string{"default", "mpijob", "pytorchjob", "role", "trainjob"}, names)
	require.Equal(t, "pytorchjob", ts.For("PyTorchJob").Name)
	require.Equal(t, "mpijob", ts.For("MPIJob").Name)
	require.Equal(t, "default", ts.For("TFJob").Name)
	require.Equal(t, "default", ts.For("").Name)

	// Every built-in renders every sample, and the job templates use every seed variable.
	for _, name := range []string{"pytorchjob-cuda-oom-rank", "mpijob-launcher-failed", "trainjob-dataset-init-failed", "job-disk-full", "pytorchjob-succeeded"} {
		rep, _ := sample(t, name)
		d := compose(base(rep, true), nil, Left{})
		d.Role = "Worker"
		for _, tmpl := range ts.List() {
			system, user, err := tmpl.Render(d)
			require.NoError(t, err, "%s on %s", tmpl.Name, name)
			require.NotEmpty(t, system)
			require.NotEmpty(t, user)
		}
	}
	pt := ts.For("PyTorchJob").Text
	for _, v := range []string{"JobName", "JobStatus", "MasterExpected", "MasterCreatedCount", "WorkerExpected", "WorkerCreatedCount", "MasterDiagnosis", "WorkerDiagnosis", ".ErrorInfo", ".EventInfo", ".LogInfo"} {
		require.Contains(t, pt, v)
	}
	require.Contains(t, ts.For("MPIJob").Text, "LauncherStatus")
}

func TestUserTemplates(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	// The seed document's ConfigMap example, as a user would write it.
	write("pytorchjob.tmpl", "{{/* aegis override, version: 7 */}}\nYou are a Kubernetes + Kubeflow diagnostic expert...\nJob Name: {{ index .Metadata \"JobName\" }}\nJob Status: {{ index .Metadata \"JobStatus\" }}\n{{ .ErrorInfo }}\n")
	write("xgboostjob.tmpl", "XGBoost {{ .Job.Name }}")
	write("notes.txt", "{{ not a template")
	ts, err := LoadTemplates(t.Context(), dir)
	require.NoError(t, err)
	pt := ts.For("PyTorchJob")
	require.Equal(t, "7", pt.Version)
	require.Equal(t, filepath.Join(dir, "pytorchjob.tmpl"), pt.Source)
	require.Equal(t, "xgboostjob", ts.For("XGBoostJob").Name)
	require.Equal(t, "", ts.For("XGBoostJob").Version)
	require.Equal(t, BuiltIn, ts.For("MPIJob").Source, "templates not overridden stay built in")

	rep, _ := sample(t, "pytorchjob-master-oomkilled")
	system, user, err := pt.Render(compose(base(rep, true), nil, Left{}))
	require.NoError(t, err)
	require.Empty(t, system)
	require.True(t, strings.HasPrefix(user, "You are a Kubernetes + Kubeflow diagnostic expert...\nJob Name: train-job\nJob Status: Failed"), user)

	write("pytorchjob.tmpl", "line one\n{{ .Verdict ) }}\n")
	_, err = LoadTemplates(t.Context(), dir)
	require.Error(t, err)
	require.Contains(t, err.Error(), filepath.Join(dir, "pytorchjob.tmpl"))
	require.Contains(t, err.Error(), ":2:", "the error names the line")
	require.NotContains(t, err.Error(), "\n")

	_, err = LoadTemplates(t.Context(), filepath.Join(dir, "missing"))
	require.ErrorContains(t, err, filepath.Join(dir, "missing"))
	require.NotContains(t, err.Error(), "--", "the library names no flag")
}

func TestStrictIndex(t *testing.T) {
	m := map[string]string{"JobName": "a"}
	v, err := strictIndex(m, "JobName")
	require.NoError(t, err)
	require.Equal(t, "a", v)
	_, err = strictIndex(m, "JobNmae")
	require.EqualError(t, err, `no key "JobNmae" (known keys: JobName)`)
	v, err = strictIndex([]string{"x", "y"}, 1)
	require.NoError(t, err)
	require.Equal(t, "y", v)
	_, err = strictIndex([]string{"x"}, 3)
	require.Error(t, err)
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"", 0},
		{"hello", 3},
		{"hello world", 5},
		{"12345", 6},
		{"[rank5]: x", 7},
		{"a\nb", 4},
		{"a    b", 4},
		{"日本", 3},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, EstimateTokens(tt.s), "%q", tt.s)
	}
}

// TestEstimateCoversRealTokenizers: lines of the kinds prompts carry, with the counts the
// tokenizers of Qwen 2.5/3, Llama 3, Mistral 7B and Gemma 3 make of them (measured with their
// published tokenizer.json files; docs/llm.md "What is sent"). Together the lines estimate at
// least what the hungriest tokenizer counts; a single line of rare identifiers and hex may
// count up to a tenth more than its estimate (Mistral on NCCL's init lines), which the lines
// around it make up for.
func TestEstimateCoversRealTokenizers(t *testing.T) {
	tests := []struct {
		s string
		// qwen, llama3, mistral, gemma3
		counts [4]int
	}{
		{"2026-03-14T10:02:11.496213000Z [rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.21 GiB is free. Process 5521 has 77.93 GiB memory in use.",
			[4]int{103, 82, 107, 103}},
		{"[rank0]:[E314 10:12:11.532113000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.",
			[4]int{104, 81, 110, 108}},
		{"dgx-07:815:888 [3] NCCL INFO ncclCommInitRank comm 0x55d4c0a1b2c0 rank 3 nranks 4 cudaDev 3 nvmlDev 3 busId c7000 commId 0x8a3f1c2d4e5b6a79 - Init COMPLETE",
			[4]int{87, 78, 91, 87}},
		{`  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper`,
			[4]int{37, 34, 48, 43}},
		{"2026-03-14T17:31:51.019051676Z resnet-imagenet-master-0:412:485 [0] NCCL INFO Channel 00/02 :   0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15",
			[4]int{114, 89, 100, 99}},
		{"Distinguish the first failure from the failures that only followed from it: when one rank dies, the others time out in NCCL or lose the c10d store, and torchrun's summary may name the wrong rank.",
			[4]int{46, 45, 48, 47}},
	}
	var estimate, most int
	for _, tt := range tests {
		m := slices.Max(tt.counts[:])
		e := EstimateTokens(tt.s)
		require.GreaterOrEqual(t, float64(e), 0.9*float64(m), "%q", tt.s)
		estimate, most = estimate+e, most+m
	}
	require.GreaterOrEqual(t, estimate, most)
}

// A ConfigMap mounted as a directory holds each key as a symbolic link through ..data to a
// directory the kubelet replaces on each update: the templates are read through the links,
// the kubelet's own entries are not templates, and the size bound is on the file read, not on
// the few bytes of its link.
func TestTemplatesOfAMountedConfigMap(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_11_26_13_00_00.1")
	require.NoError(t, os.Mkdir(data, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(data, "pytorchjob.tmpl"), []byte("{{/* site, version: 3 */}}Job {{ .Verdict }}\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")))
	require.NoError(t, os.Symlink("..data/pytorchjob.tmpl", filepath.Join(dir, "pytorchjob.tmpl")))
	ts, err := LoadTemplates(t.Context(), dir)
	require.NoError(t, err)
	pt := ts.For("PyTorchJob")
	require.Equal(t, "3", pt.Version)
	require.Equal(t, filepath.Join(dir, "pytorchjob.tmpl"), pt.Source)
	require.Len(t, ts.List(), 5, "nothing else is taken for a template")

	require.NoError(t, os.WriteFile(filepath.Join(data, "pytorchjob.tmpl"), []byte(strings.Repeat("x", maxTemplateBytes+1)), 0o644))
	_, err = LoadTemplates(t.Context(), dir)
	require.EqualError(t, err, "prompt template "+filepath.Join(dir, "pytorchjob.tmpl")+": more than the 262144 bytes allowed")
}
