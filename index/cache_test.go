package index

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/parse"
)

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

func cachedBuild(t *testing.T, dir string, c *Cache, version string) (*Index, []string) {
	t.Helper()
	b, err := bundle.Open(t.Context(), dir, bundle.DefaultLimits())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	logs, _ := parse.LogStreams(b)
	var msgs []string
	ix, _, err := Build(t.Context(), b, logs, BuildOptions{Cache: c, Version: version, Log: func(f string, a ...any) { msgs = append(msgs, f) }})
	require.NoError(t, err)
	t.Cleanup(func() { ix.Close() })
	return ix, msgs
}

func hitCount(t *testing.T, ix *Index, q string) int {
	res, err := ix.Search(t.Context(), SearchOptions{Query: q})
	require.NoError(t, err)
	return res.Lines
}

// TestCacheReusedOnlyForTheSameLogs: the second build reuses the first's directory; a changed
// log, another version or a damaged or foreign index never is.
func TestCacheReusedOnlyForTheSameLogs(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	c := &Cache{Dir: t.TempDir()}
	first, _ := cachedBuild(t, dir, c, "v1")
	again, _ := cachedBuild(t, dir, c, "v1")
	require.Equal(t, first.Dir(), again.Dir(), "same logs, same index")
	require.Equal(t, 7, hitCount(t, again, "NCCL AND timeout"))

	other, _ := cachedBuild(t, dir, c, "v2")
	require.NotEqual(t, first.Dir(), other.Dir(), "another coroner version builds its own")

	// A changed log (same size, different content) gets a new key.
	log := filepath.Join(dir, "logs/ml/train-job-worker-4/pytorch.log")
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(log, []byte(string(data[:len(data)-9])+" zzchang\n"), 0o644))
	changed, _ := cachedBuild(t, dir, c, "v1")
	require.NotEqual(t, first.Dir(), changed.Dir())
	require.Equal(t, 1, hitCount(t, changed, "zzchang"))
}

func TestCacheDamageIsDetectedAndRebuilt(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	damage := map[string]func(t *testing.T, idx string){
		"flipped stream byte": func(t *testing.T, idx string) {
			p := filepath.Join(idx, "streams", "000003.bin")
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			data[len(data)/2] ^= 0x40
			require.NoError(t, os.WriteFile(p, data, 0o644))
		},
		"truncated bleve file": func(t *testing.T, idx string) {
			var victim string
			filepath.WalkDir(filepath.Join(idx, "bleve"), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && victim == "" {
					victim = p
				}
				return err
			})
			require.NoError(t, os.Truncate(victim, 3))
		},
		"foreign file": func(t *testing.T, idx string) {
			require.NoError(t, os.WriteFile(filepath.Join(idx, "streams", "extra.bin"), []byte("x"), 0o644))
		},
		"missing meta": func(t *testing.T, idx string) {
			require.NoError(t, os.Remove(filepath.Join(idx, metaName)))
		},
		"garbage meta": func(t *testing.T, idx string) {
			require.NoError(t, os.WriteFile(filepath.Join(idx, metaName), []byte("{not json"), 0o644))
		},
	}
	for name, hurt := range damage {
		t.Run(name, func(t *testing.T) {
			c := &Cache{Dir: t.TempDir()}
			first, _ := cachedBuild(t, dir, c, "v1")
			want := hitCount(t, first, "NCCL AND timeout")
			idx := first.Dir()
			require.NoError(t, first.Close())
			hurt(t, idx)
			again, msgs := cachedBuild(t, dir, c, "v1")
			require.Equal(t, idx, again.Dir(), "rebuilt in place")
			require.Equal(t, want, hitCount(t, again, "NCCL AND timeout"))
			if name != "missing meta" {
				require.NotEmpty(t, msgs, "the damage is reported")
			}
		})
	}
}

// TestDecodeRejectsGarbage: malformed stream data is an error, never a panic.
func TestDecodeRejectsGarbage(t *testing.T) {
	for _, data := range [][]byte{nil, []byte(streamMagic), []byte(streamMagic + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")} {
		_, err := decodeStream(data, 0)
		require.Error(t, err)
	}
}

// TestStreamChangedAfterOpen: a log's part of the index is read when first needed and checked
// again then; a file changed meanwhile is an error naming the log, never a wrong answer.
func TestStreamChangedAfterOpen(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	c := &Cache{Dir: t.TempDir()}
	ix, _ := cachedBuild(t, dir, c, "v1")
	require.Equal(t, 7, hitCount(t, ix, "NCCL AND timeout"), "loads the logs with hits")
	again, _ := cachedBuild(t, dir, c, "v1")
	require.Equal(t, ix.Dir(), again.Dir())
	for _, f := range []string{"000000.bin", "000001.bin", "000002.bin", "000003.bin", "000004.bin", "000005.bin"} {
		p := filepath.Join(again.Dir(), "streams", f)
		if data, err := os.ReadFile(p); err == nil {
			data[len(data)-1] ^= 0x40
			require.NoError(t, os.WriteFile(p, data, 0o644))
		}
	}
	_, err := again.Search(t.Context(), SearchOptions{Query: "NCCL AND timeout"})
	require.ErrorContains(t, err, "no longer matches meta.json")
}
