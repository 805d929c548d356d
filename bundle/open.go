package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coroner-dev/coroner/internal/scratch"
)

// Limits bound what is read from a bundle. Bundles come from strangers: every limit has a
// default and is a flag of the commands that read bundles.
type Limits struct {
	MaxFileBytes     int64 // one file, uncompressed
	MaxTotalBytes    int64 // all files, uncompressed
	MaxEntries       int   // files and directories
	MaxLineBytes     int   // one log line; longer lines are cut and reported
	MaxResourceBytes int64 // one resource YAML or the manifest
	// MaxExpansion bounds how many times a tarball may expand over its compressed size, once
	// it has expanded past 128 MiB; 0 means no bound. Collected logs compress 5 to 30 times;
	// a gzip bomb of zeros, 1,000 times.
	MaxExpansion int
}

// DefaultLimits fit a large real bundle (64 ranks, several GiB of logs) with room to spare.
func DefaultLimits() Limits {
	return Limits{
		MaxFileBytes:     4 << 30,
		MaxTotalBytes:    32 << 30,
		MaxEntries:       200_000,
		MaxLineBytes:     1 << 20,
		MaxResourceBytes: 16 << 20,
		MaxExpansion:     100,
	}
}

// LimitKind names one of the Limits, or a limit of collecting a bundle, so that a caller can
// say how to raise it.
type LimitKind int

// The limits of Limits, one kind each, then those of a collect.
const (
	LimitFileBytes LimitKind = iota + 1
	LimitTotalBytes
	LimitEntries
	LimitLineBytes
	LimitResourceBytes
	LimitExpansion
	// LimitLogBudget is the bytes of all logs one collect keeps (collect.Options.MaxTotalLogBytes).
	LimitLogBudget
)

var limitNames = map[LimitKind]string{
	LimitFileBytes:     "file size limit",
	LimitTotalBytes:    "bundle size limit",
	LimitEntries:       "entry count limit",
	LimitLineBytes:     "line length limit",
	LimitResourceBytes: "resource size limit",
	LimitExpansion:     "expansion ratio limit",
	LimitLogBudget:     "total log budget",
}

func (k LimitKind) String() string {
	if n, ok := limitNames[k]; ok {
		return n
	}
	return fmt.Sprintf("limit(%d)", int(k))
}

// LimitError reports a bound that a bundle exceeded. Kind says which; the caller knows how the
// user raises it.
type LimitError struct {
	What  string
	Limit int64
	Kind  LimitKind
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s exceeds the %s of %d", e.What, e.Kind, e.Limit)
}

// File is one regular file of an opened bundle.
type File struct {
	Path string
	Size int64
}

// Bundle is an opened bundle. Read its files through FS.
type Bundle struct {
	// Source is the path the user named.
	Source string
	// FS holds the bundle tree: manifest.json, resources/, logs/.
	FS fs.FS
	// Manifest is nil when the bundle has none (it is still readable).
	Manifest *Manifest
	// Files lists every regular file, sorted by path.
	Files []File
	// Warnings are problems that did not stop the bundle from being read.
	Warnings []string
	// Plain is true when the bundle was made from plain log files.
	Plain  bool
	Limits Limits
	// Layout names the layout of another tool that was read (Troubleshoot), "" for a coroner
	// bundle. Such a bundle has no manifest: Gaps says what it lacks, Analysis holds what that
	// tool's own analyzers concluded.
	Layout   string
	Gaps     []Gap
	Analysis []AnalyzerResult
	// Links are the symbolic links Stream found in a layout that holds them (a troubleshoot
	// support bundle links a logs collector's files into cluster-resources/), each to a regular
	// file of the bundle, sorted by path. Links to anything else are left out, with a warning.
	Links []Link

	// sums holds the sha256 of files as the bundle holds them, computed while reading them.
	sums map[string]string
	// rawSizes are the sizes the bundle holds of the logs that are read decoded (UTF-16,
	// lines ended by "\r"): the manifest describes those bytes.
	rawSizes map[string]int64
	// walked holds each file's signature from the walk of a directory bundle, sorted by path
	// (see WalkSig); walkHint is where the last lookup found its file.
	walked   []walkedFile
	walkHint atomic.Int64
	// treeMemo is the listing of the walk's directories, when the context asked for it (see
	// WithTreeMemo); treeChanged when it differs from the memo the walk was given.
	treeMemo    []byte
	treeChanged bool
	// sigsOf is the bundle whose files this one reads beside those it made (see Beside).
	sigsOf *Bundle
	made   func(string) bool
	// sizesOnly: the manifest's sums of the files not read yet are not checked (see
	// WithManifestSizesOnly).
	sizesOnly bool
	// plainLogs: every log is read as it is, plain text (see PlainLogsDigest).
	plainLogs bool
	digest    *string // logsDigest, once computed
	cleanup   func() error
}

