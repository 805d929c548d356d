package compare

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/diagnose"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// run diagnoses an input as `coroner diff` does.
func run(t *testing.T, path string) *Run {
	t.Helper()
	opts := diagnose.DefaultOptions()
	opts.Version = "test"
	d, err := Diagnose(context.Background(), diagnose.Input{Paths: []string{path}}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

func diff(t *testing.T, good, bad string) *Report {
	t.Helper()
	r, err := Compare(context.Background(), run(t, good), run(t, bad), "test", Options{})
	require.NoError(t, err)
	return r
}

// TestPairRanksThePlantedChangesFirst: the bad run differs by its image tag and one env var,
// and its loss turns nan from step 60; each is found, the image first among the spec changes,
// the nan line first among the logs, and BAD diverges there.
func TestPairRanksThePlantedChangesFirst(t *testing.T) {
	r := diff(t, "testdata/good", "testdata/bad")
	assert.Equal(t, "healthy", string(r.Good.Verdict))
	assert.Equal(t, "unhealthy", string(r.Bad.Verdict))
	require.NotNil(t, r.Top())
	assert.Equal(t, "image", r.Top().Kind)
	assert.Contains(t, r.Top().Title, "v2.3.1-hf → registry.local/ml/trainer:v2.4.0-hf")

	spec := r.Section(SectionSpec)
	var kinds []string
	for _, c := range spec {
		kinds = append(kinds, c.Kind+" "+c.Path)
	}
	assert.Equal(t, []string{"image Master/pytorch image", "image Worker/pytorch image",
		"env Master/pytorch env NCCL_ALGO", "env Worker/pytorch env NCCL_ALGO"}, kinds,
		"the job's own names, nodes, uid and times are not differences")

	diag := r.Section(SectionDiagnosis)
	require.NotEmpty(t, diag)
	assert.Equal(t, "verdict", diag[0].Kind)
	assert.Contains(t, kindsOf(diag), "finding-new")

	logs := r.Section(SectionLogs)
	require.NotEmpty(t, logs)
	assert.Equal(t, "template-new", logs[0].Kind)
	assert.Contains(t, logs[0].Template.Text, "'loss': nan")
	assert.Equal(t, 0, logs[0].Template.GoodCount)
	assert.Equal(t, []string{"alpaca-sft-0314-master-0"}, logs[0].Template.Pods)
	require.NotNil(t, r.Divergence)
	assert.Contains(t, r.Divergence.Text, "'loss': nan")
	assert.Equal(t, 12, r.Divergence.Step, "the first nan is the loss line of step 65: 12 loss lines (every 5 steps) came before it")
	assert.Equal(t, 305, r.Divergence.Line, "its first line, though the index made its template at its second")
}

func kindsOf(cs []*Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind)
	}
	return out
}

// TestNoiseIsNoDifference: two healthy runs of one spec, on other days, under other names and
// uids, on other nodes, give an empty diff.
func TestNoiseIsNoDifference(t *testing.T) {
	r := diff(t, "testdata/good", "testdata/good2")
	assert.True(t, r.Empty(), "changes: %v", titles(r.Changes))
	var out bytes.Buffer
	require.NoError(t, RenderText(&out, r))
	assert.Contains(t, out.String(), "No difference")
}

func titles(cs []*Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Title)
	}
	return out
}

// TestSecretEnvIsRedacted: a secret-looking env var's value never reaches the report; the same
// secret in both runs is no change, a changed one is.
func TestSecretEnvIsRedacted(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, token string }{{"a", "hf_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"b", "hf_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}, {"c", "hf_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}} {
		copyWithEnv(t, "testdata/good", filepath.Join(dir, c.name), "HF_TOKEN", c.token)
	}
	r := diff(t, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	var js bytes.Buffer
	require.NoError(t, Render(&js, r, "json"))
	assert.NotContains(t, js.String(), "hf_aaaa")
	assert.NotContains(t, js.String(), "hf_bbbb")
	require.NotNil(t, r.Top())
	assert.Equal(t, "Master/pytorch env HF_TOKEN", r.Top().Path)
	assert.Contains(t, r.Top().Good, "REDACTED")

	same := diff(t, filepath.Join(dir, "a"), filepath.Join(dir, "c"))
	assert.True(t, same.Empty(), "the same secret is no change: %v", titles(same.Changes))
}

// copyWithEnv copies a bundle adding an env var to the job and its pods (the manifest's
// checksums then differ from the files: a warning, not an error).
func copyWithEnv(t *testing.T, src, dst, name, value string) {
	t.Helper()
	require.NoError(t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".yaml") && (strings.Contains(rel, "/Pod/") || strings.Contains(rel, "/PyTorchJob/")) {
			s := string(data)
			for _, ind := range []string{"            ", "      ", "    "} {
				s = strings.ReplaceAll(s, "\n"+ind+"- name: NCCL_DEBUG\n", "\n"+ind+"- name: "+name+"\n"+ind+"  value: "+value+"\n"+ind+"- name: NCCL_DEBUG\n")
			}
			data = []byte(s)
		}
		if rel == "manifest.json" {
			data = []byte(strings.ReplaceAll(string(data), `"files": [`, `"files-unchecked": [`))
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	}))
}

