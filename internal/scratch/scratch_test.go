package scratch

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// age makes an entry look older than minAge.
func age(t *testing.T, p string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(p, old, old))
}

func TestSweepRemovesOnlyWhatNobodyHolds(t *testing.T) {
	dir := t.TempDir()

	live, err := MkdirTemp(dir, "coroner-bundle-*")
	require.NoError(t, err)
	defer live.Remove()
	liveFile, err := CreateTemp(dir, "coroner-stdin-*")
	require.NoError(t, err)
	defer liveFile.Remove()

	// What a killed process leaves: the same entries, their locks released with the process.
	dead, err := MkdirTemp(dir, "coroner-bundle-*")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dead.Path, "big.log"), []byte("x"), 0o600))
	dead.lock.Close()
	deadFile, err := CreateTemp(dir, "coroner-stdin-*")
	require.NoError(t, err)
	deadFile.Close()

	fresh, err := CreateTemp(dir, "coroner-stdin-*") // just made, maybe not locked yet
	require.NoError(t, err)
	fresh.Close()
	foreign := filepath.Join(dir, "coroner-bundle-unlocked") // not ours: no lock file
	require.NoError(t, os.Mkdir(foreign, 0o700))
	other := filepath.Join(dir, "someone-else")
	require.NoError(t, os.WriteFile(other, nil, 0o600))

	for _, p := range []string{live.Path, liveFile.Name(), dead.Path, deadFile.Name(), foreign, other} {
		age(t, p)
	}
	Sweep(dir, "coroner-bundle-")
	Sweep(dir, "coroner-stdin-")

	for _, p := range []string{live.Path, liveFile.Name(), fresh.Name(), foreign, other} {
		_, err := os.Stat(p)
		require.NoError(t, err, "kept: %s", p)
	}
	require.NoDirExists(t, dead.Path)
	require.NoFileExists(t, deadFile.Name())
}

// TestSweepAfterKill holds a lock from another process, then kills it.
func TestSweepAfterKill(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "coroner-entry-1")
	require.NoError(t, os.WriteFile(p, []byte("spool"), 0o600))
	cmd := exec.Command("flock", "--no-fork", "-x", p, "sleep", "60")
	require.NoError(t, cmd.Start())
	// Wait until the lock is taken.
	for i := 0; i < 200 && !owned(p); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	age(t, p)
	Sweep(dir, "coroner-entry-")
	require.FileExists(t, p, "a live process holds it")
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	Sweep(dir, "coroner-entry-")
	require.NoFileExists(t, p, "its process was killed")
}
