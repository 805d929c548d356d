package index

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"sync"
)

// The bodies file is a run of frames. A stream's body is named by its place in the bodies
// laid end to end (Stream.bodyOff, bodyLen); a frame holds a stretch of that: either bodies as
// they are (large ones, read a part at a time), or packed, the bodies of up to packMax bytes of
// small logs compressed together and checked by one checksum. A body of at most packBodyMax
// bytes is always packed, a larger one never: a log of one line has a body of ~33 bytes and a
// head of ~70, and 200,000 of them indexed one by one made an index larger than the logs.
const packBodyMax = 256

// packMax is a variable for the tests, which make packs of a few bodies.
var packMax = 64 << 10

// packed says whether a body of n bytes is in a pack (see packBodyMax).
func packed(n int) bool { return n <= packBodyMax }

// frame is one stretch of the bodies: raw bytes of the bodies from virt on at file offset off,
// or (pack) a compressed pack of raw bytes, whose checksum is crc.
type frame struct {
	virt, off int64
	raw, size int // the bodies' bytes, and the frame's in the file
	pack      bool
	crc       uint32
}

// bodyWriter writes the bodies as the logs are scanned, in any order, and lists the frames.
type bodyWriter struct {
	w      io.Writer
	virt   int64 // the bodies' length so far, the packed pending included
	off    int64 // the file's
	pack   []byte
	frames []frame
	zw     *flate.Writer
	zbuf   bytes.Buffer
}

// add writes a body and returns its place (see Stream.bodyOff).
func (bw *bodyWriter) add(body []byte) (int64, error) {
	at := bw.virt
	bw.virt += int64(len(body))
	if packed(len(body)) {
		if len(bw.pack)+len(body) > packMax {
			if err := bw.flushPack(at); err != nil {
				return 0, err
			}
		}
		bw.pack = append(bw.pack, body...)
		return at, nil
	}
	if err := bw.flushPack(at); err != nil {
		return 0, err
	}
	if n := len(bw.frames); n > 0 && !bw.frames[n-1].pack {
		bw.frames[n-1].raw += len(body) // the raw frame before goes on
		bw.frames[n-1].size += len(body)
	} else {
		bw.frames = append(bw.frames, frame{virt: at, off: bw.off, raw: len(body), size: len(body)})
	}
	bw.off += int64(len(body))
	_, err := bw.w.Write(body)
	return at, err
}

// flushPack writes the pending pack, which ends at end.
func (bw *bodyWriter) flushPack(end int64) error {
	if len(bw.pack) == 0 {
		return nil
	}
	bw.zbuf.Reset()
	if bw.zw == nil {
		bw.zw, _ = flate.NewWriter(&bw.zbuf, flate.BestSpeed) // only an invalid level fails
	} else {
		bw.zw.Reset(&bw.zbuf)
	}
	bw.zw.Write(bw.pack) // a bytes.Buffer does not fail
	bw.zw.Close()
	z := bw.zbuf.Bytes()
	bw.frames = append(bw.frames, frame{virt: end - int64(len(bw.pack)), off: bw.off, raw: len(bw.pack), size: len(z), pack: true,
		crc: crc32.Checksum(z, castagnoli)})
	bw.off += int64(len(z))
	bw.pack = bw.pack[:0]
	_, err := bw.w.Write(z)
	return err
}

// finish writes the last pack.
func (bw *bodyWriter) finish() error { return bw.flushPack(bw.virt) }

// appendFrames encodes the frame list (after the streams, in the heads file).
func appendFrames(b []byte, frames []frame) []byte {
	b = binary.AppendUvarint(b, uint64(len(frames)))
	for _, f := range frames {
		b = appendBool(b, f.pack)
		b = binary.AppendUvarint(b, uint64(f.raw))
		if f.pack {
			b = binary.AppendUvarint(b, uint64(f.size))
			b = binary.LittleEndian.AppendUint32(b, f.crc)
		}
	}
	return b
}