// TestGolden: the JSON contract and the Markdown of the sample pair, byte for byte, twice.
func TestGolden(t *testing.T) {
	r := diff(t, "testdata/good", "testdata/bad")
	for _, f := range []string{"json", "md", "text", "html"} {
		var a, b bytes.Buffer
		require.NoError(t, Render(&a, r, f))
		require.NoError(t, Render(&b, diff(t, "testdata/good", "testdata/bad"), f))
		assert.Equal(t, a.String(), b.String(), "%s: the same runs give the same bytes", f)
		golden := filepath.Join("testdata", "golden", "pair."+f)
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
			require.NoError(t, os.WriteFile(golden, a.Bytes(), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err)
		assert.Equal(t, string(want), a.String(), "%s differs from %s (go test ./compare -update, then read the diff)", f, golden)
	}
}

// TestHTMLEscapesBundleText: text from a bundle cannot become markup in the HTML.
func TestHTMLEscapesBundleText(t *testing.T) {
	r := &Report{Good: Side{Name: "<script>alert(1)</script>"}, Bad: Side{Name: "b"}, Changes: []*Change{
		{Section: SectionSpec, Kind: "env", Path: "x env A", Title: "<img src=x onerror=alert(1)>", Good: "<b>", Bad: "</td>\x1b]2;pwned\a\u202e"},
	}}
	var out bytes.Buffer
	require.NoError(t, Render(&out, r, "html"))
	assert.NotContains(t, out.String(), "<script>alert")
	assert.False(t, strings.ContainsAny(out.String(), "\x1b\a\u202e"), "cat diff.html must not drive the terminal")
	assert.Contains(t, out.String(), `\x1b]2;pwned\a\u202e`)
	assert.NotContains(t, out.String(), "<img src=x")
	assert.Contains(t, out.String(), "default-src 'none'")
}

// TestGTest checks the statistic against values computed by hand.
func TestGTest(t *testing.T) {
	// 30 lines against 10 when the exposures are equal: G = 2(30 ln 1.5 + 10 ln 0.5).
	assert.InDelta(t, 2*(30*math.Log(1.5)+10*math.Log(0.5)), gTest(30, 10, 0.5), 1e-9)
	assert.Zero(t, gTest(10, 10, 0.5), "equal rates")
	assert.InDelta(t, 0.0455, chi2Survival1(4.0), 1e-4, "chi-squared(1) at 4")
	// Holm: the smallest p is multiplied by m, the next by m-1; the step-down stops at the
	// first that fails.
	cs := []*candidate{{p: 0.001}, {p: 0.02}, {p: 0.004}}
	holm(cs, 0.01)
	assert.True(t, cs[0].reportable)
	assert.InDelta(t, 0.003, cs[0].adjusted, 1e-12)
	assert.True(t, cs[2].reportable, "0.004 × 2 < 0.01")
	assert.False(t, cs[1].reportable)
}

// TestRealDDPRuns: logs of a real PyTorch DDP job (Debian's python3-torch 1.13, CPU, gloo,
// three ranks as processes: testdata/ddp/train.py and launch.sh). Two healthy runs give an
// empty diff; a run with rank 2 made slow has its step time first; a run whose data file was
// corrupted has the error it printed first among the logs.
func TestRealDDPRuns(t *testing.T) {
	healthy := "testdata/ddp/healthy1.log"
	same := diff(t, healthy, "testdata/ddp/healthy2.log")
	assert.True(t, same.Empty(), "%v", titles(same.Changes))

	slow := diff(t, healthy, "testdata/ddp/slowrank.log")
	require.NotNil(t, slow.Top())
	assert.Equal(t, "step-time", slow.Top().Kind)
	assert.Greater(t, slow.Top().Progress.Ratio, 2.0, "rank 2 sleeps 0.15 s more a step, the others wait for it")
	assert.Empty(t, titles(slow.Section(SectionLogs)))

	corrupt := diff(t, healthy, "testdata/ddp/corrupt.log")
	assert.Equal(t, "unhealthy", string(corrupt.Bad.Verdict))
	require.NotNil(t, corrupt.Top())
	assert.Equal(t, "template-new", corrupt.Top().Kind)
	assert.Equal(t, "OSError: [Errno <*>] Invalid argument", corrupt.Top().Template.Text)
	assert.Equal(t, "error", corrupt.Top().Template.Level)
}
