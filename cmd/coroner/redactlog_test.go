package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRedactPlainLogs: a plain log, or standard input, is redacted as text, to -o or to
// standard output, with the summary where it does not mix with the log; the token is the
// one analyze would not show either, and the rest of the log is unchanged.
func TestRedactPlainLogs(t *testing.T) {
	const secret = "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"
	text := "2026-03-14T10:00:00Z export HF_TOKEN=" + secret + "\n2026-03-14T10:00:01Z RuntimeError: boom\n"
	dir := t.TempDir()
	log := filepath.Join(dir, "train.log")
	require.NoError(t, os.WriteFile(log, []byte(text), 0o644))

	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"redact", log}, &IOStreams{Out: &out, ErrOut: &errOut})
	require.Equal(t, exitOK, code, errOut.String())
	require.NotContains(t, out.String(), secret)
	require.Regexp(t, `^2026-03-14T10:00:00Z export HF_TOKEN=\[REDACTED:hf-token:[0-9a-f]{8}\]\n2026-03-14T10:00:01Z RuntimeError: boom\n$`, out.String())
	require.Equal(t, "Redacted 1 secret(s) in "+log+" into standard output\n  hf-token                     1\n", errOut.String())

	dst := filepath.Join(dir, "clean.log")
	out.Reset()
	errOut.Reset()
	code = Main(t.Context(), []string{"redact", "-", "-o", dst, "--report"}, &IOStreams{In: strings.NewReader(text), Out: &out, ErrOut: &errOut})
	require.Equal(t, exitOK, code, errOut.String())
	data, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.NotContains(t, string(data), secret)
	require.Contains(t, string(data), "RuntimeError: boom\n")
	require.Equal(t, "Redacted 1 secret(s) in stdin into "+dst+"\n  hf-token                     1\n", out.String())
	require.Equal(t, "stdin:1\thf-token\n", errOut.String())

	requireExit(t, exitError, "coroner: -o "+log+" is the input "+log+": write it elsewhere", "redact", log, "-o", log)
	requireExit(t, exitUsage, "-o is required", "redact", filepath.Join(samplesDir, "pytorchjob-nan-loss"))
}
