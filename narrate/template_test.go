package narrate

import (
	"os"
	"path/filepath"
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
		d := compose(base(rep, FindingsDiagnoses(rep)), nil, nil)
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
	system, user, err := pt.Render(compose(base(rep, FindingsDiagnoses(rep)), nil, nil))
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
	require.ErrorContains(t, err, "--prompt-dir")
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
		{"hello", 2},
		{"hello world", 4},
		{"12345", 2},
		{"[rank5]: x", 6},
		{"a\nb", 3},
		{"日本", 2},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, EstimateTokens(tt.s), "%q", tt.s)
	}
	// A real log line: at least one token per 4 bytes, as tokenizers of instruction models make.
	line := "[rank0]:[E314 10:12:11.532113000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4812, OpType=ALLREDUCE)"
	require.GreaterOrEqual(t, EstimateTokens(line), len(line)/4)
}
