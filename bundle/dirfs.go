package bundle

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// dirFS is os.DirFS with a cheaper Open and ReadFile. On Linux os.Open of a regular file
// tries the file on the network poller and undoes it: four system calls more than the open
// itself (two fcntl to make it non-blocking, the epoll_ctl that refuses it, two fcntl to undo
// it). A bundle of 16,384 ranks opens every log and resource at least once per command, so
// those calls were a third of a warm search's time. Files here are opened as plain blocking
// descriptors (openPlain); Stat, ReadDir and the rest are os.DirFS's.
type dirFS struct {
	osDirFS
	dir string
	// held are small logs the sniff of Open read whole (see heldLogs).
	held *heldLogs
}

// osDirFS is what os.DirFS implements, so that dirFS keeps all of it.
type osDirFS interface {
	fs.StatFS
	fs.ReadFileFS
	fs.ReadDirFS
}

func newDirFS(dir string) fs.FS {
	return dirFS{osDirFS: os.DirFS(dir).(osDirFS), dir: dir, held: &heldLogs{}}
}

// join is os.DirFS's: a valid slash-separated name below the directory.
func (d dirFS) join(name string) (string, error) {
	if !fs.ValidPath(name) || strings.IndexByte(name, 0) >= 0 || d.dir == "" {
		return "", os.ErrInvalid
	}
	return filepath.Join(d.dir, filepath.FromSlash(name)), nil
}

func (d dirFS) Open(name string) (fs.File, error) {
	full, err := d.join(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if data, ok := d.held.open(name); ok {
		return heldFile{Reader: bytes.NewReader(data), full: full}, nil
	}
	f, err := openPlain(full)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f, nil
}

func (d dirFS) ReadFile(name string) ([]byte, error) {
	return d.readFileTo(nil, name, -1)
}

// readFileTo is ReadFile into buf's memory, of a file whose size the walk saw (size), which
// is not asked again; -1 asks it.
func (d dirFS) readFileTo(buf []byte, name string, size int64) ([]byte, error) {
	full, err := d.join(name)
	if err != nil {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: err}
	}
	f, err := openPlain(full)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer f.Close()
	if size < 0 {
		if n, regular := plainSize(f); regular {
			size = n
		}
	}
	return readToEnd(f, name, buf, size)
}

// readToEnd reads f, file name, to its end into buf's memory, made at size (-1: not known)
// and one byte more, to see the end without growing.
func readToEnd(f io.Reader, name string, buf []byte, size int64) ([]byte, error) {
	want := 512
	if size >= 0 && size < 1<<40 {
		want = max(int(size)+1, want)
	}
	data := buf[:0]
	if cap(data) < want {
		data = make([]byte, 0, want)
	}
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}
