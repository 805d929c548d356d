package index

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"os"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/logscan"
)

// Lines without a template (see logscan.EagerShapes) are kept in chunks: runs of such lines,
// of one log or of several logs scanned one after the other, of 32 to 64 KiB of text. A chunk
// has a Bloom filter of its lines' folded words (and of their level, rank and word prefixes),
// so that a search reads only the chunks that may hold its words. The filters are stored bit
// sliced, in batches of chunks: bit p of every chunk of a batch is one run of bytes, and a
// query reads k runs per word, whatever the size of the logs.

const (
	// filterBits is the size of a chunk's filter while it is built; a batch folds its filters
	// in half while they stay sparse (bit p of a folded filter is bit p of the halves OR'ed).
	filterBits = 1 << 14
	minFilter  = 1 << 8
	filterK    = 4
	chunkMin   = 32 << 10
	chunkMax   = 64 << 10
	// A chunk closes once past chunkMin when its filter has this many bits set (the load of a
	// filter holding filterBits/8 distinct items: a few percent false positives at 4 hashes).
	fullFill = filterBits * 39 / 100
	// foldFill: a batch's filters are folded while each keeps at most this share of bits set.
	foldFill = 0.40
)

// batchChunks is how many chunks' filters make a batch; tests lower it.
var batchChunks = 4096

// Kinds of the filter's items besides words (words never start with these bytes).
const (
	itemLevel  = 1 // level name
	itemRank   = 2 // torchrun rank, decimal
	itemPrefix = 3 // a word's first prefixLen bytes
	prefixLen  = 3
)

// filterPos is the i-th bit position of an item's hash in a filter of filterBits; a folded
// filter of m bits uses it modulo m. The filter is blocked: an item's filterK bits are in one
// 64-bit word, picked by the hash's low bits, each bit by six of its high bits, so that adding
// an item is one load and one store (a chunk's lines add two items a word), and folding the
// filter in half keeps each item's bits in one word. It costs more false positives than bits
// spread over the whole filter (some chunks read and found without the words), never a miss.
func filterPos(h uint64, i int) uint32 {
	return uint32(h)%(filterBits/64)*64 | uint32(h>>(32+6*i))&63
}

// itemHash is the hash of an item of a kind (0 for a folded word).
func itemHash(kind byte, b []byte, scratch []byte) uint64 {
	if kind == 0 {
		return logscan.Hash(b)
	}
	scratch = append(append(scratch[:0], kind), b...)
	return logscan.Hash(scratch)
}

// chunkSeg is one log's part of a chunk: its n lines are that log's overflow segment seg
// (see overflowBuilder), between tmin and tmax.
type chunkSeg struct {
	stream, seg, n int32
	tmin, tmax     int64
}

// chunkBuilder fills one chunk at a time; a scan worker has one, which goes on across the logs
// it scans.
type chunkBuilder struct {
	w      *chunkWriter
	filter [filterBits / 64]uint64
	fill   int
	bytes  int
	segs   []chunkSeg
	scr    []byte
	fold   []byte // a non-ASCII word folded
	kept   rune   // a rune past ASCII that folding keeps (see keepsCase), or 0
}

var tracebackWord = []byte("traceback")

