package redact

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/coroner-dev/coroner/bundle"
)

// What Bundle does with a file that is not UTF-8 text. The text rules read lines: run over a
// zip or an image they would corrupt it, and they cannot see a secret inside compressed or
// UTF-16 bytes. So a file is sniffed first:
//
//   - gzip (a rotated log.gz): decompressed, redacted as text and compressed again, bounded as
//     the bundle is (the file size limit and the expansion ratio);
//   - UTF-16 or UTF-8 with a byte order mark: decoded, redacted, written as UTF-8;
//   - anything else that is not text (a zip, a nested tar, an image, a gzip of any of them):
//     withheld, left out of the new bundle and named in its manifest, because a secret in it
//     could be neither found nor masked. Options.KeepBinary keeps such files as they are.

// Actions of bundle.RedactionFile.
const (
	ActionWithheld = "withheld"
	ActionKept     = "kept unredacted"
	// ActionRewritten: a flight recorder pickle, rewritten as its JSON form and redacted.
	ActionRewritten = "rewritten as JSON"
)

// headSize is how much of a file is looked at to tell what it is.
const headSize = 64 << 10

// binaryKind names the kind of binary data head starts with, by its magic number, or "".
func binaryKind(head []byte) string {
	has := func(off int, magic string) bool {
		return len(head) >= off+len(magic) && string(head[off:off+len(magic)]) == magic
	}
	switch {
	case has(0, "PK\x03\x04"), has(0, "PK\x05\x06"), has(0, "PK\x07\x08"):
		return "a zip archive"
	case has(257, "ustar"):
		return "a tar archive"
	case has(0, "\x1f\x8b"):
		return "gzip data"
	case has(0, "BZh"), has(0, "\xfd7zXZ\x00"), has(0, "\x28\xb5\x2f\xfd"), has(0, "7z\xbc\xaf\x27\x1c"):
		return "compressed data"
	case has(0, "\x89PNG"), has(0, "\xff\xd8\xff"), has(0, "GIF8"):
		return "an image"
	case has(0, "%PDF-"):
		return "a PDF document"
	case has(0, "\x7fELF"):
		return "an executable"
	case has(0, "SQLite format 3\x00"):
		return "an SQLite database"
	case has(0, "PAR1"), has(0, "\x93NUMPY"):
		return "a data file"
	}
	return ""
}

// sniffText reports, for a head that has no known magic number, whether it reads as text.
func sniffText(head []byte) bool {
	_, _, binary := bundle.DecodeText(bytes.NewReader(head))
	return !binary
}

// note records what was done with a file that could not be read as text.
func (r *Redactor) note(f bundle.RedactionFile) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files = append(r.files, f)
}

// Files returns the files Bundle could not read as text and what it did with each, by path.
func (r *Redactor) Files() []bundle.RedactionFile {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]bundle.RedactionFile(nil), r.files...)
	sortFiles(out)
	return out
}

func sortFiles(fs []bundle.RedactionFile) {
	slices.SortStableFunc(fs, func(a, b bundle.RedactionFile) int { return strings.Compare(a.Path, b.Path) })
}

// binary withholds a file that is not text, or copies raw (its bytes as the bundle has them)
// when the user asked to keep such files.
func (r *Redactor) binary(w *bundle.Writer, p string, raw io.Reader, why string) error {
	if !r.keepBinary {
		r.note(bundle.RedactionFile{Path: p, Action: ActionWithheld, Reason: why})
		return nil
	}
	r.note(bundle.RedactionFile{Path: p, Action: ActionKept, Reason: why})
	out, err := w.Create(p)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, raw); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// gzipFile redacts a gzip'd file: its text is redacted and compressed again. Gzip of anything
// that is not text, or that does not decompress, is binary.
func (r *Redactor) gzipFile(ctx context.Context, w *bundle.Writer, f bundle.File, in *bufio.Reader, lim bundle.Limits) error {
	// The compressed bytes read while the content is sniffed are kept: a file kept as it is
	// needs them.
	rec := &recorder{r: in, on: true}
	compressed := &countReader{r: rec}
	zr, err := gzip.NewReader(compressed)
	if err != nil {
		return r.binary(w, f.Path, io.MultiReader(bytes.NewReader(rec.buf), in), "gzip data that does not decompress")
	}
	bound := &boundReader{r: zr, in: compressed, lim: lim, what: f.Path + ": decompressed"}
	inner := bufio.NewReaderSize(bound, headSize)
	head, err := inner.Peek(headSize)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		var le *bundle.LimitError
		if errors.As(err, &le) || ctx.Err() != nil {
			return err
		}
		return r.binary(w, f.Path, io.MultiReader(bytes.NewReader(rec.buf), in), "gzip data that does not decompress")
	}
	rec.on = false
	if kind := binaryKind(head); kind != "" || !sniffText(head) {
		if kind == "" {
			kind = "binary data"
		}
		return r.binary(w, f.Path, io.MultiReader(bytes.NewReader(rec.buf), in), "gzip of "+kind)
	}
	rec.buf = nil
	text, _, _ := bundle.DecodeText(inner)
	out, err := w.Create(f.Path)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(out) // no name, no time: the same input gives the same bytes
	if _, err := r.Copy(ctx, zw, text, f.Path); err != nil {
		out.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// recorder keeps what is read through it while on.
type recorder struct {
	r   io.Reader
	on  bool
	buf []byte
}

func (c *recorder) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.on {
		c.buf = append(c.buf, p[:n]...)
	}
	return n, err
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// boundReader fails once what it decompressed exceeds the file size limit, or, past
// bundle.ExpansionFloor, MaxExpansion times what it read compressed: a gzip bomb inside a
// bundle is refused as a bundle that is one would be.
type boundReader struct {
	r    io.Reader
	in   *countReader
	out  int64
	lim  bundle.Limits
	what string
}

func (b *boundReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.out += int64(n)
	if b.lim.MaxFileBytes > 0 && b.out > b.lim.MaxFileBytes {
		return n, &bundle.LimitError{What: b.what + " size", Limit: b.lim.MaxFileBytes, Kind: bundle.LimitFileBytes}
	}
	if b.lim.MaxExpansion > 0 && b.out > bundle.ExpansionFloor && b.out > int64(b.lim.MaxExpansion)*b.in.n {
		return n, &bundle.LimitError{
			What:  fmt.Sprintf("%s expansion (%d bytes of gzip gave %d)", b.what, b.in.n, b.out),
			Limit: int64(b.lim.MaxExpansion), Kind: bundle.LimitExpansion,
		}
	}
	return n, err
}

// kindOf tells what a file's head says it is: "gzip", "text" or the kind of binary data.
func kindOf(head []byte) string {
	switch kind := binaryKind(head); {
	case kind == "gzip data":
		return "gzip"
	case kind != "":
		return kind
	case !sniffText(head):
		return "binary data"
	}
	return "text"
}