// frames decodes the frame list: they lay the bodies end to end, and fill the file.
func (d *decoder) frames() []frame {
	frames := make([]frame, d.count())
	var virt, off int64
	for i := range frames {
		f := &frames[i]
		f.virt, f.off = virt, off
		f.pack = d.bool()
		f.raw = d.int()
		f.size = f.raw
		if f.pack {
			f.size = d.int()
			if len(d.b) < 4 {
				d.fail()
				break
			}
			f.crc = binary.LittleEndian.Uint32(d.b)
			d.b = d.b[4:]
			if f.raw > packMax {
				d.fail()
			}
		}
		if f.raw < 1 || d.err != nil {
			d.fail()
			break
		}
		virt += int64(f.raw)
		off += int64(f.size)
	}
	return frames
}

// checkFrames checks that the streams' bodies (byOff: in the order of their place) fill the
// frames as they must: a packed body (see packed) within one pack, a larger one in raw frames,
// every frame's bytes some body's.
func checkFrames(byOff []*Stream, frames []frame) error {
	k := 0
	for _, s := range byOff {
		for k < len(frames) && frames[k].virt+int64(frames[k].raw) <= s.bodyOff {
			k++
		}
		if k == len(frames) {
			if s.bodyLen == 0 {
				continue
			}
			return fmt.Errorf("heads: %w", errCorrupt)
		}
		f := frames[k]
		end := s.bodyOff + int64(s.bodyLen)
		if f.pack != packed(s.bodyLen) || (f.pack && end > f.virt+int64(f.raw)) {
			return fmt.Errorf("heads: %w", errCorrupt)
		}
	}
	return nil
}

// bodyReader reads the bodies back by their place: raw frames from the file, packs
// decompressed whole and kept, up to keptMax bytes of them (then dropped, all): the windows of
// evidence and the searches read small logs' bodies in any order, and a pack holds hundreds.
type bodyReader struct {
	f      *os.File
	frames []frame
	mu     sync.Mutex
	kept   map[int][]byte
	size   int
}

// keptMax bounds the packs a bodyReader keeps decompressed: the bodies of 1,000,000 logs of a
// line each.
const keptMax = 32 << 20

// ReadAt fills p with the bodies from place off on.
func (br *bodyReader) ReadAt(p []byte, off int64) error {
	for len(p) > 0 {
		k := sort.Search(len(br.frames), func(i int) bool { return br.frames[i].virt+int64(br.frames[i].raw) > off })
		if k == len(br.frames) || off < 0 {
			return io.ErrUnexpectedEOF
		}
		f := br.frames[k]
		in := off - f.virt
		var n int
		if f.pack {
			data, err := br.unpacked(k)
			if err != nil {
				return err
			}
			n = copy(p, data[in:])
		} else {
			n = int(min(int64(len(p)), int64(f.raw)-in))
			if _, err := br.f.ReadAt(p[:n], f.off+in); err != nil {
				return err
			}
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// unpacked returns the bodies of pack k, read, checked and decompressed.
func (br *bodyReader) unpacked(k int) ([]byte, error) {
	br.mu.Lock()
	defer br.mu.Unlock()
	if data, ok := br.kept[k]; ok {
		return data, nil
	}
	f := br.frames[k]
	z := make([]byte, f.size)
	if _, err := br.f.ReadAt(z, f.off); err != nil {
		return nil, err
	}
	if crc32.Checksum(z, castagnoli) != f.crc {
		return nil, mismatchError{bodiesFile}
	}
	data := make([]byte, f.raw)
	zb := bytes.NewReader(z)
	zr := flate.NewReader(zb)
	if _, err := io.ReadFull(zr, data); err != nil {
		return nil, errCorrupt
	}
	if _, err := io.ReadFull(zr, make([]byte, 1)); err != io.EOF || zb.Len() != 0 {
		return nil, errCorrupt
	}
	if br.kept == nil || br.size+len(data) > keptMax {
		br.kept, br.size = map[int][]byte{}, 0
	}
	br.kept[k] = data
	br.size += len(data)
	return data, nil
}
