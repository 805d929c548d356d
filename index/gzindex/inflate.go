// Package gzindex reads a gzip file at any offset of its decompressed stream without
// decompressing it from the start: Build decompresses it once and records access points, the
// deflate block boundaries about every span bytes of output with the 32 KiB of output before
// them (what the next blocks may refer back to); a Reader resumes decompressing at the point
// before the offset asked for. The idea is zlib's zran example; the inflater (RFC 1951, 1952)
// is this package's own, because resuming needs a block boundary's bit position, which the
// standard library does not tell.
package gzindex

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// ErrFormat is a gzip or deflate stream that is not well formed.
var ErrFormat = errors.New("gzindex: malformed gzip data")

const (
	windowSize = 32 << 10
	// outBuf holds the window and the output being made; a match is at most 258 bytes.
	outBuf   = 4 * windowSize
	maxMatch = 258
	fastBits = 10
)

// huffman decodes one canonical Huffman code: codes up to fastBits long with one table
// lookup, longer ones bit by bit (as zlib's puff does).
type huffman struct {
	fast   [1 << fastBits]uint16 // symbol<<4 | length; 0: longer than fastBits
	count  [16]uint16
	symbol [320]uint16
}

// build makes the code of the given code lengths; it reports an over-subscribed or (but for
// a single code) incomplete set.
func (h *huffman) build(lengths []uint8) error {
	h.count = [16]uint16{}
	for _, l := range lengths {
		h.count[l]++
	}
	if int(h.count[0]) == len(lengths) {
		h.fast = [1 << fastBits]uint16{}
		return nil // no codes: any use of it fails
	}
	left := 1
	for l := 1; l < 16; l++ {
		left <<= 1
		left -= int(h.count[l])
		if left < 0 {
			return ErrFormat
		}
	}
	var offs [16]uint16
	for l := 1; l < 15; l++ {
		offs[l+1] = offs[l] + h.count[l]
	}
	for sym, l := range lengths {
		if l != 0 {
			h.symbol[offs[l]] = uint16(sym)
			offs[l]++
		}
	}
	// The fast table: every code of up to fastBits bits, bit-reversed (deflate sends codes
	// most significant bit first, in a stream read least significant bit first).
	h.fast = [1 << fastBits]uint16{}
	code, first, index := 0, 0, 0
	for l := 1; l <= fastBits; l++ {
		for k := 0; k < int(h.count[l]); k++ {
			sym := h.symbol[index+k]
			rev := reverse(uint32(code+k), l)
			for i := rev; i < 1<<fastBits; i += 1 << l {
				h.fast[i] = sym<<4 | uint16(l)
			}
		}
		index += int(h.count[l])
		code = (code + int(h.count[l])) << 1
		first = (first + int(h.count[l])) << 1
	}
	_ = first
	return nil
}

func reverse(v uint32, n int) uint32 {
	var r uint32
	for i := 0; i < n; i++ {
		r = r<<1 | v&1
		v >>= 1
	}
	return r
}

// inflater decompresses a gzip stream (one or more members) into a writer, and can record
// access points as it goes (build) or start at one (resume).
type inflater struct {
	r     io.Reader
	in    []byte
	ipos  int   // next unread byte of in
	iend  int   // end of the bytes in in
	inOff int64 // file offset of in[0]
	eof   bool
	bits  uint64
	nbits uint

	out     []byte
	opos    int   // end of output in out
	flushed int   // out[:flushed] was written (or is window)
	outOff  int64 // stream offset of out[0]
	w       io.Writer

	lit, dist huffman
	crc       uint32 // of the current member's output, when checked
	checkCRC  bool
	msize     uint32 // the current member's output size (mod 2^32)

	// onBlock, when set, is called at each block boundary inside a member.
	onBlock func() error
}

func newInflater(r io.Reader, w io.Writer) *inflater {
	return &inflater{r: r, in: make([]byte, 64<<10), out: make([]byte, outBuf), w: w}
}

