package bundle

import (
	"archive/tar"
	"bufio"
	"compress/flate"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"sort"
	"strings"
)

// expansionFloor is how much an archive may expand before its expansion ratio is checked:
// a small archive of zeros harms nobody, and a ratio over the first kilobytes means little.
const expansionFloor = 128 << 20

// tarFile is one regular file of a tarball as it streams past: its name in the bundle (the
// archive's top folder, if any, removed), its size, and its bytes.
type tarFile struct {
	Name string
	Size int64
	r    *entryReader
}

// Read reads the file's bytes; the archive checks them (size, limits, checksums) as they go.
func (f *tarFile) Read(p []byte) (int, error) { return f.r.Read(p) }

// tarResult is what reading a whole tarball learned.
type tarResult struct {
	files    []File
	sums     map[string]string // path -> hex sha256, computed while reading
	manifest []byte            // manifest.json when it was small enough to keep, else nil
	warnings []string
	// links are the symbolic links, by path, to the path they point at (cleaned, from the
	// archive's top: "../x" or absolute when outside it). Only a troubleshoot support bundle
	// may hold them (refuseLinks).
	links map[string]string
}

// refuseLinks is the error of a tarball that holds links when its layout allows none.
func (res *tarResult) refuseLinks() error {
	if len(res.links) == 0 {
		return nil
	}
	names := make([]string, 0, len(res.links))
	for n := range res.links {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Errorf("%s: tar entry is a link; bundles hold regular files only", names[0])
}

// readTarball reads a gzip'd tar once, from start to end, and calls visit with each regular
// file in archive order. It refuses what a bundle may not hold (absolute paths, "..", links,
// devices, duplicates), enforces the limits while it decompresses (a gzip bomb stops at the
// limit, or as soon as it expands more than lim.MaxExpansion times, not at the end of the
// disk), and reads through the gzip trailers so that a corrupt archive is an error, not a
// silently different bundle. visit need not read a file to its end.
func readTarball(ctx context.Context, r io.Reader, lim Limits, visit func(*tarFile) error) (*tarResult, error) {
	a := &archive{lim: lim, in: &countReader{r: ctxReader{ctx, r}}}
	a.br = bufio.NewReaderSize(a.in, 64<<10)
	magic, _ := a.br.Peek(8)
	switch a.kind = compressionOf(magic); a.kind {
	case Gzip, "":
		a.kind = Gzip
		zr, err := gzip.NewReader(a.br)
		if err != nil {
			return nil, fmt.Errorf("not a gzip file: %w", err)
		}
		zr.Multistream(false) // members are followed by Read, so trailing bytes are told apart
		a.zr = zr
	default:
		zr, done, err := decompress(a.kind, a.br)
		if err != nil {
			return nil, fmt.Errorf("not %s data: %w", a.kind, err)
		}
		defer done()
		a.other = zr
	}
	res := &tarResult{sums: map[string]string{}}
	tr := tar.NewReader(a)
	seen := map[string]bool{}
	var total int64
	entries := 0
	last := ""
	var pendingLinks [][2]string // links met before the first file: name, target
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err != nil {
			return nil, a.describe(last, "reading the next tar header", err, res)
		}
		entries++
		if entries > lim.MaxEntries {
			return nil, &LimitError{What: "number of entries", Limit: int64(lim.MaxEntries), Kind: LimitEntries}
		}
		if err := SparseEntry(hdr); err != nil {
			return nil, err // before its holes are read as zeros
		}
		name, err := cleanEntryName(hdr.Name)
		if err != nil {
			return nil, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue // directories are made from the files' paths
		case tar.TypeReg: // the reader already turns the legacy TypeRegA into TypeReg or TypeDir
		case tar.TypeSymlink:
			// Recorded, never extracted: whether it is followed is decided once the layout is
			// known. A link does not decide the archive's top folder (a support bundle's
			// collector folders hold links to its logs): one met first waits for a file.
			if !a.decided {
				if len(pendingLinks) >= maxPendingLinks {
					return nil, fmt.Errorf("%s: more than %d links before the archive's first file", name, maxPendingLinks)
				}
				pendingLinks = append(pendingLinks, [2]string{name, hdr.Linkname})
				continue
			}
			if err := a.link(res, seen, name, hdr.Linkname); err != nil {
				return nil, err
			}
			continue
		case tar.TypeLink:
			return nil, fmt.Errorf("%s: tar entry is a link; bundles hold regular files only", name)
		default:
			return nil, fmt.Errorf("%s: tar entry of type %q is not a regular file", name, hdr.Typeflag)
		}
		if name, err = a.unwrap(name); err != nil {
			return nil, err
		}
		for _, l := range pendingLinks {
			if err := a.link(res, seen, l[0], l[1]); err != nil {
				return nil, err
			}
		}
		pendingLinks = nil
		if seen[name] {
			return nil, fmt.Errorf("%s: duplicate path in tar", name)
		}
		seen[name] = true
		if err := checkSize(name, hdr.Size, &total, lim); err != nil {
			return nil, err
		}
		last = name
		er := &entryReader{r: tr, h: sha256.New(), size: hdr.Size}
		if name == ManifestName && hdr.Size <= lim.MaxResourceBytes {
			er.keep = make([]byte, 0, hdr.Size)
		}
		verr := visit(&tarFile{Name: name, Size: hdr.Size, r: er})
		if verr == nil && er.err == nil {
			_, verr = io.Copy(io.Discard, er) // the rest: hashed, counted and checked
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if er.err != nil {
			return nil, a.describe(name, "", er.err, res)
		}
		if verr != nil {
			return nil, fmt.Errorf("%s: %w", name, verr)
		}
		if er.n != hdr.Size {
			return nil, fmt.Errorf("%s: tar entry holds %d bytes, header says %d", name, er.n, hdr.Size)
		}
		res.files = append(res.files, File{Path: name, Size: hdr.Size})
		res.sums[name] = hex.EncodeToString(er.h.Sum(nil))
		if er.keep != nil {
			res.manifest = er.keep
		}
	}
	for _, l := range pendingLinks { // an archive of links only
		if err := a.link(res, seen, l[0], l[1]); err != nil {
			return nil, err
		}
	}
	// The tar's end is not the archive's: the padding after it and the gzip trailer (its CRC-32
	// and length) are read too, or a flipped bit goes unnoticed.
	if _, err := io.Copy(io.Discard, a); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, a.describe(last, "after the last file", err, res)
	}
	if a.trailing {
		res.warnings = append(res.warnings, "the archive has bytes after the end of its gzip data; they were ignored")
	}
	sortFiles(res.files)
	return res, nil
}

