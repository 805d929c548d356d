package gzindex

import (
	"io"
	"sort"
	"sync"
)

// SpanReader reads the decompressed stream at any offset through a cache of whole spans (the
// output between two access points), shared by all its users. A search reads lines of many
// logs in time order, jumping between places of the stream: each span is decompressed once
// while it stays among the most recently used, instead of once per line read.
type SpanReader struct {
	ix *Index
	r  *Reader

	mu    sync.Mutex
	max   int
	spans map[int][]byte
	used  []int // span numbers, least recently used first
}

// NewSpanReader reads the stream of gz, of which ix is the index, keeping at most maxSpans
// spans (each about the index's span size) in memory.
func NewSpanReader(ix *Index, gz io.ReaderAt, maxSpans int) *SpanReader {
	return &SpanReader{ix: ix, r: NewReader(ix, gz), max: max(maxSpans, 1), spans: map[int][]byte{}}
}

// span returns the number of the span that holds off and where it starts and ends: span 0
// starts the stream, span i > 0 starts at access point i-1.
func (s *SpanReader) span(off int64) (i int, start, end int64) {
	i = sort.Search(len(s.ix.Points), func(i int) bool { return s.ix.Points[i].Out > off })
	if i > 0 {
		start = s.ix.Points[i-1].Out
	}
	end = s.ix.Size
	if i < len(s.ix.Points) {
		end = s.ix.Points[i].Out
	}
	return i, start, end
}

// ReadAt reads len(p) bytes of the decompressed stream at off.
func (s *SpanReader) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(p) {
		if off >= s.ix.Size {
			return n, io.EOF
		}
		i, start, end := s.span(off)
		data, err := s.get(i, start, end)
		if err != nil {
			return n, err
		}
		c := copy(p[n:], data[off-start:])
		n += c
		off += int64(c)
	}
	return n, nil
}

// get returns span i, decompressing it when it is not cached.
func (s *SpanReader) get(i int, start, end int64) ([]byte, error) {
	if data, ok := s.spans[i]; ok {
		for k, u := range s.used {
			if u == i {
				s.used = append(append(s.used[:k:k], s.used[k+1:]...), i)
				break
			}
		}
		return data, nil
	}
	if end-start > 1<<30 || end < start {
		return nil, ErrFormat
	}
	data := make([]byte, end-start)
	if _, err := s.r.ReadAt(data, start); err != nil && err != io.EOF {
		return nil, err
	}
	if len(s.used) >= s.max {
		delete(s.spans, s.used[0])
		s.used = s.used[1:]
	}
	s.spans[i] = data
	s.used = append(s.used, i)
	return data, nil
}

// Close stops any decompression under way and drops the spans.
func (s *SpanReader) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spans, s.used = nil, nil
	return s.r.Close()
}
