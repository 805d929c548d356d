package main

import (
	"errors"
	"io/fs"
	"os"
)

// errNoDir and errNotDir say what is wrong with a directory the user named.
var (
	errNoDir  = errors.New("no such directory")
	errNotDir = errors.New("not a directory")
)

// checkDir says, in a few words, why dir cannot be read as a directory of rule files: without
// it, the error would come from inside the fs.FS rooted at dir and name its root, "open .".
// The caller names the directory (and the flag that gave it).
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errNoDir
	case err != nil:
		return pathCause(err)
	case !st.IsDir():
		return errNotDir
	}
	if _, err := os.ReadDir(dir); err != nil {
		return pathCause(err)
	}
	return nil
}

// pathCause is the cause of a path error without the operation and path it repeats.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
