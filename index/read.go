package index

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/coroner-dev/coroner/logscan"
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

// seekBuffer is the buffer of a reader that jumps between checkpoints: a checkpoint's lines
// of a training log, so that a jump reads what it needs and not 64 KiB.
const seekBuffer = 8 << 10

// A source that reads at least denseLines lines of a log (the blocks a number may be in, every
// line of a template) mostly reads on: it reads through a buffer of denseBuffer bytes, a
// system call for many checkpoints' lines instead of one or two each.
const (
	denseLines  = 4 * checkpointEvery
	denseBuffer = 64 << 10
)

// lineSource reads the lines of one log back from the bundle, from the nearest checkpoints;
// it keeps the file open between reads.
type lineSource struct {
	ix    *Index
	s     *Stream
	f     fs.File
	ra    io.ReaderAt
	lr    *logscan.LineReader
	pool  *sync.Pool // where lr goes back
	clean []byte
	cands []int // the lines a filter passes in the buffered lines (read)
}

// source opens a log to read about n of its lines back.
func (ix *Index) source(s *Stream, n int) (*lineSource, error) {
	if err := ix.load(s); err != nil {
		return nil, err
	}
	f, err := ix.fsys.Open(s.Path)
	if err != nil {
		return nil, err
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		f.Close()
		return nil, fmt.Errorf("%s: the bundle's files cannot be read at an offset", s.Path)
	}
	pool, size := &ix.readers, seekBuffer
	if n >= denseLines {
		pool, size = &ix.denseReaders, denseBuffer
	}
	lr, _ := pool.Get().(*logscan.LineReader)
	if lr == nil {
		lr = logscan.NewLineReader(nil, 0, ix.maxLine, size)
	}
	return &lineSource{ix: ix, s: s, f: f, ra: ra, lr: lr, pool: pool}, nil
}

func (src *lineSource) close() {
	src.f.Close()
	src.lr.Reset(nil, 0)
	src.pool.Put(src.lr)
}

// readLines reads the given lines (sorted, 1-based) of one log back from the bundle. fn gets
// each wanted line's time and cleaned text. It stops when ctx is done.
func (ix *Index) readLines(ctx context.Context, s *Stream, lines []int, fn func(n int, t int64, text []byte) error) error {
	if len(lines) == 0 {
		return nil
	}
	src, err := ix.source(s, len(lines))
	if err != nil {
		return err
	}
	defer src.close()
	return src.read(ctx, lines, nil, fn)
}

// read reads the given lines (sorted, 1-based), starting from the nearest checkpoints. Given
// a filter, fn is called only for the wanted lines it passes: the others cannot match.
func (src *lineSource) read(ctx context.Context, lines []int, f *lineFilter, fn func(n int, t int64, text []byte) error) error {
	s, lr := src.s, src.lr
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
		clock := logscan.Clock{Last: c.time}
		lr.Reset(io.NewSectionReader(src.ra, c.off, 1<<62), c.off)
		// With a filter: the whole lines buffered (region), the reader at its byte at, and
		// the starts of the lines that may match (cands, from ci on; every line when all).
		var region []byte
		at, ci, all := 0, 0, false
		for i < len(lines) {
			// Seek when the next wanted line is more than a checkpoint ahead.
			if (lines[i]-1)/checkpointEvery > (n-1)/checkpointEvery+1 {
				break
			}
			if (n-1)%checkpointEvery == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if f != nil {
				if at == len(region) {
					region, at, ci = lr.Buffered(), 0, 0
					if len(region) > filterRegion {
						region = region[:bytes.LastIndexByte(region[:filterRegion], '\n')+1]
					}
					src.cands, all = f.candidates(src.cands[:0], region)
					if !all && 2*len(src.cands) > bytes.Count(region, newline) {
						// Most lines hold the words: looking for them costs more than
						// it skips, in this log.
						f, region = nil, nil
					}
				}
				if at < len(region) {
					for ci < len(src.cands) && src.cands[ci] < at {
						ci++
					}
					next := len(region)
					if all {
						next = at
					} else if ci < len(src.cands) {
						next = src.cands[ci]
					}
					if next > at {
						// None of these lines can match: count them, and take the time of
						// the last that has one, from the end.
						skip := region[at:next]
						n += bytes.Count(skip, newline)
						lastTime(&clock, lr, skip)
						lr.Discard(len(skip))
						at = next
						for i < len(lines) && lines[i] < n {
							i++
						}
						if ctx.Err() != nil {
							return ctx.Err()
						}
						continue
					}
					at += bytes.IndexByte(region[at:], '\n') + 1
				}
			}
			raw, _, err := lr.Next()
			if raw == nil && err != nil {
				if err == io.EOF {
					return fmt.Errorf("%s: ends before line %d: the index does not fit the bundle", s.Path, lines[i])
				}
				return err
			}
			text, _ := clock.Split(raw)
			if n == lines[i] {
				if logscan.NeedsClean(text) {
					src.clean = logscan.Clean(src.clean[:0], text)
					text = src.clean
				}
				if err := fn(n, clock.Last, text); err != nil {
					return err
				}
				for i < len(lines) && lines[i] == n { // tolerate duplicates
					i++
				}
			}
			n++
		}
	}
	return nil
}

var newline = []byte{'\n'}

// filterRegion bounds the lines a filter looks at ahead of the reader: a read that seeks to
// the next wanted line soon does not pay for a whole buffer.
const filterRegion = 16 << 10

// lastTime sets the clock from whole lines skipped unread: the time of the last of them that
// has one of its own (the clock then is as if it had read them all).
func lastTime(clock *logscan.Clock, lr *logscan.LineReader, lines []byte) {
	for end := len(lines); end > 0; {
		start := bytes.LastIndexByte(lines[:end-1], '\n') + 1
		if _, own := clock.Split(lr.Cut(lines[start:end])); own {
			return
		}
		end = start
	}
}
