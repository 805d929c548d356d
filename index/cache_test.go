package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/scratch"
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
	logs, _ := bundle.LogStreams(b)
	var msgs []string
	ix, err := Build(t.Context(), b, logs, BuildOptions{Cache: c, Version: version, Log: func(f string, a ...any) { msgs = append(msgs, fmt.Sprintf(f, a...)) }})
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

// flipByte damages a file of an index in its middle, keeping its size.
func flipByte(name string) func(t *testing.T, idx string) {
	return func(t *testing.T, idx string) {
		p := filepath.Join(idx, name)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		data[len(data)/2] ^= 0x40
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
}

func TestCacheDamageIsDetectedAndRebuilt(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	damage := map[string]func(t *testing.T, idx string){
		"flipped heads byte":  flipByte(headsFile),
		"flipped docs byte":   flipByte(docsFile),
		"flipped chunks byte": flipByte(chunksFile),
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
			require.NoError(t, os.WriteFile(filepath.Join(idx, "extra.bin"), []byte("x"), 0o644))
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

// TestDecodeRejectsGarbage: malformed index data is an error, never a panic.
func TestDecodeRejectsGarbage(t *testing.T) {
	// The heads' packing: no magic, a length past what the data can hold or unreadable, a
	// stream shorter or longer than its length, bytes after it.
	good := pack(headsMagic, []byte("\x00\x00")) // no logs, no frames
	for _, data := range [][]byte{nil, []byte(headsMagic), []byte(headsMagic + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
		[]byte(headsMagic + "\x80\x80\x80\x80\x10"), []byte(headsMagic + "\x05" + string(good[len(headsMagic)+1:])),
		[]byte(headsMagic + "\x00" + string(good[len(headsMagic)+1:])), append(slices.Clone(good), 0),
		good[:len(good)-1]} {
		_, _, err := decodeHeads(data, nil)
		require.Error(t, err, "%q", data)
	}
	_, _, err := decodeHeads(good, nil)
	require.NoError(t, err, "no logs")
	// Heads that unpack but do not decode.
	for _, raw := range []string{"", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "\x01\x01a\x00\x00\x00\x00\x00\x05"} {
		_, _, err := decodeHeads(pack(headsMagic, []byte(raw)), nil)
		require.Error(t, err, "%q", raw)
	}
	for _, data := range [][]byte{nil, []byte(chunksMagic), []byte(chunksMagic + "\x02\x00\x05\x01\x00\x00\x01\x00\x00\x00")} {
		_, err := decodeChunks(data, 3)
		require.Error(t, err)
	}
	for _, data := range [][]byte{[]byte(docsMagic + "\x05\x01a"), pack(docsMagic, []byte("\x05\x01a"))} {
		_, err = decodeDocs(data)
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
	p := filepath.Join(again.Dir(), bodiesFile)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	for i := range data {
		data[i] ^= 0x40
	}
	require.NoError(t, os.WriteFile(p, data, 0o644))
	_, err = again.Search(t.Context(), SearchOptions{Query: "NCCL AND timeout"})
	require.ErrorContains(t, err, "no longer matches meta.json")
}

// TestDamagedCacheEntryIsRebuilt: one flipped byte in a cached index's bodies file fails the
// search that reads it with ErrDamaged and removes the entry, so the next build makes a sound
// index again instead of failing every later search.
func TestDamagedCacheEntryIsRebuilt(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	c := &Cache{Dir: t.TempDir()}
	first, _ := cachedBuild(t, dir, c, "v1")
	res, err := first.Search(t.Context(), SearchOptions{Query: "NCCL AND timeout"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits)
	s := first.stream(res.Hits[0].Path)
	require.NotNil(t, s)
	p := filepath.Join(first.Dir(), bodiesFile)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	data[s.bodyOff+int64(s.bodyLen/2)] ^= 0x01
	require.NoError(t, os.WriteFile(p, data, 0o644))

	damaged, _ := cachedBuild(t, dir, c, "v1")
	require.Equal(t, first.Dir(), damaged.Dir(), "the damage is found when the bodies are read")
	_, err = damaged.Search(t.Context(), SearchOptions{Query: "NCCL AND timeout"})
	require.ErrorIs(t, err, ErrDamaged)
	require.ErrorContains(t, err, "no longer matches meta.json")
	_, err = os.Stat(first.Dir())
	require.ErrorIs(t, err, fs.ErrNotExist, "the damaged entry left the cache")

	rebuilt, _ := cachedBuild(t, dir, c, "v1")
	require.Equal(t, 7, hitCount(t, rebuilt, "NCCL AND timeout"))
	again, _ := cachedBuild(t, dir, c, "v1")
	require.Equal(t, rebuilt.Dir(), again.Dir(), "the rebuilt entry is cached")
	require.Equal(t, 7, hitCount(t, again, "NCCL AND timeout"))
}

// TestUnusableCacheIsDoneWithout: a cache directory that is a file, or one that cannot be
// written, or an index that cannot be moved into place, gives a private index and one
// warning, never an error: analyze still writes its report.
func TestUnusableCacheIsDoneWithout(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	cases := map[string]func(t *testing.T) *Cache{
		"a file": func(t *testing.T) *Cache {
			p := filepath.Join(t.TempDir(), "cache")
			require.NoError(t, os.WriteFile(p, []byte("not a directory"), 0o644))
			return &Cache{Dir: p}
		},
		"below a file": func(t *testing.T) *Cache {
			p := filepath.Join(t.TempDir(), "file")
			require.NoError(t, os.WriteFile(p, []byte("not a directory"), 0o644))
			return &Cache{Dir: filepath.Join(p, "cache")}
		},
	}
	if os.Geteuid() != 0 { // root writes anywhere
		cases["read-only"] = func(t *testing.T) *Cache {
			p := t.TempDir()
			require.NoError(t, os.Chmod(p, 0o555))
			t.Cleanup(func() { os.Chmod(p, 0o755) })
			return &Cache{Dir: p}
		}
	}
	for name, cache := range cases {
		t.Run(name, func(t *testing.T) {
			c := cache(t)
			ix, msgs := cachedBuild(t, dir, c, "v1")
			require.Len(t, msgs, 1, "one warning")
			require.Contains(t, msgs[0], "cannot be written")
			require.Equal(t, 7, hitCount(t, ix, "NCCL AND timeout"))
			private := ix.Dir()
			require.NoError(t, ix.Close())
			_, err := os.Stat(private)
			require.True(t, os.IsNotExist(err), "the private index goes with Close")
		})
	}
}

// TestCacheEvictsLeastRecentlyUsed: past MaxBytes, the indexes used longest ago go; the one
// just built and the ones used since stay.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	var dirs []string
	var keys []string
	for _, s := range []string{"pytorchjob-cuda-oom-rank", "pytorchjob-nan-loss", "pytorchjob-shm-bus-error"} {
		dirs = append(dirs, copyDir(t, "../samples/"+s))
	}
	first, _ := cachedBuild(t, dirs[0], c, "v1")
	keys = append(keys, first.Key())
	size := dirSize(first.Dir())
	require.Greater(t, size, int64(0))
	c.MaxBytes = size*2 + size/2 // room for two of these
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(first.Dir(), old, old))
	second, _ := cachedBuild(t, dirs[1], c, "v1")
	keys = append(keys, second.Key())
	require.NoError(t, os.Chtimes(second.Dir(), old.Add(time.Minute), old.Add(time.Minute)))
	again, _ := cachedBuild(t, dirs[0], c, "v1") // the first is used again: it becomes the newest
	require.Equal(t, first.Dir(), again.Dir())
	third, _ := cachedBuild(t, dirs[2], c, "v1")
	keys = append(keys, third.Key())
	exists := func(k string) bool { _, err := os.Stat(filepath.Join(c.Dir, k)); return err == nil }
	require.True(t, exists(keys[0]), "used again since")
	require.False(t, exists(keys[1]), "the least recently used goes")
	require.True(t, exists(keys[2]), "just built")
}

// TestKilledBuildsAreSwept: a build directory whose process died is removed at the next
// build; one whose process lives is left.
func TestKilledBuildsAreSwept(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	dead := filepath.Join(c.Dir, buildPrefix+"123456")
	require.NoError(t, os.MkdirAll(dead, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dead, scratch.LockName), nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dead, bodiesFile), []byte("half"), 0o644))
	live, err := scratch.MkdirTemp(c.Dir, buildPrefix+"*")
	require.NoError(t, err)
	defer live.Remove()
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{dead, live.Path} {
		require.NoError(t, os.Chtimes(p, old, old))
	}
	cachedBuild(t, copyDir(t, "../samples/pytorchjob-nan-loss"), c, "v1")
	_, err = os.Stat(dead)
	require.True(t, os.IsNotExist(err), "the dead build is swept")
	_, err = os.Stat(live.Path)
	require.NoError(t, err, "a live build is left alone")
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

// TestSigsHashKeepsEarlierStatEntries: the stat entries an earlier coroner wrote name the logs
// by fmt's "%q %d %d %d %d\n" of each signature; a warm cache stays warm only while the hash
// is the same bytes, whatever the paths hold (quotes, non-ASCII, invalid UTF-8).
func TestSigsHashKeepsEarlierStatEntries(t *testing.T) {
	sigs := []fileSig{
		{Path: "logs/ml/w-0/trainer.log", Size: 80, Mtime: 1_700_000_000_123_456_789, Ctime: 1_700_000_001_000_000_000, Ino: 1 << 63},
		{Path: "logs/ml/\"odd\" pod/ü\x01\xff.log", Size: 0, Mtime: -5, Ctime: 0, Ino: 0},
		// each edge of the ASCII that quotes as itself (see bundle.AppendQuoted)
		{Path: " ~ space, tilde/a.log"}, {Path: "back\\slash"}, {Path: "tab\t"}, {Path: "del\x7f"}, {Path: "nul\x00"}, {Path: ""},
	}
	h := sha256.New()
	for _, s := range sigs {
		fmt.Fprintf(h, "%q %d %d %d %d\n", s.Path, s.Size, s.Mtime, s.Ctime, s.Ino)
	}
	require.Equal(t, hex.EncodeToString(h.Sum(nil)), sigsHash(sigs))
	require.Equal(t, "", sigsHash(append(sigs, fileSig{Path: "gone.log", Size: -1})), "a log that could not be signed")
}

// TestLogsHashIsTheStatEntrysHash: a bundle of plain logs names its logs with the digest it
// made of their walk signatures, which must be sigsHash's bytes (a warm cache stays warm), and
// a bundle whose logs are not all plain text has them hashed here.
func TestLogsHashIsTheStatEntrysHash(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	b, err := bundle.Open(t.Context(), dir, bundle.DefaultLimits())
	require.NoError(t, err)
	defer b.Close()
	logs, _ := bundle.LogStreams(b)
	require.NotEmpty(t, logs)
	sigs := statLogs(b, logs)
	require.NotEmpty(t, b.PlainLogsDigestOf(logs), "the sample's logs are plain text")
	require.Equal(t, sigsHash(sigs), b.PlainLogsDigestOf(logs))
	require.Equal(t, sigsHash(sigs), logsHash(b, logs, sigs))
	require.Empty(t, b.PlainLogsDigestOf(logs[1:]), "not the walk's logs")
	require.Equal(t, sigsHash(sigs[1:]), logsHash(b, logs[1:], sigs[1:]))
}

// TestCacheOfAnEarlierFormatIsRebuilt: an index a coroner of format 8 left in the cache (its
// chunk filters spread an item's bits over the whole filter, where format 9 keeps them in one
// 64-bit word) is never read with the new positions: it is reported, rebuilt in place, and
// the rebuilt index answers as the first did.
func TestCacheOfAnEarlierFormatIsRebuilt(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	c := &Cache{Dir: t.TempDir()}
	first, _ := cachedBuild(t, dir, c, "v1")
	want := hitCount(t, first, "NCCL AND timeout")
	idx := first.Dir()
	require.NoError(t, first.Close())
	p := filepath.Join(idx, metaName)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	require.EqualValues(t, FormatVersion, m["format"])
	m["format"] = 8
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, data, 0o644))

	again, msgs := cachedBuild(t, dir, c, "v1")
	require.Equal(t, idx, again.Dir(), "rebuilt in place")
	require.Contains(t, strings.Join(msgs, "\n"), fmt.Sprintf("index format 8, this coroner reads %d", FormatVersion))
	require.Equal(t, want, hitCount(t, again, "NCCL AND timeout"))
}

// countingFS counts the opens of each file.
type countingFS struct {
	fs.FS
	mu    *sync.Mutex // the scan opens files from several goroutines
	opens map[string]int
}

func (c countingFS) Open(name string) (fs.File, error) {
	c.mu.Lock()
	c.opens[name]++
	c.mu.Unlock()
	return c.FS.Open(name)
}

// TestKeyByScanReadsEachLogOnce: a build whose stat entry does not name its logs' index
// reads each log once with KeyByScan, keyed in the scan that indexes it; without it, each log
// is read first to key it, and again to index it when the cache holds no index of that
// content. Logs of the same content in another directory end in the index the cache holds.
func TestKeyByScanReadsEachLogOnce(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	first, _ := cachedBuild(t, copyDir(t, "../samples/pytorchjob-cuda-oom-rank"), c, "v1")
	build := func(dir string, keyByScan bool) (*Index, []bundle.LogStream, map[string]int) {
		b, err := bundle.Open(t.Context(), dir, bundle.DefaultLimits())
		require.NoError(t, err)
		t.Cleanup(func() { b.Close() })
		opens := map[string]int{}
		b.FS = countingFS{b.FS, &sync.Mutex{}, opens}
		logs, _ := bundle.LogStreams(b)
		ix, err := Build(t.Context(), b, logs, BuildOptions{Cache: c, Version: "v1", KeyByScan: keyByScan})
		require.NoError(t, err)
		t.Cleanup(func() { ix.Close() })
		return ix, logs, maps.Clone(opens)
	}
	for _, keyByScan := range []bool{true, false} {
		dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
		ix, logs, opens := build(dir, keyByScan)
		require.Equal(t, first.Dir(), ix.Dir(), "the index of the same content")
		for _, ls := range logs {
			require.Equal(t, 1, opens[ls.Path], "KeyByScan %v: %s", keyByScan, ls.Path)
		}
		require.Equal(t, 7, hitCount(t, ix, "NCCL AND timeout"))

		log := filepath.Join(dir, "logs/ml/train-job-worker-4/pytorch.log")
		data, err := os.ReadFile(log)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(log, append(data, fmt.Sprintf("zzchanged %v\n", keyByScan)...), 0o644))
		ix, logs, opens = build(dir, keyByScan)
		require.NotEqual(t, first.Dir(), ix.Dir())
		want := 2
		if keyByScan {
			want = 1
		}
		for _, ls := range logs {
			require.Equal(t, want, opens[ls.Path], "KeyByScan %v, a new index: %s", keyByScan, ls.Path)
		}
		require.Equal(t, 1, hitCount(t, ix, "zzchanged"))
		again, _, _ := build(dir, keyByScan)
		require.Equal(t, ix.Dir(), again.Dir(), "its stat entry names it")
	}
	entries, err := os.ReadDir(c.Dir)
	require.NoError(t, err)
	require.Len(t, entries, 4, "the stat entries and three indexes, no build left over")
}

