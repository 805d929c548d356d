package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"html"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/report"
	"github.com/coroner-dev/coroner/watch"
)

// Issue 22: when the window before an evidence line starts inside a PEM block it holds the
// key's body and END line but not its BEGIN line, and nothing was masked: 19 of 26 key lines
// went into the prompt, some into the report, while `coroner redact` masked all 26. Windows
// are masked with the lines above them now, and a base64 run that ends in a key's END line is
// a key whatever the window shows.
func TestKeyAboveEvidenceIsMaskedInEveryOutput(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	block := strings.Split(strings.TrimSuffix(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "\n"), "\n")
	body := block[1 : len(block)-1]
	require.GreaterOrEqual(t, len(body), 25)

	var log strings.Builder
	for i := range 30 {
		log.WriteString("2026-03-14T10:00:00Z step " + strings.Repeat("x", i%3) + " loss 0.5\n")
	}
	log.WriteString("2026-03-14T10:00:01Z loaded the deploy key:\n")
	for _, l := range block {
		log.WriteString("2026-03-14T10:00:01Z " + l + "\n")
	}
	log.WriteString(oomLine) // the evidence, right below the key's END line
	dir := t.TempDir()
	for name, data := range map[string]string{
		"manifest.json":                hostileManifest,
		"resources/core/Pod/ml/p.yaml": hostilePod,
		"logs/ml/p/c.log":              log.String(),
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	noKey := func(what, out string) {
		t.Helper()
		for i, l := range body {
			require.NotContains(t, out, l, "%s shows key line %d of %d", what, i+1, len(body))
		}
	}

	out := t.TempDir()
	for _, ext := range []string{"json", "md", "html"} {
		p := filepath.Join(out, "report."+ext)
		code, _, stderr := run(t, "analyze", dir, "-o", p)
		require.Equal(t, 0, code, stderr)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		text := string(data)
		if ext == "html" {
			text = html.UnescapeString(text)
		}
		if ext == "json" {
			text = strings.ReplaceAll(text, `\u002b`, "+")
		}
		require.Contains(t, text, "CUDA out of memory")
		require.Contains(t, text, "REDACTED:private-key:", "the window shows the key masked (%s)", ext)
		noKey("the "+ext+" report", text)
	}

	// The watcher diagnoses through the same pipeline (diagnose.Run): its report is the one
	// analyze writes, redacted the same way (issue 21: it used to skip the redaction).
	rs, err := loadRuleSet(nil, "all")
	require.NoError(t, err)
	rep, err := watch.Analyze(t.Context(), dir, rs, bundle.DefaultLimits(), analyze.DefaultStuckAfter, version)
	require.NoError(t, err)
	var watched bytes.Buffer
	require.NoError(t, report.Render(&watched, rep, "json"))
	analyzed, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	// Only the hint of analyze's warning is analyze's own: the watcher has no --no-redact.
	require.Equal(t, strings.Replace(string(analyzed), "; --no-redact shows them", "", 1), watched.String(),
		"the watcher's report is analyze's")

	code, prompt, stderr := run(t, "analyze", dir, "--dry-run-prompt")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, prompt, "CUDA out of memory", "the window is in the prompt")
	require.Contains(t, prompt, "[REDACTED:private-key:")
	noKey("the prompt", prompt)

	// The whole log, redacted as a stream, masks every line of the key as before.
	red := filepath.Join(out, "red.tar.gz")
	code, _, stderr = run(t, "redact", dir, "-o", red)
	require.Equal(t, 0, code, stderr)
	redLog := readTarEntry(t, red, "logs/ml/p/c.log")
	noKey("the redacted bundle", redLog)
	require.Equal(t, len(block), strings.Count(redLog, "[REDACTED:private-key:"), "each line of the key is one token")
}

func readTarEntry(t *testing.T, p, name string) string {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		require.NoError(t, err, "no %s in %s", name, p)
		if hdr.Name == name {
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			return string(data)
		}
	}
}
