package index

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"time"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/parse"
)

// Line is one log line read back from a bundle.
type Line struct {
	Path      string `json:"path"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	Previous  bool   `json:"previous,omitempty"`
	Number    int    `json:"line"`
	// Time is the line's own timestamp or, for a line without one, the last one before it.
	Time *time.Time `json:"time,omitempty"`
	// Text is the cleaned line (no kubelet timestamp, no terminal escapes), cut at the line limit.
	Text string `json:"text"`
}

// Scanned is one line as the scanner hands it to a visitor. Text is valid only during the call.
type Scanned struct {
	Number int
	// Time is the line's own timestamp or the last one before it, as Unix nanoseconds; 0 when
	// the log has shown none yet.
	Time int64
	// Text is the cleaned line without the kubelet timestamp, cut at the line limit.
	Text []byte
	// Shape is the line's template; nil when the log has too many shapes or the line's is too
	// long (see maxTemplates, maxKeyBytes).
	Shape *Shape
	// VarClasses are the character classes of each variable word of the line (see Classes),
	// when Shape is set. Valid only during the call.
	VarClasses []uint64
}

// StreamStats describe one scanned log.
type StreamStats struct {
	Lines     int
	Bytes     int64
	LongLines int
	// First and Last are the first and last timestamps seen (zero when none).
	First, Last time.Time
	// Err is a read error; the log was read up to it.
	Err error
}

// lineReader reads a log's lines with bounded memory: the part of a line past max bytes is
// read and dropped, and the line is counted as long.
type lineReader struct {
	br        *bufio.Reader
	max       int
	long      []byte
	off       int64 // offset of the next line
	longLines int
}

func newLineReader(r io.Reader, off int64, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max, off: off}
}

// seekBuffer is the buffer of a reader that jumps between checkpoints: a checkpoint's lines
// of a training log, so that a jump reads what it needs and not 64 KiB.
const seekBuffer = 8 << 10

// reset makes the reader read r from offset off, keeping its buffer.
func (r *lineReader) reset(rd io.Reader, off int64) {
	r.br.Reset(rd)
	r.off = off
}

// next returns the next line without its line ending, and its offset. It returns io.EOF (or
// the read error) when there is no line left.
func (r *lineReader) next() (line []byte, off int64, err error) {
	off = r.off
	line, err = r.br.ReadSlice('\n')
	r.off += int64(len(line))
	if errors.Is(err, bufio.ErrBufferFull) {
		r.long = append(r.long[:0], line[:min(len(line), r.max+1)]...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.br.ReadSlice('\n')
			r.off += int64(len(line))
			if room := r.max + 1 - len(r.long); room > 0 {
				r.long = append(r.long, line[:min(room, len(line))]...)
			}
		}
		line = r.long
	}
	if len(line) > r.max && !(len(line) == r.max+1 && line[r.max] == '\n') {
		line = line[:r.max]
		r.longLines++
	}
	if len(line) == 0 {
		if err == nil {
			err = io.EOF
		}
		return nil, off, err
	}
	if err == io.EOF {
		err = nil
	}
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line, off, err
}

// lineClock gives each line its time: the kubelet prefix, else a time the program printed at
// the start of the line, else the last time seen.
type lineClock struct {
	tp   parse.TimeParser
	last int64
}

func (c *lineClock) split(line []byte) (text []byte, own bool) {
	ns, text, ok := c.tp.Split(line)
	if ok {
		c.last = ns
		return text, true
	}
	if t, ok := parse.LeadingTime(line); ok {
		c.last = t.UnixNano()
		return line, true
	}
	return line, false
}

// Clean removes what terminals render but matching should not see: ANSI escape sequences,
// the carriage-return frames of progress bars (the last frame is kept), NUL bytes and invalid
// UTF-8. It appends to dst.
func Clean(dst, line []byte) []byte {
	if i := bytes.LastIndexByte(line, '\r'); i >= 0 {
		if rest := bytes.TrimSpace(line[i+1:]); len(rest) > 0 {
			line = line[i+1:]
		} else {
			line = line[:i]
			if j := bytes.LastIndexByte(line, '\r'); j >= 0 {
				line = line[j+1:]
			}
		}
	}
	if bytes.IndexByte(line, 0x1b) < 0 && bytes.IndexByte(line, 0) < 0 && utf8.Valid(line) {
		return append(dst, line...)
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == 0x1b:
			i = skipEscape(line, i)
			continue
		case c == 0:
			i++
			continue
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(line[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, line[i:i+n]...)
		}
		i += n
	}
	return dst
}

// skipEscape returns the index after the escape sequence starting at i (CSI "ESC [ ... final"
// or a two-byte escape).
func skipEscape(b []byte, i int) int {
	i++
	if i >= len(b) {
		return i
	}
	if b[i] != '[' {
		return i + 1
	}
	i++
	for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
		i++
	}
	return i + 1
}

// needsClean reports whether Clean could change text: one table lookup per byte, and only
// lines with an escape, a NUL, a CR or non-ASCII bytes take the slow path.
func needsClean(text []byte) bool {
	for _, c := range text {
		if class[c]&cSpecial != 0 {
			return true
		}
	}
	return false
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcReader checksums what it reads: the cache key comes from the same single read.
type crcReader struct {
	r   io.Reader
	crc uint32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	return n, err
}

// scanStream reads one log once: each line is timed, cleaned, handed to visit and added to
// the stream's templates (when sb is not nil).
func scanStream(fsys fs.FS, ls parse.LogStream, maxLine int, sb *streamBuilder, visit func(*Scanned)) (StreamStats, uint32) {
	var st StreamStats
	f, err := fsys.Open(ls.Path)
	if err != nil {
		st.Err = err
		return st, 0
	}
	defer f.Close()
	cr := &crcReader{r: f}
	lr := newLineReader(cr, 0, maxLine)
	var clock lineClock
	var clean []byte
	var first int64
	sc := Scanned{}
	for n := 1; ; n++ {
		raw, off, err := lr.next()
		if raw == nil && err != nil {
			if err != io.EOF {
				st.Err = err
			}
			break
		}
		before := clock.last
		text, _ := clock.split(raw)
		if first == 0 {
			first = clock.last
		}
		if sb != nil {
			text = sb.line(text, &clean)
		} else if needsClean(text) {
			clean = Clean(clean[:0], text)
			text = clean
		}
		sc.Number, sc.Time, sc.Text, sc.Shape, sc.VarClasses = n, clock.last, text, nil, nil
		if sb != nil {
			if t := sb.add(n, off, before, clock.last, text); t.shape != nil {
				sc.Shape, sc.VarClasses = t.shape, sb.masks
			}
		}
		if visit != nil {
			visit(&sc)
		}
		st.Lines = n
		if err != nil {
			st.Err = err
			break
		}
	}
	st.Bytes = lr.off
	st.LongLines = lr.longLines
	if first != 0 {
		st.First = time.Unix(0, first).UTC()
		st.Last = time.Unix(0, clock.last).UTC()
	}
	return st, cr.crc
}

// readLines reads the given lines (sorted, 1-based) of one log back from the bundle, starting
// from the nearest checkpoints. fn gets each wanted line's time and cleaned text.
func (ix *Index) readLines(s *Stream, lines []int, fn func(n int, t int64, text []byte) error) error {
	if len(lines) == 0 {
		return nil
	}
	if err := ix.load(s); err != nil {
		return err
	}
	f, err := ix.fsys.Open(s.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return fmt.Errorf("%s: the bundle's files cannot be read at an offset", s.Path)
	}
	var clean []byte
	lr := &lineReader{br: bufio.NewReaderSize(nil, seekBuffer), max: ix.maxLine}
	i := 0
	for i < len(lines) {
		want := lines[i]
		if want < 1 || want > s.Lines {
			return fmt.Errorf("%s: line %d is past the end of the log (%d lines): the index does not fit the bundle", s.Path, want, s.Lines)
		}
		cp := (want - 1) / checkpointEvery
		n := cp*checkpointEvery + 1
		c, err := s.checkpoint(cp)
		if err != nil {
			return err
		}
		clock := lineClock{last: c.time}
		lr.reset(io.NewSectionReader(ra, c.off, 1<<62), c.off)
		for ; i < len(lines); n++ {
			// Seek when the next wanted line is more than a checkpoint ahead.
			if (lines[i]-1)/checkpointEvery > (n-1)/checkpointEvery+1 {
				break
			}
			raw, _, err := lr.next()
			if raw == nil && err != nil {
				if err == io.EOF {
					return fmt.Errorf("%s: ends before line %d: the index does not fit the bundle", s.Path, lines[i])
				}
				return err
			}
			text, _ := clock.split(raw)
			if n != lines[i] {
				continue
			}
			if needsClean(text) {
				clean = Clean(clean[:0], text)
				text = clean
			}
			if err := fn(n, clock.last, text); err != nil {
				return err
			}
			for i < len(lines) && lines[i] == n { // tolerate duplicates
				i++
			}
		}
	}
	return nil
}
