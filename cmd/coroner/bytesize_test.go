package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// sizeFlag is one size flag of one command.
type sizeFlag struct {
	command string // "watch", "rules lint"
	flag    *pflag.Flag
}

// sizeFlags walks the whole command tree and returns every flag that holds a size, so that a
// new size flag is tested without being listed here. A flag whose name says it holds bytes
// but is not of the size type fails the test instead.
func sizeFlags(t *testing.T) []sizeFlag {
	t.Helper()
	var found []sizeFlag
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() == "size" {
				found = append(found, sizeFlag{commandPath(c), f})
			} else if strings.HasSuffix(f.Name, "-bytes") || strings.Contains(f.Name, "cache-max") {
				t.Errorf("%s --%s holds a size but is a %s flag: define it with addSizeFlag", commandPath(c), f.Name, f.Value.Type())
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewCmdRoot(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}))
	return found
}

func TestSizeFlagsFound(t *testing.T) {
	names := map[string]bool{}
	for _, sf := range sizeFlags(t) {
		names[sf.command+" --"+sf.flag.Name] = true
	}
	// The flags that disagreed before they shared one type, as a check that the walk finds them.
	for _, want := range []string{"analyze --max-file-bytes", "analyze --max-line-bytes", "analyze --cache-max",
		"search --cache-max", "collect --max-log-bytes", "collect --max-total-log-bytes", "watch --max-log-bytes",
		"watch --max-bytes", "watch --max-file-bytes", "redact --max-line-bytes"} {
		require.True(t, names[want], "%s is not a size flag; found %v", want, names)
	}
}

func TestSizeFlagsReadEveryForm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"4096", 4096},
		{"64Ki", 64 << 10},
		{"64KiB", 64 << 10},
		{"10Mi", 10 << 20},
		{"10MiB", 10 << 20},
		{"1Gi", 1 << 30},
		{"1GiB", 1 << 30},
		{"1.5Gi", 3 << 29},
		{"500k", 500_000},
		{"10M", 10_000_000},
		{"10MB", 10_000_000},
		{"1G", 1_000_000_000},
		{"1GB", 1_000_000_000},
		{"2048B", 2048},
	} {
		for _, sf := range sizeFlags(t) {
			name := sf.command + " --" + sf.flag.Name + " " + tc.in
			require.NoError(t, sf.flag.Value.Set(tc.in), name)
			require.Equal(t, formatSize(tc.want), sf.flag.Value.String(), name)
		}
	}
}

// TestSizeFlagsRefuseTheSameWay runs each command with a bad size: every flag exits 2 with the
// same one-line message, before anything runs.
func TestSizeFlagsRefuseTheSameWay(t *testing.T) {
	for _, tc := range []struct {
		in, why string
	}{
		{"lots", errBadSize.Error()},
		{"-1", errBadSize.Error()},
		{"10mb", errBadSize.Error()},
		{"10 Mi", errBadSize.Error()},
		{"10ki", errBadSize.Error()},
		{"1.5", "not a whole number of bytes"},
		{"0.3Ki", "not a whole number of bytes"},
		{"9000Pi", "too large"},
		{"", errBadSize.Error()},
	} {
		for _, sf := range sizeFlags(t) {
			args := append(strings.Fields(sf.command), "--"+sf.flag.Name, tc.in)
			var out, errOut bytes.Buffer
			code := Main(t.Context(), args, &IOStreams{Out: &out, ErrOut: &errOut})
			require.Equal(t, exitUsage, code, "%v: %s", args, errOut.String())
			want := fmt.Sprintf("coroner: invalid argument %q for \"--%s\" flag: %s\nRun 'coroner --help' for usage.\n", tc.in, sf.flag.Name, tc.why)
			require.Equal(t, want, errOut.String(), args)
		}
	}
}

func TestSizeFlagsZero(t *testing.T) {
	for _, sf := range sizeFlags(t) {
		err := sf.flag.Value.Set("0")
		if strings.Contains(sf.flag.Usage, "0 for no bound") {
			require.NoError(t, err, sf.command+" --"+sf.flag.Name)
			require.Equal(t, "0", sf.flag.Value.String())
		} else {
			require.EqualError(t, err, "want a size above 0", sf.command+" --"+sf.flag.Name)
		}
	}
}

// TestSizeFlagsHelp: every size flag's help says which forms it reads, and shows its default
// as it would be written on the command line.
func TestSizeFlagsHelp(t *testing.T) {
	for _, sf := range sizeFlags(t) {
		name := sf.command + " --" + sf.flag.Name
		require.Contains(t, sf.flag.Usage, "a size: "+sizeForms, name)
		n, err := parseSize(sf.flag.DefValue)
		require.NoError(t, err, name)
		require.Equal(t, formatSize(n), sf.flag.DefValue, name)
		if n != 0 {
			require.NotEqual(t, "0", sf.flag.DefValue, name)
		}
	}
	var out bytes.Buffer
	require.Equal(t, exitOK, Main(t.Context(), []string{"collect", "--help"}, &IOStreams{Out: &out, ErrOut: &out}))
	require.Regexp(t, `--max-log-bytes size +largest log kept per container.*\(default 10Mi\)`, out.String())
}

func TestSizeFlagBounds(t *testing.T) {
	var line int
	v := &sizeValue[int]{p: &line}
	require.EqualError(t, v.Set("4Gi"), "at most 2147483647")
	require.NoError(t, v.Set("1Gi"))
	require.Equal(t, 1<<30, line)
	var big int64
	require.NoError(t, (&sizeValue[int64]{p: &big}).Set("8Pi"))
	require.Equal(t, int64(8)<<50, big)
	require.Equal(t, "8Pi", formatSize(big))
	require.Equal(t, "1000000", formatSize(1e6))
}
