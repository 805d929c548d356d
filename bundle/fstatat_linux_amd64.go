package bundle

import (
	"syscall"
	"unsafe"
)

// fstatatNoFollow is fstatat(fd, name, st, AT_SYMLINK_NOFOLLOW) (newfstatat here, which the
// syscall package does not export).
func fstatatNoFollow(fd int, name string, st *syscall.Stat_t) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, errno := syscall.Syscall6(syscall.SYS_NEWFSTATAT, uintptr(fd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(st)), _AT_SYMLINK_NOFOLLOW, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

const _AT_SYMLINK_NOFOLLOW = 0x100
