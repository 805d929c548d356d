package bundle

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/coroner-dev/coroner/internal/scratch"
)

// What people hand over compressed: bundles as .tar.gz, and as .tar.xz, .tar.zst or .tar.bz2
// when a log store or a colleague made them; a rotated log as train.log.gz. The format is told
// by its magic bytes, and whether it holds a tar by the first decompressed block: a tar is a
// bundle, anything else one log.

// Compression is the format a file is compressed in, "" when it is not.
type Compression string

// The compressions coroner reads.
const (
	Gzip  Compression = "gzip"
	Xz    Compression = "xz"
	Zstd  Compression = "zstd"
	Bzip2 Compression = "bzip2"
)

// compressionOf tells a compression by a file's first bytes.
func compressionOf(head []byte) Compression {
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return Gzip
	case bytes.HasPrefix(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return Xz
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return Zstd
	case len(head) >= 4 && bytes.HasPrefix(head, []byte("BZh")) && head[3] >= '1' && head[3] <= '9':
		return Bzip2
	}
	return ""
}

// zstdWindow bounds the memory a zstd stream may ask to decode with (its window); zstd -19
// uses 8 MiB, --long 128 MiB.
const zstdWindow = 128 << 20

// decompress returns a reader of r decompressed from c, and the function that frees it.
// Concatenated streams are read one after the other, as gzip and xz tools do.
func decompress(c Compression, r io.Reader) (io.Reader, func(), error) {
	switch c {
	case Gzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, err
		}
		return zr, func() {}, nil
	case Xz:
		zr, err := xz.NewReader(r)
		if err != nil {
			return nil, nil, err
		}
		return zr, func() {}, nil
	case Zstd:
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdWindow), zstd.WithDecoderMaxMemory(zstdWindow*2))
		if err != nil {
			return nil, nil, err
		}
		return zr, zr.Close, nil
	case Bzip2:
		return bzip2.NewReader(r), func() {}, nil
	}
	return nil, nil, fmt.Errorf("unknown compression %q", c)
}

// tarSuffixes name compressed tarballs: a file so named is read as a bundle, whatever it holds.
var tarSuffixes = []string{".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.zst", ".tzst", ".tar.bz2", ".tbz2", ".tbz"}

func hasTarSuffix(p string) bool {
	for _, s := range tarSuffixes {
		if strings.HasSuffix(p, s) {
			return true
		}
	}
	return false
}

// sniffCompressed tells the compression of the regular file p, and whether what it holds
// begins as a tar does.
func sniffCompressed(p string) (Compression, bool) {
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(8)
	c := compressionOf(head)
	if c == "" {
		return "", false
	}
	zr, done, err := decompress(c, br)
	if err != nil {
		return c, false
	}
	defer done()
	block := make([]byte, 512)
	n, _ := io.ReadFull(zr, block)
	return c, isTarHeader(block[:n])
}

// isTarHeader reports whether b starts with a tar header: "ustar" at offset 257 (POSIX and
// GNU), or a V7 header whose checksum is right.
func isTarHeader(b []byte) bool {
	if len(b) < 512 {
		return false
	}
	if string(b[257:262]) == "ustar" {
		return true
	}
	var sum int64
	for i, c := range b[:512] {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int64(c)
	}
	field := strings.TrimRight(strings.TrimSpace(string(bytes.TrimRight(b[148:156], "\x00"))), "\x00")
	var want int64
	if _, err := fmt.Sscanf(field, "%o", &want); err != nil {
		return false
	}
	return want == sum && b[0] != 0
}

// decompressedPrefix names the decompressed copies of compressed logs in the temporary
// directory.
const decompressedPrefix = "coroner-unzipped-"

// decompressLog copies the compressed log at real, decompressed, into a private temporary
// file removed when the bundle is closed, held to the file size limit and the expansion ratio.
func (b *Bundle) decompressLog(ctx context.Context, name, real string, c Compression) (string, int64, error) {
	f, err := os.Open(real)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	in := &countReader{r: ctxReader{ctx, f}}
	zr, done, err := decompress(c, bufio.NewReader(in))
	if err != nil {
		return "", 0, fmt.Errorf("%s: not %s data: %w", name, c, err)
	}
	defer done()
	scratch.Sweep("", decompressedPrefix)
	tmp, err := scratch.CreateTemp("", decompressedPrefix+"*")
	if err != nil {
		return "", 0, err
	}
	var out int64
	buf := make([]byte, 256<<10)
	for {
		n, rerr := zr.Read(buf)
		if n > 0 {
			out += int64(n)
			switch {
			case out > b.Limits.MaxFileBytes:
				err = &LimitError{What: name + ": decompressed size", Limit: b.Limits.MaxFileBytes, Kind: LimitFileBytes}
			case b.Limits.MaxExpansion > 0 && out > expansionFloor && out > int64(b.Limits.MaxExpansion)*in.n:
				err = &LimitError{What: fmt.Sprintf("%s: the expansion (%s of %s gave %s so far: a bomb?)", name, humanBytes(in.n), c, humanBytes(out)),
					Limit: int64(b.Limits.MaxExpansion), Kind: LimitExpansion}
			default:
				_, err = tmp.Write(buf[:n])
			}
		}
		if err == nil && rerr != nil && rerr != io.EOF {
			err = fmt.Errorf("%s: the %s data is corrupt: %w", name, c, rerr)
		}
		if err != nil || rerr != nil {
			break
		}
	}
	if err == nil {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		tmp.Remove()
		return "", 0, err
	}
	b.onClose(tmp.Remove)
	return tmp.Name(), out, nil
}
