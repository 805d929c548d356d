package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(t.Context(), args, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

func TestAnalyzeSummary(t *testing.T) {
	code, out, _ := run(t, "analyze", filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"))
	require.Equal(t, 0, code)
	lines := strings.Split(out, "\n")
	require.Equal(t, "Job:         PyTorchJob ml/train-job", lines[0])
	require.Equal(t, "Status:      Failed 3.5 s after the first error", lines[1])
	require.True(t, strings.HasPrefix(lines[2], "Verdict:     UNHEALTHY"), lines[2])
	require.Equal(t, "Root cause:  f1 [cuda-oom] CUDA out of memory", lines[3])
	require.Contains(t, lines[4], "train-job-worker-4/pytorch")
	require.Contains(t, out, "logs/ml/train-job-worker-4/pytorch.log:")
	require.Contains(t, out, "torch.OutOfMemoryError: CUDA out of memory")
	require.Contains(t, out, "Other findings:")
}

func TestAnalyzeWritesReportByExtension(t *testing.T) {
	dir := t.TempDir()
	for ext, prefix := range map[string]string{".html": "<!DOCTYPE html>", ".md": "# coroner report", ".json": "{\n  \"formatVersion\": 2"} {
		p := filepath.Join(dir, "report"+ext)
		code, out, stderr := run(t, "analyze", filepath.Join(samplesDir, "pytorchjob-no-gpu"), "-o", p)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, "Report:      "+p)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(data), prefix), "%s starts with %q", ext, prefix)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 3, "no temporary files are left behind")
}

func TestExitCodes(t *testing.T) {
	failed := filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank")
	healthy := filepath.Join(samplesDir, "pytorchjob-succeeded")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"fail-on met", []string{"analyze", failed, "--format", "json", "--fail-on", "error"}, 3, ""},
		{"fail-on not met", []string{"analyze", failed, "-q", "--fail-on", "critical"}, 0, ""},
		{"healthy", []string{"analyze", healthy, "--fail-on", "error"}, 0, ""},
		{"bad severity", []string{"analyze", failed, "--fail-on", "fatal"}, 2, "--fail-on"},
		{"bad format", []string{"analyze", failed, "--format", "pdf"}, 2, "unknown --format"},
		{"unknown extension", []string{"analyze", failed, "-o", filepath.Join(t.TempDir(), "r.pdf")}, 2, "cannot tell the format"},
		{"no input", []string{"analyze"}, 2, "requires at least 1 arg"},
		{"unknown flag", []string{"analyze", failed, "--bogus"}, 2, "unknown flag"},
		{"missing file", []string{"analyze", "/nonexistent/bundle.tar.gz"}, 1, "/nonexistent/bundle.tar.gz"},
		{"two bundles", []string{"analyze", failed, healthy}, 2, "give one bundle"},
		{"bad rules dir", []string{"analyze", failed, "--rules", "/nonexistent"}, 1, "--rules /nonexistent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireExit(t, tt.code, tt.stderr, tt.args...) })
	}
}

// requireExit runs coroner and checks its exit code and stderr; an error (exit 1) is one line.
func requireExit(t *testing.T, wantCode int, wantStderr string, args ...string) (stdout string) {
	t.Helper()
	code, stdout, stderr := run(t, args...)
	require.Equal(t, wantCode, code, "%v: %s%s", args, stdout, stderr)
	require.Contains(t, stderr, wantStderr)
	if code == 1 {
		require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	}
	return stdout
}

func TestFailOnStillWritesReport(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	code, _, _ := run(t, "analyze", filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "-o", p, "--fail-on", "warning")
	require.Equal(t, 3, code)
	_, err := os.Stat(p)
	require.NoError(t, err)
}

func TestNothingWrittenOnError(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.tar.gz")
	require.NoError(t, os.WriteFile(bad, []byte("\x1f\x8bnot really gzip"), 0o644))
	out := filepath.Join(dir, "report.html")
	code, _, stderr := run(t, "analyze", bad, "-o", out)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "bad.tar.gz")
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err), "no report on error")
}

