package index

import (
	"cmp"
	"math/rand/v2"
	"os"
	"path/filepath"
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
		streams, frames, err := decodeHeads(pack(headsMagic, bad))
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
