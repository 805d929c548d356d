package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSpoolPastMemory: a report larger than spoolMemory comes out whole, to a writer and to
// a file, and its temporary file is gone after Close.
func TestSpoolPastMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("spools 32 MiB; skipped with -short")
	}
	t.Setenv("TMPDIR", t.TempDir())
	var want bytes.Buffer
	s := &spool{}
	line := strings.Repeat("x", 1000) + "\n"
	for i := 0; want.Len() <= 2*spoolMemory; i++ {
		chunk := []byte(line[:1+i%len(line)])
		want.Write(chunk)
		n, err := s.Write(chunk)
		require.NoError(t, err)
		require.Equal(t, len(chunk), n)
	}
	require.NotNil(t, s.f, "past spoolMemory the report is in a file")
	require.Zero(t, s.mem.Cap(), "and no longer in memory")
	var got bytes.Buffer
	_, err := s.WriteTo(&got)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want.Bytes(), got.Bytes()))
	out := filepath.Join(t.TempDir(), "report.json")
	require.NoError(t, s.writeFile(out))
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want.Bytes(), data))
	s.Close()
	left, err := os.ReadDir(os.Getenv("TMPDIR"))
	require.NoError(t, err)
	require.Empty(t, left)
}
