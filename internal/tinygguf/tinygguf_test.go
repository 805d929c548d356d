package tinygguf

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	var a, b bytes.Buffer
	require.NoError(t, Write(&a))
	require.NoError(t, Write(&b))
	require.Equal(t, a.Bytes(), b.Bytes(), "the same model every time")
	require.Less(t, a.Len(), 1<<20)
	data := a.Bytes()
	require.Equal(t, "GGUF", string(data[:4]))
	require.Equal(t, uint32(3), binary.LittleEndian.Uint32(data[4:]))
	require.Equal(t, uint64(3+9*Layers), binary.LittleEndian.Uint64(data[8:]), "tensors: embeddings, 9 per layer, output norm and output")
	require.Zero(t, a.Len()%alignment, "tensor data is padded to the alignment")
	tokens, types, scores := Vocabulary()
	require.Len(t, tokens, 3+256+95)
	require.Len(t, types, len(tokens))
	require.Len(t, scores, len(tokens))
}

// WriteQuoting is Write's model with one more token in the cycle: the same size and the same
// bytes every time, different weights.
func TestWriteQuoting(t *testing.T) {
	var a, b, plain bytes.Buffer
	require.NoError(t, WriteQuoting(&a))
	require.NoError(t, WriteQuoting(&b))
	require.NoError(t, Write(&plain))
	require.Equal(t, a.Bytes(), b.Bytes())
	require.Equal(t, plain.Len(), a.Len())
	require.NotEqual(t, plain.Bytes(), a.Bytes())
}
