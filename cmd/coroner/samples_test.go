package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/internal/samplegen"
	"github.com/coroner-dev/coroner/report"
)

var update = flag.Bool("update", false, "rewrite golden files")

const samplesDir = "../../samples"

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

// analyzeJSON runs `coroner analyze ARGS --format json` and decodes the report.
func analyzeJSON(t *testing.T, stdin io.Reader, args ...string) (*report.Report, []byte) {
	t.Helper()
	var out, errOut bytes.Buffer
	ios := &IOStreams{In: stdin, Out: &out, ErrOut: &errOut}
	code := Main(t.Context(), append([]string{"analyze", "--format", "json"}, args...), ios)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())
	var r report.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	return &r, out.Bytes()
}

func TestSamples(t *testing.T) {
	for _, name := range sampleNames(t) {
		t.Run(name, func(t *testing.T) {
			var want expectation
			data, err := os.ReadFile(filepath.Join(samplesDir, name, "expected.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &want))

			r, _ := analyzeJSON(t, nil, filepath.Join(samplesDir, name))
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
	require.NoError(t, err, "golden file missing: run go test ./cmd/coroner -update and read the diff")
	require.Equal(t, string(want), string(got), "golden %s differs: run with -update and review the diff", path)
}

// tarSample makes a .tar.gz of a sample directory, as collect would.
func tarSample(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(dir)+".tar.gz")
	require.NoError(t, samplegen.TarDir(dir, out, ""))
	return out
}

// TestTarballSameAsDirectory: a bundle reads the same as a directory or a tarball, and the
// same bundle renders to the same bytes every time, in every format.
func TestTarballSameAsDirectory(t *testing.T) {
	dir := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	tgz := tarSample(t, dir)
	for _, format := range []string{"json", "md", "html", "text"} {
		render := func(in string) string {
			var out, errOut bytes.Buffer
			code := Main(t.Context(), []string{"analyze", "--format", format, in}, &IOStreams{Out: &out, ErrOut: &errOut})
			require.Equal(t, 0, code, errOut.String())
			return out.String()
		}
		a, b := render(dir), render(dir)
		require.Equal(t, a, b, "%s: two renders of the same bundle differ", format)
		c := render(tgz)
		c = strings.ReplaceAll(c, "pytorchjob-cuda-oom-rank.tar.gz", "pytorchjob-cuda-oom-rank")
		require.Equal(t, a, c, "%s: the tarball and the directory give different reports", format)
	}
}

func TestGoldenReports(t *testing.T) {
	for _, name := range []string{"pytorchjob-cuda-oom-rank", "pytorchjob-no-gpu"} {
		for _, format := range []string{"md", "html"} {
			var out, errOut bytes.Buffer
			code := Main(t.Context(), []string{"analyze", "--format", format, filepath.Join(samplesDir, name)}, &IOStreams{Out: &out, ErrOut: &errOut})
			require.Equal(t, 0, code, errOut.String())
			checkGolden(t, filepath.Join("testdata", "golden", name+"."+format), out.Bytes())
		}
	}
}

// TestPlainLogTriagedLikeBundle: the failing rank's log, pasted on its own (file or stdin),
// gives the same root cause category and evidence line as inside the bundle.
func TestPlainLogTriagedLikeBundle(t *testing.T) {
	bundleReport, _ := analyzeJSON(t, nil, filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"))
	require.NotNil(t, bundleReport.RootCause)
	log := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank", bundleReport.RootCause.Evidence[0].File)

	fromFile, _ := analyzeJSON(t, nil, log)
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	fromStdin, _ := analyzeJSON(t, bytes.NewReader(data), "-")
	for _, r := range []*report.Report{fromFile, fromStdin} {
		require.Equal(t, analyze.VerdictUnhealthy, r.Verdict)
		require.NotNil(t, r.RootCause)
		require.Equal(t, bundleReport.RootCause.Category, r.RootCause.Category)
		require.Equal(t, bundleReport.RootCause.Evidence[0].Line, r.RootCause.Evidence[0].Line)
		require.Equal(t, bundleReport.RootCause.Evidence[0].Text, r.RootCause.Evidence[0].Text)
	}
	require.Equal(t, "pytorch", fromFile.RootCause.Pod, "a plain file is named after itself")
	require.Equal(t, "stdin", fromStdin.RootCause.Pod)
}

func TestPlainLogWithoutTimestamps(t *testing.T) {
	r, _ := analyzeJSON(t, nil, filepath.Join(samplesDir, "logs", "train-plain.log"))
	require.Equal(t, analyze.VerdictUnhealthy, r.Verdict)
	require.Equal(t, analyze.CategoryCUDAOOM, r.RootCause.Category)
}
