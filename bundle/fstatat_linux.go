//go:build linux && (amd64 || arm64)

package bundle

import (
	"syscall"
	"unsafe"
)

// fstatatNoFollow is fstatat(fd, name, st, AT_SYMLINK_NOFOLLOW) (sysFstatat: newfstatat
// on amd64), name NUL-ended: the caller's buffer, not a copy made per call.
func fstatatNoFollow(fd int, name *byte, st *syscall.Stat_t) error {
	_, _, errno := syscall.Syscall6(sysFstatat, uintptr(fd), uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(st)), _AT_SYMLINK_NOFOLLOW, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

const _AT_SYMLINK_NOFOLLOW = 0x100
