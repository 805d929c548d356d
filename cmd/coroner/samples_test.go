package main

import (
	"bytes"
	"encoding/json"
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

const samplesDir = "../../samples"

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

// tarSample makes a .tar.gz of a sample directory, as collect would.
func tarSample(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(dir)+".tar.gz")
	require.NoError(t, samplegen.TarDir(dir, out, ""))
	return out
}

// TestTarballSameAsDirectory: a bundle reads the same as a directory or a tarball, and the
// same bundle renders to the same bytes every time, in every format (with -short, JSON only:
// report's golden tests render every format twice).
func TestTarballSameAsDirectory(t *testing.T) {
	dir := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	tgz := tarSample(t, dir)
	formats := []string{"json", "md", "html", "text"}
	if testing.Short() {
		formats = formats[:1]
	}
	for _, format := range formats {
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
