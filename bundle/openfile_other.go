//go:build !unix

package bundle

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// openPlain opens a file for reading. Errors are the bare cause; the caller names the file.
func openPlain(name string) (*os.File, error) {
	f, err := os.Open(name)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, pe.Err
	}
	return f, err
}

// plainSize is the size of an open file and whether it is a regular file.
func plainSize(f *os.File) (int64, bool) {
	info, err := f.Stat()
	if err != nil {
		return 0, false
	}
	return info.Size(), info.Mode().IsRegular()
}

// readHead reads the start of a file into buf until it is full or the file ends. Errors are
// the bare cause of the open.
func readHead(name string, buf []byte) (int, error) {
	f, err := openPlain(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, _ := io.ReadFull(f, buf)
	return n, nil
}
