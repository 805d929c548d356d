package redact

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
)

const (
	// maxChunk bounds the memory one line may take: a longer line is redacted in pieces.
	maxChunk = 1 << 20
	// overlap is carried from one piece of a long line to the next, so a secret that crosses
	// the cut is still seen whole. It is longer than any secret a rule knows, keys aside.
	overlap = 16 << 10
	// maxBlockLines and maxBlockBytes bound a private key block that spans lines.
	maxBlockLines = 200
	maxBlockBytes = 256 << 10
	// ctxCheckLines is how often Copy looks at its context: often enough to stop within
	// milliseconds, seldom enough to cost nothing.
	ctxCheckLines = 1024
)

// Copy writes src to dst with every secret masked and returns the number of bytes written.
// It reads src line by line and keeps what the lines around say: a private key block that
// spans lines becomes one token; a YAML key of a secret whose value goes on in the lines below
// it (password: |, an env list's "- name: PGPASSWORD" and its "value:" on the next line) has
// that value masked; a secret flag or NAME= at the end of a line masks the word that starts
// the next; a token wrapped onto two lines is masked on both. Memory is bounded whatever the
// line lengths. Each mask is recorded as a location in where (file:line). A cancelled ctx
// stops the copy (checked every ctxCheckLines lines) with ctx's error.
func (r *Redactor) Copy(ctx context.Context, dst io.Writer, src io.Reader, where string) (int64, error) {
	c := &copier{r: r, where: where, w: bufio.NewWriterSize(dst, 64<<10), sc: r.getScratch()}
	defer r.putScratch(c.sc)
	return c.copy(ctx, src, readSize)
}

// readSize is Copy's read buffer.
const readSize = 64 << 10

// copy reads src through a buffer of size bytes: a text of n bytes is read through one of n+1
// (at most readSize), as it would be through readSize, without allocating 64 KiB for a word.
func (c *copier) copy(ctx context.Context, src io.Reader, size int) (int64, error) {
	br := bufio.NewReaderSize(src, size)
	var line []byte
	lineNo := 1
	for {
		piece, err := br.ReadSlice('\n')
		line = append(line, piece...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) >= maxChunk {
				line = c.longPiece(line, lineNo)
			}
			continue
		}
		if len(line) > 0 {
			c.line(line, lineNo)
			lineNo++
			line = line[:0]
		}
		if c.err != nil {
			return c.n, c.err
		}
		if err == io.EOF {
			break
		}
		if err == nil && lineNo%ctxCheckLines == 0 {
			err = ctx.Err()
		}
		if err != nil {
			// Keep what arrived before the source failed (a cut log stream).
			c.finish()
			return c.n, err
		}
	}
	c.finish()
	return c.n, c.err
}

// finish writes what is still held back and records the locations.
func (c *copier) finish() {
	c.flushCand()
	c.flushHeld()
	c.flushBlock()
	c.flushYAML()
	c.r.record(c.locs)
	if ferr := c.w.Flush(); c.err == nil {
		c.err = ferr
	}
}

type copier struct {
	r     *Redactor
	where string
	// field, when set, is the object field the text came from: locations name it, not a line.
	field string
	w     *bufio.Writer
	sc    *scratch
	n     int64
	err   error
	locs  []Location
	spans []span
	// inBlock is set inside a private key block. block holds its raw lines until its token
	// is known (blockTok); blockAt is where BEGIN starts in the first line, blockStart that
	// line's number.
	inBlock    bool
	block      [][]byte
	blockTok   []byte
	blockSize  int
	blockAt    int
	blockStart int
	// yb is a YAML value being read in the lines below its key.
	yb *yamlBlock
	// pend is what the last line announced for the next.
	pend pending
	// held is the last line, kept back because it ends with what may be the start of a token
	// that goes on in the next line.
	held *heldLine
	// cand holds lines that look like the body of a PEM block with no BEGIN line above them
	// (a log cut in the middle of a key, a window read from one): kept back until an END line
	// makes them a key, or another line makes them text (see candLine).
	cand      [][]byte
	candNo    int // the line number of cand[0]
	candSize  int
	replaying bool
	// quietTo: masks on lines up to this one are not counted (the lines read above a window
	// for their state only, see Window).
	quietTo int
}

