//go:build linux && (amd64 || arm64)

package bundle

import (
	"encoding/binary"
	"io/fs"
	"slices"
	"strings"
	"syscall"
)

// walkSigned walks the tree under root. Each directory is opened once and read with getdents;
// each regular file is signed by an fstatat on its directory's descriptor, so no path is
// resolved again per file (an lstat of the whole path was most of a walk of 200,000 files).
// Entries whose type the directory does not record are looked at with the same fstatat.
func walkSigned(root string, visit walkVisit) error {
	fd, err := openDirFD(root)
	if err != nil {
		return err
	}
	w := &treeWalk{root: root, visit: visit, buf: make([]byte, 32<<10)}
	return w.dir(fd, root, "")
}

type treeWalk struct {
	root  string
	visit walkVisit
	buf   []byte
}

func openDirFD(p string) (int, error) {
	for {
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: p, Err: err}
		}
		return fd, nil
	}
}

type dirent struct {
	name string
	typ  byte
	// mode and sig are the entry's type and, for a regular file, its signature.
	mode fs.FileMode
	sig  Sig
}

// dir walks the directory open as fd, at full path p and rel under the root. Its entries are
// read and signed first and fd closed before any subdirectory is walked, so a deep tree holds
// one directory open at a time, not one per level.
func (w *treeWalk) dir(fd int, p, rel string) error {
	ents, err := w.read(fd, p)
	if err == nil {
		err = signEntries(fd, p, ents)
	}
	syscall.Close(fd)
	if err != nil {
		return err
	}
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	for _, e := range ents {
		child := e.name
		if rel != "" {
			child = rel + "/" + e.name
		}
		if err := w.visit(child, e.mode, e.sig); err != nil {
			return err
		}
		if e.mode.IsDir() {
			sub, err := openDirFD(p + "/" + e.name)
			if err != nil {
				return err
			}
			if err := w.dir(sub, p+"/"+e.name, child); err != nil {
				return err
			}
		}
	}
	return nil
}

// signEntries sets each entry's type, and signs each regular file (and each entry whose type
// the directory does not record) with an fstatat on the directory's descriptor.
func signEntries(fd int, p string, ents []dirent) error {
	for i := range ents {
		e := &ents[i]
		e.mode = direntType(e.typ)
		if e.mode != ^fs.FileMode(0) && !e.mode.IsRegular() {
			continue
		}
		var st syscall.Stat_t
		if err := fstatat(fd, e.name, &st); err != nil {
			return &fs.PathError{Op: "lstat", Path: p + "/" + e.name, Err: err}
		}
		e.mode = statType(st.Mode)
		e.sig = Sig{Size: st.Size, Mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec, Ino: st.Ino}
	}
	return nil
}

// read lists a directory's entries but "." and "..".
func (w *treeWalk) read(fd int, p string) ([]dirent, error) {
	var ents []dirent
	for {
		n, err := syscall.ReadDirent(fd, w.buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: p, Err: err}
		}
		if n <= 0 {
			return ents, nil
		}
		for b := w.buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name NUL-ended.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, &fs.PathError{Op: "readdirent", Path: p, Err: syscall.EIO}
			}
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if s := string(name); s != "." && s != ".." {
				ents = append(ents, dirent{name: s, typ: b[18]})
			}
			b = b[reclen:]
		}
	}
}

func fstatat(fd int, name string, st *syscall.Stat_t) error {
	for {
		err := fstatatNoFollow(fd, name, st)
		if err != syscall.EINTR {
			return err
		}
	}
}

// direntType is the type getdents recorded; ^0 when it recorded none.
func direntType(t byte) fs.FileMode {
	switch t {
	case syscall.DT_REG:
		return 0
	case syscall.DT_DIR:
		return fs.ModeDir
	case syscall.DT_LNK:
		return fs.ModeSymlink
	case syscall.DT_FIFO:
		return fs.ModeNamedPipe
	case syscall.DT_SOCK:
		return fs.ModeSocket
	case syscall.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.DT_BLK:
		return fs.ModeDevice
	}
	return ^fs.FileMode(0)
}

// statType is the type a stat says: its S_IFMT bits are the getdents type shifted.
func statType(mode uint32) fs.FileMode {
	return direntType(byte(mode & syscall.S_IFMT >> 12))
}