// WalkSig is the signature the walk of a directory bundle took of the file at path (an
// lstat), as it was when the bundle was opened; false when there is none (a tarball's files, a
// log read from a decoded copy, a path not in the bundle). A cache keyed by files' signatures
// takes it instead of a stat of its own: it was taken before any of the file was read.
func (b *Bundle) WalkSig(path string) (Sig, bool) {
	if fo, ok := b.FS.(*overlayFS); ok {
		if _, copied := fo.files[path]; copied {
			return Sig{}, false
		}
	}
	if b.sigsOf != nil {
		if b.made(path) {
			return Sig{}, false
		}
		return b.sigsOf.WalkSig(path)
	}
	return b.walkedSig(path)
}

// walkedFile is a file's signature from the walk.
type walkedFile struct {
	path string
	sig  Sig
}

// walkedSig looks a path up among the walk's signatures. Callers ask in path order (a cache
// signing every log): the entries just after the last one found are tried before a binary
// search, and a map of 200,000 paths is not made for it.
func (b *Bundle) walkedSig(path string) (Sig, bool) {
	w := b.walked
	from := int(b.walkHint.Load())
	for i := from; i < min(from+4, len(w)); i++ {
		if w[i].path == path {
			b.walkHint.Store(int64(i + 1))
			return w[i].sig, true
		}
	}
	i, ok := slices.BinarySearchFunc(w, path, func(f walkedFile, p string) int { return strings.Compare(f.path, p) })
	if !ok {
		return Sig{}, false
	}
	b.walkHint.Store(int64(i + 1))
	return w[i].sig, true
}

// Beside is a bundle named source that reads through fsys the files of b, unchanged, and
// those fsys makes (made reports which): b's files keep the signatures b's walk took
// (WalkSig), the made ones have none. Search reads a bundle's objects so, beside the text
// it makes of its events.
func (b *Bundle) Beside(source string, fsys fs.FS, made func(path string) bool) *Bundle {
	return &Bundle{Source: source, FS: fsys, Limits: b.Limits, sigsOf: b, made: made}
}

// Close releases what Open made (the extracted tree of a tarball).
func (b *Bundle) Close() error {
	if b.cleanup == nil {
		return nil
	}
	err := b.cleanup()
	b.cleanup = nil
	return err
}

// onClose adds fn to what Close does, after what it did already.
func (b *Bundle) onClose(fn func() error) {
	prev := b.cleanup
	b.cleanup = func() error {
		if prev != nil {
			prev()
		}
		return fn()
	}
}

