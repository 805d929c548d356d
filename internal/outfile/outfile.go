// Package outfile writes coroner's outputs (reports, bundles) so that a failed or interrupted
// run never leaves a half-written file under the name the user gave, and so that no output
// replaces what it should not: a regular file (or a new path) is written to a temporary file
// beside it and renamed over it when complete; a device, FIFO or socket (/dev/null,
// /dev/stdout, a pipe) is written as a stream; a symbolic link to anything else, or a
// directory, is refused.
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/coroner-dev/coroner/internal/scratch"
)

// File is an output being written. Write to it, then Commit or Abort; Abort after Commit does
// nothing, so `defer f.Abort()` is safe.
type File struct {
	*os.File
	final  string
	stream bool
	done   bool
}

// Create opens the output named path. It first removes the temporary files that a killed
// run left beside path.
func Create(path string) (*File, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Stat(path)
		if err == nil && isStream(target.Mode()) {
			return openStream(path)
		}
		return nil, fmt.Errorf("%s is a symbolic link: coroner does not replace or write through links; name the file itself", path)
	case st.IsDir():
		return nil, fmt.Errorf("%s is a directory: name a file", path)
	case isStream(st.Mode()):
		return openStream(path)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file, a device or a pipe", path)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	prefix := "." + base + ".tmp-"
	scratch.Sweep(dir, prefix)
	f, err := scratch.CreateTemp(dir, prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	return &File{File: f.File, final: path}, nil
}

// isStream is true for what is written in place, never replaced: devices, FIFOs, sockets.
func isStream(m fs.FileMode) bool {
	return m&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0
}

func openStream(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	return &File{File: f, final: path, stream: true}, nil
}

// Name is the path the output will have.
func (f *File) Name() string { return f.final }

// Stream reports whether the output is written in place (a device, FIFO or socket).
func (f *File) Stream() bool { return f.stream }

// Commit completes the output: the temporary file is synced, closed and renamed over the
// final name (mode 0644); a stream is closed.
func (f *File) Commit() error {
	if f.done {
		return errors.New("output already closed")
	}
	f.done = true
	if f.stream {
		return f.File.Close()
	}
	tmp := f.File.Name()
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, f.final)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", f.final, err)
	}
	return nil
}

// Abort drops the output: the temporary file is removed and nothing is renamed.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	if !f.stream {
		os.Remove(f.File.Name())
	}
}

// WriteFile writes data to the output named path, as Create and Commit do.
func WriteFile(path string, data []byte) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}
