//go:build unix

package bundle

import (
	"os"
	"syscall"
)

// openPlain opens a file for reading as a blocking descriptor that the runtime's poller is
// not asked to take (see dirFS). Errors are the bare errno; the caller names the file.
func openPlain(name string) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}
