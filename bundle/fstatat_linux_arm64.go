package bundle

import "syscall"

// fstatatNoFollow is fstatat(fd, name, st, AT_SYMLINK_NOFOLLOW).
func fstatatNoFollow(fd int, name string, st *syscall.Stat_t) error {
	return syscall.Fstatat(fd, name, st, _AT_SYMLINK_NOFOLLOW)
}

const _AT_SYMLINK_NOFOLLOW = 0x100