// Open opens a bundle directory or a compressed tarball (.tar.gz, .tar.xz, .tar.zst,
// .tar.bz2). A cancelled ctx stops it (and removes
// what it extracted) with ctx's error.
func Open(ctx context.Context, p string, lim Limits) (*Bundle, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	var b *Bundle
	if root, layout := findGather(p); st.IsDir() && root != "" {
		b, err = openGather(ctx, p, root, layout, lim)
	} else if root := findTroubleshoot(p); st.IsDir() && root != "" {
		b, err = openTroubleshootDir(ctx, p, root, lim)
	} else if st.IsDir() {
		b, err = openDir(ctx, p, lim)
	} else {
		b, err = openTarball(ctx, p, lim)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if b.Layout != "" {
		return b, nil // its note says it has no manifest
	}
	b.sizesOnly = manifestSizesOnly(ctx)
	if err := b.readManifest(); err != nil {
		b.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return b, nil
}

// IsBundlePath reports whether p looks like a bundle (a directory, a file named as a
// compressed tarball, or a compressed file that holds a tar) rather than a plain log file (a
// compressed log, train.log.gz, is one).
func IsBundlePath(p string) bool {
	st, err := os.Stat(p)
	if err != nil {
		return false
	}
	if st.IsDir() {
		return true
	}
	if hasTarSuffix(p) {
		return true
	}
	if !st.Mode().IsRegular() {
		return false // a FIFO or a device: read as a plain log, never opened twice
	}
	_, tarball := sniffCompressed(p)
	return tarball
}

func openDir(ctx context.Context, source string, lim Limits) (*Bundle, error) {
	// The directory named may be a symbolic link (a "latest" link to the last bundle); the
	// links inside it are refused below.
	dir, err := filepath.EvalSymlinks(source)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Source: source, FS: newDirFS(dir), Limits: lim}
	var total int64
	entries := 1 // the root
	if entries > lim.MaxEntries {
		return nil, &LimitError{What: "number of entries", Limit: int64(lim.MaxEntries), Kind: LimitEntries}
	}
	var sigs []Sig // b.Files' signatures, in walk order
	memo, keepMemo := treeMemoOf(ctx, dir)
	if n := min(memo.entries(), lim.MaxEntries); n > 0 {
		// Made at about their size: grown a file at a time, 25 MB at 200,000 files.
		b.Files, sigs = make([]File, 0, n), make([]Sig, 0, n)
	}
	mw, err := walkMemo(dir, lim.MaxEntries, memo, keepMemo, func(rel string, typ fs.FileMode, sig Sig) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries++
		if entries > lim.MaxEntries {
			return &LimitError{What: "number of entries", Limit: int64(lim.MaxEntries), Kind: LimitEntries}
		}
		switch {
		case typ&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: is a symbolic link; bundles hold regular files only", rel)
		case typ.IsDir():
			return nil
		case !typ.IsRegular():
			return fmt.Errorf("%s: is not a regular file", rel)
		}
		if err := checkSize(rel, sig.Size, &total, lim); err != nil {
			return err
		}
		b.Files = append(b.Files, File{Path: rel, Size: sig.Size})
		sigs = append(sigs, sig)
		return nil
	})
	if errors.Is(err, errTooManyEntries) { // read ahead of the visits, past the limit
		err = &LimitError{What: "number of entries", Limit: int64(lim.MaxEntries), Kind: LimitEntries}
	}
	if err != nil {
		return nil, err
	}
	if keepMemo {
		b.treeMemo, b.treeChanged = mw.done(), mw.changed
	}
	b.walked = make([]walkedFile, len(sigs))
	for i, sig := range sigs {
		b.walked[i] = walkedFile{b.Files[i].Path, sig}
	}
	slices.SortFunc(b.walked, func(x, y walkedFile) int { return strings.Compare(x.path, y.path) })
	sortFiles(b.Files)
	if m := formMemo(ctx); m != nil {
		if d := b.logsDigest(); d != "" && m.AllPlain(b, d) {
			b.plainLogs = true
			return b, nil // read as they are: no log to decode, none to warn about
		}
	}
	// Each log's real file is joined as it is read: a map of every file's would hold 200,000
	// paths twice over for one loop.
	over, err := b.decodeLogs(ctx, func(p string) (string, bool) { return filepath.Join(dir, filepath.FromSlash(p)), true }, b.FS.(dirFS).held)
	if err != nil {
		b.Close()
		return nil, err
	}
	if len(over) > 0 {
		b.FS = &overlayFS{base: b.FS, files: over}
	}
	b.plainLogs = len(over) == 0 && len(b.Warnings) == 0
	return b, nil
}

