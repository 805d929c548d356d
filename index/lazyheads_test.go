package index

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// decoded lists the logs whose templates have been decoded from the heads.
func decoded(ix *Index) []string {
	var out []string
	for _, s := range ix.streams {
		if s.templates != nil {
			out = append(out, s.Path)
		}
	}
	return out
}

// TestOpenMakesSmallStreams: opening an index makes a Stream for every log (225,000 at
// 200,000 files, one allocation cleared at open); what only a search of the log needs (its
// onces and their errors) is made when the search reaches it, so a Stream stays at 280 bytes
// (it was 344: 14 MB more at 200,000 files). A search's streams have them, the others not.
func TestOpenMakesSmallStreams(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Stream{}), uintptr(280))
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	_, ix := buildIndex(t, dir)
	fresh, err := openDir(ix.Dir(), ix.fsys, false, nil)
	require.NoError(t, err)
	t.Cleanup(func() { fresh.Close() })
	for _, s := range fresh.streams {
		require.Nil(t, s.once.Load(), s.Path)
	}
	require.NotZero(t, hitCount(t, fresh, "NCCL AND timeout"))
	searched := 0
	for _, s := range fresh.streams {
		if s.templates != nil {
			require.NotNil(t, s.once.Load(), s.Path)
			searched++
		}
	}
	require.NotZero(t, searched)
}

// TestOpenDecodesNoTemplates: opening a cached index reads each log's names and sizes but
// none of its templates; a search decodes the templates of the logs whose texts it finds, and
// of no other log.
func TestOpenDecodesNoTemplates(t *testing.T) {
	dir := t.TempDir()
	for i := range 6 {
		var text string
		for n := range 40 {
			text += fmt.Sprintf("2026-03-14T10:00:%02dZ step %d loss 1.%d\n", n, n, n)
			if i == 4 {
				text += fmt.Sprintf("2026-03-14T10:00:%02dZ checkpoint shard %d written\n", n, n)
			}
		}
		pod := filepath.Join(dir, "logs", "ml", fmt.Sprintf("train-worker-%d", i))
		require.NoError(t, os.MkdirAll(pod, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(pod, "pytorch.log"), []byte(text), 0o644))
	}
	c := &Cache{Dir: t.TempDir()}
	first, _ := cachedBuild(t, dir, c, "v1")
	require.NoError(t, first.Close())
	ix, _ := cachedBuild(t, dir, c, "v1")
	require.Equal(t, first.Dir(), ix.Dir(), "the cached index is opened")
	require.Len(t, ix.Streams(), 6)
	require.Empty(t, decoded(ix), "open decodes no template")

	require.Equal(t, 40, hitCount(t, ix, "checkpoint"))
	require.Equal(t, []string{"logs/ml/train-worker-4/pytorch.log"}, decoded(ix), "only the log the word is in")
	require.Equal(t, 0, hitCount(t, ix, "nowhere"))
	require.Equal(t, []string{"logs/ml/train-worker-4/pytorch.log"}, decoded(ix))
	require.Equal(t, 6*40, hitCount(t, ix, "loss"))
	require.Len(t, decoded(ix), 6)
	for _, s := range ix.Streams() {
		require.NotEmpty(t, ix.Templates(s), s.Path)
	}
}

// TestDamagedTemplatesAreAnError: a log's templates that do not decode (an index damaged
// after it was opened, or one whose checksums were forged) make the search that reaches them
// fail as damaged, never panic or answer wrong; the logs searched before are unaffected.
func TestDamagedTemplatesAreAnError(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	_, ix := buildIndex(t, dir)
	want := hitCount(t, ix, "NCCL AND timeout")
	require.NotZero(t, want)
	fresh, err := openDir(ix.Dir(), ix.fsys, false, nil)
	require.NoError(t, err, "open reads no template")
	t.Cleanup(func() { fresh.Close() })
	for _, s := range fresh.streams {
		s.heads = s.heads[:len(s.heads)/2]
	}
	_, err = fresh.Search(t.Context(), SearchOptions{Query: "NCCL AND timeout"})
	require.ErrorIs(t, err, ErrDamaged)
	require.Nil(t, fresh.Templates(fresh.streams[0]))
}

