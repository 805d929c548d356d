package redact

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/yamlbound"
)

// TestFlowMapOverTheValueBoundIsNotBuilt: a YAML flow map of tiny values, within the size
// limit but with more values than parse accepts for a resource (one per 16 bytes of the
// limit), is skipped by analyze and redacted as text by redact, which does not build it
// either: what redact allocates stays a small multiple of the file (decoding it took some 50
// times its size), and its secret is still masked.
func TestFlowMapOverTheValueBoundIsNotBuilt(t *testing.T) {
	lim := bundle.DefaultLimits()
	lim.MaxResourceBytes = 1 << 20
	// 50,000 pairs: 100,000 values, over 1 MiB/16 = 65,536 and under the 131,072 redact
	// allowed before.
	var sb strings.Builder
	sb.WriteString("{apiVersion: v1, kind: ConfigMap, metadata: {name: big, namespace: ml}, data: {password: hunter2-secret-value")
	for i := range 50_000 {
		fmt.Fprintf(&sb, ", k%d: 1", i)
	}
	sb.WriteString("}}\n")
	dir := filepath.Join(t.TempDir(), "bundle")
	p := filepath.Join(dir, "resources/core/ConfigMap/ml/big.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(sb.String()), 0o644))
	size := int64(sb.Len())
	require.Less(t, size, lim.MaxResourceBytes)

	_, err := yamlbound.Decode([]byte(sb.String()), yamlbound.ForResources(lim.MaxResourceBytes))
	var tm *yamlbound.TooManyError
	require.ErrorAs(t, err, &tm, "parse skips it")

	r := newTest(t)
	out := filepath.Join(t.TempDir(), "redacted.tar.gz")
	w, err := bundle.NewWriter(out)
	require.NoError(t, err)
	defer w.Abort()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err = r.Bundle(t.Context(), dir, lim, w)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	allocated := int64(after.TotalAlloc - before.TotalAlloc)
	require.Less(t, allocated, 20*size, "redact allocated %d bytes for a %d-byte flow map", allocated, size)

	red, err := bundle.Open(t.Context(), out, bundle.DefaultLimits())
	require.NoError(t, err)
	defer red.Close()
	data, err := fs.ReadFile(red.FS, "resources/core/ConfigMap/ml/big.yaml")
	require.NoError(t, err)
	require.NotContains(t, string(data), "hunter2-secret-value")
	require.Contains(t, string(data), "k49999: 1", "the rest is as it was")
}