// archive is the decompressed stream of a tarball: its gzip members one after another,
// counted and held to the expansion limit.
type archive struct {
	lim      Limits
	in       *countReader // compressed bytes read
	br       *bufio.Reader
	zr       *gzip.Reader
	kind     Compression
	other    io.Reader // the decompressor of an archive that is not gzip'd
	out      int64     // decompressed bytes
	done     bool
	trailing bool
	// prefix is "P/" when the archive's files sit under one top folder P, as `tar czf x.tgz
	// dir` makes; decided is set once the first file has decided it.
	prefix  string
	decided bool
}

func (a *archive) Read(p []byte) (int, error) {
	for {
		if a.done {
			return 0, io.EOF
		}
		if a.other != nil {
			n, err := a.other.Read(p)
			a.out += int64(n)
			if lerr := a.checkExpansion(); lerr != nil {
				return n, lerr
			}
			if err == io.EOF {
				a.done = true
			}
			return n, err
		}
		n, err := a.zr.Read(p)
		a.out += int64(n)
		if lerr := a.checkExpansion(); lerr != nil {
			return n, lerr
		}
		if err != io.EOF {
			return n, err
		}
		// One gzip member is complete and its CRC-32 and length were right. Another may
		// follow (concatenated gzip files are one stream); anything else is trailing bytes.
		if magic, _ := a.br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
			if err := a.zr.Reset(a.br); err != nil {
				return n, err
			}
			a.zr.Multistream(false)
		} else {
			a.done = true
			a.trailing = len(magic) > 0 && !allZero(a.br)
		}
		if n > 0 {
			return n, nil
		}
	}
}

// allZero reports whether what is left of r is zero bytes only (tape padding), reading at
// most 1 MiB of it.
func allZero(r *bufio.Reader) bool {
	var buf [4096]byte
	for read := 0; read < 1<<20; {
		n, err := r.Read(buf[:])
		for _, c := range buf[:n] {
			if c != 0 {
				return false
			}
		}
		read += n
		if err != nil {
			return true
		}
	}
	return false
}

func (a *archive) checkExpansion() error {
	if a.lim.MaxExpansion <= 0 || a.out <= expansionFloor || a.out <= int64(a.lim.MaxExpansion)*a.in.n {
		return nil
	}
	return &LimitError{
		What:  fmt.Sprintf("the archive's expansion (%s of %s gave %s so far: a %s bomb?)", humanBytes(a.in.n), a.kind, humanBytes(a.out), a.kind),
		Limit: int64(a.lim.MaxExpansion), Kind: LimitExpansion,
	}
}

// humanBytes is n in B, KiB, MiB or GiB, one decimal.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// maxPendingLinks bounds the links an archive may hold before its first file.
const maxPendingLinks = 10000