// fill reads more input, keeping unread bytes.
func (f *inflater) fill() error {
	if f.eof {
		return io.ErrUnexpectedEOF
	}
	if f.ipos > 0 {
		n := copy(f.in, f.in[f.ipos:f.iend])
		f.inOff += int64(f.ipos)
		f.ipos, f.iend = 0, n
	}
	n, err := f.r.Read(f.in[f.iend:])
	f.iend += n
	if err == io.EOF {
		f.eof = true
		if n > 0 {
			return nil
		}
		return io.ErrUnexpectedEOF
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return io.ErrNoProgress
	}
	return nil
}

// need makes at least n (<= 57) bits available.
func (f *inflater) need(n uint) error {
	for f.nbits < n {
		if f.ipos == f.iend {
			if err := f.fill(); err != nil {
				return err
			}
		}
		// Whole bytes while they fit: fewer calls for the common case.
		for f.nbits <= 56 && f.ipos < f.iend {
			f.bits |= uint64(f.in[f.ipos]) << f.nbits
			f.ipos++
			f.nbits += 8
		}
	}
	return nil
}

func (f *inflater) take(n uint) (uint32, error) {
	if f.nbits < n {
		if err := f.need(n); err != nil {
			return 0, err
		}
	}
	v := uint32(f.bits & (1<<n - 1))
	f.bits >>= n
	f.nbits -= n
	return v, nil
}

// bitPos is the stream position of the next unread bit: a byte offset and a bit within it.
func (f *inflater) bitPos() (int64, uint8) {
	bits := (f.inOff+int64(f.ipos))*8 - int64(f.nbits)
	return bits / 8, uint8(bits % 8)
}

// alignByte drops the bits left of the current byte.
func (f *inflater) alignByte() {
	drop := f.nbits % 8
	f.bits >>= drop
	f.nbits -= drop
}

// readByte reads a whole byte (after alignByte).
func (f *inflater) readByte() (byte, error) {
	v, err := f.take(8)
	return byte(v), err
}

func (f *inflater) decode(h *huffman) (int, error) {
	if f.nbits < 15 {
		// Not an error yet: the code may be shorter than what is left.
		if err := f.need(15); err != nil && f.nbits == 0 {
			return 0, err
		}
	}
	if e := h.fast[f.bits&(1<<fastBits-1)]; e != 0 {
		l := uint(e & 15)
		if l > f.nbits {
			return 0, io.ErrUnexpectedEOF
		}
		f.bits >>= l
		f.nbits -= l
		return int(e >> 4), nil
	}
	// Bit by bit, canonical decoding.
	code, first, index := 0, 0, 0
	for l := 1; l < 16; l++ {
		if f.nbits == 0 {
			return 0, io.ErrUnexpectedEOF
		}
		code |= int(f.bits & 1)
		f.bits >>= 1
		f.nbits--
		count := int(h.count[l])
		if code-count < first {
			return int(h.symbol[index+(code-first)]), nil
		}
		index += count
		first += count
		first <<= 1
		code <<= 1
	}
	return 0, ErrFormat
}

