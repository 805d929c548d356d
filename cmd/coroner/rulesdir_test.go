package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRulesDirErrors: a rules directory that is missing or is a file is named, with the flag
// that gave it, in one line (never fs.FS's "open ."), by every command that reads one.
func TestRulesDirErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexistent")
	file := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(file, []byte("apiVersion: coroner.dev/rules/v1\nrules: []\n"), 0o644))
	sample := filepath.Join(samplesDir, "pytorchjob-nan-loss")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", sample, "-q", "--no-cache", "--rules", missing}, "--rules " + missing + ": no such directory"},
		{[]string{"analyze", sample, "-q", "--no-cache", "--rules", file}, "--rules " + file + ": not a directory"},
		{[]string{"analyze", sample, "-q", "--no-cache", "--rules", dir, "--rules", missing}, "--rules " + missing + ": no such directory"},
		{[]string{"rules", "show", "gpu.xid-79", "--rules", missing}, "--rules " + missing + ": no such directory"},
		{[]string{"rules", "list", "--rules", file}, "--rules " + file + ": not a directory"},
		{[]string{"rules", "lint", missing}, missing + ": no such directory"},
		{[]string{"rules", "lint", file}, file + ": not a directory"},
		{[]string{"watch", "--dir", t.TempDir(), "--rules", missing}, "--rules " + missing + ": no such directory"},
	} {
		var out, errOut bytes.Buffer
		code := Main(t.Context(), tc.args, &IOStreams{Out: &out, ErrOut: &errOut})
		require.Equal(t, exitError, code, "%v: %s", tc.args, errOut.String())
		require.Equal(t, "coroner: "+tc.want+"\n", errOut.String(), tc.args)
		require.Empty(t, out.String(), tc.args)
	}
}