func TestRulesCommands(t *testing.T) {
	code, out, _ := run(t, "rules", "list")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "ID  "))
	require.Contains(t, out, "cuda-oom/torch-alloc")

	code, out, _ = run(t, "rules", "lint")
	require.Equal(t, 0, code)
	require.Contains(t, out, "examples: ok")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(`apiVersion: coroner.dev/rules/v1
rules:
- id: mine/oops
  category: cuda-oom
  severity: error
  layer: execution
  title: Oops
  fault: user
  retry: permanent
  match: {patterns: ['CUDA out of memory']}
  examples: {match: ['cuda OOM'], notMatch: ['CUDA out of memory']}
`), 0o644))
	code, out, stderr := run(t, "rules", "lint", dir)
	require.Equal(t, 1, code)
	require.Contains(t, out, `does not match its example "cuda OOM"`)
	require.Contains(t, out, `matches its counter-example "CUDA out of memory"`)
	require.Contains(t, stderr, "2 problem(s)")
}

func TestAnalyzeFlagsFillOptions(t *testing.T) {
	var got *AnalyzeOptions
	cmd := NewCmdAnalyze(&IOStreams{}, func(o *AnalyzeOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"b.tgz", "-o", "r.md", "--fail-on", "warning", "--rules", "a", "--rules", "b", "--max-line-bytes", "4096", "-q"})
	require.NoError(t, cmd.Execute())
	require.Equal(t, []string{"b.tgz"}, got.Inputs)
	require.Equal(t, "r.md", got.Output)
	require.Equal(t, "warning", got.FailOn)
	require.Equal(t, []string{"a", "b"}, got.RuleDirs)
	require.Equal(t, 4096, got.Limits.MaxLineBytes)
	require.True(t, got.Quiet)
}

func TestRunAnalyzeFromOptions(t *testing.T) {
	var out bytes.Buffer
	opts := &AnalyzeOptions{Inputs: []string{filepath.Join(samplesDir, "pytorchjob-succeeded")},
		FailOn: "error", ReportOptions: ReportOptions{Format: "json", Limits: bundle.DefaultLimits()}}
	require.NoError(t, runAnalyze(t.Context(), opts, &IOStreams{Out: &out, ErrOut: &out}), "a healthy job does not meet --fail-on error")
	require.Contains(t, out.String(), `"verdict": "healthy"`)
	require.Contains(t, out.String(), `"rootCause": null`)
}

// TestSummaryOnATerminal: colour on a terminal unless NO_COLOR or --color never, lines that
// fit its width, and every [follows fN] names an id the summary prints.
func TestSummaryOnATerminal(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-module-not-found") // the root cause is f3
	summary := func(ios *IOStreams, args ...string) string {
		var out, errOut bytes.Buffer
		ios.In, ios.Out, ios.ErrOut = strings.NewReader(""), &out, &errOut
		code := Main(t.Context(), append([]string{"analyze", sample, "--no-cache"}, args...), ios)
		require.Equal(t, 0, code, errOut.String())
		return out.String()
	}
	tty := summary(&IOStreams{OutTerminal: true, Width: 80})
	require.Contains(t, tty, "\x1b[1;31mUNHEALTHY\x1b[0m")
	for _, l := range strings.Split(strings.TrimSuffix(tty, "\n"), "\n") {
		plain := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(l, "")
		require.LessOrEqual(t, utf8.RuneCountInString(plain), 80, "fits 80 columns: %q", plain)
	}
	for _, ios := range []*IOStreams{{}, {OutTerminal: true, NoColor: true}} {
		require.NotContains(t, summary(ios), "\x1b[")
	}
	require.NotContains(t, summary(&IOStreams{OutTerminal: true}, "--color", "never"), "\x1b[")
	require.Contains(t, summary(&IOStreams{}, "--color", "always"), "\x1b[")
	requireExit(t, exitUsage, `unknown --color "rainbow"`, "analyze", sample, "--color", "rainbow")

	// Piped, lines are whole; the ids [follows fN] refers to are printed.
	piped := summary(&IOStreams{})
	printed := regexp.MustCompile(`(?m)^(?:Root cause:  |  )(f[0-9]+) `).FindAllStringSubmatch(piped, -1)
	ids := map[string]bool{}
	for _, m := range printed {
		ids[m[1]] = true
	}
	follows := regexp.MustCompile(`\[follows (f[0-9]+)\]`).FindAllStringSubmatch(piped, -1)
	require.NotEmpty(t, follows)
	for _, m := range follows {
		require.True(t, ids[m[1]], "[follows %s] names a printed id:\n%s", m[1], piped)
	}
	require.Contains(t, piped, "Root cause:  f3 [module-not-found] Missing Python module flash_attn\n")
	require.Contains(t, piped, "the same failure on vit-finetune-worker-0\n")
}