func (c *copier) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *copier) at(lineNo int) func(int32) {
	if c.where == "" {
		return nil
	}
	return func(m int32) { c.record(m, lineNo) }
}

func (c *copier) record(m int32, lineNo int) {
	if c.where == "" {
		return
	}
	l := Location{File: c.where, Line: lineNo, Rule: c.r.ms[m].id}
	if c.field != "" {
		l.Line, l.Field = 0, c.field
	}
	c.locs = append(c.locs, l)
}

// longPiece redacts and writes most of a long line, and returns the tail to carry.
func (c *copier) longPiece(buf []byte, lineNo int) []byte {
	c.flushCand()
	c.flushHeld()
	c.flushBlock()
	c.flushYAML()
	c.pend = pending{}
	spans := c.r.find(buf, c.sc)
	cut := len(buf) - overlap
	for _, s := range spans {
		if s.start < cut && s.end > cut {
			cut = s.start
		}
	}
	if cut <= 0 {
		cut = len(buf) // one secret fills the piece: mask it all
	}
	keep := spans[:0]
	for _, s := range spans {
		if s.end <= cut {
			keep = append(keep, s)
		}
	}
	c.sc.out = c.r.apply(c.sc.out[:0], buf[:cut], c.quiet(keep, lineNo), c.at(lineNo))
	c.write(c.sc.out)
	return append(buf[:0], buf[cut:]...)
}

// line redacts one whole line (with its newline, if any) and writes it, or keeps it back
// until the next line says how it ends.
func (c *copier) line(raw []byte, lineNo int) {
	if c.inBlock && c.blockLine(raw) {
		return
	}
	if !c.replaying && c.candLine(raw, lineNo) {
		return
	}
	if c.yb != nil && c.yamlLine(raw, lineNo) {
		return
	}
	text := bytes.TrimSuffix(raw, []byte("\n"))
	if c.pend.kind != pendNone && c.pendLine(raw, text, lineNo) {
		return
	}
	waiting := c.pend.kind != pendNone // an env item's other keys, before its value
	spans := append(c.spans[:0], c.r.find(text, c.sc)...)
	runStart, trigInRun := c.trailingRun(text)
	if c.held != nil {
		spans = c.joinHeld(text, spans)
	}
	c.spans = spans
	if n := len(spans); n > 0 {
		if s := spans[n-1]; s.m >= 0 && c.r.ms[s.m].block && s.end == len(bytes.TrimRight(text, "\r")) &&
			!bytes.Contains(text[s.start:s.end], []byte("-----END")) {
			// A key block begins here and goes on in the next lines.
			c.inBlock, c.blockTok = true, nil
			c.block = [][]byte{append([]byte(nil), raw...)}
			c.blockSize, c.blockAt, c.blockStart = len(raw), s.start, lineNo
			return
		}
	}
	if !waiting {
		c.announce(text, spans)
	}
	if runStart >= 0 && (trigInRun || c.endsInWrapRule(text, spans)) && c.pend.kind == pendNone {
		c.held = &heldLine{raw: append([]byte(nil), raw...), spans: append([]span(nil), spans...), lineNo: lineNo, run: runStart}
		return
	}
	c.writeLine(raw, text, spans, lineNo)
}

// writeLine writes a line with its spans masked.
func (c *copier) writeLine(raw, text []byte, spans []span, lineNo int) {
	c.sc.out = c.r.apply(c.sc.out[:0], text, c.quiet(spans, lineNo), c.at(lineNo))
	c.sc.out = append(c.sc.out, raw[len(text):]...)
	c.write(c.sc.out)
}

