package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/narrate"
	"github.com/coroner-dev/coroner/report"
)

// TestModelNeverDecidesTheVerdict: a model that contradicts the rules changes neither the
// verdict nor the exit code. Told that a failed job is healthy, analyze --fail-on error still
// exits 3 with the verdict unhealthy (and says the two disagree); told that a healthy job
// failed, it exits 0 with the verdict healthy. The model's answer is only its narrative.
func TestModelNeverDecidesTheVerdict(t *testing.T) {
	tests := []struct {
		name, sample, answer string
		verdict              analyze.Verdict
		modelSaysHealthy     bool
		code                 int
	}{
		{"failed job called healthy", "pytorchjob-master-oomkilled",
			`{"healthy":"Yes","error":"Nothing failed.","analysis":"All good.","solution":["Relax"]}`,
			analyze.VerdictUnhealthy, true, exitFailOn},
		{"healthy job called failed", "pytorchjob-succeeded",
			`{"healthy":"No","error":"The master crashed.","analysis":"Bad.","solution":["Retry"]}`,
			analyze.VerdictHealthy, false, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sample := filepath.Join(samplesDir, tt.sample)
			jsonOut := filepath.Join(t.TempDir(), "r.json")
			code, summary, stderr := analyzeExitWithLLM(t, &fakeLLM{text: tt.answer},
				sample, "--llm", "--model", "tiny", "--fail-on", "error", "-o", jsonOut)
			require.Equal(t, tt.code, code, stderr)

			var r report.Report
			require.NoError(t, json.Unmarshal(mustRead(t, jsonOut), &r))
			require.Equal(t, tt.verdict, r.Verdict, "the verdict follows the rules")
			require.NotNil(t, r.LLM)
			require.NotNil(t, r.LLM.Healthy)
			require.Equal(t, tt.modelSaysHealthy, *r.LLM.Healthy, "the model's answer is kept as its own")
			require.Contains(t, summary, "coroner's verdict (and exit code) follow the rules: "+string(tt.verdict),
				"the summary says the model disagrees and which one counts")

			// The same run without the model ends the same way.
			code, _, stderr = analyzeExitWithLLM(t, nil, sample, "--fail-on", "error", "--format", "json")
			require.Equal(t, tt.code, code, stderr)
		})
	}
}

// analyzeExitWithLLM runs `coroner analyze ARGS` as Main does, with the LLM client replaced,
// and returns the exit code Main would give, the standard output and the standard error.
func analyzeExitWithLLM(t *testing.T, l narrate.LLM, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ios := &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	var opts *AnalyzeOptions
	cmd := NewCmdAnalyze(ios, func(o *AnalyzeOptions) error { opts = o; return nil })
	cmd.SetArgs(append(args, "--llm-cache-dir", t.TempDir(), "--no-cache"))
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	require.NoError(t, cmd.Execute())
	opts.LLM.NewLLM = func(host string) (narrate.LLM, error) { return l, nil }
	err := runAnalyze(t.Context(), opts, ios)
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return exitCode(t.Context(), err), out.String(), errOut.String()
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	return data
}
