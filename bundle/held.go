package bundle

import (
	"bytes"
	"io/fs"
	"os"
	"slices"
	"sync"
)

// heldLogs are the whole bytes of a directory bundle's small plain logs, as the sniff of Open
// read them, until the scan reads each once: a bundle of 200,000 logs of 80 bytes otherwise
// opens, reads and closes every log twice, and those system calls were most of its per-file
// cost. A log is held only when the sniff read all of it (the size the walk saw), at most
// maxHeldLog bytes, and the bytes of all held logs stay under maxHeldBytes; a log that is
// not held is read from its file, as every log is after its first open. The bytes are let go
// when every held log has been opened once.
type heldLogs struct {
	mu     sync.Mutex
	paths  []string // sorted, as the bundle's files are
	spans  []heldSpan
	chunks [][]byte
	bytes  int
	left   int // held logs not opened yet
}

type heldSpan struct {
	chunk, off, n int32
	opened        bool
}

const (
	// maxHeldLog bounds a held log: past a few KiB, the copy costs as much as the system calls.
	maxHeldLog = 4 << 10
	// maxHeldBytes bounds the bytes of all held logs.
	maxHeldBytes = 32 << 20
	// heldChunk is the size of the blocks held logs are copied into.
	heldChunk = 1 << 20
)

// hold keeps data, the whole of log path, when it is small enough and the budget allows.
// Paths come in sorted order (Open's files).
func (h *heldLogs) hold(path string, data []byte) {
	if h == nil || len(data) > maxHeldLog {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bytes+len(data) > maxHeldBytes {
		return
	}
	if n := len(h.paths); n > 0 && h.paths[n-1] >= path {
		return // not in order: never held, so the search stays a binary one
	}
	last := len(h.chunks) - 1
	if last < 0 || len(h.chunks[last])+len(data) > cap(h.chunks[last]) {
		h.chunks = append(h.chunks, make([]byte, 0, max(heldChunk, len(data))))
		last++
	}
	c := h.chunks[last]
	h.spans = append(h.spans, heldSpan{chunk: int32(last), off: int32(len(c)), n: int32(len(data))})
	h.chunks[last] = append(c, data...)
	h.paths = append(h.paths, path)
	h.bytes += len(data)
	h.left++
}

// open returns the held bytes of the log at path, or false when it is not held (any more).
func (h *heldLogs) open(path string) ([]byte, bool) {
	if h == nil {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chunks == nil {
		return nil, false
	}
	i, ok := slices.BinarySearch(h.paths, path)
	if !ok {
		return nil, false
	}
	s := &h.spans[i]
	data := h.chunks[s.chunk][s.off : s.off+s.n : s.off+s.n]
	if !s.opened {
		s.opened = true
		if h.left--; h.left == 0 {
			h.release()
		}
	}
	return data, true
}

// release lets the held bytes go (the slices open returned stay valid for their readers).
func (h *heldLogs) release() {
	h.paths, h.spans, h.chunks, h.bytes, h.left = nil, nil, nil, 0, 0
}

// heldFile is a held log opened: read from memory, stat from the file (not through a link)
// with the size of the held bytes, which is all a reader will get.
type heldFile struct {
	*bytes.Reader
	full string
}

func (f heldFile) Stat() (fs.FileInfo, error) {
	info, err := os.Lstat(f.full)
	if err != nil {
		return nil, err
	}
	return heldInfo{info, f.Reader.Size()}, nil
}

type heldInfo struct {
	fs.FileInfo
	size int64
}

func (i heldInfo) Size() int64 { return i.size }

func (f heldFile) Close() error { return nil }