func checkSize(name string, size int64, total *int64, lim Limits) error {
	if size > lim.MaxFileBytes {
		return &LimitError{What: name + ": size", Limit: lim.MaxFileBytes, Kind: LimitFileBytes}
	}
	*total += size
	if *total > lim.MaxTotalBytes {
		return &LimitError{What: "total uncompressed size", Limit: lim.MaxTotalBytes, Kind: LimitTotalBytes}
	}
	return nil
}

func sortFiles(fs []File) {
	slices.SortFunc(fs, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
}

// extractPrefix names the directories tarballs are extracted into, in the temporary directory.
const extractPrefix = "coroner-bundle-"

// openTarball extracts a gzip'd tar into a private temporary directory (see readTarball for
// what it refuses and how the limits hold while it reads).
func openTarball(ctx context.Context, file string, lim Limits) (b *Bundle, err error) {
	f, err := openFile(ctx, file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer interruptible(ctx, f)()
	scratch.Sweep("", extractPrefix)
	dir, err := scratch.MkdirTemp("", extractPrefix+"*")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			dir.Remove()
		}
	}()
	// The files go one level down, away from the directory's lock file.
	root := filepath.Join(dir.Path, "bundle")
	if err := os.Mkdir(root, 0o700); err != nil {
		return nil, err
	}
	decoded := map[string]int64{}
	var warnings []string
	res, err := readTarball(ctx, f, lim, func(tf *tarFile) error {
		dst := filepath.Join(root, filepath.FromSlash(tf.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		if isLog(tf.Name) {
			// Extracted as the lines it holds: UTF-8, "\n" line ends.
			var written int64
			var form textForm
			var warning string
			written, _, _, form, warning, err = copyText(out, tf.Name, tf)
			if form != formPlain {
				decoded[tf.Name] = written
			}
			if warning != "" {
				warnings = append(warnings, warning)
			}
		} else {
			_, err = io.Copy(out, tf)
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if isTroubleshootTree(res.files) {
		t := &tree{files: map[string]string{}, sizes: map[string]int64{}, links: res.links}
		for _, f := range res.files {
			t.files[f.Path], t.sizes[f.Path] = filepath.Join(root, filepath.FromSlash(f.Path)), f.Size
		}
		if b, err = openTroubleshoot(ctx, file, t, 0, lim); err != nil {
			return nil, err
		}
		b.Warnings = append(append(res.warnings, warnings...), b.Warnings...)
		b.onClose(dir.Remove)
		return b, nil
	}
	if groot, layout := findGather(root); groot != "" {
		if b, err = openGather(ctx, file, groot, layout, lim); err != nil {
			return nil, err
		}
		b.Warnings = append(append(res.warnings, warnings...), b.Warnings...)
		b.onClose(dir.Remove)
		return b, nil
	}
	if err := res.refuseLinks(); err != nil {
		return nil, err
	}
	b = &Bundle{Source: file, FS: newDirFS(root), Files: res.files, Warnings: append(res.warnings, warnings...), Limits: lim,
		sums: res.sums, cleanup: dir.Remove}
	b.useDecodedSizes(decoded)
	return b, nil
}

// useDecodedSizes gives the logs read decoded their new sizes, keeping the sizes the bundle
// holds for the manifest check.
func (b *Bundle) useDecodedSizes(decoded map[string]int64) {
	for i, f := range b.Files {
		if n, ok := decoded[f.Path]; ok {
			if b.rawSizes == nil {
				b.rawSizes = map[string]int64{}
			}
			b.rawSizes[f.Path] = f.Size
			b.Files[i].Size = n
		}
	}
}

// decodeLogs gives the logs of a bundle read in place (a directory, plain files) that are not
// UTF-8 lines ended by "\n" a decoded copy in a private temporary directory, read in their
// place, and warns about logs that look binary. real gives the real file of a path, false for
// a path it does not have. held, when not nil, keeps the small plain logs the sniff read whole.
func (b *Bundle) decodeLogs(ctx context.Context, real func(string) (string, bool), held *heldLogs) (map[string]string, error) {
	var tmp *scratch.Dir
	decoded := map[string]int64{}
	out := map[string]string{}
	// One buffer for every log's head: a bundle may hold 200,000 logs of a few bytes.
	head := make([]byte, sniffSize)
	for i := range b.Files {
		p := b.Files[i].Path
		if !isLog(p) {
			continue
		}
		file, ok := real(p)
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// A log shorter than the head is read to the size the walk saw, in one read: a
		// read more for its end of file was a fifth of the sniff's system calls at 200,000
		// logs of 80 bytes.
		want := head
		if size := b.Files[i].Size; size > 0 && size < int64(len(head)) {
			want = head[:size]
		}
		n, err := readHead(file, want)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: file, Err: err}
		}
		form, bad := sniff(head[:n])
		if form == formPlain {
			if int64(n) == b.Files[i].Size {
				held.hold(p, head[:n]) // read whole: the scan reads it from here
			}
			if bad >= binaryShare {
				_, _, warning := textLog(p, bytes.NewReader(head[:n]))
				b.Warnings = append(b.Warnings, warning)
			}
			continue
		}
		if tmp == nil {
			scratch.Sweep("", decodedPrefix)
			if tmp, err = scratch.MkdirTemp("", decodedPrefix+"*"); err != nil {
				return nil, err
			}
			b.onClose(tmp.Remove)
		}
		// A log to decode (compressed, UTF-16) is opened again and read from its start.
		f, err := openPlain(file)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: file, Err: err}
		}
		dst := filepath.Join(tmp.Path, fmt.Sprintf("%d.log", i))
		w, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			f.Close()
			return nil, err
		}
		written, _, sum, _, warning, err := copyText(w, p, ctxReader{ctx, f})
		f.Close()
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if warning != "" {
			b.Warnings = append(b.Warnings, warning)
		}
		if b.sums == nil {
			b.sums = map[string]string{}
		}
		b.sums[p] = sum
		decoded[p] = written
		out[p] = dst
	}
	b.useDecodedSizes(decoded)
	return out, nil
}

