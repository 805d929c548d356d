package index

import (
	"cmp"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDamagedHeadsNeverPanic: heads whose bytes are changed (then packed again, as if their
// checksum had been forged) decode to an error or to streams and frames that the checks of
// open, the templates' decoding and reading the bodies back reject or survive, never a panic
// or a read past what the bodies file holds.
func TestDamagedHeadsNeverPanic(t *testing.T) {
	defer func(n int) { packMax = n }(packMax)
	packMax = 1 << 10 // many packs, between raw bodies
	_, ix := buildIndex(t, "../samples/pytorchjob-cuda-oom-rank")
	data, err := os.ReadFile(filepath.Join(ix.Dir(), headsFile))
	require.NoError(t, err)
	raw, err := unpack(headsMagic, data)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		bad := slices.Clone(raw)
		for range 1 + rng.IntN(3) {
			bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
		}
		streams, frames, err := decodeHeads(pack(headsMagic, bad), nil)
		if err != nil {
			continue
		}
		byOff := slices.Clone(streams)
		slices.SortFunc(byOff, func(a, b *Stream) int { return cmp.Compare(a.bodyOff, b.bodyOff) })
		var size, raw int64
		tiled := true
		for _, s := range byOff {
			tiled = tiled && s.bodyOff == size
			size += int64(s.bodyLen)
		}
		for _, f := range frames {
			raw += int64(f.raw)
		}
		if !tiled || raw != size || checkFrames(byOff, frames) != nil {
			continue
		}
		br := &bodyReader{f: ix.bodies, frames: frames}
		for _, s := range streams {
			if s.decodeTemplates(len(ix.docs)) != nil || s.bodyLen > 1<<20 {
				continue
			}
			body := make([]byte, s.bodyLen)
			if br.ReadAt(body, s.bodyOff) == nil {
				_ = s.setBody(body)
			}
		}
	}
}

// TestUnpackBoundsTheClaimedLength: a packed file's length is a claim; one far above what its
// stream holds is an error, found without allocating what it claims (a 256 KiB file may claim
// 256 MiB within DEFLATE's own ratio).
func TestUnpackBoundsTheClaimedLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	raw := make([]byte, 256<<10)
	for i := range raw {
		raw[i] = byte(rng.IntN(256)) // incompressible: the file is as long as the content
	}
	good := pack(headsMagic, raw)
	got, err := unpack(headsMagic, good)
	require.NoError(t, err)
	require.Equal(t, raw, got)

	body := good[len(headsMagic):]
	_, k := binary.Uvarint(body)
	claim := uint64(len(good)) * 1000 // within maxPackRatio, far above the stream
	forged := append(append([]byte(headsMagic), binary.AppendUvarint(nil, claim)...), body[k:]...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = unpack(headsMagic, forged)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, errCorrupt)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(32<<20), "allocated what the length claims")
}
