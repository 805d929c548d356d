package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestKilledRunIsSweptByTheNext: a run killed outright (SIGKILL, the OOM killer) cannot clean
// up; what it extracted stays in $TMPDIR, locked by nobody, and the next run that extracts a
// tarball removes it. A run still alive keeps its files.
func TestKilledRunIsSweptByTheNext(t *testing.T) {
	tmp, outDir := t.TempDir(), t.TempDir()
	fifo := filepath.Join(t.TempDir(), "slow.tar.gz")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	feedTarball(t, fifo)
	killed := start(t, tmp, nil, "analyze", fifo, "-o", filepath.Join(outDir, "killed.html"))
	pollUntil(t, "the extraction to start", func() bool {
		es, _ := filepath.Glob(filepath.Join(tmp, "coroner-bundle-*", "bundle", "logs", "ml", "p", "c.log"))
		return len(es) > 0
	})

	// A second run that waits on its own slow tarball holds its extraction meanwhile.
	fifo2 := filepath.Join(t.TempDir(), "slow.tar.gz")
	require.NoError(t, syscall.Mkfifo(fifo2, 0o600))
	feedTarball(t, fifo2)
	alive := start(t, tmp, nil, "analyze", fifo2, "-o", filepath.Join(outDir, "alive.html"))
	pollUntil(t, "the second extraction to start", func() bool { return len(scratchFiles(t, tmp)) == 2 })

	require.NoError(t, killed.cmd.Process.Kill())
	<-killed.done
	left := scratchFiles(t, tmp)
	require.Len(t, left, 2, "a killed run cannot remove its files")
	// Sweeping spares what is only seconds old (a run may not have locked it yet): age them.
	old := time.Now().Add(-time.Minute)
	for _, name := range left {
		require.NoError(t, os.Chtimes(filepath.Join(tmp, name), old, old))
	}

	tarball := filepath.Join(t.TempDir(), "ok.tar.gz")
	f, err := os.Create(tarball)
	require.NoError(t, err)
	require.NoError(t, writeTar(f, []tarEntry{reg("logs/ml/p/c.log", "2026-03-14T10:00:00Z step 1 loss 0.5\n")}, true))
	require.NoError(t, f.Close())
	next := start(t, tmp, nil, "analyze", tarball, "-o", filepath.Join(outDir, "next.html"))
	require.Equal(t, 0, next.wait(t), next.stderr.String())

	rest := scratchFiles(t, tmp)
	require.Len(t, rest, 1, "the killed run's extraction is gone, the live run's stays: %v", rest)
	require.Contains(t, left, rest[0])
	require.Equal(t, 130, alive.exit(t, os.Interrupt), alive.stderr.String())
	require.Empty(t, scratchFiles(t, tmp))
}
