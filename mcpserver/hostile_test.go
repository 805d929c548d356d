package mcpserver

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/samplegen"
)

// tarGz writes a tarball of entries (name, body; a "->" in the body makes a link).
func tarGz(t *testing.T, p string, entries ...[2]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e[0], Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e[1]))}
		if target, ok := strings.CutPrefix(e[1], "->"); ok {
			h = &tar.Header{Name: e[0], Typeflag: tar.TypeSymlink, Linkname: target}
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte(e[1]))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
}

// TestHostileBundlesAreToolErrors: bundles broken in the ways strangers' bundles are give a
// tool error naming the problem, and the server goes on serving the bundles it has.
func TestHostileBundlesAreToolErrors(t *testing.T) {
	root := t.TempDir()
	log := "2026-03-14T10:00:00Z hello\n"
	tarGz(t, filepath.Join(root, "escape.tar.gz"), [2]string{"manifest.json", `{"formatVersion":1}`}, [2]string{"../../etc/x.log", log})
	tarGz(t, filepath.Join(root, "link.tar.gz"), [2]string{"manifest.json", `{"formatVersion":1}`}, [2]string{"logs/ml/p/c.log", "->/etc/passwd"})
	tarGz(t, filepath.Join(root, "badmanifest.tar.gz"), [2]string{"manifest.json", `{"formatVersion":`}, [2]string{"logs/ml/p/c.log", log})
	require.NoError(t, os.WriteFile(filepath.Join(root, "truncated.tar.gz"), []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "empty", "logs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "empty", "manifest.json"), []byte(`{"formatVersion":99}`), 0o644))
	copyDir(t, sample, filepath.Join(root, "good"))
	opts := testOptions(t)
	opts.Roots = []string{root}
	c := connect(t, nil, opts)
	var d OpenOut
	c.call("open_bundle", map[string]any{"path": "good"}, &d)
	for _, p := range []string{"escape.tar.gz", "link.tar.gz", "badmanifest.tar.gz", "truncated.tar.gz", "empty"} {
		msg := c.fail("open_bundle", map[string]any{"path": p})
		require.Contains(t, msg, p, "the error names the bundle")
		var list ListOut
		c.call("list_bundles", nil, &list)
		require.Len(t, list.Bundles, 6, "the server goes on")
		require.True(t, list.Bundles[0].Open)
		require.Equal(t, "good", list.Bundles[0].Bundle)
	}
	var diag DiagnosisOut
	c.call("diagnosis", map[string]any{}, &diag)
	require.Equal(t, "cuda-oom", diag.RootCause.Category, "the one open bundle is still served")
}

// TestOpenHonoursCancellation: a client that gives up on open_bundle of a large bundle stops
// the diagnosis; nothing is left open and the bundle can be opened again.
func TestOpenHonoursCancellation(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a large bundle")
	}
	root := t.TempDir()
	big := filepath.Join(root, "big")
	require.NoError(t, samplegen.Generate(big, 32, 96<<20, 7))
	opts := testOptions(t)
	opts.Roots = []string{root}
	c := connect(t, nil, opts)
	real, err := filepath.EvalSymlinks(big)
	require.NoError(t, err)
	opening := func() bool {
		c.srv.mu.Lock()
		defer c.srv.mu.Unlock()
		return c.srv.opening[real]
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "open_bundle", Arguments: map[string]any{"path": "big"}})
		done <- err
	}()
	for deadline := time.Now().Add(time.Minute); !opening(); time.Sleep(5 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "open_bundle never started")
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	for deadline := time.Now().Add(2 * time.Minute); opening(); time.Sleep(10 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the diagnosis went on after the call was cancelled")
	}
	var list ListOut
	c.call("list_bundles", nil, &list)
	require.Len(t, list.Bundles, 1)
	require.False(t, list.Bundles[0].Open, "a cancelled open leaves nothing open")
}
