//go:build linux

package bundle

import (
	"io/fs"
	"syscall"
)

// ChangeTime is a file's inode and status-change time: unlike the modification time, no
// program can set the change time back, so a rewritten file never looks unchanged.
func ChangeTime(info fs.FileInfo) (ino uint64, ctime int64) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino), st.Ctim.Sec*1e9 + st.Ctim.Nsec
	}
	return 0, 0
}
