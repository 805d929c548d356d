//go:build linux && (amd64 || arm64)

package bundle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// walkSigned walks the tree under root. Each directory is opened once and read with getdents;
// each regular file is signed by an fstatat on its directory's descriptor, so no path is
// resolved again per file (an lstat of the whole path was most of a walk of 200,000 files).
// Entries whose type the directory does not record are looked at with the same fstatat.
//
// The directories are read and signed by one worker per CPU, a few ahead of the visits, which
// stay in order: a warm search of 16,384 pods' logs is mostly these system calls, and one CPU
// made them one at a time. No more than maxEntries entries are read in all (else
// errTooManyEntries), however far ahead the workers are.
func walkSigned(root string, maxEntries int, visit walkVisit) error {
	_, err := walkMemo(root, maxEntries, nil, false, visit)
	return err
}

// walkMemo is walkSigned taking the listings of memo's unchanged directories (see treeMemo),
// and, when keep is set, returns the memo of this walk.
func walkMemo(root string, maxEntries int, memo *treeMemo, keep bool, visit walkVisit) (*memoWriter, error) {
	w := &treeWalk{visit: visit, budget: int64(maxEntries), jobs: make(chan *dirJob, walkAhead), memo: memo, rootFD: -1}
	if memo != nil {
		// Names resolved under the root, not from "/": a few components a file fewer.
		fd, err := openPathFD(root)
		if err != nil {
			return nil, err
		}
		defer syscall.Close(fd)
		w.rootFD = fd
	}
	if keep {
		w.out = newMemoWriter(root, time.Now())
	}
	workers := min(runtime.GOMAXPROCS(0), maxWalkWorkers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			var names pathBuf
			for j := range w.jobs {
				if w.stopped.Load() {
					j.err = errWalkStopped
				} else {
					j.ents, j.listing, j.err = w.readDir(j.path, j.rel, buf, &names)
				}
				close(j.done)
			}
		}()
	}
	defer func() {
		w.stopped.Store(true) // what is still queued is not read
		close(w.jobs)
		wg.Wait()
	}()
	root0 := &dirJob{path: root}
	var err error
	if root0.ents, root0.listing, err = w.readDir(root, "", make([]byte, 32<<10), new(pathBuf)); err != nil {
		return nil, err
	}
	if err := w.dir(root0); err != nil {
		return nil, err
	}
	if w.out != nil && w.out.fromMemo != memo.dirs() {
		w.out.changed = true // a directory remembered was not walked
	}
	return w.out, nil
}

// walkAhead is how many directories of one level are queued for the workers ahead of the
// visits; maxWalkWorkers bounds the workers (the system calls of one file system scale no
// further).
const (
	walkAhead      = 64
	maxWalkWorkers = 4
)

var errWalkStopped = errors.New("walk stopped")

type treeWalk struct {
	visit   walkVisit
	budget  int64 // entries left to read
	jobs    chan *dirJob
	stopped atomic.Bool
	memo    *treeMemo
	rootFD  int         // the root, open while a memo is used: its files are signed by their paths under it
	out     *memoWriter // nil: none kept; else written by the visiting goroutine only
}

// dirJob is a directory a worker reads: its entries, signed and sorted, once done is closed;
// listing is its signature and entries as a memo keeps them, fromMemo when they came from one.
type dirJob struct {
	path, rel string
	ents      []dirent
	listing   *memoDir
	err       error
	done      chan struct{}
}

func openDirFD(p string) (int, error) { return openDirAs(p, syscall.O_RDONLY) }

// openPathFD opens the directory p for use as a base of paths only (O_PATH: nothing read).
func openPathFD(p string) (int, error) { return openDirAs(p, _O_PATH) }

// _O_PATH is Linux's O_PATH (the same on amd64 and arm64), which the syscall package lacks.
const _O_PATH = 0x200000

