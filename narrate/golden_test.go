package narrate

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/report"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/prompts")

const samplesDir = "../samples"

// TestGoldenPrompts keeps the prompts of every sample at the context sizes of small local
// models under review, as `coroner analyze --dry-run-prompt --num-ctx N` prints them: what is
// chosen, in what order, what is shortened or left out, how it reads. Refresh with -update and
// read the diff. Beyond the bytes, every job prompt holds the root cause with its evidence
// line, every prompt fits its context, and a prompt says it was cut exactly when it was.
func TestGoldenPrompts(t *testing.T) {
	for _, name := range sampleNames(t) {
		t.Run(name, func(t *testing.T) {
			d := diagnosed(t, filepath.Join(samplesDir, name))
			for _, numCtx := range []int{2048, 4096, 8192} {
				t.Run(fmt.Sprint(numCtx), func(t *testing.T) {
					prompts, err := Prompts(t.Context(), d.Report, Options{Model: DefaultModel, NumCtx: numCtx, NumPredict: DefaultNumPredict,
						Timeout: DefaultTimeout, Windows: IndexWindows{Index: d.Index}})
					require.NoError(t, err)
					require.NotEmpty(t, prompts)
					var b strings.Builder
					for _, p := range prompts {
						require.LessOrEqual(t, p.Tokens, numCtx-DefaultNumPredict, "the prompt fits the context")
						listing := p.Listing("--num-ctx")
						info := p.Info()
						said := strings.Contains(listing, "\n# shortened to fit: ") || strings.Contains(listing, "\n# left out to fit: ")
						require.Equal(t, info.Cut(), said, "the header says the prompt was cut exactly when it was")
						b.WriteString(listing)
					}
					job := prompts[len(prompts)-1]
					require.Empty(t, job.Role, "the job's prompt comes last")
					requireRootCause(t, d.Report, job.Text())
					checkGolden(t, filepath.Join("testdata", "prompts", fmt.Sprintf("%s-%d.txt", name, numCtx)), []byte(b.String()))
				})
			}
		})
	}
}

// requireRootCause checks that a prompt holds the report's root cause (title, and its first
// evidence line's place and text), or, for a healthy job, the verdict and its reason.
func requireRootCause(t *testing.T, rep *report.Report, prompt string) {
	t.Helper()
	rc := rep.RootCause
	if rc == nil {
		require.Contains(t, prompt, "verdict: "+string(rep.Verdict)+": "+rep.VerdictReason)
		return
	}
	require.Regexp(t, `(?m)^`+regexp.QuoteMeta(rc.ID)+`\b.* \[root cause\] \w+ `+regexp.QuoteMeta(string(rc.Category))+`: `+regexp.QuoteMeta(rc.Title)+`$`, prompt)
	require.NotEmpty(t, rc.Evidence)
	ev := rc.Evidence[0]
	text := strings.Join(strings.Fields(ev.Text), " ")
	require.Contains(t, prompt, "    evidence: "+ev.Location(), "the root cause's evidence line is in the prompt")
	require.Contains(t, strings.Join(strings.Fields(prompt), " "), text[:min(len(text), 80)])
}

// sampleNames are the sample bundles: the directories of ../samples with an expected.json.
func sampleNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(samplesDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(samplesDir, e.Name(), "expected.json")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	require.GreaterOrEqual(t, len(names), 14, "the samples cover the seed documents' cases")
	return names
}

// diagnosed is the diagnosis of a sample as `coroner analyze` makes it with its default flags
// (built-in rules, redacted report); its index serves the prompts' log windows.
func diagnosed(t *testing.T, dir string) *diagnose.Diagnosis {
	t.Helper()
	opts := diagnose.DefaultOptions()
	opts.Version, opts.RedactHint = "0.1.0-dev", "--no-redact shows them"
	d, err := diagnose.Run(t.Context(), diagnose.Input{Paths: []string{dir}}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test ./narrate -update and read the diff")
	require.Equal(t, string(want), string(got), "golden %s differs: run with -update and review the diff", path)
}
