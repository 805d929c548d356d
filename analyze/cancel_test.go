package analyze

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/parse"
)

// TestRunCancelled: an analysis of a cancelled context fails with context.Canceled (wrapped)
// and caches nothing, not even a temporary; the same analysis then runs whole.
func TestRunCancelled(t *testing.T) {
	rs := defaultRuleSet(t)
	b, err := bundle.Open(t.Context(), "../samples/pytorchjob-cuda-oom-rank", bundle.DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	m, err := parse.Load(b)
	require.NoError(t, err)
	cache := &index.Cache{Dir: filepath.Join(t.TempDir(), "cache")}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, ix, err := analyzeModel(ctx, m, rs, index.BuildOptions{Cache: cache, Version: "test"}, Options{})
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, res)
	require.Nil(t, ix)
	entries, _ := os.ReadDir(cache.Dir)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), "."), "a temporary is left in the cache: %s", e.Name())
	}
	require.Empty(t, entries, "nothing is cached")

	res, ix, err = analyzeModel(t.Context(), m, rs, index.BuildOptions{Cache: cache, Version: "test"}, Options{})
	require.NoError(t, err)
	defer ix.Close()
	require.Equal(t, VerdictUnhealthy, res.Verdict)
}
