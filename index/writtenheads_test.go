package index

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
)

// streamView is what an opened index keeps of a stream that its readers use.
func streamView(s *Stream) Stream {
	return Stream{LogStream: s.LogStream, Lines: s.Lines, Bytes: s.Bytes, LongLines: s.LongLines, First: s.First,
		Last: s.Last, Rank: s.Rank, idx: s.idx, heads: s.heads, unordered: s.unordered, over: s.over,
		bodyOff: s.bodyOff, bodyLen: s.bodyLen, bodyCRC: s.bodyCRC, cpLen: s.cpLen}
}

// TestWriterOpensWithItsLogsNames: the writer opening the index it wrote has the same streams
// as a reader of the heads file, their names the writer's own strings; heads of other logs
// than the writer says are decoded as a reader decodes them.
func TestWriterOpensWithItsLogsNames(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	ix, _ := cachedBuild(t, dir, &Cache{Dir: t.TempDir()}, "v1")
	file, err := os.ReadFile(filepath.Join(ix.Dir(), headsFile))
	require.NoError(t, err)
	data, err := unpack(headsMagic, file)
	require.NoError(t, err)
	read, readFrames, err := decodeRawHeads(data, nil)
	require.NoError(t, err)
	require.Greater(t, len(read), 1)

	logs := make([]bundle.LogStream, len(read))
	for i, s := range read {
		logs[i] = bundle.LogStream{Path: string([]byte(s.Path)), Namespace: string([]byte(s.Namespace)),
			Pod: string([]byte(s.Pod)), Container: string([]byte(s.Container)), Previous: s.Previous,
			Truncated: s.Truncated, Size: 1, TruncatedBytes: 2}
	}
	known, knownFrames, err := decodeRawHeads(data, logs)
	require.NoError(t, err)
	require.Equal(t, readFrames, knownFrames)
	require.Len(t, known, len(read))
	for i := range read {
		require.Equal(t, streamView(read[i]), streamView(known[i]), read[i].Path)
		// (require.Equal of two pointers compares what they point to: any two paths starting
		// with the same byte.)
		require.True(t, unsafe.StringData(logs[i].Path) == unsafe.StringData(known[i].Path), "the writer's string")
	}

	other := append([]bundle.LogStream(nil), logs...)
	other[1].Pod += "x"
	again, _, err := decodeRawHeads(data, other)
	require.NoError(t, err)
	for i := range read {
		require.Equal(t, streamView(read[i]), streamView(again[i]), read[i].Path)
	}
	_, _, err = decodeRawHeads(data[:len(data)-1], logs)
	require.Error(t, err, "cut heads are corrupt, whoever opens them")
}

// TestWarmLookupTakesItsLogsNames: a search finding its index in the cache opens it with the
// logs the bundle listed (the names its signatures keyed), so the streams' names are those
// logs' strings, not an arena of every name made again (20 MB at 200,000 logs); it finds what
// the build did.
func TestWarmLookupTakesItsLogsNames(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	c := &Cache{Dir: t.TempDir()}
	first, _ := cachedBuild(t, dir, c, "v1")
	b, err := bundle.Open(t.Context(), dir, bundle.DefaultLimits())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	logs, _ := bundle.LogStreams(b)
	warm, err := Build(t.Context(), b, logs, BuildOptions{Cache: c, Version: "v1"})
	require.NoError(t, err)
	t.Cleanup(func() { warm.Close() })
	require.Equal(t, first.Dir(), warm.Dir(), "the cached index")
	require.Len(t, warm.streams, len(logs))
	for i, s := range warm.streams {
		require.Equal(t, streamView(first.streams[i]), streamView(s), s.Path)
		require.True(t, unsafe.StringData(logs[i].Path) == unsafe.StringData(s.Path), "the bundle's string")
	}
	require.Equal(t, hitCount(t, first, "NCCL AND timeout"), hitCount(t, warm, "NCCL AND timeout"))
}
