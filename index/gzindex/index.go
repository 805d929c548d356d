package gzindex

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
)

// Point is an access point: the decompressed stream's offset Out begins a deflate block at
// bit Bit of byte In of the gzip file, and the block may refer back to Window, the output
// before it.
type Point struct {
	Out, In int64
	Bit     uint8
	Window  []byte
}

// Index is where a gzip file's decompressed stream can be read from.
type Index struct {
	// Size is the decompressed size; Compressed the gzip file's.
	Size, Compressed int64
	Points           []Point
	// packed holds the deflated windows of a decoded index, inflated on first use.
	packed [][]byte
	mu     sync.Mutex
}

// window returns a point's window.
func (ix *Index) window(p *Point) ([]byte, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if p.Window != nil || ix.packed == nil {
		return p.Window, nil
	}
	k := sort.Search(len(ix.Points), func(k int) bool { return ix.Points[k].Out >= p.Out })
	w, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(ix.packed[k])), windowSize+1))
	if err != nil || int64(len(w)) != min(p.Out, windowSize) {
		return nil, fmt.Errorf("%w: window of the point at %d", ErrFormat, p.Out)
	}
	p.Window = w
	return w, nil
}

// Build decompresses the gzip stream r whole, writing the decompressed stream to w (nil: to
// nowhere), and records an access point about every span bytes of output.
func Build(r io.Reader, w io.Writer, span int64) (*Index, error) {
	cr := &countReader{r: r}
	f := newInflater(cr, w)
	ix := &Index{}
	var last int64
	f.onBlock = func() error {
		if out := f.outPos(); out-last >= span {
			in, bit := f.bitPos()
			ix.Points = append(ix.Points, Point{Out: out, In: in, Bit: bit, Window: bytes.Clone(f.window())})
			last = out
		}
		return nil
	}
	if err := f.members(false); err != nil {
		return nil, err
	}
	ix.Size, ix.Compressed = f.outPos(), cr.n
	if f.ipos != f.iend || f.nbits >= 8 {
		return nil, ErrFormat // bytes after the last member
	}
	return ix, nil
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

// point returns the last access point at or before off, or nil for the start.
func (ix *Index) point(off int64) *Point {
	i := sort.Search(len(ix.Points), func(i int) bool { return ix.Points[i].Out > off })
	if i == 0 {
		return nil
	}
	return &ix.Points[i-1]
}

// Reader reads the decompressed stream of a gzip file at any offset: from the access point
// before it, or, for a read a little past the last one, by going on decompressing.
type Reader struct {
	ix *Index
	gz io.ReaderAt

	mu     sync.Mutex
	cur    *cursor
	closed bool
}

// NewReader reads the stream of the gzip file gz, of which ix is the index.
func NewReader(ix *Index, gz io.ReaderAt) *Reader {
	return &Reader{ix: ix, gz: gz}
}

// cursor is a decompression under way, in its own goroutine, feeding a pipe.
type cursor struct {
	pr  *io.PipeReader
	pos int64 // stream offset of the next byte the pipe gives
}

// skipAhead is how far ahead a read may be for the cursor to go on rather than restart.
const skipAhead = 1 << 20

var errClosed = errors.New("gzindex: reader closed")

// ReadAt reads len(p) bytes of the decompressed stream at off.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errClosed
	}
	if off >= r.ix.Size {
		return 0, io.EOF
	}
	want := p
	if rest := r.ix.Size - off; int64(len(want)) > rest {
		want = want[:rest]
	}
	c := r.cur
	if c == nil || off < c.pos || off-c.pos > skipAhead {
		if pt := r.ix.point(off); c == nil || off < c.pos || (pt != nil && pt.Out > c.pos) {
			r.stop()
			var err error
			if c, err = r.start(pt); err != nil {
				return 0, err
			}
			r.cur = c
		}
	}
	if off > c.pos {
		n, err := io.CopyN(io.Discard, c.pr, off-c.pos)
		c.pos += n
		if err != nil {
			r.stop()
			return 0, unexpected(err)
		}
	}
	n, err := io.ReadFull(c.pr, want)
	c.pos += int64(n)
	if err != nil {
		r.stop()
		return n, unexpected(err)
	}
	if len(want) < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// start begins decompressing at a point (nil: the start of the file).
