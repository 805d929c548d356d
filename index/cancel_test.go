package index

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/logscan"
)

// requireNoTemporaries fails when the cache directory holds anything but finished indexes
// and the stat entries (a build's or a trash directory, a temporary stat file).
func requireNoTemporaries(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		require.False(t, strings.HasPrefix(d.Name(), "."), "a temporary is left in the cache: %s", p)
		return nil
	})
}

// TestCancelledBuildLeavesNoTrace: a build cancelled before it starts or in the middle of the
// scan returns an error that is context.Canceled, and the cache holds no entry and no
// temporary; nor does the system's temporary directory (a private build).
func TestCancelledBuildLeavesNoTrace(t *testing.T) {
	b, err := bundle.Open(t.Context(), "../samples/pytorchjob-cuda-oom-rank", bundle.DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	logs, _ := bundle.LogStreams(b)
	require.Greater(t, len(logs), 2)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	for _, when := range []string{"before", "during"} {
		t.Run(when, func(t *testing.T) {
			cache := &Cache{Dir: filepath.Join(t.TempDir(), "cache")}
			require.NoError(t, os.MkdirAll(cache.Dir, 0o755))
			for _, c := range []*Cache{cache, nil} {
				ctx, cancel := context.WithCancel(t.Context())
				opts := BuildOptions{Cache: c, Version: "test", Workers: 1}
				var visitors []logscan.Visitor
				if when == "before" {
					cancel()
				} else {
					visitors = append(visitors, logscan.LogFunc(func(i int) func(*logscan.Scanned) {
						return func(l *logscan.Scanned) {
							if i == 1 && l.Number == 5 {
								cancel()
							}
						}
					}))
				}
				ix, stats, err := buildWith(ctx, b, logs, opts, visitors...)
				cancel()
				require.ErrorIs(t, err, context.Canceled)
				require.Nil(t, ix)
				require.Nil(t, stats)
			}
			requireNoTemporaries(t, cache.Dir)
			entries, _ := os.ReadDir(cache.Dir)
			require.Empty(t, entries, "no index was cached")
			private, err := filepath.Glob(filepath.Join(tmp, "coroner-index-*"))
			require.NoError(t, err)
			require.Empty(t, private, "the private build's directory is removed")
		})
	}
}

// TestCancelledSearch: a search of a cancelled context fails with context.Canceled; the
// cached index stays whole and usable.
func TestCancelledSearch(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	c := &Cache{Dir: t.TempDir()}
	ix, _ := cachedBuild(t, dir, c, "v1")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, opts := range []SearchOptions{{Query: "NCCL AND timeout"}, {Regex: "NCCL.*timeout"}} {
		res, err := ix.Search(ctx, opts)
		require.ErrorIs(t, err, context.Canceled)
		require.Nil(t, res)
	}
	requireNoTemporaries(t, c.Dir)
	again, _ := cachedBuild(t, dir, c, "v1")
	require.Equal(t, ix.Dir(), again.Dir())
	require.Equal(t, 7, hitCount(t, again, "NCCL AND timeout"))
}

// buildWith builds the index of logs as package diagnose does: one scan, the index's visitor
// beside others.
func buildWith(ctx context.Context, b *bundle.Bundle, logs []bundle.LogStream, opts BuildOptions, visitors ...logscan.Visitor) (*Index, []logscan.Stats, error) {
	bd, err := Prepare(ctx, b, logs, opts)
	if err != nil {
		return nil, nil, err
	}
	stats, err := logscan.ScanAll(ctx, b.FS, logs, bd.ScanOptions(logscan.AllOptions{Visitors: visitors}))
	return bd.Finish(ctx, stats, err)
}
