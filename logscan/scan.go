package logscan

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/bundle"
)

// Scanned is one line as the scan hands it to a visitor. Text, Vars and VarClasses are valid
// only during the call.
type Scanned struct {
	Number int
	// Offset is where the line starts in its file.
	Offset int64
	// Time is the line's own timestamp or the last one before it, as Unix nanoseconds; 0 when
	// the log has shown none yet. Before is that time for the line before.
	Time, Before int64
	// Text is the cleaned line without the kubelet timestamp, cut at the line limit.
	Text []byte
	// Shape is the line's template; nil when the line's shape is not made (the first line of a
	// shape past EagerShapes, too many shapes, a spent Budget, or a line too long: see
	// MaxShapes, MaxKeyBytes).
	Shape *Shape
	// Vars are the values of the line's variable words, and VarClasses their character
	// classes (see Classes), in order, when Shape is set.
	Vars       []Var
	VarClasses []uint64
	// ASCII says that Text is all ASCII (a byte a character), as the scan saw in reading it
	// for its shape; false says nothing.
	ASCII bool
}

// Var is the value of a variable word of a line: Num is its NumberValue when the word's
// varying part is a short number (see Value), else 0 and the value is Text[Start:End]. It
// holds no pointer, so the scan's per-word writes cost the garbage collector nothing.
type Var struct {
	Num        uint64
	Start, End int32
}

// Stats describe one scanned log.
type Stats struct {
	Lines     int
	Bytes     int64
	LongLines int
	// First and Last are the first and last timestamps seen (zero when none).
	First, Last time.Time
	// Sum is the SHA-256 of the bytes read, when the scan was asked for it (AllOptions.Hash):
	// indexes are cached by it. A cryptographic hash, so that a log forged to another's size
	// and CRC cannot take that log's cached index.
	Sum [sha256.Size]byte
	// Err is a read error; the log was read up to it.
	Err error
}

// LineReader reads a log's lines with bounded memory: the part of a line past max bytes is
// read and dropped, and the line is counted as long.
type LineReader struct {
	br        *bufio.Reader
	max       int
	long      []byte
	off       int64 // offset of the next line
	longLines int
}

// NewLineReader reads lines of at most max bytes from r, whose first byte is at offset off
// of its file, through a buffer of size bytes.
func NewLineReader(r io.Reader, off int64, max, size int) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, size), max: max, off: off}
}

// Reset makes the reader read rd from offset off, keeping its buffer.
func (r *LineReader) Reset(rd io.Reader, off int64) {
	r.br.Reset(rd)
	r.off = off
}

// Offset is the offset of the next line.
func (r *LineReader) Offset() int64 { return r.off }

// LongLines counts the lines cut at the limit so far.
func (r *LineReader) LongLines() int { return r.longLines }

