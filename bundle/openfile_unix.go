//go:build unix

package bundle

import (
	"os"
	"syscall"
)

// openPlain opens a file for reading as a blocking descriptor that the runtime's poller is
// not asked to take (see dirFS). Errors are the bare errno; the caller names the file.
func openPlain(name string) (*os.File, error) {
	fd, err := openFD(name)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
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