// addLine adds a line's items to the filter, and reports whether the chunk is full. A word is
// read, folded and hashed in one pass when it is ASCII (most are); the items' hashes are the
// same as itemHash's, which a search computes.
func (c *chunkBuilder) addLine(text []byte) bool {
	c.bytes += len(text) + 1
	nwords := 0
	level := ""
	var prev []byte
	// buf holds the word being read, with 8 bytes to spare for HashIn's last load.
	if cap(c.scr) < len(text)+8 {
		c.scr = make([]byte, 0, len(text)+64)
	}
	buf := c.scr[:len(text)+8]
	for i := 0; i < len(text); {
		if foldWord[text[i]] == 0 {
			i++
			continue
		}
		j, n, seen := i, 0, byte(0)
		// Eight bytes at a time while they last: the word's bytes among them, folded; the
		// loop below reads the rest, or stops at once at the byte that ends the word.
		for j+8 <= len(text) {
			x := binary.LittleEndian.Uint64(text[j:])
			word, upper := wordBytes8(x)
			binary.LittleEndian.PutUint64(buf[n:], x+upper>>2)
			if end := ^word & hi8; end != 0 {
				k := bits.TrailingZeros64(end) / 8
				if x&hi8&(1<<(8*k)-1) != 0 {
					seen = utf8.RuneSelf
				}
				j, n = j+k, n+k
				break
			}
			if x&hi8 != 0 {
				seen = utf8.RuneSelf
			}
			j, n = j+8, n+8
		}
		for ; j < len(text); j++ {
			b := text[j]
			f := foldWord[b]
			if f == 0 {
				break
			}
			seen |= b
			buf[n] = f
			n++
		}
		w := buf[:n]
		var h uint64
		if seen < utf8.RuneSelf || c.keepsCase(text[i:j]) {
			h = logscan.HashIn(buf, n)
		} else {
			c.fold = logscan.Fold(c.fold[:0], text[i:j])
			w, h = c.fold, logscan.Hash(c.fold)
		}
		c.add(h)
		if len(w) > prefixLen {
			c.add(prefixHash(w))
		}
		if nwords < levelWords && level == "" && mayBeLevel(w) {
			level = levelWord(prev, w)
		}
		prev = nil // the word before, as far as levelWord needs it
		if string(w) == "traceback" {
			prev = tracebackWord
		}
		nwords++
		i = j
	}
	if level != "" {
		c.add(itemHash(itemLevel, []byte(level), c.scr))
	}
	if r := logscan.RankPrefix(text); r >= 0 {
		c.scr = strconv.AppendInt(c.scr[:0], int64(r), 10)
		c.add(itemHash(itemRank, c.scr, c.scr[len(c.scr):]))
	}
	return c.bytes >= chunkMax || (c.bytes >= chunkMin && c.fill >= fullFill)
}

// keepsCase reports whether logscan.Fold keeps each of w's runes past ASCII as it is (valid
// UTF-8 that has no lower case of its own, such as a tokenizer's '▁'), so that w with its
// ASCII capitals folded is its fold. It remembers the last such rune: a line's words mostly
// hold the same one.
func (c *chunkBuilder) keepsCase(w []byte) bool {
	for i := 0; i < len(w); {
		if w[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(w[i:])
		if r != c.kept {
			if r == utf8.RuneError && size == 1 || unicode.ToLower(r) != r {
				return false
			}
			c.kept = r
		}
		i += size
	}
	return true
}

// levelLens is, by a folded word's last byte, the lengths (bit n, 15 for 15 or more) at
// which levelWord may name a level, so that most words of a line are ruled out by one load:
// its words, glog's letter and four digits, and its classes' suffixes.
var levelLens = func() (t [256]uint16) {
	const long = 0xffff &^ (1<<6 - 1) // 6 bytes or more: a class's suffix
	t['l'] = 1<<5 | 1<<8              // fatal, critical
	t['c'] = 1 << 5                   // panic
	t['r'] = 1<<3 | 1<<5 | long       // err, error, ...error
	t['g'] = 1<<5 | 1<<7 | long       // debug, warning, ...warning
	t['n'] = 1<<4 | long              // warn, ...exception
	t['o'] = 1 << 4                   // info
	t['e'] = 1 << 5                   // trace
	t['t'] = 1 << 4                   // most
	for d := '0'; d <= '9'; d++ {
		t[d] = 1<<4 | 1<<5 // E0314
	}
	return t
}()

// mayBeLevel is false for a folded word levelWord gives no level (see levelLens).
func mayBeLevel(w []byte) bool {
	return len(w) > 0 && levelLens[w[len(w)-1]]>>min(len(w), 15)&1 != 0
}

// foldWord is a word byte lower-cased (any byte of a word but A-Z is itself), 0 for a byte
// that is not one (logscan.IsWordByte).
var foldWord = func() (t [256]byte) {
	for c := 1; c < 256; c++ {
		if b := byte(c); logscan.IsWordByte(b) {
			if b-'A' < 26 {
				b += 'a' - 'A'
			}
			t[c] = b
		}
	}
	return t
}()

// hi8 is the high bit of each of eight bytes.
const hi8 = 0x8080808080808080

// wordBytes8 reads eight bytes as a little-endian word: the high bit of each byte of word is
// set when that byte belongs to a word (logscan.IsWordByte: an ASCII letter, digit or
// underscore, or a byte past ASCII), and of upper when it is an ASCII capital, whose folding
// adds upper>>2 (0x20) to it. Each byte's low seven bits are compared with the bounds of
// the classes with its high bit set, so that no subtraction borrows from the next byte.
func wordBytes8(x uint64) (word, upper uint64) {
	const ones = 0x0101010101010101
	a, ascii := x|hi8, ^x&hi8
	upper = ((a - ones*'A') &^ (a - ones*('Z'+1))) & ascii
	lower := (a - ones*'a') &^ (a - ones*('z'+1))
	digit := (a - ones*'0') &^ (a - ones*('9'+1))
	under := (a - ones*'_') &^ (a - ones*('_'+1))
	return x&hi8 | (upper|lower|digit|under)&ascii, upper & hi8
}

// prefixHash is itemHash(itemPrefix, w[:prefixLen]) without copying the item.
func prefixHash(w []byte) uint64 {
	t := uint64(itemPrefix)
	for k, b := range w[:prefixLen] {
		t |= uint64(b) << (8 * (k + 1))
	}
	return logscan.HashShort(t, prefixLen+1)
}

// add sets the item's bits (filterPos(h, 0..filterK-1), all in one word), counting those it
// sets.
func (c *chunkBuilder) add(h uint64) {
	w := &c.filter[uint32(h)%(filterBits/64)]
	bits4 := uint64(1)<<(h>>32&63) | 1<<(h>>38&63) | 1<<(h>>44&63) | 1<<(h>>50&63)
	c.fill += bits.OnesCount64(bits4 &^ *w)
	*w |= bits4
}

// close hands the chunk to the writer, if it holds lines, and starts the next.
func (c *chunkBuilder) close() error {
	if len(c.segs) == 0 {
		return nil
	}
	err := c.w.add(c.filter[:], c.segs)
	c.filter = [filterBits / 64]uint64{}
	c.fill, c.bytes, c.segs = 0, 0, c.segs[:0]
	return err
}

// chunkWriter numbers the chunks as they close and writes their filters, a batch at a time,
// to the filters file.
type chunkWriter struct {
	mu      sync.Mutex
	f       *os.File
	off     int64
	pending [][]uint64 // the filters of the batch being filled
	segs    []chunkSeg // every chunk's segments, in chunk order
	starts  []int32    // chunk i's segments are segs[starts[i]:starts[i+1]]
	batches []batch
}

// batch is where a batch's folded filters are in the filters file: m slices of (n+7)/8
// bytes, each followed by its CRC-32C, so that every read of a slice is checked.
type batch struct {
	first, n int // chunks
	logM     int
	off, len int64
}

func sliceBytes(n int) int { return (n+7)/8 + 4 }

func newChunkWriter(path string) (*chunkWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &chunkWriter{f: f}, nil
}

func (w *chunkWriter) add(filter []uint64, segs []chunkSeg) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.starts = append(w.starts, int32(len(w.segs)))
	w.segs = append(w.segs, segs...)
	w.pending = append(w.pending, append([]uint64(nil), filter...))
	if len(w.pending) == batchChunks {
		return w.flush()
	}
	return nil
}