// Next returns the next line without its line ending, and its offset. It returns io.EOF (or
// the read error) when there is no line left. The line is valid until the next call.
func (r *LineReader) Next() (line []byte, off int64, err error) {
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

// Buffered returns the whole lines the reader holds and has not returned, each ending with
// '\n', first filling its buffer when it holds no whole line: a search looks for what it wants
// in many lines at once and skips the rest (Discard). It is empty at the end of the input and
// when the next line does not fit the buffer. It is valid until the next call of any method.
func (r *LineReader) Buffered() []byte {
	b, _ := r.br.Peek(r.br.Buffered())
	if bytes.IndexByte(b, '\n') < 0 {
		b, _ = r.br.Peek(r.br.Size())
	}
	return b[:bytes.LastIndexByte(b, '\n')+1]
}

// Discard skips the first n bytes of Buffered's lines (whole lines).
func (r *LineReader) Discard(n int) {
	d, _ := r.br.Discard(n)
	r.off += int64(d)
}

// Cut returns a whole line of Buffered (with its '\n') as Next returns it: cut at the limit,
// without its line ending.
func (r *LineReader) Cut(line []byte) []byte {
	if len(line) > r.max && !(len(line) == r.max+1 && line[r.max] == '\n') {
		line = line[:r.max]
	}
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line
}

// Clock gives each line its time: the kubelet prefix, else a time the program printed at the
// start of the line (a glog header's, which has no year, once the log has shown one: see
// glogTime), else the last time seen.
type Clock struct {
	tp TimeParser
	// Last is the time of the last line, as Unix nanoseconds; 0 before any.
	Last int64
}

// Split returns a line without its kubelet timestamp, and whether the line had a time of its
// own (Last is then that time).
func (c *Clock) Split(line []byte) (text []byte, own bool) {
	ns, text, ok := c.tp.Split(line)
	if ok {
		c.Last = ns
		return text, true
	}
	if t, ok := LeadingTime(line); ok {
		c.Last = t.UnixNano()
		return line, true
	}
	if c.Last != 0 {
		if ns, ok := glogTime(line, c.Last); ok {
			c.Last = ns
			return line, true
		}
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
	if !cleanChanges(line) {
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

// cleanChanges reports whether Clean changes a line: one with a carriage return, an escape, a
// NUL or invalid UTF-8.
func cleanChanges(line []byte) bool {
	return bytes.IndexByte(line, '\r') >= 0 || bytes.IndexByte(line, 0x1b) >= 0 || bytes.IndexByte(line, 0) >= 0 || !utf8.Valid(line)
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

// NeedsClean reports whether Clean could change text: one table lookup per byte, and only
// lines with an escape, a NUL, a CR or non-ASCII bytes take the slow path.
func NeedsClean(text []byte) bool {
	for _, c := range text {
		if class[c]&cSpecial != 0 {
			return true
		}
	}
	return false
}

// reader reads a log for a scan: it stops once ctx is done (checked every buffer fill, 64
// KiB, so a cancel stops a scan within microseconds, even inside a line of a gigabyte) and,
// given a hash, hashes what it reads (the index cache key comes from the same single read).
func reader(ctx context.Context, f io.Reader, h hash.Hash) io.Reader {
	r := bundle.ContextReader(ctx, f)
	if h != nil {
		r = io.TeeReader(r, h)
	}
	return r
}

// Checksum reads a log whole as Scan does, without looking at its lines: its size and
// Stats.Sum.
func Checksum(ctx context.Context, fsys fs.FS, path string) (int64, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := fsys.Open(path)
	if err != nil {
		return 0, sum, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.Discard, reader(ctx, f, h))
	h.Sum(sum[:0])
	return n, sum, err
}

// readBuffer is the scan's read size.
const readBuffer = 64 << 10

// Scan reads one log once: each line is timed, cleaned, given its shape and handed to visit
// (which may be nil). A read error ends the scan without failing it: Stats.Err says where the
// log stopped. When ctx is done the scan stops and returns its error, wrapped.
func Scan(ctx context.Context, fsys fs.FS, ls bundle.LogStream, maxLine int, visit func(*Scanned)) (Stats, error) {
	return scan(ctx, fsys, ls, AllOptions{MaxLine: maxLine}, visit, nil, nil)
}

// scan scans one log; lr and shapes, when set, are the line reader and the shaper to reuse (a
// worker scans many logs).
func scan(ctx context.Context, fsys fs.FS, ls bundle.LogStream, opts AllOptions, visit func(*Scanned), lr *LineReader, shapes *shaper) (Stats, error) {
	var st Stats
	f, err := fsys.Open(ls.Path)
	if err != nil {
		st.Err = err
		return st, nil
	}
	defer f.Close()
	var h hash.Hash
	if opts.Hash {
		h = sha256.New()
	}
	cr := reader(ctx, f, h)
	if lr == nil || lr.max != opts.MaxLine {
		lr = NewLineReader(cr, 0, opts.MaxLine, readBuffer)
	} else {
		lr.Reset(cr, 0)
		lr.longLines = 0
	}
	var clock Clock
	var clean []byte
	var first int64
	if shapes == nil {
		shapes = newScanShaper(opts.Budget)
	} else {
		shapes.reset()
	}
	sc := Scanned{}
	for n := 1; ; n++ {
		raw, off, err := lr.Next()
		if raw == nil && err != nil {
			if err != io.EOF {
				st.Err = err
			}
			break
		}
		before := clock.Last
		text, _ := clock.Split(raw)
		if first == 0 {
			first = clock.Last
		}
		text = shapes.line(text, &clean)
		sc.Number, sc.Offset, sc.Time, sc.Before, sc.Text = n, off, clock.Last, before, text
		sc.Shape, sc.Vars, sc.VarClasses, sc.ASCII = shapes.cur, nil, nil, shapes.ascii
		if sc.Shape != nil {
			sc.Vars, sc.VarClasses = shapes.vals, shapes.masks
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
	if err := ctx.Err(); err != nil {
		return st, fmt.Errorf("reading %s: %w", ls.Path, err)
	}
	st.Bytes = lr.off
	st.LongLines = lr.longLines
	if h != nil {
		h.Sum(st.Sum[:0])
	}
	if first != 0 {
		st.First = time.Unix(0, first).UTC()
		st.Last = time.Unix(0, clock.Last).UTC()
	}
	return st, nil
}

// AllOptions tune ScanAll.
type AllOptions struct {
	// MaxLine is the line limit (see LineReader).
	MaxLine int
	// Workers is how many logs are scanned at once; 0 means one per CPU.
	Workers int
	// Budget, when set, bounds and numbers the shapes of all the logs (see Budget).
	Budget *Budget
	// Hash asks for each log's SHA-256 (Stats.Sum).
	Hash bool
	// Visitors see every line of every log, in this order, in the one read of each log.
	Visitors []Visitor
	// Progress, when set, is called after each log is scanned, from one goroutine at a time.
	Progress func(done, total int, bytes int64)
}

// Visitor is one consumer of a scan of many logs (ScanAll): the rules of package analyze and
// the templates of package index are two visitors of the same read. Its methods are called
// from the goroutine that scans log i, so a visitor keeps what it makes per log apart.
type Visitor interface {
	// Log returns what sees each line of log i (nil: nothing), before its scan starts.
	Log(i int) func(*Scanned)
	// Done is called once log i has been scanned, with its stats, or with the error that
	// stopped it (ctx done): what Log made for the log may be given back then.
	Done(i int, st Stats, err error)
}

// LogFunc is a Visitor that only sees lines: it returns the visitor of log i.
type LogFunc func(i int) func(*Scanned)

// Log returns f(i).
func (f LogFunc) Log(i int) func(*Scanned) { return f(i) }

// Done does nothing.
func (LogFunc) Done(int, Stats, error) {}

// visitorsOf returns what sees the lines of log i: each visitor's, called in turn.
func visitorsOf(vs []Visitor, i int) func(*Scanned) {
	var fs []func(*Scanned)
	for _, v := range vs {
		if f := v.Log(i); f != nil {
			fs = append(fs, f)
		}
	}
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	case 2:
		a, b := fs[0], fs[1]
		return func(l *Scanned) { a(l); b(l) }
	}
	return func(l *Scanned) {
		for _, f := range fs {
			f(l)
		}
	}
}

// ScanAll scans logs in parallel (logs are independent streams) and returns their stats in
// the order of logs. When ctx is done it stops every scan and returns ctx's error, wrapped.
func ScanAll(ctx context.Context, fsys fs.FS, logs []bundle.LogStream, opts AllOptions) ([]Stats, error) {
	stats := make([]Stats, len(logs))
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	finished := 0
	var bytes int64
	var firstErr error
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The line reader and the shaper are reused across the logs of a worker.
			var lr *LineReader
			shapes := newScanShaper(opts.Budget)
			for i := range jobs {
				visit := visitorsOf(opts.Visitors, i)
				if lr == nil {
					lr = NewLineReader(nil, 0, opts.MaxLine, readBuffer)
				}
				st, err := scan(ctx, fsys, logs[i], opts, visit, lr, shapes)
				if err != nil {
					for _, v := range opts.Visitors {
						v.Done(i, Stats{}, err)
					}
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				stats[i] = st
				for _, v := range opts.Visitors {
					v.Done(i, st, nil)
				}
				if opts.Progress != nil {
					mu.Lock()
					finished++
					bytes += st.Bytes
					opts.Progress(finished, len(logs), bytes)
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for i := range logs {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		if firstErr == nil {
			firstErr = fmt.Errorf("scanning the logs: %w", err)
		}
		return nil, firstErr
	}
	return stats, nil
}
