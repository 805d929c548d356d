package index

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/samplegen"
)

// tarDir writes dir as a .tar.gz whose entries are named prefix + their path.
func tarDir(t *testing.T, dir, out, prefix string) {
	t.Helper()
	require.NoError(t, samplegen.TarDir(dir, out, prefix))
}

// TestTarballSearchWithoutExtracting: after a tarball is indexed into the cache, OpenTarball
// finds its index from the tarball file alone and reads lines back from the tarball: the
// same hits and windows as the extracted bundle's index. A changed tarball is not used.
func TestTarballSearchWithoutExtracting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gen")
	require.NoError(t, samplegen.GenerateKind(dir, samplegen.Options{Kind: samplegen.Distinct, Ranks: 3, Size: 3 << 20, Seed: 1}))
	_, plain := buildIndex(t, dir)
	c := &Cache{Dir: t.TempDir()}
	for _, prefix := range []string{"./", "bundle-x/"} {
		tgz := filepath.Join(t.TempDir(), "b.tar.gz")
		tarDir(t, dir, tgz, prefix)
		if prefix == "bundle-x/" {
			// bundle.Open reads a bundle under one top folder only when it knows how; the
			// entries map to the bundle's paths either way.
			b, err := bundle.Open(t.Context(), tgz, bundle.DefaultLimits())
			require.NoError(t, err)
			logs, _ := bundle.LogStreams(b)
			b.Close()
			if len(logs) == 0 {
				t.Log("bundle.Open does not read a tarball under a top folder yet")
				continue
			}
		}
		require.Nil(t, mustOpenTarball(t, c, tgz), "nothing cached yet")
		b, err := bundle.Open(t.Context(), tgz, bundle.DefaultLimits())
		require.NoError(t, err)
		logs, _ := bundle.LogStreams(b)
		ix, err := Build(t.Context(), b, logs, BuildOptions{Cache: c, Version: "v1"})
		require.NoError(t, err)
		require.NoError(t, ix.Close())
		require.NoError(t, b.Close())

		tix := mustOpenTarball(t, c, tgz)
		require.NotNil(t, tix, "the tarball's index is found from the tarball file")
		for _, q := range []SearchOptions{{Query: "NCCL AND timeout"}, {Query: "tokens -peda", Limit: 7}, {Query: "step 100"},
			{Regex: `request_id": "0`}, {Query: "loading", All: true}, {Query: "generation", Context: 2}} {
			want, err := plain.Search(t.Context(), q)
			require.NoError(t, err)
			got, err := tix.Search(t.Context(), q)
			require.NoError(t, err)
			require.Equal(t, want, got, "%+v", q)
		}
		s := plain.Streams()[1]
		want, err := plain.Window(s.Path, s.Lines/2, 3, 3)
		require.NoError(t, err)
		got, err := tix.Window(s.Path, s.Lines/2, 3, 3)
		require.NoError(t, err)
		require.Equal(t, want, got)
		// The resources come with the index, as the bundle holds them, without the tarball
		// being decompressed again.
		files, ok := tix.TarballResources()
		require.True(t, ok)
		var res []string
		for _, f := range b.Files {
			if strings.HasPrefix(f.Path, "resources/") {
				res = append(res, f.Path)
			}
		}
		require.NotEmpty(t, res)
		require.Len(t, files, len(res))
		for _, p := range res {
			data, err := os.ReadFile(filepath.Join(dir, p))
			require.NoError(t, err)
			require.Equal(t, data, files[p].Data, p)
		}
		require.NoError(t, tix.Close())

		later := time.Now().Add(time.Minute)
		require.NoError(t, os.Chtimes(tgz, later, later))
		require.Nil(t, mustOpenTarball(t, c, tgz), "a tarball changed since is not trusted")
	}
}

func mustOpenTarball(t *testing.T, c *Cache, tgz string) *Index {
	t.Helper()
	ix, err := OpenTarball(c, tgz, "v1", bundle.DefaultLimits().MaxLineBytes)
	require.NoError(t, err)
	return ix
}
