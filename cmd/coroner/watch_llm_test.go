package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/coroner-dev/coroner/narrate"
)

// watch --llm takes analyze's LLM flags with analyze's defaults; only the answer cache differs
// (on the bundle volume, so that a restart asks nothing twice).
func TestWatchLLMFlagsAreAnalyzes(t *testing.T) {
	var w *WatchOptions
	cmd := NewCmdWatch(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(o *WatchOptions) error { w = o; return nil })
	cmd.SetArgs([]string{"--llm"})
	require.NoError(t, cmd.Execute())
	var a *AnalyzeOptions
	acmd := NewCmdAnalyze(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(o *AnalyzeOptions) error { a = o; return nil })
	acmd.SetArgs([]string{"bundle", "--llm"})
	require.NoError(t, acmd.Execute())

	require.True(t, w.LLM.Enabled)
	require.Empty(t, w.LLM.CacheDir, "default: .llm-cache in --dir, chosen when the watcher starts")
	a.LLM.CacheDir = ""
	require.Equal(t, a.LLM, w.LLM)
	require.Equal(t, narrate.DefaultNumCtx, w.LLM.NumCtx)
	require.Equal(t, narrate.DefaultTimeout, w.LLM.Timeout)
	require.NotNil(t, cmd.Flags().Lookup("llm-cache-dir"))
	for _, name := range []string{"llm", "ollama-host", "model", "num-ctx", "llm-max-tokens", "llm-timeout", "llm-per-role", "prompt-dir", "llm-no-cache"} {
		a, w := acmd.Flags().Lookup(name), cmd.Flags().Lookup(name)
		require.NotNil(t, w, "--%s", name)
		require.Equal(t, a.DefValue, w.DefValue, "--%s", name)
	}
	for _, name := range []string{"dry-run-prompt", "llm-replay", "llm-record"} {
		require.Nil(t, cmd.Flags().Lookup(name), "--%s is analyze's alone: a watcher asks a model", name)
	}
}

func TestWatchLLMBadUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--llm", "--num-ctx", "512", "--llm-max-tokens", "1024"}, "--num-ctx 512 leaves no room for a prompt beside --llm-max-tokens 1024"},
		{[]string{"--llm", "--llm-timeout", "0s"}, "--llm-timeout must be positive"},
		{[]string{"--llm", "--prompt-dir", "/nonexistent/prompts"}, "--prompt-dir /nonexistent/prompts: "},
		{[]string{"--llm", "--prompt-dir", file}, "--prompt-dir " + file + ": "},
		{[]string{"--llm", "--ollama-host", "http://[::1"}, "--ollama-host: "},
	} {
		var out, errOut bytes.Buffer
		code := Main(t.Context(), append([]string{"watch", "--dir", t.TempDir(), "--kubeconfig", "/nonexistent"}, tc.args...), &IOStreams{Out: &out, ErrOut: &errOut})
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut.String())
		require.Contains(t, errOut.String(), tc.want)
	}
}

// The Deployment's arguments are the watcher's flags, the commented --llm lines included: a
// site that uncomments them gets a watcher that starts.
func TestDeploymentArgsParse(t *testing.T) {
	data, err := os.ReadFile("../../deploy/watch/40-deployment.yaml")
	require.NoError(t, err)
	text := strings.ReplaceAll(string(data), "# - --", "- --")
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string `json:"args"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(text), &d))
	args := d.Spec.Template.Spec.Containers[0].Args
	require.Equal(t, "watch", args[0])
	require.Contains(t, args, "--llm")
	require.Contains(t, args, "--prompt-dir=/etc/coroner/prompts")
	var w *WatchOptions
	cmd := NewCmdWatch(&IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(o *WatchOptions) error { w = o; return nil })
	cmd.SetArgs(args[1:])
	require.NoError(t, cmd.Execute())
	require.True(t, w.LLM.Enabled)
	require.Equal(t, "/etc/coroner/prompts", w.LLM.PromptDir)
	require.Equal(t, "/var/lib/coroner", w.Dir)
}
