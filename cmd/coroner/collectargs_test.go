package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCollectKubectlForms: the job is named as kubectl users name objects, TYPE/NAME or TYPE
// NAME, with the group in either; one job a collect, and a clear error otherwise.
func TestCollectKubectlForms(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pytorchjob/my-job"}, "pytorchjob/my-job"},
		{[]string{"pytorchjob", "my-job"}, "pytorchjob/my-job"},
		{[]string{"pytorchjobs.kubeflow.org", "my-job"}, "pytorchjobs.kubeflow.org/my-job"},
		{[]string{"pytorchjobs.kubeflow.org/my-job"}, "pytorchjobs.kubeflow.org/my-job"},
		{[]string{"job", "x", "-n", "ml"}, "job/x"},
	} {
		var got *CollectOptions
		cmd := NewCmdCollect(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(o *CollectOptions) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		require.NoError(t, cmd.Execute(), "%v", tc.args)
		require.Equal(t, tc.want, got.Target, "%v", tc.args)
	}

	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"collect", "pytorchjob/a", "b"}, `"pytorchjob/a" "b": name the job once`},
		{[]string{"collect", "pytorchjob", "a/b"}, `"a/b": a job's name has no "/"`},
		{[]string{"collect", "pytorchjob", "a", "b"}, "accepts between 1 and 2 arg(s)"},
		{[]string{"collect", "pytorchjob"}, `"pytorchjob": want KIND/NAME or KIND NAME`},
	} {
		requireExit(t, exitUsage, tc.stderr, tc.args...)
	}
}

// TestCollectOutputIsAFile: kubectl's -o json / -o yaml / -o wide is not collect's -o (the
// bundle's file): one line says so, before any cluster is asked, and nothing is written.
func TestCollectOutputIsAFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, o := range []string{"yaml", "json", "wide", "jsonpath={.status}"} {
		requireExit(t, exitUsage, "-o "+o+": collect's -o names the bundle's file", "collect", "pytorchjob", "my-job", "-o", o, "--kubeconfig", filepath.Join(dir, "none"))
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}
