package watch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The hook in these tests is this test binary: TestMain turns into the hook when
// CORONER_TEST_HOOK names where to write what it received.
func TestMain(m *testing.M) {
	if out := os.Getenv("CORONER_TEST_HOOK"); out != "" {
		env := map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "CORONER_") {
				env[k] = v
			}
		}
		data, _ := json.Marshal(map[string]any{"args": os.Args[1:], "env": env})
		_ = os.WriteFile(out, data, 0o644)
		switch os.Getenv("CORONER_TEST_HOOK_DO") {
		case "fail":
			fmt.Print(strings.Repeat("upload refused ", 1000))
			os.Exit(3)
		case "hang":
			time.Sleep(time.Minute)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestHookGetsThePathAsOneArgumentNeverAShell(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "hook.json")
	t.Setenv("CORONER_TEST_HOOK", out)
	pwned := filepath.Join(dir, "pwned")
	// A path full of shell syntax is one argument, and nothing of it runs.
	bundle := filepath.Join(dir, "ns", "job; touch "+pwned+" $(touch "+pwned+")", "20260314T100215Z.tar.gz")
	self, err := os.Executable()
	require.NoError(t, err)
	msg, err := runHook(t.Context(), self, time.Minute, hookRun{Bundle: bundle, HTML: "/r.html", JSON: "/r.json",
		Env: map[string]string{"NAMESPACE": "ml", "NAME": "train-job", "CATEGORY": "cuda-oom"}})
	require.NoError(t, err, msg)
	var got struct {
		Args []string
		Env  map[string]string
	}
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, []string{bundle}, got.Args)
	require.NoFileExists(t, pwned)
	require.Equal(t, bundle, got.Env["CORONER_BUNDLE"])
	require.Equal(t, "/r.html", got.Env["CORONER_REPORT_HTML"])
	require.Equal(t, "/r.json", got.Env["CORONER_REPORT_JSON"])
	require.Equal(t, "ml", got.Env["CORONER_NAMESPACE"])
	require.Equal(t, "cuda-oom", got.Env["CORONER_CATEGORY"])
}

func TestHookFailureAndTimeout(t *testing.T) {
	t.Setenv("CORONER_TEST_HOOK", filepath.Join(t.TempDir(), "hook.json"))
	self, err := os.Executable()
	require.NoError(t, err)

	t.Setenv("CORONER_TEST_HOOK_DO", "fail")
	out, err := runHook(t.Context(), self, time.Minute, hookRun{Bundle: "/b.tar.gz"})
	require.ErrorContains(t, err, "exit status 3")
	require.True(t, strings.HasPrefix(out, "upload refused upload refused"))
	require.LessOrEqual(t, len(out), maxHookOutput+40, "the output kept is bounded")
	require.Contains(t, out, "more bytes)")

	t.Setenv("CORONER_TEST_HOOK_DO", "hang")
	start := time.Now()
	_, err = runHook(t.Context(), self, 300*time.Millisecond, hookRun{Bundle: "/b.tar.gz"})
	require.EqualError(t, err, "timed out after 300ms")
	require.Less(t, time.Since(start), 30*time.Second, "killed, not waited for")
}