var (
	lenBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lenExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	dstBase  = [30]uint32{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
		4097, 6145, 8193, 12289, 16385, 24577}
	dstExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	clOrder  = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// flush writes the output made since the last flush, and keeps the last window's worth.
func (f *inflater) flush() error {
	if f.opos > f.flushed {
		chunk := f.out[f.flushed:f.opos]
		if f.checkCRC {
			f.crc = crc32.Update(f.crc, crc32.IEEETable, chunk)
		}
		f.msize += uint32(len(chunk))
		if f.w != nil {
			if _, err := f.w.Write(chunk); err != nil {
				return err
			}
		}
		f.flushed = f.opos
	}
	if f.opos >= len(f.out)-maxMatch-1 {
		keep := windowSize
		n := copy(f.out, f.out[f.opos-keep:f.opos])
		f.outOff += int64(f.opos - n)
		f.opos, f.flushed = n, n
	}
	return nil
}

// outPos is the stream offset of the next output byte.
func (f *inflater) outPos() int64 { return f.outOff + int64(f.opos) }

// window returns the last (up to) 32 KiB of output.
func (f *inflater) window() []byte {
	start := max(f.opos-windowSize, 0)
	return f.out[start:f.opos]
}

// blocks inflates deflate blocks until the final one.
func (f *inflater) blocks() error {
	for {
		if f.onBlock != nil {
			if err := f.flush(); err != nil {
				return err
			}
			if err := f.onBlock(); err != nil {
				return err
			}
		}
		hdr, err := f.take(3)
		if err != nil {
			return err
		}
		switch hdr >> 1 {
		case 0:
			err = f.stored()
		case 1:
			err = f.fixed()
		case 2:
			err = f.dynamic()
		default:
			err = ErrFormat
		}
		if err != nil {
			return err
		}
		if hdr&1 == 1 {
			return f.flush()
		}
	}
}

func (f *inflater) stored() error {
	f.alignByte()
	v, err := f.take(32)
	if err != nil {
		return err
	}
	n := int(v & 0xffff)
	if uint16(v>>16) != ^uint16(n) {
		return ErrFormat
	}
	// Bytes still in the bit buffer first.
	for n > 0 && f.nbits >= 8 {
		if f.opos == len(f.out) {
			if err := f.flush(); err != nil {
				return err
			}
		}
		f.out[f.opos] = byte(f.bits)
		f.opos++
		f.bits >>= 8
		f.nbits -= 8
		n--
	}
	for n > 0 {
		if f.ipos == f.iend {
			if err := f.fill(); err != nil {
				return err
			}
		}
		if f.opos >= len(f.out)-maxMatch-1 {
			if err := f.flush(); err != nil {
				return err
			}
		}
		k := copy(f.out[f.opos:len(f.out)-maxMatch-1], f.in[f.ipos:min(f.iend, f.ipos+n)])
		f.opos += k
		f.ipos += k
		n -= k
	}
	return nil
}

var fixedLit, fixedDist huffman

func init() {
	var l [288]uint8
	for i := range l {
		switch {
		case i < 144:
			l[i] = 8
		case i < 256:
			l[i] = 9
		case i < 280:
			l[i] = 7
		default:
			l[i] = 8
		}
	}
	fixedLit.build(l[:])
	var d [30]uint8
	for i := range d {
		d[i] = 5
	}
	fixedDist.build(d[:])
}

func (f *inflater) fixed() error { return f.codes(&fixedLit, &fixedDist) }

func (f *inflater) dynamic() error {
	v, err := f.take(14)
	if err != nil {
		return err
	}
	nlen, ndist, ncode := int(v&31)+257, int(v>>5&31)+1, int(v>>10)+4
	if nlen > 286 || ndist > 30 {
		return ErrFormat
	}
	var lengths [320]uint8
	for i := 0; i < ncode; i++ {
		c, err := f.take(3)
		if err != nil {
			return err
		}
		lengths[clOrder[i]] = uint8(c)
	}
	var cl huffman
	if err := cl.build(lengths[:19]); err != nil {
		return err
	}
	lengths = [320]uint8{}
	for i := 0; i < nlen+ndist; {
		sym, err := f.decode(&cl)
		if err != nil {
			return err
		}
		if sym < 16 {
			lengths[i] = uint8(sym)
			i++
			continue
		}
		var rep uint32
		var val uint8
		switch sym {
		case 16:
			if i == 0 {
				return ErrFormat
			}
			val = lengths[i-1]
			rep, err = f.take(2)
			rep += 3
		case 17:
			rep, err = f.take(3)
			rep += 3
		default:
			rep, err = f.take(7)
			rep += 11
		}
		if err != nil {
			return err
		}
		if i+int(rep) > nlen+ndist {
			return ErrFormat
		}
		for ; rep > 0; rep-- {
			lengths[i] = val
			i++
		}
	}
	if lengths[256] == 0 {
		return ErrFormat
	}
	if err := f.lit.build(lengths[:nlen]); err != nil {
		return err
	}
	if err := f.dist.build(lengths[nlen : nlen+ndist]); err != nil {
		// A single distance code is incomplete, and allowed.
		return err
	}
	return f.codes(&f.lit, &f.dist)
}

// codes inflates a compressed block's symbols up to its end.
func (f *inflater) codes(lit, dist *huffman) error {
	for {
		if f.opos >= len(f.out)-maxMatch-1 {
			if err := f.flush(); err != nil {
				return err
			}
		}
		sym, err := f.decode(lit)
		if err != nil {
			return err
		}
		if sym < 256 {
			f.out[f.opos] = byte(sym)
			f.opos++
			continue
		}
		if sym == 256 {
			return nil
		}
		sym -= 257
		if sym >= 29 {
			return ErrFormat
		}
		n := int(lenBase[sym])
		if e := uint(lenExtra[sym]); e > 0 {
			x, err := f.take(e)
			if err != nil {
				return err
			}
			n += int(x)
		}
		ds, err := f.decode(dist)
		if err != nil {
			return err
		}
		if ds >= 30 {
			return ErrFormat
		}
		d := int(dstBase[ds])
		if e := uint(dstExtra[ds]); e > 0 {
			x, err := f.take(e)
			if err != nil {
				return err
			}
			d += int(x)
		}
		if int64(d) > f.outPos() || d > f.opos {
			return ErrFormat // before the start of the stream (or of a resumed window)
		}
		src := f.opos - d
		if d >= n {
			copy(f.out[f.opos:f.opos+n], f.out[src:src+n])
			f.opos += n
			continue
		}
		for k := 0; k < n; k++ {
			f.out[f.opos] = f.out[src+k]
			f.opos++
		}
	}
}

// header reads a gzip member header; io.EOF when the stream ends cleanly before one.
func (f *inflater) header() error {
	var h [10]byte
	for i := range h {
		if f.nbits == 0 && f.ipos == f.iend {
			if err := f.fill(); err != nil {
				if i == 0 && err == io.ErrUnexpectedEOF {
					return io.EOF
				}
				return err
			}
		}
		c, err := f.readByte()
		if err != nil {
			return err
		}
		h[i] = c
	}
	if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 {
		return ErrFormat
	}
	flags := h[3]
	if flags&4 != 0 { // FEXTRA
		lo, err := f.readByte()
		if err != nil {
			return err
		}
		hi, err := f.readByte()
		if err != nil {
			return err
		}
		for n := int(lo) | int(hi)<<8; n > 0; n-- {
			if _, err := f.readByte(); err != nil {
				return err
			}
		}
	}
	for _, flag := range []byte{8, 16} { // FNAME, FCOMMENT: zero-terminated
		if flags&flag != 0 {
			for {
				c, err := f.readByte()
				if err != nil {
					return err
				}
				if c == 0 {
					break
				}
			}
		}
	}
	if flags&2 != 0 { // FHCRC
		if _, err := f.take(16); err != nil {
			return err
		}
	}
	return nil
}

// trailer reads a member's CRC-32 and size, and checks them when the member was read whole.
func (f *inflater) trailer() error {
	f.alignByte()
	crc, err := f.take(32)
	if err != nil {
		return err
	}
	size, err := f.take(32)
	if err != nil {
		return err
	}
	if f.checkCRC && (crc != f.crc || size != f.msize) {
		return errors.New("gzindex: gzip checksum mismatch")
	}
	return nil
}

// members inflates members up to the end of the stream. inside: it starts inside a member's
// blocks (resumed at an access point), where the checksum cannot be checked.
func (f *inflater) members(inside bool) error {
	for {
		if !inside {
			if err := f.header(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			f.checkCRC, f.crc, f.msize = true, 0, 0
		}
		inside = false
		if err := f.blocks(); err != nil {
			return err
		}
		if err := f.trailer(); err != nil {
			return err
		}
	}
}

var _ = binary.LittleEndian
