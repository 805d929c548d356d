//go:build linux && (amd64 || arm64)

package bundle

import (
	"encoding/binary"
	"io/fs"
	"slices"
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
}

// dir walks the directory open as fd (closed when done), at full path p and rel under the root.
func (w *treeWalk) dir(fd int, p, rel string) error {
	ents, err := w.read(fd, p)
	if err != nil {
		syscall.Close(fd)
		return err
	}
	slices.SortFunc(ents, func(a, b dirent) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	defer syscall.Close(fd)
	for _, e := range ents {
		child := e.name
		if rel != "" {
			child = rel + "/" + e.name
		}
		var st syscall.Stat_t
		typ, stated := direntType(e.typ), false
		if typ == ^fs.FileMode(0) || typ.IsRegular() {
			if err := fstatat(fd, e.name, &st); err != nil {
				return &fs.PathError{Op: "lstat", Path: p + "/" + e.name, Err: err}
			}
			typ, stated = statType(st.Mode), true
		}
		var sig Sig
		if stated {
			sig = Sig{Size: st.Size, Mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec, Ino: st.Ino}
		}
		if err := w.visit(child, typ, sig); err != nil {
			return err
		}
		if typ.IsDir() {
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
