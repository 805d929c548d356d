package index

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/parse"
)

// maxLineLimit bounds the line limit: offsets within a line fit 32 bits.
const maxLineLimit = 1 << 30

// BuildOptions tune Build.
type BuildOptions struct {
	// Cache keeps and reuses indexes; nil builds a private index that Close removes.
	Cache *Cache
	// Version is coroner's version: an index is reused only by the version that built it.
	Version string
	// Workers is how many logs are scanned at once; 0 means one per CPU.
	Workers int
	// Progress, when set, is called after each log is scanned.
	Progress func(done, total int, bytes int64)
	// Visit, when set, returns the visitor of log i: it sees every line of that log, from the
	// goroutine scanning it, whether the index is built or comes from the cache.
	Visit func(i int) func(*Scanned)
	// Log, when set, is told what happened to the cache (a damaged index rebuilt...).
	Log func(format string, args ...any)
}

// Build returns the index of a bundle's logs: from the cache when it holds one for exactly
// these log contents, coroner version and line limit; otherwise each log is read once, all
// logs in parallel, and the index is built in the same pass (and stored in the cache). The
// stats describe each log in the order of logs.
func Build(b *bundle.Bundle, logs []parse.LogStream, opts BuildOptions) (*Index, []StreamStats, error) {
	maxLine := b.Limits.MaxLineBytes
	if maxLine <= 0 || maxLine > maxLineLimit {
		return nil, nil, fmt.Errorf("the line limit must be between 1 and %d bytes (got %d)", maxLineLimit, maxLine)
	}
	want := meta{Format: FormatVersion, Version: opts.Version, MaxLine: maxLine, Streams: len(logs)}
	var sigs []fileSig
	if c := opts.Cache; c != nil {
		sigs = statLogs(b.FS, logs) // before reading: a file changed meanwhile misses next time
		if ix := c.lookup(b, logs, sigs, want, opts.Visit == nil, opts.Log); ix != nil {
			if opts.Visit == nil {
				return ix, statsOf(ix), nil
			}
			stats, _ := scanAll(b.FS, logs, maxLine, opts, nil)
			return ix, stats, nil
		}
	}
	var dir string
	var err error
	if opts.Cache != nil {
		if err = os.MkdirAll(opts.Cache.Dir, 0o755); err == nil {
			dir, err = os.MkdirTemp(opts.Cache.Dir, ".build-")
		}
	} else {
		dir, err = os.MkdirTemp("", "coroner-index-")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("index directory: %w", err)
	}
	ix, stats, err := buildIn(dir, b, logs, want, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	complete := true
	for _, st := range stats {
		if st.Err != nil {
			complete = false // a log that could not be read whole is not cached
		}
	}
	if opts.Cache == nil || !complete {
		ix.temp = true
		return ix, stats, nil
	}
	ix, err = opts.Cache.commit(ix, b, sigs)
	return ix, stats, err
}

// buildIn scans every log into dir and opens the result.
func buildIn(dir string, b *bundle.Bundle, logs []parse.LogStream, want meta, opts BuildOptions) (*Index, []StreamStats, error) {
	if err := os.MkdirAll(filepath.Join(dir, "streams"), 0o755); err != nil {
		return nil, nil, err
	}
	streams := make([]*Stream, len(logs))
	errs := make([]error, len(logs))
	stats, crcs := scanAll(b.FS, logs, want.MaxLine, opts, func(i int, st StreamStats, sb *streamBuilder) {
		data := encodeStream(logs[i], st, sb)
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(streamFile(i))), data, 0o644); err != nil {
			errs[i] = err
			return
		}
		// bleve needs the templates, not the body: memory stays flat as the logs grow.
		if streams[i], errs[i] = decodeStream(data, i); errs[i] == nil {
			streams[i].dropBody()
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	want.Key = contentKey(want, logs, stats, crcs)
	if err := writeBleve(filepath.Join(dir, "bleve"), streams); err != nil {
		return nil, nil, err
	}
	if err := writeMeta(dir, want); err != nil {
		return nil, nil, err
	}
	ix, err := openDir(dir, b.FS, false, &want)
	return ix, stats, err
}

// scanAll scans the logs on the workers; done, when set, gets each log's template builder.
func scanAll(fsys fs.FS, logs []parse.LogStream, maxLine int, opts BuildOptions, done func(int, StreamStats, *streamBuilder)) ([]StreamStats, []uint32) {
	stats := make([]StreamStats, len(logs))
	crcs := make([]uint32, len(logs))
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	finished := 0
	var bytes int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				var sb *streamBuilder
				var visit func(*Scanned)
				if opts.Visit != nil {
					visit = opts.Visit(i)
				}
				if done != nil || visit != nil {
					// A visitor gets each line's shape even when the index exists: deciding
					// what to do per shape saves it more than the templates cost.
					sb = newStreamBuilder()
				}
				stats[i], crcs[i] = scanStream(fsys, logs[i], maxLine, sb, visit)
				if done != nil {
					done(i, stats[i], sb)
				}
				if opts.Progress != nil {
					mu.Lock()
					finished++
					bytes += stats[i].Bytes
					opts.Progress(finished, len(logs), bytes)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range logs {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return stats, crcs
}

func statsOf(ix *Index) []StreamStats {
	out := make([]StreamStats, len(ix.streams))
	for i, s := range ix.streams {
		out[i] = StreamStats{Lines: s.Lines, Bytes: s.Bytes, LongLines: s.LongLines}
		if s.First != 0 {
			out[i].First, out[i].Last = time.Unix(0, s.First).UTC(), time.Unix(0, s.Last).UTC()
		}
	}
	return out
}

// contentKey names an index by what it was built from: the index format, coroner's version,
// the line limit, and each log's path, size and CRC-32C. The checksum comes from the scan's
// own read (a cryptographic hash of a 1 GiB bundle would cost more than the scan); it detects
// changed logs, and search never trusts the index for a line's text: lines are read from the
// bundle and verified.
func contentKey(m meta, logs []parse.LogStream, stats []StreamStats, crcs []uint32) string {
	h := sha256.New()
	fmt.Fprintf(h, "coroner-index %d\nversion %q\nmax-line %d\n", m.Format, m.Version, m.MaxLine)
	for i, ls := range logs {
		fmt.Fprintf(h, "%q %d %08x\n", ls.Path, stats[i].Bytes, crcs[i])
	}
	return hex.EncodeToString(h.Sum(nil))
}
