package index

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/scratch"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

// maxLineLimit bounds the line limit: offsets within a line fit 32 bits.
const maxLineLimit = 1 << 30

// MaxDocs bounds the distinct template texts of an index (the bleve documents): past it, new
// shapes of every log are kept in chunks (see logscan.Budget). A bundle of few bytes gets
// fewer: one per docBytes of logs, at least minDocs.
const (
	MaxDocs  = 8192
	minDocs  = 512
	docBytes = 8 << 10
)

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
	Visit func(i int) func(*logscan.Scanned)
	// Scanned, when set, is called from the same goroutine once log i has been scanned (or
	// failed): what Visit made for it may give back what only the scan needed.
	Scanned func(i int)
	// Log, when set, is told what happened to the cache (a damaged index rebuilt, a cache
	// that cannot be written and is done without...).
	Log func(format string, args ...any)
}

// scannedDone and scannedFailed call Scanned, when set, as logscan's Done and Failed.
func (o BuildOptions) scannedDone() func(int, logscan.Stats) {
	if o.Scanned == nil {
		return nil
	}
	return func(i int, _ logscan.Stats) { o.Scanned(i) }
}

func (o BuildOptions) scannedFailed() func(int, error) {
	if o.Scanned == nil {
		return nil
	}
	return func(i int, _ error) { o.Scanned(i) }
}

// Build returns the index of a bundle's logs: from the cache when it holds one for exactly
// these log contents, coroner version and line limit; otherwise each log is read once, all
// logs in parallel, and the index is built in the same pass (and stored in the cache). The
// stats describe each log in the order of logs.
//
// A cache that cannot be used (read-only, full, not a directory) is done without, with one
// message to Log: the index is then private. When ctx is done Build stops reading, removes
// what it had written and returns ctx's error, wrapped; the cache is left as it was.
func Build(ctx context.Context, b *bundle.Bundle, logs []parse.LogStream, opts BuildOptions) (*Index, []logscan.Stats, error) {
	maxLine := b.Limits.MaxLineBytes
	if maxLine <= 0 || maxLine > maxLineLimit {
		return nil, nil, fmt.Errorf("the line limit must be between 1 and %d bytes (got %d)", maxLineLimit, maxLine)
	}
	want := meta{Format: FormatVersion, Version: opts.Version, MaxLine: maxLine, Streams: len(logs)}
	c := opts.Cache
	warned := false
	warn := func(format string, args ...any) {
		if !warned && opts.Log != nil {
			opts.Log(format, args...)
		}
		warned = true
	}
	var sigs []fileSig
	// A tarball's logs are named by the tarball file, and get access points into it (see
	// OpenTarball), made beside the scan.
	tarball := c != nil && isTarball(b.Source, b.Plain)
	var pass *tarPass
	if c != nil {
		c.prepare()
		sigs = statLogs(b.FS, logs) // before reading: a file changed meanwhile misses next time
		if tarball {
			sigs = tarballSig(b.Source)
			pass = startTarPass(ctx, b.Source, logs)
		}
		ix, err := c.lookup(ctx, b, logs, sigs, want, opts.Visit == nil, opts.Log)
		if err != nil {
			pass.stop()
			return nil, nil, err
		}
		if ix != nil {
			stats := statsOf(ix)
			if opts.Visit != nil {
				stats, err = logscan.ScanAll(ctx, b.FS, logs, logscan.AllOptions{MaxLine: maxLine, Workers: opts.Workers,
					Visit: opts.Visit, Progress: opts.Progress, Done: opts.scannedDone(), Failed: opts.scannedFailed()})
				if err != nil {
					pass.stop()
					ix.Close()
					return nil, nil, err
				}
			}
			if tarball {
				if _, err := readTarball(ix.dir, sigs); err != nil {
					if data, err := pass.wait(); err == nil {
						_ = writeTarball(ix.dir, sigs, data)
					}
				}
			}
			pass.stop()
			return ix, stats, nil
		}
	}
	var dir *scratch.Dir
	var err error
	if c != nil {
		if err = os.MkdirAll(c.Dir, 0o755); err == nil {
			dir, err = scratch.MkdirTemp(c.Dir, buildPrefix+"*")
		}
		if err != nil {
			warn("the index cache %s cannot be written (%v); going on without it", c.Dir, unwrapPath(err))
			c = nil
		}
	}
	if dir == nil {
		if dir, err = scratch.MkdirTemp("", privatePrefix+"*"); err != nil {
			return nil, nil, fmt.Errorf("index directory: %w", err)
		}
	}
	ix, stats, scanned, err := buildIn(ctx, dir, b, logs, want, opts, c != nil)
	if err != nil && c != nil && ctx.Err() == nil {
		// Writing into the cache failed (a full disk): the logs are indexed again privately,
		// without the visitor when it has already seen every line.
		dir.Remove()
		warn("the index cache %s cannot be written (%v); going on without it", c.Dir, unwrapPath(err))
		c = nil
		if scanned {
			opts.Visit = nil
		}
		if dir, err = scratch.MkdirTemp("", privatePrefix+"*"); err != nil {
			return nil, nil, fmt.Errorf("index directory: %w", err)
		}
		var again []logscan.Stats
		ix, again, _, err = buildIn(ctx, dir, b, logs, want, opts, false)
		if stats == nil {
			stats = again
		}
	}
	if err != nil {
		pass.stop()
		dir.Remove()
		return nil, nil, err
	}
	complete := true
	for _, st := range stats {
		if st.Err != nil {
			complete = false // a log that could not be read whole is not cached
		}
	}
	if c == nil || !complete {
		pass.stop()
		ix.scratch = dir
		return ix, stats, nil
	}
	ix, err = c.commit(ix, dir, b, sigs, warn)
	if err != nil {
		pass.stop()
		return nil, nil, err
	}
	if tarball && ix.scratch == nil {
		if data, err := pass.wait(); err == nil {
			_ = writeTarball(ix.dir, sigs, data)
		}
	}
	pass.stop()
	return ix, stats, nil
}