// ReadFileTo reads the bundle's file name into buf's memory, grown when it is short, and
// returns it: a caller that reads many files one after another (Load reads every pod's)
// reuses one buffer. size is the size the walk saw (File.Size), which a directory's file is
// read at without asking for it again; the file is read to its end whatever its size.
func (b *Bundle) ReadFileTo(buf []byte, name string, size int64) ([]byte, error) {
	if d, ok := b.FS.(dirFS); ok {
		return d.readFileTo(buf, name, size)
	}
	return fs.ReadFile(b.FS, name)
}

// decodedPrefix names the directories of decoded copies of logs, in the temporary directory.
const decodedPrefix = "coroner-decoded-"

// overlayFS is a directory whose files at some paths are read from elsewhere.
type overlayFS struct {
	base  fs.FS
	files map[string]string // path -> real file
}

func (o *overlayFS) Open(name string) (fs.File, error) {
	if real, ok := o.files[name]; ok {
		return os.Open(real)
	}
	return o.base.Open(name)
}

// Stream reads the bundle at p (a directory or a tarball) once, file by file, and calls fn with
// each regular file, manifest.json included: a tarball is read as it decompresses, never
// extracted, with the same checks and limits as Open. The Bundle it returns describes what was
// read (Manifest, Files, Warnings); its FS is nil. fn need not read a file to its end. A
// cancelled ctx stops it with ctx's error.
func Stream(ctx context.Context, p string, lim Limits, fn func(f File, r io.Reader) error) (*Bundle, error) {
	b, err := stream(ctx, p, lim, fn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return b, nil
}

func stream(ctx context.Context, p string, lim Limits, fn func(File, io.Reader) error) (*Bundle, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if root := findTroubleshoot(p); st.IsDir() && root != "" {
		return streamTree(ctx, root, Troubleshoot, lim, fn)
	}
	if root, _ := findGather(p); st.IsDir() && root != "" {
		return streamTree(ctx, root, "", lim, fn) // read as itself: no layout note to keep
	}
	if st.IsDir() {
		b, err := openDir(ctx, p, lim)
		if err != nil {
			return nil, err
		}
		defer b.Close() // the decoded copies of logs, if any: nothing is read after
		if b.sums == nil {
			b.sums = map[string]string{}
		}
		var manifest []byte
		for _, f := range b.Files {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			in, err := b.FS.Open(f.Path)
			if err != nil {
				return nil, err
			}
			var keep *bytes.Buffer
			var tee io.Writer // nil unless keep is set: not a nil *bytes.Buffer
			if f.Path == ManifestName && f.Size <= lim.MaxResourceBytes {
				keep = &bytes.Buffer{}
				tee = keep
			}
			sum, err := streamFile(ctx, f, in, tee, fn)
			if err != nil {
				return nil, err
			}
			if _, ok := b.sums[f.Path]; !ok { // a decoded log's is that of its bytes in the bundle
				b.sums[f.Path] = sum
			}
			if keep != nil {
				manifest = keep.Bytes()
			}
		}
		b.FS = nil
		return b, b.useManifest(manifest)
	}
	f, err := openFile(ctx, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer interruptible(ctx, f)()
	var warnings []string
	res, err := readTarball(ctx, f, lim, func(tf *tarFile) error {
		var r io.Reader = tf
		if isLog(tf.Name) {
			var warning string
			if r, _, warning = textLog(tf.Name, tf); warning != "" {
				warnings = append(warnings, warning)
			}
		}
		return fn(File{Path: tf.Name, Size: tf.Size}, r)
	})
	if err != nil {
		return nil, err
	}
	b := &Bundle{Source: p, Files: res.files, Warnings: append(res.warnings, warnings...), Limits: lim, sums: res.sums}
	if isTroubleshootTree(res.files) {
		t := &tree{files: map[string]string{}, links: res.links}
		for _, f := range res.files {
			t.files[f.Path] = f.Path
		}
		b.Layout = Troubleshoot
		b.keepLinks(t)
		return b, nil
	}
	if err := res.refuseLinks(); err != nil {
		return nil, err
	}
	return b, b.useManifest(res.manifest)
}

// streamFile calls fn with the f.Size bytes of in (and copies them to keep, unless nil), reads
// what fn left, closes in and returns the bytes' sha256.
func streamFile(ctx context.Context, f File, in io.ReadCloser, keep io.Writer, fn func(File, io.Reader) error) (string, error) {
	defer in.Close()
	h := sha256.New()
	r := io.TeeReader(io.LimitReader(ctxReader{ctx, in}, f.Size), h)
	if keep != nil {
		r = io.TeeReader(r, keep)
	}
	err := fn(f, r)
	if err == nil {
		_, err = io.Copy(io.Discard, r)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", f.Path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// openFile opens a file for reading. Opening a FIFO waits for its writer, which may never
// come: a cancelled ctx returns at once.
func openFile(ctx context.Context, p string) (*os.File, error) {
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return os.Open(p)
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(p)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// interruptible makes a read of f that waits for data (a pipe, a FIFO, a socket) return once
// ctx is done; it returns the function that stops watching ctx.
func interruptible(ctx context.Context, f *os.File) func() {
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

// ContextReader ends a read loop once ctx is done: every Read checks ctx first. It is the one
// such reader of the module (bundle, logscan and search read through it).
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func (b *Bundle) readManifest() error {
	var data []byte
	for _, f := range b.Files {
		if f.Path != ManifestName {
			continue
		}
		if f.Size > b.Limits.MaxResourceBytes {
			break // useManifest says why
		}
		var err error
		if data, err = fs.ReadFile(b.FS, ManifestName); err != nil {
			return err
		}
	}
	return b.useManifest(data)
}

// useManifest parses manifest.json (data, nil when the bundle holds none or it is too large)
// and checks it against the files.
func (b *Bundle) useManifest(data []byte) error {
	if data == nil {
		for _, f := range b.Files {
			if f.Path == ManifestName {
				return &LimitError{What: ManifestName + ": size", Limit: b.Limits.MaxResourceBytes, Kind: LimitResourceBytes}
			}
		}
		b.Warnings = append(b.Warnings, "manifest.json is missing: target, options and collection gaps are unknown")
		return nil
	}
	m, err := ParseManifest(data)
	if err != nil {
		return fmt.Errorf("%s: %w", ManifestName, err)
	}
	b.Manifest = m
	b.checkManifest()
	return nil
}

// maxListed is how many problems of one kind the manifest check lists one by one; the rest
// are counted in one more warning.
const maxListed = 5

// checkManifest compares the manifest with what the bundle holds. A mismatch is a warning:
// the files are still analyzed, but the reader should know the bundle was edited. Each file
// is hashed once, however often the manifest names it, and a manifest with thousands of
// wrong entries gives a handful of warnings, not thousands.
func (b *Bundle) checkManifest() {
	if len(b.Manifest.Files) == 0 {
		return // nothing to check: no map of every file (200,000 of them, 5% of a warm search)
	}
	have := make(map[string]int64, len(b.Files))
	for _, f := range b.Files {
		have[f.Path] = f.Size
		if raw, ok := b.rawSizes[f.Path]; ok {
			have[f.Path] = raw
		}
	}
	var missing, sizes, sums []string
	listed := make(map[string]int, len(b.Manifest.Files))
	var dups []string
	for _, e := range b.Manifest.Files {
		listed[e.Path]++
		if listed[e.Path] == 2 {
			dups = append(dups, e.Path)
		}
		if listed[e.Path] > 1 {
			continue
		}
		size, ok := have[e.Path]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("manifest.json lists %s but the bundle does not hold it", e.Path))
		case size != e.Bytes:
			sizes = append(sizes, fmt.Sprintf("%s: %d bytes, manifest.json says %d (edited after collection?)", e.Path, size, e.Bytes))
		case e.SHA256 != "":
			if _, known := b.sums[e.Path]; !known && b.sizesOnly {
				continue
			}
			sum, err := b.sha256(e.Path)
			switch {
			case err != nil:
				sums = append(sums, fmt.Sprintf("%s: checking sha256: %v", e.Path, err))
			case !strings.EqualFold(sum, e.SHA256):
				sums = append(sums, fmt.Sprintf("%s: sha256 differs from manifest.json (edited after collection?)", e.Path))
			}
		}
	}
	var dupMsgs []string
	for _, p := range dups {
		dupMsgs = append(dupMsgs, fmt.Sprintf("manifest.json lists %s %d times", p, listed[p]))
	}
	b.warnSome(sizes, "more files whose size differs from manifest.json")
	b.warnSome(sums, "more files whose sha256 differs from manifest.json (or could not be checked)")
	b.warnSome(missing, "more files listed in manifest.json that the bundle does not hold")
	b.warnSome(dupMsgs, "more paths listed more than once in manifest.json")
}

// warnSome adds the first maxListed warnings, and one that counts the rest.
func (b *Bundle) warnSome(ws []string, more string) {
	if len(ws) <= maxListed+1 {
		b.Warnings = append(b.Warnings, ws...)
		return
	}
	b.Warnings = append(b.Warnings, ws[:maxListed]...)
	b.Warnings = append(b.Warnings, fmt.Sprintf("... and %d %s", len(ws)-maxListed, more))
}

// Digest is the SHA-256 of the bundle's content: of each file's path and SHA-256, in path
// order. It depends on every byte of every file, so it is a key nobody without the bundle can
// know (coroner analyze keys the tokens of a report's redaction with it: the same bundle gives
// the same report, and a reader cannot test guesses of a masked value). Files not hashed yet
// are read, once each.
func (b *Bundle) Digest(ctx context.Context) ([]byte, error) {
	h := sha256.New()
	for _, f := range b.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sum, err := b.sha256(f.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		fmt.Fprintf(h, "%q %s\n", f.Path, sum)
	}
	return h.Sum(nil), nil
}

// sha256 returns the hex sha256 of a file: computed while reading a tarball or streaming,
// else read once and remembered.
func (b *Bundle) sha256(name string) (string, error) {
	if s, ok := b.sums[name]; ok {
		return s, nil
	}
	if b.FS == nil {
		return "", errors.New("not read")
	}
	f, err := b.FS.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if b.sums == nil {
		b.sums = map[string]string{}
	}
	b.sums[name] = sum
	return sum, nil
}