func openDirAs(p string, mode int) (int, error) {
	for {
		fd, err := syscall.Open(p, mode|syscall.O_DIRECTORY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
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

// readDir reads the directory at p (rel under the root) and signs its entries, sorted by
// name. The directory is closed before any subdirectory is read, so a deep tree holds a
// directory open per worker, not one per level. A directory the memo lists with the same
// signature is not read: its entries are the memo's, each file signed by its path.
func (w *treeWalk) readDir(p, rel string, buf []byte, names *pathBuf) ([]dirent, *memoDir, error) {
	if md := w.memo.dir(rel); md != nil {
		if ents, ok, err := w.memoDir(p, rel, md, names); ok || err != nil {
			return ents, md, err
		}
	}
	fd, err := openDirFD(p)
	if err != nil {
		return nil, nil, err
	}
	// The directory's signature before its entries are read: a change while they are read
	// leaves a newer one, which the next walk does not take for this listing. A walk that
	// keeps no memo needs none (a system call per directory: 16,384 at 16,384 ranks).
	var st syscall.Stat_t
	if w.out != nil {
		err = syscall.Fstat(fd, &st)
	}
	var ents []dirent
	if err == nil {
		ents, err = w.read(fd, p, buf)
	}
	if err == nil {
		err = signEntries(fd, p, "", ents, names)
	}
	syscall.Close(fd)
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	if w.out == nil {
		return ents, nil, nil
	}
	md := &memoDir{mtime: timeOf(st.Mtim), ctime: timeOf(st.Ctim), ino: st.Ino, ents: make([]memoEnt, len(ents))}
	for i, e := range ents {
		md.ents[i] = memoEnt{e.name, e.typ}
	}
	return ents, md, nil
}

// memoDir signs the entries md lists of the directory at p (rel under the root) when its
// signature is still md's (ok; else the directory is to be read). A directory of a few files
// or more is opened (O_PATH: nothing read) and its files signed relative to it, each by its
// name alone; the others' files are signed by their paths under the root, each resolving the
// directory's components again (at 200,000 files in 25,000 pods' directories, most of the
// kernel's work in a stat). The opened directory is the one whose signature is checked.
func (w *treeWalk) memoDir(p, rel string, md *memoDir, names *pathBuf) ([]dirent, bool, error) {
	var st syscall.Stat_t
	fd, name, prefix := w.rootFD, ".", ""
	if rel != "" {
		name, prefix = rel, rel+"/"
	}
	if rel != "" && signedFiles(md) >= dirFDFiles {
		if dfd, err := names.openat(w.rootFD, rel); err == nil {
			defer syscall.Close(dfd)
			fd, name, prefix = dfd, "", ""
		} // else the path is stat'ed as below, which says why it fails
	}
	var err error
	if name == "" {
		err = syscall.Fstat(fd, &st)
	} else {
		err = names.fstatat(fd, "", name, &st)
	}
	if err != nil {
		return nil, false, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	if !statType(st.Mode).IsDir() || st.Ino != md.ino || timeOf(st.Mtim) != md.mtime || timeOf(st.Ctim) != md.ctime {
		return nil, false, nil
	}
	if atomic.AddInt64(&w.budget, -int64(len(md.ents))) < 0 {
		return nil, false, errTooManyEntries
	}
	ents := make([]dirent, len(md.ents))
	for i, e := range md.ents {
		ents[i] = dirent{name: e.name, typ: e.typ}
	}
	if err := signEntries(fd, p, prefix, ents, names); err != nil {
		return nil, false, err
	}
	return ents, true, nil
}

// dirFDFiles is how many files a remembered directory has at least for its files to be signed
// relative to it: opening and closing it are two system calls more than one stat of its path,
// and each file then resolves one name instead of the directory's every component.
const dirFDFiles = 4

// signedFiles is how many of md's entries signEntries stats: the regular files and the
// entries of no recorded type.
func signedFiles(md *memoDir) int {
	n := 0
	for _, e := range md.ents {
		if m := direntType(e.typ); m == ^fs.FileMode(0) || m.IsRegular() {
			n++
		}
	}
	return n
}

func timeOf(t syscall.Timespec) int64 { return t.Sec*1e9 + t.Nsec }

// dir visits the entries of a directory read (j.path, rel j.rel under the root) in order, and
// walks each subdirectory when its turn comes. The subdirectories ahead are queued for the
// workers meanwhile, up to walkAhead of them.
func (w *treeWalk) dir(j *dirJob) error {
	if w.out != nil && j.listing != nil {
		if w.memo != nil && w.memo.dir(j.rel) == j.listing {
			w.out.fromMemo++
		} else {
			w.out.changed = true
		}
		w.out.add(j.rel, j.listing)
	}
	var subs []*dirJob
	for _, e := range j.ents {
		if e.mode.IsDir() {
			rel := e.name
			if j.rel != "" {
				rel = j.rel + "/" + e.name
			}
			subs = append(subs, &dirJob{path: j.path + "/" + e.name, rel: rel, done: make(chan struct{})})
		}
	}
	queued, next := 0, 0
	for _, e := range j.ents {
		child := e.name
		if j.rel != "" {
			child = j.rel + "/" + e.name
		}
		if err := w.visit(child, e.mode, e.sig); err != nil {
			return err
		}
		if !e.mode.IsDir() {
			continue
		}
		for ; queued < len(subs) && queued < next+walkAhead; queued++ {
			w.jobs <- subs[queued]
		}
		sub := subs[next]
		subs[next] = nil // its entries are garbage once walked
		next++
		<-sub.done
		if sub.err != nil {
			return sub.err
		}
		if err := w.dir(sub); err != nil {
			return err
		}
	}
	return nil
}

// signEntries sets each entry's type, and signs each regular file (and each entry whose type
// the directory does not record) with an fstatat on the directory's descriptor (prefix "") or,
// fd being the root's, on prefix+name.
func signEntries(fd int, p, prefix string, ents []dirent, names *pathBuf) error {
	for i := range ents {
		e := &ents[i]
		e.mode = direntType(e.typ)
		if e.mode != ^fs.FileMode(0) && !e.mode.IsRegular() {
			continue
		}
		var st syscall.Stat_t
		if err := names.fstatat(fd, prefix, e.name, &st); err != nil {
			return &fs.PathError{Op: "lstat", Path: p + "/" + e.name, Err: err}
		}
		e.mode = statType(st.Mode)
		e.sig = Sig{Size: st.Size, Mtime: timeOf(st.Mtim), Ctime: timeOf(st.Ctim), Ino: st.Ino}
	}
	return nil
}

// read lists a directory's entries but "." and "..", each counted against the walk's budget.
func (w *treeWalk) read(fd int, p string, buf []byte) ([]dirent, error) {
	var ents []dirent
	for {
		n, err := syscall.ReadDirent(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: p, Err: err}
		}
		if n <= 0 {
			return ents, nil
		}
		had := len(ents)
		for b := buf[:n]; len(b) >= 19; {
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
		if atomic.AddInt64(&w.budget, -int64(len(ents)-had)) < 0 {
			return nil, errTooManyEntries
		}
	}
}

// pathBuf holds the NUL-ended name fstatat passes, made again in the same bytes for each file
// a worker signs (a copy made per file, and a path joined per file under the root, were ~7%
// of a warm search at 16,384 ranks).
type pathBuf []byte

// fstatat is an lstat of prefix+name, relative to the directory fd.
func (b *pathBuf) fstatat(fd int, prefix, name string, st *syscall.Stat_t) error {
	*b = append(append(append((*b)[:0], prefix...), name...), 0)
	if bytes.IndexByte((*b)[:len(*b)-1], 0) >= 0 {
		return syscall.EINVAL // a name from a damaged memo: no file has it
	}
	for {
		err := fstatatNoFollow(fd, &(*b)[0], st)
		if err != syscall.EINTR {
			return err
		}
	}
}

// openat opens the directory name under fd for use as a base of paths only (O_PATH),
// not following a symbolic link in its last component, as fstatat does not.
func (b *pathBuf) openat(fd int, name string) (int, error) {
	*b = append(append((*b)[:0], name...), 0)
	if bytes.IndexByte((*b)[:len(*b)-1], 0) >= 0 {
		return -1, syscall.EINVAL
	}
	for {
		r, _, errno := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(fd), uintptr(unsafe.Pointer(&(*b)[0])),
			uintptr(_O_PATH|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(r), nil
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