// TestCacheOnlyBuildsNothingWithoutACache: a build only meant for the cache (analyze's index
// of a bundle's objects) whose cache cannot be written returns an error and builds no private
// index in the temporary directory, which nothing would read.
func TestCacheOnlyBuildsNothingWithoutACache(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, nil, 0o644))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	b, err := bundle.Open(t.Context(), "../samples/pytorchjob-cuda-oom-rank", bundle.DefaultLimits())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	logs, _ := bundle.LogStreams(b)
	_, err = Build(t.Context(), b, logs, BuildOptions{Cache: &Cache{Dir: notADir}, Version: "v1", CacheOnly: true})
	require.ErrorIs(t, err, errNoCache)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "no private index")
}

// TestCacheSparesIndexesJustUsed: an index used within evictGrace is not evicted, even past
// MaxBytes: runs into one cache at once each put their index in place and evicted the
// others' before those were opened ("open .../meta.json: no such file or directory", 7 of
// 40 such runs failed). Past the grace, the bound holds again.
func TestCacheSparesIndexesJustUsed(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	var dirs []string
	for _, s := range []string{"pytorchjob-cuda-oom-rank", "pytorchjob-nan-loss", "pytorchjob-shm-bus-error"} {
		dirs = append(dirs, copyDir(t, "../samples/"+s))
	}
	first, _ := cachedBuild(t, dirs[0], c, "v1")
	c.MaxBytes = dirSize(first.Dir()) + 1 // room for one
	second, _ := cachedBuild(t, dirs[1], c, "v1")
	exists := func(dir string) bool { _, err := os.Stat(dir); return err == nil }
	require.True(t, exists(first.Dir()), "used a moment ago: spared")
	require.True(t, exists(second.Dir()), "just built")
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(first.Dir(), old, old))
	require.NoError(t, os.Chtimes(second.Dir(), old, old))
	third, _ := cachedBuild(t, dirs[2], c, "v1")
	require.False(t, exists(first.Dir()), "past the grace, the bound holds")
	require.False(t, exists(second.Dir()))
	require.True(t, exists(third.Dir()))
}