func (r *Reader) start(pt *Point) (*cursor, error) {
	pr, pw := io.Pipe()
	c := &cursor{pr: pr}
	var f *inflater
	inside := pt != nil
	if pt == nil {
		f = newInflater(io.NewSectionReader(r.gz, 0, r.ix.Compressed), pw)
	} else {
		win, err := r.ix.window(pt)
		if err != nil {
			return nil, err
		}
		if pt.In > r.ix.Compressed || pt.Bit > 7 || int64(len(win)) > min(pt.Out, windowSize) {
			return nil, ErrFormat
		}
		f = newInflater(io.NewSectionReader(r.gz, pt.In, r.ix.Compressed-pt.In), pw)
		f.inOff = pt.In
		if _, err := f.take(uint(pt.Bit)); err != nil {
			return nil, err
		}
		f.opos = copy(f.out, win)
		f.flushed = f.opos
		f.outOff = pt.Out - int64(f.opos)
		c.pos = pt.Out
	}
	go func() {
		pw.CloseWithError(f.members(inside))
	}()
	return c, nil
}

func (r *Reader) stop() {
	if r.cur != nil {
		r.cur.pr.CloseWithError(errClosed)
		r.cur = nil
	}
}

// Close stops any decompression under way.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop()
	r.closed = true
	return nil
}

const magic = "coroner-gzindex\n"

// Encode writes the index: a table of points, then their windows, each deflated.
func (ix *Index) Encode() ([]byte, error) {
	var wins bytes.Buffer
	fw, err := flate.NewWriter(&wins, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	b := []byte(magic)
	b = binary.AppendUvarint(b, uint64(ix.Size))
	b = binary.AppendUvarint(b, uint64(ix.Compressed))
	b = binary.AppendUvarint(b, uint64(len(ix.Points)))
	var out, in int64
	offs := make([]int, 0, len(ix.Points)+1)
	for _, p := range ix.Points {
		offs = append(offs, wins.Len())
		fw.Reset(&wins)
		fw.Write(p.Window)
		if err := fw.Close(); err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(p.Out-out))
		b = binary.AppendUvarint(b, uint64(p.In-in))
		b = append(b, p.Bit)
		b = binary.AppendUvarint(b, uint64(len(p.Window)))
		b = binary.AppendUvarint(b, uint64(wins.Len()-offs[len(offs)-1]))
		out, in = p.Out, p.In
	}
	return append(b, wins.Bytes()...), nil
}

// Decode reads an index Encode wrote; the windows stay deflated in data until a point is
// used.
func Decode(data []byte) (*Index, error) {
	if !bytes.HasPrefix(data, []byte(magic)) {
		return nil, ErrFormat
	}
	d := data[len(magic):]
	next := func() uint64 {
		v, n := binary.Uvarint(d)
		if n <= 0 {
			d = nil
			return 0
		}
		d = d[n:]
		return v
	}
	ix := &Index{Size: int64(next()), Compressed: int64(next())}
	n := next()
	if n > uint64(len(d)) {
		return nil, ErrFormat
	}
	ix.Points = make([]Point, n)
	type win struct{ raw, packed int }
	wins := make([]win, n)
	var out, in int64
	for i := range ix.Points {
		out += int64(next())
		in += int64(next())
		if len(d) == 0 {
			return nil, ErrFormat
		}
		bit := d[0]
		d = d[1:]
		wins[i] = win{int(next()), int(next())}
		if d == nil || bit > 7 || wins[i].raw > windowSize || int64(wins[i].raw) > out || out > ix.Size || in > ix.Compressed {
			return nil, ErrFormat
		}
		ix.Points[i] = Point{Out: out, In: in, Bit: bit}
	}
	ix.packed = make([][]byte, n)
	for i := range ix.Points {
		if wins[i].packed > len(d) || int64(wins[i].raw) != min(ix.Points[i].Out, windowSize) {
			return nil, ErrFormat
		}
		ix.packed[i] = d[:wins[i].packed]
		d = d[wins[i].packed:]
	}
	if len(d) != 0 {
		return nil, ErrFormat
	}
	return ix, nil
}
