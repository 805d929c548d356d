package report_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/report"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

const samplesDir = "../samples"

// TestGoldenReports renders the report of every sample in Markdown, HTML and as the terminal
// summary, as `coroner analyze --format md|html|text` writes them, and compares each with
// testdata/golden/NAME.{md,html,txt}. Refresh with -update and read the diff: it is what a
// reader of the report will see.
func TestGoldenReports(t *testing.T) {
	names := sampleNames(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			r := diagnosed(t, filepath.Join(samplesDir, name))
			for _, f := range []struct{ format, ext string }{{"md", "md"}, {"html", "html"}, {"text", "txt"}} {
				var a, b bytes.Buffer
				require.NoError(t, report.Render(&a, r, f.format))
				require.NoError(t, report.Render(&b, r, f.format))
				require.Equal(t, a.String(), b.String(), "%s: two renders of the same report differ", f.format)
				checkGolden(t, filepath.Join("testdata", "golden", name+"."+f.ext), a.Bytes())
			}
		})
	}
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

// diagnosed is the report of a sample as `coroner analyze` makes it with its default flags
// (built-in rules, redacted text).
func diagnosed(t *testing.T, dir string) *report.Report {
	t.Helper()
	opts := diagnose.DefaultOptions()
	opts.Version, opts.RedactHint = "0.1.0-dev", "--no-redact shows them"
	d, err := diagnose.Run(t.Context(), diagnose.Input{Paths: []string{dir}}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d.Report
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test ./report -update and read the diff")
	require.Equal(t, string(want), string(got), "golden %s differs: run with -update and review the diff", path)
}
