package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSearchOutputIsRedacted: `coroner search BUNDLE HF_TOKEN` printed the token analyze
// masks. Its lines are masked by default, in text and JSON, from a directory and from a
// tarball searched through its cached index, with the same tokens each time; --no-redact
// (analyze's flag) shows them.
func TestSearchOutputIsRedacted(t *testing.T) {
	dir := t.TempDir()
	token := "hf_" + fill(7, 34, alnum)
	pw := "Rb0tPassw0rd" + fill(8, 6, alnum)
	log := "2026-03-14T10:00:00Z starting\n" +
		"2026-03-14T10:00:01Z HF_TOKEN=" + token + " exported\n" +
		"2026-03-14T10:00:02Z + docker login -u robot -p " + pw + " registry.internal\n" +
		"2026-03-14T10:00:03Z Password:\n" +
		"2026-03-14T10:00:03Z " + pw + "\n" +
		"2026-03-14T10:00:04Z loss=2.31 step=10\n"
	p := filepath.Join(dir, "logs/ml/train-worker-0/pytorch.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(log), 0o644))
	tgz := tarSample(t, dir)
	cache := t.TempDir()

	var outs []string
	for _, args := range [][]string{
		{"search", dir, "HF_TOKEN", "--no-cache"},
		{"search", dir, "HF_TOKEN", "--no-cache", "--format", "json"},
		{"search", dir, "--regex", "registry|Password", "-C", "2", "--no-cache"},
		{"search", tgz, "HF_TOKEN", "--cache-dir", cache},
		{"search", tgz, "HF_TOKEN", "--cache-dir", cache}, // from the cached index
	} {
		code, out, stderr := run(t, args...)
		require.Equal(t, 0, code, stderr)
		require.NotContains(t, out, token, args)
		require.NotContains(t, out, pw, args)
		require.Contains(t, out, "[REDACTED:hf-token:", args)
		require.Contains(t, stderr, "secret(s) in these lines were masked", args)
		require.Contains(t, stderr, "--no-redact shows them", args)
		outs = append(outs, out)
	}
	require.Equal(t, outs[3], outs[4], "the same tarball, the same bytes")
	tok := func(s string) string {
		i := strings.Index(s, "[REDACTED:hf-token:")
		return s[i : i+len("[REDACTED:hf-token:12345678]")]
	}
	require.Equal(t, tok(outs[0]), tok(outs[1]), "the same token in text and JSON")
	require.Equal(t, tok(outs[3]), tok(outs[4]))

	code, out, stderr := run(t, "search", dir, "HF_TOKEN", "--no-cache", "--no-redact")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, token, "--no-redact shows the line as it is")
	require.NotContains(t, stderr, "masked")

	code, out, stderr = run(t, "search", dir, "loss", "--no-cache")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "loss=2.31 step=10")
	require.NotContains(t, stderr, "masked", "nothing said when nothing was masked")
}
