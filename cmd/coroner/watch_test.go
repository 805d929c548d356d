package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/watch"
)

func TestWatchFlags(t *testing.T) {
	var got *WatchOptions
	cmd := NewCmdWatch(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(o *WatchOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-n", "ml", "-n", "team-a,team-b", "--hold-pods", "--max-bytes", "4Gi", "--max-dir-bytes", "40Gi", "--context", "prod"})
	require.NoError(t, cmd.Execute())
	require.Equal(t, []string{"ml", "team-a", "team-b"}, got.Namespaces)
	require.True(t, got.HoldPods)
	require.Equal(t, 10*time.Minute, got.HoldTimeout)
	require.Equal(t, time.Hour, got.PendingAfter)
	require.Equal(t, watch.OnSuccessFailedPods, got.OnSuccess)
	require.Equal(t, "coroner.dev/watch=true", got.JobSelector)
	require.Equal(t, 4, got.MaxCollects)
	require.Equal(t, int64(4<<30), got.MaxBytes)
	require.Equal(t, int64(40<<30), got.MaxDirBytes)
	require.Equal(t, "prod", got.Overrides.CurrentContext)
	require.Empty(t, got.Overrides.Context.Namespace, "-n names watched namespaces, not the kubeconfig's")
	require.True(t, got.LeaderElect)
}

func TestWatchBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--job-selector", "a=("}, `--job-selector "a=(":`},
		{[]string{"--on-success", "sometimes"}, `--on-success "sometimes": want failed-pods, all or none`},
		{[]string{"--max-collects", "0"}, "--max-collects and --concurrency want at least 1"},
		{[]string{"--max-bytes", "lots"}, `invalid argument "lots" for "--max-bytes" flag: want a size such as`},
		{[]string{"--max-dir-bytes", "-1"}, `invalid argument "-1" for "--max-dir-bytes" flag: want a size such as`},
		{[]string{"--exec", "/nonexistent/upload"}, `--exec "/nonexistent/upload": want the path of an executable program`},
		{[]string{"--log-format", "xml"}, `--log-format "xml": want text or json`},
		{[]string{"extra"}, "unknown command"},
	} {
		var out, errOut bytes.Buffer
		code := Main(t.Context(), append([]string{"watch", "--dir", t.TempDir()}, tc.args...), &IOStreams{Out: &out, ErrOut: &errOut})
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut.String())
		require.Contains(t, errOut.String(), tc.want)
	}
}