// TestRulesShow: rules show prints a rule whole; an unknown id suggests the near ones.
func TestRulesShow(t *testing.T) {
	out := requireExit(t, exitOK, "", "rules", "show", "cuda-oom/torch-alloc")
	for _, want := range []string{"Rule:        cuda-oom/torch-alloc\n", "Category:    cuda-oom\n", "Fault:       user\n", "Retry:       permanent\n",
		"Patterns:\n  ", "Explanation:\n  The PyTorch caching allocator", "Remediation:\n  ", "Matches:\n  torch.OutOfMemoryError: CUDA out of memory.", "Does not match:\n  "} {
		require.Contains(t, out, want)
	}
	requireExit(t, exitError, `coroner: no rule "cuda-oom" (did you mean cuda-oom/`, "rules", "show", "cuda-oom")
	requireExit(t, exitUsage, "requires at least 1 arg", "rules", "show")
	// Every listed rule can be shown.
	list := requireExit(t, exitOK, "", "rules", "list")
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(list), "\n")[1:] {
		ids = append(ids, strings.Fields(l)[0])
	}
	all := requireExit(t, exitOK, "", append([]string{"rules", "show"}, ids...)...)
	for _, id := range ids {
		require.Contains(t, all, "Rule:        "+id+"\n")
	}
}

// TestRulesLintUsesTheDirectorysOwnProgress: a site's silence rule whose progress lines only
// the site's own progress entry recognises lints clean, as analyze --rules DIR runs it (the
// examples used to run among the built-in rules alone, and failed).
func TestRulesLintUsesTheDirectorysOwnProgress(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "site.yaml"), []byte(`apiVersion: coroner.dev/rules/v1
progress:
- id: site/progress-kimg
  patterns: ['\bkimg (?P<step>\d+)\.\d tick\b']
  examples: {match: ['tick 12 kimg 48.0 tick time 1m'], notMatch: ['kimg 48 total']}
rules:
- id: site/rank-stopped
  category: hang
  severity: error
  layer: execution
  title: "{rank} stopped making progress"
  fault: platform
  retry: transient
  match: {silence: {scope: rank, periods: 5}}
  explanation: A rank stopped ticking.
  remediation: Look at the stopped rank.
  examples:
    match:
    - |
      [rank0]: tick 1 kimg 1.0 tick time 1m
      [rank1]: tick 1 kimg 1.0 tick time 1m
      [rank0]: tick 2 kimg 2.0 tick time 1m
      [rank1]: tick 2 kimg 2.0 tick time 1m
      [rank0]: tick 3 kimg 3.0 tick time 1m
      [rank1]: tick 3 kimg 3.0 tick time 1m
      [rank0]: tick 4 kimg 4.0 tick time 1m
      [rank1]: tick 4 kimg 4.0 tick time 1m
      [rank0]: tick 5 kimg 5.0 tick time 1m
      [rank1]: tick 5 kimg 5.0 tick time 1m
      [rank0]: tick 6 kimg 6.0 tick time 1m
      [rank0]: tick 7 kimg 7.0 tick time 1m
      [rank0]: tick 8 kimg 8.0 tick time 1m
      [rank0]: tick 9 kimg 9.0 tick time 1m
      [rank0]: tick 10 kimg 10.0 tick time 1m
`), 0o644))
	code, out, stderr := run(t, "rules", "lint", dir)
	require.Equal(t, 0, code, "%s%s", out, stderr)
	require.Contains(t, out, "examples: ok")
}