// flush folds and writes the pending filters as one batch.
func (w *chunkWriter) flush() error {
	n := len(w.pending)
	if n == 0 {
		return nil
	}
	m := filterBits
	for m > minFilter {
		half := m / 2
		ok := true
		for _, f := range w.pending {
			set := 0
			for i := 0; i < half/64; i++ {
				set += bits.OnesCount64(f[i] | f[i+half/64])
			}
			if float64(set) > foldFill*float64(half) {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		for _, f := range w.pending {
			for i := 0; i < half/64; i++ {
				f[i] |= f[i+half/64]
			}
		}
		m = half
	}
	width, stride := (n+7)/8, sliceBytes(n)
	out := make([]byte, m*stride)
	for c, f := range w.pending {
		cb, cm := c/8, byte(1)<<(c%8)
		for i := 0; i < m/64; i++ {
			for x := f[i]; x != 0; x &= x - 1 {
				p := i*64 + bits.TrailingZeros64(x)
				out[p*stride+cb] |= cm
			}
		}
	}
	for p := 0; p < m; p++ {
		sl := out[p*stride:]
		binary.LittleEndian.PutUint32(sl[width:], crc32.Checksum(sl[:width], castagnoli))
	}
	first := len(w.starts) - n
	if _, err := w.f.Write(out); err != nil {
		return err
	}
	w.batches = append(w.batches, batch{first: first, n: n, logM: bits.TrailingZeros(uint(m)), off: w.off, len: int64(len(out))})
	w.off += int64(len(out))
	w.pending = w.pending[:0]
	return nil
}

// finish writes the last batch and closes the file.
func (w *chunkWriter) finish() error {
	err := w.flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// chunkTable is the chunks of an index: their segments and the filters' batches.
type chunkTable struct {
	segs    []chunkSeg
	starts  []int32 // len(chunks)+1
	batches []batch
}

func (t *chunkTable) chunks() int { return len(t.starts) - 1 }

const chunksMagic = "coroner-index-chunks\n"

func encodeChunks(w *chunkWriter) []byte {
	b := []byte(chunksMagic)
	b = binary.AppendUvarint(b, uint64(len(w.starts)))
	prev := int32(0)
	for _, s := range w.starts {
		b = binary.AppendUvarint(b, uint64(s-prev))
		prev = s
	}
	b = binary.AppendUvarint(b, uint64(len(w.segs)))
	var t int64
	for _, s := range w.segs {
		b = binary.AppendUvarint(b, uint64(s.stream))
		b = binary.AppendUvarint(b, uint64(s.seg))
		b = binary.AppendUvarint(b, uint64(s.n))
		b = binary.AppendVarint(b, s.tmin-t)
		b = binary.AppendVarint(b, s.tmax-s.tmin)
		t = s.tmin
	}
	b = binary.AppendUvarint(b, uint64(len(w.batches)))
	for _, bt := range w.batches {
		b = binary.AppendUvarint(b, uint64(bt.first))
		b = binary.AppendUvarint(b, uint64(bt.n))
		b = binary.AppendUvarint(b, uint64(bt.logM))
		b = binary.AppendUvarint(b, uint64(bt.off))
		b = binary.AppendUvarint(b, uint64(bt.len))
	}
	return b
}

func decodeChunks(data []byte, streams int) (*chunkTable, error) {
	if len(data) < len(chunksMagic) || string(data[:len(chunksMagic)]) != chunksMagic {
		return nil, fmt.Errorf("chunks: %w", errCorrupt)
	}
	d := &decoder{b: data[len(chunksMagic):]}
	t := &chunkTable{}
	t.starts = make([]int32, d.count())
	prev := 0
	for i := range t.starts {
		prev += d.int()
		t.starts[i] = int32(prev)
	}
	t.segs = make([]chunkSeg, d.count())
	var tm int64
	for i := range t.segs {
		s := &t.segs[i]
		s.stream, s.seg, s.n = int32(d.int()), int32(d.int()), int32(d.int())
		s.tmin = tm + d.varint()
		s.tmax = s.tmin + d.varint()
		tm = s.tmin
		if d.err == nil && (int(s.stream) >= streams || s.n < 1) {
			d.fail()
		}
	}
	// starts holds the first segment of each chunk; the end of the last is len(segs).
	t.starts = append(t.starts, int32(len(t.segs)))
	for i := 1; d.err == nil && i < len(t.starts); i++ {
		if t.starts[i] < t.starts[i-1] || int(t.starts[i]) > len(t.segs) {
			d.fail()
		}
	}
	t.batches = make([]batch, d.count())
	next := 0
	var off int64
	for i := range t.batches {
		bt := &t.batches[i]
		bt.first, bt.n, bt.logM = d.int(), d.int(), d.int()
		bt.off, bt.len = int64(d.uvarint()), int64(d.uvarint())
		m := 1 << min(bt.logM, 30)
		if d.err == nil && (bt.first != next || bt.n < 1 || bt.n > batchChunks || bt.logM > 14 || bt.off != off ||
			bt.len != int64(m*sliceBytes(bt.n))) {
			d.fail()
		}
		next += bt.n
		off += bt.len
	}
	if d.err == nil && (next != t.chunks() || len(d.b) != 0) {
		d.fail()
	}
	if d.err != nil {
		return nil, fmt.Errorf("chunks: %w", d.err)
	}
	return t, nil
}

// filterReader answers which chunks of a batch may hold an item, from the filters file.
type filterReader struct {
	r   io.ReaderAt
	buf []byte
}

// mayHold sets in out (one bit per chunk of the batch) the chunks whose filter has every
// bit of the item; out must start all ones.
func (fr *filterReader) mayHold(bt *batch, h uint64, out []byte) error {
	width, stride := (bt.n+7)/8, sliceBytes(bt.n)
	m := uint32(1) << bt.logM
	if cap(fr.buf) < stride {
		fr.buf = make([]byte, stride)
	}
	buf := fr.buf[:stride]
	for i := 0; i < filterK; i++ {
		p := filterPos(h, i) & (m - 1)
		if _, err := fr.r.ReadAt(buf, bt.off+int64(p)*int64(stride)); err != nil {
			return fmt.Errorf("reading the chunk filters: %w", err)
		}
		if crc32.Checksum(buf[:width], castagnoli) != binary.LittleEndian.Uint32(buf[width:]) {
			return fmt.Errorf("the chunk filters: %w", errCorrupt)
		}
		for k := range out {
			out[k] &= buf[k]
		}
	}
	return nil
}
