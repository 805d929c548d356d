package index

import (
	"bytes"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// forgeCRC changes 4 bytes of data at off so that its CRC-32C becomes want: CRC is linear, so
// the 32 bits' effects on the checksum are solved for over GF(2).
func forgeCRC(t *testing.T, data []byte, off int, want uint32) {
	t.Helper()
	tab := crc32.MakeTable(crc32.Castagnoli)
	base := crc32.Checksum(data, tab)
	var effect [32]uint32
	for bit := range 32 {
		data[off+bit/8] ^= 1 << (bit % 8)
		effect[bit] = crc32.Checksum(data, tab) ^ base
		data[off+bit/8] ^= 1 << (bit % 8)
	}
	// Gaussian elimination: rows are bit effects, tracking which bits make each.
	rows := effect
	var combo [32]uint32
	for i := range 32 {
		combo[i] = 1 << i
	}
	target := base ^ want
	var solution uint32
	for col := 31; col >= 0; col-- {
		pivot := -1
		for r := range 32 {
			if rows[r]&(1<<col) != 0 && (pivot < 0 || rows[r] < rows[pivot]) && rows[r]>>(col+1) == 0 {
				pivot = r
			}
		}
		require.GreaterOrEqual(t, pivot, 0, "the effects span every checksum")
		for r := range 32 {
			if r != pivot && rows[r]&(1<<col) != 0 {
				rows[r] ^= rows[pivot]
				combo[r] ^= combo[pivot]
			}
		}
		if target&(1<<col) != 0 {
			target ^= rows[pivot]
			solution ^= combo[pivot]
		}
		rows[pivot] = 0xffffffff // used
	}
	for bit := range 32 {
		if solution&(1<<bit) != 0 {
			data[off+bit/8] ^= 1 << (bit % 8)
		}
	}
	require.Equal(t, want, crc32.Checksum(data, tab), "forged")
}

// TestForgedLogDoesNotTakeAnotherIndex: a hostile bundle's log forged to the size and CRC-32C
// of another bundle's log (the cache key was made of those) took that log's cached index, and
// search missed its lines. The key is a SHA-256 of the content now.
func TestForgedLogDoesNotTakeAnotherIndex(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	good := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	_, _ = cachedBuild(t, good, c, "v1")

	hostile := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	p := filepath.Join(hostile, "logs/ml/train-job-worker-4/pytorch.log")
	orig, err := os.ReadFile(p)
	require.NoError(t, err)
	forged := bytes.Replace(orig, []byte("CUDA out of memory"), []byte("CUDA out of zzbank"), 1)
	require.NotEqual(t, orig, forged)
	forged = append(forged[:len(forged)-5], "abcd\n"...)
	forgeCRC(t, forged, len(forged)-5, crc32.Checksum(orig, crc32.MakeTable(crc32.Castagnoli)))
	require.Len(t, forged, len(orig))
	require.NoError(t, os.WriteFile(p, forged, 0o644))

	ix, _ := cachedBuild(t, hostile, c, "v1")
	require.Equal(t, 1, hitCount(t, ix, "zzbank"), "the hostile bundle's own lines are found")
}

// TestKilledBuildIsSweptAtTheNextStart: a build killed outright leaves its .build- directory in
// the cache; the next build removes it (its lock is held by nobody).
func TestKilledBuildIsSweptAtTheNextStart(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	stale := filepath.Join(c.Dir, ".build-1234567")
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "streams"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stale, ".coroner-lock"), nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(stale, "streams", "0.bin"), make([]byte, 1<<20), 0o644))
	old := time.Now().Add(-time.Minute)
	require.NoError(t, os.Chtimes(stale, old, old))
	_, _ = cachedBuild(t, copyDir(t, "../samples/pytorchjob-nan-loss"), c, "v1")
	_, err := os.Stat(stale)
	require.True(t, os.IsNotExist(err), "the killed build's directory is gone")
	entries, err := os.ReadDir(c.Dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), ".build-"), "no build directory left: %s", e.Name())
		if e.IsDir() && e.Name() != "stat" {
			_, err := os.Stat(filepath.Join(c.Dir, e.Name(), ".coroner-lock"))
			require.True(t, os.IsNotExist(err), "a cached index holds no lock file")
		}
	}
}