// blockLine takes a line that may continue a private key block and reports whether it did.
// The block ends at its END line, or before the first line that cannot be part of a key.
func (c *copier) blockLine(raw []byte) bool {
	text := trimEOL(raw)
	body := text[stampLen(text):]
	end := bytes.Contains(body, []byte("-----END"))
	if !end && !keyBody(body) {
		c.flushBlock()
		c.inBlock = false
		return false
	}
	if c.blockTok != nil {
		// The key went on past the buffer: its token is known, and counted.
		c.write(c.blockOut(raw, false, c.blockStart))
	} else {
		c.block = append(c.block, append([]byte(nil), raw...))
		c.blockSize += len(raw)
		if end || len(c.block) >= maxBlockLines || c.blockSize >= maxBlockBytes {
			c.flushBlock()
		}
	}
	if end {
		c.inBlock, c.blockTok = false, nil
	}
	return true
}

// keyBody reports whether a line can be inside a PEM block: base64, a header, or empty.
func keyBody(b []byte) bool {
	if bytes.HasPrefix(b, []byte("Proc-Type:")) || bytes.HasPrefix(b, []byte("DEK-Info:")) || bytes.HasPrefix(b, []byte("Comment:")) {
		return true
	}
	for _, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == ' ' || c == '\t' || c == '\\' || c == '"') {
			return false
		}
	}
	return true
}

// flushBlock writes the buffered lines of a private key block: one token for the key, on
// each of its lines after the line's timestamp, so the file keeps its line count.
func (c *copier) flushBlock() {
	if c.block == nil {
		return
	}
	block := c.block
	c.block = nil
	m := int32(c.r.byID["private-key"])
	var value []byte
	for i, raw := range block {
		text := trimEOL(raw)
		if i == 0 {
			text = text[c.blockAt:]
		} else {
			text = text[stampLen(text):]
		}
		value = append(value, text...)
		value = append(value, '\n')
	}
	c.blockTok = c.r.token(nil, m, value)
	// A key wholly above a window (quietTo) is neither counted nor located.
	if c.blockStart+len(block)-1 > c.quietTo {
		c.r.counts[m].Add(1)
	}
	if c.where != "" && c.blockStart+len(block)-1 > c.quietTo {
		c.locs = append(c.locs, Location{File: c.where, Line: c.blockStart, Rule: c.r.ms[m].id})
	}
	for i, raw := range block {
		c.write(c.blockOut(raw, i == 0, c.blockStart+i))
	}
}

// blockOut is one line of a key block as written: what came before the key (first line) or
// the timestamp, the token, and what follows an END marker.
func (c *copier) blockOut(raw []byte, first bool, lineNo int) []byte {
	text := bytes.TrimSuffix(raw, []byte("\n"))
	cr := bytes.HasSuffix(text, []byte("\r"))
	text = bytes.TrimSuffix(text, []byte("\r"))
	var out []byte
	if first {
		head := text[:c.blockAt]
		out = c.r.apply(nil, head, c.quiet(c.r.find(head, c.sc), lineNo), c.at(lineNo))
	} else {
		out = append(out, text[:stampLen(text)]...)
	}
	out = append(out, c.blockTok...)
	if end := bytes.Index(text, []byte("-----END")); end >= 0 && !first {
		if stop := bytes.Index(text[end+8:], []byte("-----")); stop >= 0 {
			tail := text[end+8+stop+5:]
			out = c.r.apply(out, tail, c.quiet(c.r.find(tail, c.sc), lineNo), c.at(lineNo))
		}
	}
	if cr {
		out = append(out, '\r')
	}
	return append(out, raw[len(bytes.TrimSuffix(raw, []byte("\n"))):]...)
}

// stampLen is the length of a kubelet timestamp prefix ("2026-03-14T10:00:01.123Z "), or 0.
func stampLen(b []byte) int {
	if len(b) < 21 || b[4] != '-' || b[7] != '-' || b[10] != 'T' {
		return 0
	}
	for i := 19; i < len(b) && i < 40; i++ {
		c := b[i]
		if c == ' ' {
			return i + 1
		}
		if !(c >= '0' && c <= '9' || c == '.' || c == ':' || c == 'Z' || c == '+' || c == '-') {
			return 0
		}
	}
	return 0
}
