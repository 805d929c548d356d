package index

import (
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
	return src.read(ctx, lines, fn)
}

// read reads the given lines (sorted, 1-based), starting from the nearest checkpoints.
func (src *lineSource) read(ctx context.Context, lines []int, fn func(n int, t int64, text []byte) error) error {
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
		for ; i < len(lines); n++ {
			// Seek when the next wanted line is more than a checkpoint ahead.
			if (lines[i]-1)/checkpointEvery > (n-1)/checkpointEvery+1 {
				break
			}
			if (n-1)%checkpointEvery == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			raw, _, err := lr.Next()
			if raw == nil && err != nil {
				if err == io.EOF {
					return fmt.Errorf("%s: ends before line %d: the index does not fit the bundle", s.Path, lines[i])
				}
				return err
			}
			text, _ := clock.Split(raw)
			if n != lines[i] {
				continue
			}
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
	}
	return nil
}