// Name prefixes of index directories being built: in the cache, and private ones.
const (
	buildPrefix   = ".build-"
	privatePrefix = "coroner-index-"
)

// unwrapPath drops the path of a *PathError, which the message names already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// indexFiles are the files of an index besides bleve's and meta.json.
const (
	headsFile   = "heads.bin"
	bodiesFile  = "bodies.bin"
	docsFile    = "docs.bin"
	chunksFile  = "chunks.bin"
	filtersFile = "filters.bin"
	bleveDir    = "bleve"
)

// buildIn scans every log into dir and opens the result. scanned says whether the scan went
// through every log (its visitors saw every line) even when writing the index failed. keyed
// asks for the logs' SHA-256, for the cache key.
func buildIn(ctx context.Context, dir *scratch.Dir, b *bundle.Bundle, logs []parse.LogStream, want meta, opts BuildOptions, keyed bool) (*Index, []logscan.Stats, bool, error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	cw, err := newChunkWriter(filepath.Join(dir.Path, filtersFile))
	if err != nil {
		return nil, nil, false, err
	}
	bodiesF, err := os.Create(filepath.Join(dir.Path, bodiesFile))
	if err != nil {
		cw.finish()
		return nil, nil, false, err
	}
	bodies := bufio.NewWriterSize(bodiesF, 256<<10) // many small logs: one write each otherwise
	// The chunk builders, one per worker: a worker takes one for each log it scans.
	free := make(chan *chunkBuilder, workers)
	for i := 0; i < workers; i++ {
		free <- &chunkBuilder{w: cw}
	}
	var size int64
	for _, ls := range logs {
		size += ls.Size
	}
	budget := &logscan.Budget{Max: int(min(max(size/docBytes, minDocs), MaxDocs))}
	heads := make([][]byte, len(logs))
	builders := make([]*streamBuilder, len(logs))
	var mu sync.Mutex
	var bodyOff int64
	var werr error
	fail := func(err error) {
		mu.Lock()
		if werr == nil {
			werr = err
		}
		mu.Unlock()
	}
	stats, err := logscan.ScanAll(ctx, b.FS, logs, logscan.AllOptions{
		MaxLine: want.MaxLine, Workers: workers, Progress: opts.Progress, Budget: budget, Hash: keyed,
		Visit: func(i int) func(*logscan.Scanned) {
			sb := newStreamBuilder(i, <-free)
			builders[i] = sb
			var visit func(*logscan.Scanned)
			if opts.Visit != nil {
				visit = opts.Visit(i)
			}
			if visit == nil {
				return sb.add
			}
			return func(l *logscan.Scanned) {
				sb.add(l)
				visit(l)
			}
		},
		Done: func(i int, st logscan.Stats) {
			if opts.Scanned != nil {
				opts.Scanned(i)
			}
			sb := builders[i]
			builders[i] = nil
			if err := sb.finish(); err != nil {
				fail(err)
			}
			free <- sb.chunk
			body, cpLen := encodeBody(sb)
			mu.Lock()
			off := bodyOff
			bodyOff += int64(len(body))
			_, err := bodies.Write(body)
			mu.Unlock()
			if err != nil {
				fail(err)
			}
			heads[i] = appendHead(nil, st, sb, off, body, cpLen)
		},
		// A log that failed gives its chunk builder back, or the next logs' Visit would wait
		// for one forever once every builder had gone to a failed log (a cancelled build).
		Failed: func(i int, _ error) {
			if opts.Scanned != nil {
				opts.Scanned(i)
			}
			if sb := builders[i]; sb != nil {
				builders[i] = nil
				free <- sb.chunk
			}
		},
	})
	close(free)
	for c := range free {
		if err := c.close(); err != nil {
			fail(err)
		}
	}
	if ferr := bodies.Flush(); werr == nil {
		werr = ferr
	}
	if cerr := bodiesF.Close(); werr == nil {
		werr = cerr
	}
	if ferr := cw.finish(); werr == nil {
		werr = ferr
	}
	if err != nil {
		return nil, nil, false, err
	}
	if werr != nil {
		return nil, stats, true, werr
	}
	if keyed {
		want.Key = contentKey(want, logs, stats)
	}
	if err := writeIndex(ctx, dir.Path, logs, stats, heads, budget.Keys(), cw, want); err != nil {
		return nil, stats, true, err
	}
	ix, err := openDir(dir.Path, b.FS, false, &want)
	return ix, stats, true, err
}

