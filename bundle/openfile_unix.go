//go:build unix

package bundle

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// openPlain opens a file for reading as a blocking descriptor that the runtime's poller is
// not asked to take (see dirFS). Errors are the bare errno; the caller names the file.
func openPlain(name string) (*plainFile, error) {
	fd, err := openFD(name)
	if err != nil {
		return nil, err
	}
	return &plainFile{fd: fd, name: name}, nil
}

// plainFile is a file openPlain opened: its reads and its close are system calls on the
// descriptor. An *os.File asks for the descriptor's flags (an fcntl) as it is made, registers
// a cleanup and takes the poller's locks on each read and at its close, for each of the
// 16,384 logs and as many pod files a bundle of 16,384 ranks opens. Errors are the ones an
// *os.File gives. It has no cleanup: every caller closes what it opens.
type plainFile struct {
	fd   int
	name string
	// dir takes the descriptor over at the first ReadDir: a directory is read as package os
	// reads it.
	dir *os.File
}

// ReadDir reads a directory's entries as (*os.File).ReadDir does.
func (f *plainFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if f.dir == nil {
		if f.fd < 0 {
			return nil, &fs.PathError{Op: "readdirent", Path: f.name, Err: os.ErrClosed}
		}
		f.dir = os.NewFile(uintptr(f.fd), f.name)
	}
	return f.dir.ReadDir(n)
}

// maxRead bounds one read, as package os does (some systems refuse reads of 2 GiB or more).
const maxRead = 1 << 30

func (f *plainFile) Read(b []byte) (int, error) {
	if f.fd < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: os.ErrClosed}
	}
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(f.fd, b[:min(len(b), maxRead)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// ReadAt reads len(b) bytes from off, or fewer and an error (io.EOF at the end of the file).
func (f *plainFile) ReadAt(b []byte, off int64) (n int, err error) {
	if f.fd < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: os.ErrClosed}
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	for len(b) > 0 {
		m, e := syscall.Pread(f.fd, b[:min(len(b), maxRead)], off)
		if e == syscall.EINTR {
			continue
		}
		if e != nil {
			return n, &fs.PathError{Op: "read", Path: f.name, Err: e}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
		b = b[m:]
		off += int64(m)
	}
	return n, nil
}

// Stat stats the open file through an *os.File of a copy of its descriptor: no reader of a
// bundle's logs asks for it on the way that matters.
func (f *plainFile) Stat() (fs.FileInfo, error) {
	if f.fd < 0 {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: os.ErrClosed}
	}
	fd, err := syscall.Dup(f.fd)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	syscall.CloseOnExec(fd)
	of := os.NewFile(uintptr(fd), f.name)
	defer of.Close()
	return of.Stat()
}

// plainSize is the size of an open file and whether it is a regular file, by one fstat.
func plainSize(f *plainFile) (int64, bool) {
	var st syscall.Stat_t
	if f.fd < 0 || syscall.Fstat(f.fd, &st) != nil {
		return 0, false
	}
	return st.Size, st.Mode&syscall.S_IFMT == syscall.S_IFREG
}

func (f *plainFile) Close() error {
	if f.fd < 0 {
		return &fs.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	fd := f.fd
	f.fd = -1
	if f.dir != nil {
		return f.dir.Close()
	}
	if err := syscall.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// readHead reads the start of a file into buf, as much as one read of each size asks gives,
// until buf is full or the file ends: a sniff of each of 16,384 logs needs no *os.File (its
// fcntl and the runtime's cleanup) for an open, a read and a close. Errors are the bare
// errno of the open; a read error ends the head where it is.
func readHead(name string, buf []byte) (int, error) {
	fd, err := openFD(name)
	if err != nil {
		return 0, err
	}
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break
		}
		n += m
	}
	syscall.Close(fd)
	return n, nil
}

func openFD(name string) (int, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
