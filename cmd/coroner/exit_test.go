package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// TestExitStatusHelp checks that each command's help lists the exit codes that command can
// return, from the one table, and no other command's.
func TestExitStatusHelp(t *testing.T) {
	want := map[string][]int{
		"analyze":              {0, 1, 2, 3, 130, 143},
		"search":               {0, 1, 2, 130, 143},
		"collect":              {0, 1, 2, 130, 143},
		"redact":               {0, 1, 2, 130, 143},
		"rules list":           {0, 1, 2},
		"rules show":           {0, 1, 2},
		"rules lint":           {0, 1, 2},
		"prompts list":         {0, 1, 2},
		"prompts show":         {0, 1, 2},
		"watch":                {0, 1, 2},
		"mcp":                  {0, 1, 2, 130, 143},
		"diff":                 {0, 1, 3, 2, 130, 143},
		"store migrate":        {0, 1, 2},
		"fleet query":          {0, 1, 2},
		"flight-recorder-read": {0, 1, 2},
		"fleet report":         {0, 1, 2},
		"fleet reanalyze":      {0, 1, 2},
		"fleet promote":        {0, 1, 2},
		"fleet seed":           {0, 1, 2},
	}
	root := NewCmdRoot(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	code := regexp.MustCompile(`(?m)^  (\d+) +\S`)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		if !c.Runnable() || c == root || c.Name() == "help" || c.Name() == "completion" || c.HasParent() && c.Parent().Name() == "completion" {
			return
		}
		path := commandPath(c)
		seen[path] = true
		_, section, ok := strings.Cut(c.Long, "EXIT STATUS\n")
		require.True(t, ok, "%s --help has an EXIT STATUS section", path)
		var got []int
		for _, m := range code.FindAllStringSubmatch(section, -1) {
			n := 0
			for _, d := range m[1] {
				n = n*10 + int(d-'0')
			}
			got = append(got, n)
		}
		require.Equal(t, want[path], got, "%s --help: exit codes", path)
	}
	walk(root)
	for path := range want {
		require.True(t, seen[path], "command %s exists", path)
	}
}

// TestNotABundleIsAnError: every command says the same, with the same exit code.
func TestNotABundleIsAnError(t *testing.T) {
	// redact writes a plain log as text, never into a bundle's name; search, like analyze,
	// reads a text file as a plain log.
	f := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(f, []byte("just text\n"), 0o644))
	code, _, stderr := run(t, "redact", f, "-o", filepath.Join(t.TempDir(), "out.tar.gz"))
	require.Equal(t, exitError, code, stderr)
	require.Equal(t, "coroner: "+f+" is not a bundle but a plain log, redacted as text: write it to a log file (-o out.log), or to standard output without -o\n", stderr)
	out := requireExit(t, exitOK, "", "search", f, "text", "--no-cache")
	require.Equal(t, "notes.txt:1 - just text\n1 matching line, 1 hit shown\n", out)
}

// TestOutputPaths: -o never replaces a device, a FIFO or a link.
func TestOutputPaths(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-no-gpu")
	code, _, stderr := run(t, "analyze", sample, "-o", os.DevNull, "--format", "json", "-q")
	require.Equal(t, 0, code, stderr)
	st, err := os.Stat(os.DevNull)
	require.NoError(t, err)
	require.NotZero(t, st.Mode()&os.ModeCharDevice, "/dev/null is still a device")

	dir := t.TempDir()
	target := filepath.Join(dir, "keep.html")
	require.NoError(t, os.WriteFile(target, []byte("keep"), 0o644))
	link := filepath.Join(dir, "report.html")
	require.NoError(t, os.Symlink(target, link))
	for _, args := range [][]string{
		{"analyze", sample, "-o", link},
		{"redact", sample, "-o", link},
	} {
		code, _, stderr = run(t, args...)
		require.Equal(t, exitError, code)
		require.Equal(t, "coroner: "+link+" is a symbolic link: coroner does not replace or write through links; name the file itself\n", stderr)
	}
	data, _ := os.ReadFile(target)
	require.Equal(t, "keep", string(data))
	es, _ := os.ReadDir(dir)
	require.True(t, slices.ContainsFunc(es, func(e os.DirEntry) bool { return e.Name() == "report.html" && e.Type()&os.ModeSymlink != 0 }))
	require.Len(t, es, 2, "no temporary file left")
}
