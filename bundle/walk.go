package bundle

import (
	"errors"
	"io/fs"
)

// errTooManyEntries: a walk read more entries than it was allowed.
var errTooManyEntries = errors.New("too many entries")

// Sig is a file's signature as a walk took it: size, modification and status-change times
// (nanoseconds) and inode. A rewritten file never keeps all four: no program can set the
// change time back. Ctime and Ino are 0 where the system has none.
type Sig struct {
	Size, Mtime, Ctime int64
	Ino                uint64
}

// SigOf is the signature of a file's lstat or stat.
func SigOf(info fs.FileInfo) Sig {
	ino, ctime := ChangeTime(info)
	return Sig{Size: info.Size(), Mtime: info.ModTime().UnixNano(), Ctime: ctime, Ino: ino}
}

// walkVisit is called for each entry of a walked tree but its root, in lexical order of the
// names in each directory, a directory before what it holds: rel is the slash-separated path
// under the root, typ the entry's type, sig the file's signature (regular files only).
type walkVisit func(rel string, typ fs.FileMode, sig Sig) error
