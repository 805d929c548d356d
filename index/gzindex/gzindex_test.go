package gzindex

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// logText is n bytes of log-like text: repeated shapes, varying numbers, some random bytes.
func logText(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	var b bytes.Buffer
	for b.Len() < n {
		switch rng.IntN(10) {
		case 0:
			for k := rng.IntN(200); k > 0; k-- {
				b.WriteByte(byte(rng.IntN(256)))
			}
			b.WriteByte('\n')
		default:
			fmt.Fprintf(&b, "2026-03-14T08:00:%02d.%09dZ [rank%d]: step %d | loss %.4f | lr %.2e\n", rng.IntN(60), rng.IntN(1e9), rng.IntN(64), rng.IntN(1e6), rng.Float64()*4, rng.Float64())
		}
	}
	return b.Bytes()[:n]
}

func gz(t testing.TB, level int, parts ...[]byte) []byte {
	var out bytes.Buffer
	for _, p := range parts {
		w, err := gzip.NewWriterLevel(&out, level)
		require.NoError(t, err)
		w.Name = "x.tar" // a header with a name
		_, err = w.Write(p)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	return out.Bytes()
}

// TestBuildDecompressesAsGzipDoes: every level (stored, Huffman only, fast, best), several
// members and an empty one give the stream compress/gzip gives, with points at the span.
func TestBuildDecompressesAsGzipDoes(t *testing.T) {
	data := logText(3<<20, 1)
	cases := map[string][]byte{
		"stored":       gz(t, gzip.NoCompression, data[:1<<20]),
		"huffman only": gz(t, gzip.HuffmanOnly, data[:1<<20]),
		"fast":         gz(t, gzip.BestSpeed, data),
		"best":         gz(t, gzip.BestCompression, data),
		"members":      gz(t, gzip.DefaultCompression, data[:1<<20], nil, data[1<<20:2<<20], data[2<<20:]),
		"empty":        gz(t, gzip.DefaultCompression, nil),
		"tiny":         gz(t, gzip.DefaultCompression, []byte("a")),
	}
	for name, z := range cases {
		t.Run(name, func(t *testing.T) {
			zr, err := gzip.NewReader(bytes.NewReader(z))
			require.NoError(t, err)
			want, err := io.ReadAll(zr)
			require.NoError(t, err)
			var got bytes.Buffer
			ix, err := Build(bytes.NewReader(z), &got, 256<<10)
			require.NoError(t, err)
			require.Equal(t, string(want), got.String())
			require.Equal(t, int64(len(want)), ix.Size)
			require.Equal(t, int64(len(z)), ix.Compressed)
			if len(want) > 1<<20 && name != "stored" {
				require.Greater(t, len(ix.Points), 3)
			}
			for _, p := range ix.Points {
				require.Equal(t, want[max(0, p.Out-windowSize):p.Out], p.Window)
			}
		})
	}
}

// TestReadAtFromPoints: reads anywhere, forward, backward and across members, give the
// stream's bytes, from an index as built and as decoded from its encoding.
func TestReadAtFromPoints(t *testing.T) {
	data := logText(3<<20, 2)
	z := gz(t, gzip.DefaultCompression, data[:1<<20], data[1<<20:])
	built, err := Build(bytes.NewReader(z), nil, 128<<10)
	require.NoError(t, err)
	enc, err := built.Encode()
	require.NoError(t, err)
	require.Less(t, len(enc), len(z)/2, "windows are stored deflated")
	decoded, err := Decode(enc)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	type readerAt interface {
		io.ReaderAt
		io.Closer
	}
	var readers []readerAt
	for _, ix := range []*Index{built, decoded} {
		// The plain reader, and the span cache with room for only 3 spans of the 24, so
		// that spans are dropped and decompressed again.
		readers = append(readers, NewReader(ix, bytes.NewReader(z)), NewSpanReader(ix, bytes.NewReader(z), 3))
	}
	for _, r := range readers {
		off := int64(0)
		for i := 0; i < 300; i++ {
			switch rng.IntN(3) {
			case 0:
				off = rng.Int64N(int64(len(data)))
			case 1:
				off += int64(rng.IntN(20000))
			default:
				off -= int64(rng.IntN(20000))
			}
			off = min(max(off, 0), int64(len(data))-1)
			p := make([]byte, 1+rng.IntN(9000))
			n, err := r.ReadAt(p, off)
			end := min(off+int64(len(p)), int64(len(data)))
			require.Equal(t, int(end-off), n)
			if end < off+int64(len(p)) {
				require.ErrorIs(t, err, io.EOF)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, data[off:end], p[:n], "read at %d", off)
		}
		require.NoError(t, r.Close())
	}
}

// TestMalformedInput: damaged gzip data is an error (or different bytes), never a panic or
// a hang.
func TestMalformedInput(t *testing.T) {
	z := gz(t, gzip.DefaultCompression, logText(200<<10, 5))
	rng := rand.New(rand.NewPCG(6, 7))
	for i := 0; i < 300; i++ {
		bad := bytes.Clone(z)
		switch rng.IntN(3) {
		case 0:
			bad = bad[:rng.IntN(len(bad))]
		default:
			for k := 0; k < 1+rng.IntN(4); k++ {
				bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
			}
		}
		Build(bytes.NewReader(bad), io.Discard, 32<<10)
	}
	_, err := Build(bytes.NewReader(append(bytes.Clone(z), "trailing"...)), io.Discard, 32<<10)
	require.Error(t, err)
	_, err = Decode([]byte(magic + "\x05\x05\x09"))
	require.Error(t, err)
}

func FuzzBuild(f *testing.F) {
	f.Add(gz(f, gzip.DefaultCompression, logText(4000, 8)))
	f.Add(gz(f, gzip.NoCompression, []byte("stored")))
	f.Fuzz(func(t *testing.T, z []byte) {
		var got bytes.Buffer
		ix, err := Build(bytes.NewReader(z), &got, 1024)
		zr, gerr := gzip.NewReader(bytes.NewReader(z))
		var want []byte
		if gerr == nil {
			want, gerr = io.ReadAll(zr)
		}
		if gerr == nil && err != nil {
			t.Fatalf("compress/gzip reads it, Build fails: %v", err)
		}
		if err == nil && gerr == nil {
			require.Equal(t, string(want), got.String())
			r := NewReader(ix, bytes.NewReader(z))
			for _, p := range ix.Points {
				if p.Out == ix.Size {
					continue
				}
				buf := make([]byte, min(100, ix.Size-p.Out))
				_, err := r.ReadAt(buf, p.Out)
				require.NoError(t, err)
				require.Equal(t, want[p.Out:p.Out+int64(len(buf))], buf)
			}
			r.Close()
		}
	})
}
