package analyze_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/report"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

const samplesDir = "../samples"

// expectation is a sample's expected.json: what a correct analysis must conclude.
type expectation struct {
	Description string          `json:"description"`
	Verdict     analyze.Verdict `json:"verdict"`
	RootCause   *struct {
		Category  analyze.Category `json:"category"`
		Pod       string           `json:"pod"`
		Container string           `json:"container"`
	} `json:"rootCause"`
	AlsoFound []analyze.Category `json:"alsoFound"`
	Evidence  string             `json:"evidence"`
	// VerdictReason, RootRank and RootNode, when set, are what the verdict reason must say
	// and the rank and node the root cause must name.
	VerdictReason string `json:"verdictReason"`
	RootRank      *int   `json:"rootRank"`
	RootNode      string `json:"rootNode"`
}

// sampleNames are the samples with an expected.json.
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

// TestSamples analyzes every sample: the verdict, root cause, rank, node and evidence its
// expected.json names, and its findings as testdata/golden/NAME.json holds them (refresh with
// -update and read the diff).
func TestSamples(t *testing.T) {
	for _, name := range sampleNames(t) {
		t.Run(name, func(t *testing.T) {
			var want expectation
			data, err := os.ReadFile(filepath.Join(samplesDir, name, "expected.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &want))

			r := diagnosed(t, filepath.Join(samplesDir, name))
			require.Equal(t, want.Verdict, r.Verdict, "verdict (%s)", r.VerdictReason)
			require.Contains(t, r.VerdictReason, want.VerdictReason)
			if want.RootCause == nil {
				require.Nil(t, r.RootCause)
			} else {
				require.NotNil(t, r.RootCause, "root cause")
				require.Equal(t, want.RootCause.Category, r.RootCause.Category, "root cause category (%s)", r.RootCause.Title)
				require.Equal(t, want.RootCause.Pod, r.RootCause.Pod, "root cause pod")
				if want.RootCause.Container != "" {
					require.Equal(t, want.RootCause.Container, r.RootCause.Container, "root cause container")
				}
				require.NotEmpty(t, r.RootCause.Evidence)
				if want.RootRank != nil {
					require.NotNil(t, r.RootCause.Rank, "root cause rank")
					require.Equal(t, *want.RootRank, *r.RootCause.Rank, "root cause rank")
				}
				require.Equal(t, want.RootNode, r.RootCause.Node, "root cause node")
				if want.Evidence != "" {
					var texts []string
					for _, e := range r.RootCause.Evidence {
						texts = append(texts, e.Text)
					}
					require.Contains(t, strings.Join(texts, "\n"), want.Evidence, "the root cause's evidence names the line")
				}
			}
			found := map[analyze.Category]bool{}
			for _, f := range r.Findings {
				found[f.Category] = true
			}
			for _, c := range want.AlsoFound {
				require.True(t, found[c], "a finding of category %s", c)
			}
			checkGolden(t, filepath.Join("testdata", "golden", name+".json"), goldenFindings(t, r))
		})
	}
}

// goldenFindings keeps the part of the report a reviewer reads in a golden diff: verdict,
// root cause and findings, without the evidence context lines.
func goldenFindings(t *testing.T, r *report.Report) []byte {
	type finding struct {
		ID, RuleID, Category, Severity, Layer, Title, Pod, Container, Time, SecondaryOf string
		Count                                                                           int
		Evidence                                                                        []string
	}
	var out struct {
		Verdict, VerdictReason string
		RootCause              string
		Findings               []finding
	}
	out.Verdict, out.VerdictReason = string(r.Verdict), r.VerdictReason
	if r.RootCause != nil {
		out.RootCause = r.RootCause.ID + " " + string(r.RootCause.Category) + " " + r.RootCause.Pod + "/" + r.RootCause.Container + " confidence " + string(r.RootCause.Confidence)
	}
	for _, f := range r.Findings {
		g := finding{ID: f.ID, RuleID: f.RuleID, Category: string(f.Category), Severity: f.Severity.String(), Layer: string(f.Layer),
			Title: f.Title, Pod: f.Pod, Container: f.Container, SecondaryOf: f.SecondaryOf, Count: f.Count}
		if f.Time != nil {
			g.Time = f.Time.Format("2006-01-02T15:04:05.000Z07:00")
		}
		for _, e := range f.Evidence {
			g.Evidence = append(g.Evidence, e.Location()+": "+e.Text)
		}
		out.Findings = append(out.Findings, g)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	require.NoError(t, err)
	return append(b, '\n')
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test ./analyze -update and read the diff")
	require.Equal(t, string(want), string(got), "golden %s differs: run with -update and review the diff", path)
}
