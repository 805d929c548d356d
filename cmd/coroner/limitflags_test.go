package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
)

// TestEveryLimitHasAFlag: each limit a library may name (bundle.LimitKind) is raised by a flag
// that a command has, and the CLI says which.
func TestEveryLimitHasAFlag(t *testing.T) {
	flags := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, n := range []string{"max-file-bytes", "max-total-bytes", "max-entries", "max-line-bytes", "max-resource-bytes", "max-expansion", "max-total-log-bytes"} {
			if c.LocalFlags().Lookup(n) != nil {
				flags[n] = true
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewCmdRoot(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}))
	for k := bundle.LimitFileBytes; k <= bundle.LimitLogBudget; k++ {
		f, ok := limitFlags[k]
		require.True(t, ok, "no flag raises the %s", k)
		require.True(t, flags[f], "--%s raises the %s but no command has it", f, k)
		require.Equal(t, " (raise it with --"+f+")", raiseHint(k))
	}
	require.Empty(t, raiseHint(0))
}

// TestGapsSayWhichFlagRaisesTheirLimit: a log skipped because the collect's log budget was
// spent says so in the manifest's words, and the CLI adds the flag.
func TestGapsSayWhichFlagRaisesTheirLimit(t *testing.T) {
	var errOut bytes.Buffer
	printGaps(&IOStreams{ErrOut: &errOut}, []bundle.Gap{
		{Step: "logs", Object: "Pod ml/p-0 c", Message: "skipped: the total log budget of 102400 bytes is spent", Limit: bundle.LimitLogBudget},
		{Step: "get", Object: "Node n1", Message: "forbidden"},
	})
	require.Equal(t, "warning: logs Pod ml/p-0 c: skipped: the total log budget of 102400 bytes is spent (raise it with --max-total-log-bytes)\n"+
		"warning: get Node n1: forbidden\n", errOut.String())
}

// TestSearchQueryErrorsNameTheFlag: the index says what a query cannot say; search says
// which flag can.
func TestSearchQueryErrorsNameTheFlag(t *testing.T) {
	sample := filepath.Join(samplesDir, "pytorchjob-nan-loss")
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"fo*o"}, `"fo*o": wildcards other than a trailing * are not supported (use --regex)` + "\n"},
		{[]string{"..."}, `"..." holds no word to search for (use --regex)` + "\n"},
		{[]string{"--regex", "("}, "coroner: --regex: error parsing regexp: missing closing ): `(`\n"},
	} {
		code, _, stderr := run(t, append([]string{"search", sample, "--no-cache"}, tt.args...)...)
		require.Equal(t, exitUsage, code, "%v: %s", tt.args, stderr)
		require.Contains(t, stderr, tt.stderr, tt.args)
	}
}