// TestBodiesLoadedTogether: bodies read together (loadAll) are the bodies read alone, and a
// body that no longer matches its checksum fails alone, by the log's name.
func TestBodiesLoadedTogether(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	_, ix := buildIndex(t, dir)
	open := func() *Index {
		o, err := openDir(ix.Dir(), ix.fsys, false, nil)
		require.NoError(t, err)
		t.Cleanup(func() { o.Close() })
		return o
	}
	alone, together := open(), open()
	require.Greater(t, len(together.streams), 2)
	require.NoError(t, together.loadAll(together.streams))
	for i, s := range alone.streams {
		require.NoError(t, alone.load(s))
		o := together.streams[i]
		require.Equal(t, s.cp.data, o.cp.data, s.Path)
		require.Equal(t, s.cp.overLines, o.cp.overLines, s.Path)
		for k := range s.templates {
			require.Equal(t, s.templates[k].blob, o.templates[k].blob, s.Path)
		}
	}

	victim := ix.streams[len(ix.streams)/2]
	p := filepath.Join(ix.Dir(), bodiesFile)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	data[victim.bodyOff] ^= 0x40
	require.NoError(t, os.WriteFile(p, data, 0o644))
	damaged := open()
	err = damaged.loadAll(damaged.streams)
	require.ErrorIs(t, err, errCorrupt)
	require.ErrorContains(t, err, victim.Path)
}

// TestLongNamesSurviveOpen: logs whose names are longer than the room decodeHeads makes for a
// stream's names at first (the arena then grows) are opened with every name whole, each log's
// hits under its own name.
func TestLongNamesSurviveOpen(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a-very-long-namespace-segment-", 6) // 180 bytes, past namesPerStream
	var want []string
	for i := range 5 {
		pod := fmt.Sprintf("%s-worker-%d", long[:100+i*20], i)
		container := fmt.Sprintf("%s%d", long[:60+i*10], i)
		p := filepath.Join(dir, "logs", long, pod)
		require.NoError(t, os.MkdirAll(p, 0o755))
		text := fmt.Sprintf("2026-03-14T10:00:00Z worker %d says hello\n", i)
		require.NoError(t, os.WriteFile(filepath.Join(p, container+".log"), []byte(text), 0o644))
		want = append(want, "logs/"+long+"/"+pod+"/"+container+".log")
	}
	slices.Sort(want)
	c := &Cache{Dir: t.TempDir()}
	first, _ := cachedBuild(t, dir, c, "v1")
	require.NoError(t, first.Close())
	ix, _ := cachedBuild(t, dir, c, "v1")
	require.Equal(t, first.Dir(), ix.Dir(), "the cached index is opened")
	var got []string
	for _, s := range ix.Streams() {
		got = append(got, s.Path)
		require.Equal(t, long, s.Namespace)
		require.True(t, strings.HasPrefix(s.Pod, long[:100]), s.Pod)
		require.True(t, strings.HasPrefix(s.Container, long[:60]), s.Container)
	}
	require.Equal(t, want, got)
	require.Equal(t, 5, hitCount(t, ix, "hello"))
}

// TestBuiltIndexIsTheWrittenOne: the index a build opens from the heads it has just written
// (not read back from the file) is the index its files hold: the same logs, sizes, times,
// bodies' places and encoded templates, and the same answers.
func TestBuiltIndexIsTheWrittenOne(t *testing.T) {
	dir := copyDir(t, "../samples/pytorchjob-cuda-oom-rank")
	_, ix := buildIndex(t, dir)
	read, err := openDir(ix.Dir(), ix.fsys, true, nil)
	require.NoError(t, err)
	t.Cleanup(func() { read.Close() })
	require.Equal(t, len(read.streams), len(ix.streams))
	for i, s := range read.streams {
		o := ix.streams[i]
		require.Equal(t, s.LogStream, o.LogStream)
		require.Equal(t, []any{s.Lines, s.Bytes, s.LongLines, s.First, s.Last, s.Rank, s.unordered, s.bodyOff, s.bodyLen, s.bodyCRC, s.cpLen, s.over},
			[]any{o.Lines, o.Bytes, o.LongLines, o.First, o.Last, o.Rank, o.unordered, o.bodyOff, o.bodyLen, o.bodyCRC, o.cpLen, o.over}, s.Path)
		require.Equal(t, s.heads, o.heads, s.Path)
	}
	for _, q := range []string{"NCCL AND timeout", "loss", "CUDA out of memory"} {
		require.Equal(t, hitCount(t, read, q), hitCount(t, ix, q), q)
	}
}