// writeIndex writes the files of an index besides the bodies and filters: the heads, the
// documents (and their bleve index), the chunk table, and meta.json last.
func writeIndex(ctx context.Context, dir string, logs []parse.LogStream, stats []logscan.Stats, heads [][]byte, docs []string, cw *chunkWriter, want meta) error {
	var h []byte
	h = append(h, headsMagic...)
	h = binary.AppendUvarint(h, uint64(len(heads)))
	var prev parse.LogStream
	var prevFirst int64
	for i, x := range heads {
		first := unixNano(stats[i].First)
		h = appendIdentity(h, prev, logs[i], prevFirst, first)
		h = append(h, x...)
		prev, prevFirst = logs[i], first
	}
	files := map[string][]byte{headsFile: h, docsFile: encodeDocs(docs), chunksFile: encodeChunks(cw)}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := writeBleve(ctx, filepath.Join(dir, bleveDir), docs); err != nil {
		return err
	}
	want.Docs = len(docs)
	return writeMeta(dir, want)
}

func statsOf(ix *Index) []logscan.Stats {
	out := make([]logscan.Stats, len(ix.streams))
	for i, s := range ix.streams {
		out[i] = logscan.Stats{Lines: s.Lines, Bytes: s.Bytes, LongLines: s.LongLines}
		if s.First != 0 {
			out[i].First, out[i].Last = time.Unix(0, s.First).UTC(), time.Unix(0, s.Last).UTC()
		}
	}
	return out
}

// contentKey names an index by what it was built from: the index format, coroner's version,
// the line limit, and each log's path, size and SHA-256, computed in the scan's own read. The
// key was a CRC-32C once: a log forged to another's size and CRC took that log's cached index
// (and search missed its lines). A cryptographic hash costs the scan about a fifth of its
// speed, and only when a cache is used.
func contentKey(m meta, logs []parse.LogStream, stats []logscan.Stats) string {
	h := sha256.New()
	fmt.Fprintf(h, "coroner-index %d\nversion %q\nmax-line %d\n", m.Format, m.Version, m.MaxLine)
	for i, ls := range logs {
		fmt.Fprintf(h, "%q %d %x\n", ls.Path, stats[i].Bytes, stats[i].Sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}
