//go:build !unix

package bundle

import (
	"errors"
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
