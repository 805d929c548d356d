// Package scratch makes coroner's temporary files and directories so that a run killed
// outright (SIGKILL, out of memory, a power cut) leaves nothing behind for long: each one is
// locked (flock) by the process that made it for as long as it lives, and Sweep, run at the
// next start, removes those whose lock nobody holds.
package scratch

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LockName is the lock file inside a scratch directory (a directory that lists its files
// leaves it out).
const LockName = ".coroner-lock"

// minAge keeps Sweep away from an entry another process has just created and not yet locked.
const minAge = 10 * time.Second

// File is a temporary file, locked while it is open.
type File struct {
	*os.File
}

// CreateTemp makes a temporary file in dir (os.TempDir() when empty), as os.CreateTemp does,
// and locks it. Close releases the lock; Remove closes and removes it.
func CreateTemp(dir, pattern string) (*File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := lock(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{f}, nil
}

// Remove closes the file and removes it.
func (f *File) Remove() error {
	f.Close()
	return os.Remove(f.Name())
}

// Dir is a temporary directory, locked while it exists.
type Dir struct {
	Path string
	lock *os.File
}

// MkdirTemp makes a private temporary directory in parent (os.TempDir() when empty), as
// os.MkdirTemp does, holding a lock file this process keeps locked until Remove.
func MkdirTemp(parent, pattern string) (*Dir, error) {
	p, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(p, LockName), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err == nil {
		if err = lock(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(p)
		return nil, err
	}
	return &Dir{Path: p, lock: f}, nil
}

// Remove removes the directory and everything in it.
func (d *Dir) Remove() error {
	err := os.RemoveAll(d.Path)
	d.lock.Close()
	return err
}

// Keep makes the directory a lasting one (to be renamed into its place): its lock file is
// removed and the lock released, so Sweep leaves it alone from now on.
func (d *Dir) Keep() error {
	err := os.Remove(filepath.Join(d.Path, LockName))
	d.lock.Close()
	return err
}

// Sweep removes what a killed run left in dir (os.TempDir() when empty): the files and
// directories whose names start with prefix and end with a suffix of os.CreateTemp, older
// than a few seconds, whose lock no process holds. It never fails: what it cannot remove
// it leaves.
func Sweep(dir, prefix string) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	now := time.Now()
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < minAge {
			continue
		}
		p := filepath.Join(dir, e.Name())
		lp := p
		if e.IsDir() {
			lp = filepath.Join(p, LockName)
		} else if !e.Type().IsRegular() {
			continue
		}
		if owned(lp) {
			continue
		}
		if e.IsDir() {
			os.RemoveAll(p)
		} else {
			os.Remove(p)
		}
	}
}

// owned reports whether a live process holds the lock of p. A directory without a lock file
// was not made by MkdirTemp (or by an older coroner): it is left alone.
func owned(p string) bool {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return true
	}
	defer f.Close()
	free, err := tryLock(f)
	return err != nil || !free
}