// link records the link entry name (the tar's own name) to target, unwrapped.
func (a *archive) link(res *tarResult, seen map[string]bool, name, target string) error {
	name, err := a.unwrap(name)
	if err != nil {
		return err
	}
	if seen[name] {
		return fmt.Errorf("%s: duplicate path in tar", name)
	}
	seen[name] = true
	if !path.IsAbs(target) {
		target = path.Join(path.Dir(name), target)
	}
	if res.links == nil {
		res.links = map[string]string{}
	}
	res.links[name] = path.Clean(target)
	return nil
}

// unwrap removes the archive's top folder from a file's name. The first file (never a link)
// decides: when its path is under a folder that is not part of the bundle layout, every
// file must be.
func (a *archive) unwrap(name string) (string, error) {
	if !a.decided {
		a.decided = true
		// The top folders of a bundle, and of a support bundle written without its own top
		// folder (by `coroner redact`), are not a folder around the bundle.
		if top, _, ok := strings.Cut(name, "/"); ok && top != "logs" && top != "resources" && top+"/" != FlightRecorderDir &&
			top+"/" != tsResources && top != "cluster-info" && top != "execution-data" && top != "host-collectors" {
			a.prefix = top + "/"
		}
	}
	if a.prefix == "" || name == ManifestName {
		// A manifest at the top of an archive whose files are under one folder is theirs:
		// `coroner redact` writes one so beside the files of a folder it was given.
		return name, nil
	}
	rest, ok := strings.CutPrefix(name, a.prefix)
	if !ok || rest == "" {
		return "", fmt.Errorf("%s: the archive's files are under %s but this one is not", name, a.prefix)
	}
	return rest, nil
}

// describe turns an error met while reading the archive into one line that names the entry
// and what went wrong.
func (a *archive) describe(name, where string, err error, res *tarResult) error {
	var le *LimitError
	if errors.As(err, &le) {
		if name == "" {
			return err
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	at := name
	if where != "" && name != "" {
		at = name + " (" + where + ")"
	} else if where != "" {
		at = where
	}
	var corrupt flate.CorruptInputError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) && name != "" && where == "":
		return fmt.Errorf("%s: archive ends in the middle of this file (truncated download?)", name)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: archive ends early (truncated download?)", at)
	case errors.Is(err, gzip.ErrChecksum):
		// The CRC-32 covers the whole member, so it cannot say which file is damaged; the
		// manifest's sha256 of each file can.
		switch bad := res.damaged(); len(bad) {
		case 0:
		case 1:
			return fmt.Errorf("%s: the archive is corrupt: its gzip checksum fails and this file's sha256 differs from manifest.json", bad[0])
		default:
			return fmt.Errorf("%s and %d more file(s): the archive is corrupt: its gzip checksum fails and their sha256 differs from manifest.json", bad[0], len(bad)-1)
		}
		return fmt.Errorf("the archive is corrupt: its gzip checksum fails (read up to %s)", at)
	case errors.As(err, &corrupt), errors.Is(err, gzip.ErrHeader), errors.Is(err, tar.ErrHeader):
		return fmt.Errorf("%s: the archive is corrupt here: %v", at, err)
	}
	if at == "" {
		return fmt.Errorf("reading tar: %w", err)
	}
	return fmt.Errorf("%s: %w", at, err)
}

// damaged names the files whose sha256 differs from the manifest read so far.
func (res *tarResult) damaged() []string {
	if res.manifest == nil {
		return nil
	}
	m, err := ParseManifest(res.manifest)
	if err != nil {
		return []string{ManifestName}
	}
	var bad []string
	for _, f := range res.files {
		if e := m.File(f.Path); e != nil && e.SHA256 != "" && !strings.EqualFold(e.SHA256, res.sums[f.Path]) {
			bad = append(bad, f.Path)
		}
	}
	return bad
}

// entryReader reads one tar entry, hashing and counting it; the first error sticks.
type entryReader struct {
	r    io.Reader
	h    hash.Hash
	n    int64
	size int64
	err  error
	keep []byte // when not nil, a copy of the bytes (manifest.json)
}

func (e *entryReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.r.Read(p)
	e.n += int64(n)
	e.h.Write(p[:n])
	if e.keep != nil {
		e.keep = append(e.keep, p[:n]...)
	}
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// cleanEntryName accepts only relative, slash-separated paths without "..".
func cleanEntryName(name string) (string, error) {
	if name == "" {
		return "", errors.New("tar entry with an empty name")
	}
	if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || (len(name) > 1 && name[1] == ':') {
		return "", fmt.Errorf("%s: absolute path in tar; refusing the archive", name)
	}
	for _, part := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if part == ".." {
			return "", fmt.Errorf("%s: path escapes the bundle (\"..\"); refusing the archive", name)
		}
	}
	clean := path.Clean(name)
	if strings.ContainsRune(clean, 0) {
		return "", fmt.Errorf("%q: NUL byte in tar entry name", name)
	}
	clean = strings.TrimPrefix(clean, "./")
	return clean, nil
}
