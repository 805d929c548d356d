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
	"slices"
	"sync"
	"time"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/scratch"
	"github.com/coroner-dev/coroner/logscan"
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

// BuildOptions tune Build and Prepare.
type BuildOptions struct {
	// Cache keeps and reuses indexes; nil builds a private index that Close removes.
	Cache *Cache
	// Version is coroner's version: an index is reused only by the version that built it.
	Version string
	// Workers is how many logs are scanned at once; 0 means one per CPU.
	Workers int
	// Progress, when set, is called after each log Build scans, and after each log Finish
	// scans again when the cache could not be written.
	Progress func(done, total int, bytes int64)
	// Log, when set, is told what happened to the cache (a damaged index rebuilt, a cache
	// that cannot be written and is done without...).
	Log func(format string, args ...any)
	// KeyByScan: when the cache's stat entry does not name the logs' index, Build keys them
	// in the scan that indexes them instead of reading them first to look for an index of the
	// same content (which the commit finds then, and keeps): one read of each log, not two,
	// for a caller that expects a miss (analyze's index of a bundle's objects).
	KeyByScan bool
	// CacheOnly: the index is built only to be kept in the cache (analyze's index of a
	// bundle's objects, for the searches to come); a cache that cannot be written makes Build
	// return errNoCache instead of building a private index nobody reads.
	CacheOnly bool
	// Keep is the key of a cached index this one is built beside and must not evict
	// (analyze's index of the logs, kept for the search that follows, beside the index of
	// the objects): when the cache cannot hold both, this one is not kept (ErrNoRoom).
	Keep string
}

// errNoCache is Build's error when CacheOnly is set and the cache cannot be written.
var errNoCache = errors.New("the index cache cannot be written")

// ErrNoRoom is Build's error when the index would have to evict BuildOptions.Keep's to fit
// the cache's bound: it is not kept (a caller that needs it builds it without the cache).
var ErrNoRoom = errors.New("the index cache has no room for this index beside the one it must keep")

// Build returns the index of a bundle's logs: from the cache when it holds one for exactly
// these log contents, coroner version and line limit; otherwise each log is read once, all
// logs in parallel, and the index is built in that pass (and stored in the cache). A caller
// with visitors of its own for the same read, or that wants the logs' stats, uses Prepare,
// the scan and Finish instead (a warm search made a pair of times for each of 200,000 logs
// from the index, and dropped them).
//
// A cache that cannot be used (read-only, full, not a directory) is done without, with one
// message to Log: the index is then private. When ctx is done Build stops reading, removes
// what it had written and returns ctx's error, wrapped; the cache is left as it was.
func Build(ctx context.Context, b *bundle.Bundle, logs []bundle.LogStream, opts BuildOptions) (*Index, error) {
	bd, err := prepare(ctx, b, logs, opts, !opts.KeyByScan)
	if err != nil {
		return nil, err
	}
	if bd.hit != nil {
		defer bd.pass.stop()
		return bd.finishHit(), nil
	}
	stats, err := logscan.ScanAll(ctx, b.FS, logs, bd.ScanOptions(logscan.AllOptions{Progress: opts.Progress}))
	ix, _, err := bd.Finish(ctx, stats, err)
	return ix, err
}

// Builder is the index's side of one scan of a bundle's logs. Prepare looks the cache up; on
// a miss ScanOptions puts among the scan's visitors one that makes the index of the lines it
// sees, in the same read as the caller's other visitors (the rules of package analyze), and
// Finish writes the index and stores it in the cache. On a hit the scan is the caller's alone
// and Finish returns the cached index.
type Builder struct {
	b     *bundle.Bundle
	logs  []bundle.LogStream
	opts  BuildOptions
	want  meta
	c     *Cache
	warn  func(format string, args ...any)
	sigs  []fileSig
	files string // sigsHash(sigs), the stat entry's digest of them
	pass  *tarPass
	hit   *Index
	dir   *scratch.Dir
	build *building
	// tarball says the logs are a tarball's: the index gets access points into it.
	tarball bool
}

// Prepare starts an index of a bundle's logs that the caller's scan builds (see Builder):
// ScanOptions makes the scan's options, Finish ends it. The logs are scanned whether or not
// the cache holds their index (the caller has visitors of its own), so a cache lookup never
// reads them only to key them. On error nothing is left behind.
func Prepare(ctx context.Context, b *bundle.Bundle, logs []bundle.LogStream, opts BuildOptions) (*Builder, error) {
	return prepare(ctx, b, logs, opts, false)
}

// prepare is Prepare; slowKey allows the cache lookup to read the logs to key them when
// their sizes and times do not match (nothing else will read them).
func prepare(ctx context.Context, b *bundle.Bundle, logs []bundle.LogStream, opts BuildOptions, slowKey bool) (*Builder, error) {
	maxLine := b.Limits.MaxLineBytes
	if maxLine <= 0 || maxLine > maxLineLimit {
		return nil, fmt.Errorf("the line limit must be between 1 and %d bytes (got %d)", maxLineLimit, maxLine)
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	bd := &Builder{b: b, logs: logs, opts: opts, c: opts.Cache,
		want: meta{Format: FormatVersion, Version: opts.Version, MaxLine: maxLine, Streams: len(logs)}}
	warned := false
	bd.warn = func(format string, args ...any) {
		if !warned && opts.Log != nil {
			opts.Log(format, args...)
		}
		warned = true
	}
	// A tarball's logs are named by the tarball file, and get access points into it (see
	// OpenTarball), made beside the scan.
	bd.tarball = bd.c != nil && isTarball(b.Source, b.Plain)
	if c := bd.c; c != nil {
		c.prepare()
		bd.sigs = statLogs(b, logs) // before reading: a file changed meanwhile misses next time
		bd.files = logsHash(b, logs, bd.sigs)
		if bd.tarball {
			bd.sigs = tarballSig(b.Source)
			bd.files = sigsHash(bd.sigs)
			bd.pass = startTarPass(ctx, b.Source, logs)
		}
		ix, err := c.lookup(ctx, b, logs, bd.files, bd.want, slowKey, opts.Log)
		if err != nil {
			bd.pass.stop()
			return nil, err
		}
		if ix != nil {
			bd.hit = ix
			return bd, nil
		}
		if err = os.MkdirAll(c.Dir, 0o755); err == nil {
			if bd.dir, err = scratch.MkdirTemp(c.Dir, buildPrefix+"*"); err == nil {
				if bd.build, err = startBuilding(bd.dir.Path, logs, opts.Workers); err != nil {
					bd.dir.Remove()
				}
			}
		}
		if err != nil {
			bd.warn("the index cache %s cannot be written (%v); going on without it", c.Dir, unwrapPath(err))
			bd.c = nil
		}
	}
	if bd.build == nil {
		if opts.CacheOnly && bd.hit == nil {
			bd.pass.stop()
			return nil, errNoCache
		}
		if err := bd.private(); err != nil {
			bd.pass.stop()
			return nil, err
		}
	}
	return bd, nil
}

// private makes the builder build a private index, in a new scratch directory.
func (bd *Builder) private() error {
	dir, err := scratch.MkdirTemp("", privatePrefix+"*")
	if err != nil {
		return fmt.Errorf("index directory: %w", err)
	}
	bd.dir = dir
	if bd.build, err = startBuilding(dir.Path, bd.logs, bd.opts.Workers); err != nil {
		dir.Remove()
		bd.dir = nil
		return err
	}
	return nil
}

// ScanOptions returns the options of the scan that builds the index: opts with the line
// limit, the workers, the shapes' budget, the logs' hashing for the cache key and the builder
// first among the visitors. On a cache hit only the line limit and the workers are set.
func (bd *Builder) ScanOptions(opts logscan.AllOptions) logscan.AllOptions {
	opts.MaxLine, opts.Workers = bd.want.MaxLine, bd.opts.Workers
	if bd.build != nil {
		opts.Budget, opts.Hash = bd.build.budget, bd.c != nil
		opts.Visitors = append([]logscan.Visitor{bd.build}, opts.Visitors...)
	}
	return opts
}

// Finish ends the index the scan built: stats and err are what the scan (logscan.ScanAll with
// ScanOptions) returned. It writes the index and stores it in the cache, or returns the cached
// one; with the stats of the logs (on a cache hit without a scan, those the index recorded).
// A cache that cannot be written after the scan is done without: the logs are indexed again,
// privately, by a scan of the index alone (the other visitors have seen every line). When
// the scan failed, or ctx is done, what was written is removed and the error returned.
func (bd *Builder) Finish(ctx context.Context, stats []logscan.Stats, err error) (*Index, []logscan.Stats, error) {
	defer bd.pass.stop()
	if ix := bd.hit; ix != nil {
		if err != nil {
			ix.Close()
			return nil, nil, err
		}
		if stats == nil {
			stats = statsOf(ix)
		}
		return bd.finishHit(), stats, nil
	}
	ix, err := bd.build.finish(ctx, bd.dir.Path, bd.b, bd.logs, bd.want, stats, err, bd.c != nil)
	if err != nil && bd.c != nil && ctx.Err() == nil {
		// Writing into the cache failed (a full disk): the logs are indexed again privately.
		bd.dir.Remove()
		bd.warn("the index cache %s cannot be written (%v); going on without it", bd.c.Dir, unwrapPath(err))
		bd.c = nil
		if bd.opts.CacheOnly {
			bd.dir = nil
			return nil, nil, errNoCache
		}
		if err = bd.private(); err == nil {
			again, serr := logscan.ScanAll(ctx, bd.b.FS, bd.logs, bd.ScanOptions(logscan.AllOptions{Progress: bd.opts.Progress}))
			ix, err = bd.build.finish(ctx, bd.dir.Path, bd.b, bd.logs, bd.want, again, serr, false)
			if stats == nil {
				stats = again
			}
		} else {
			bd.dir = nil
		}
	}
	if err != nil {
		if bd.dir != nil {
			bd.dir.Remove()
		}
		return nil, nil, err
	}
	complete := true
	for _, st := range stats {
		if st.Err != nil {
			complete = false // a log that could not be read whole is not cached
		}
	}
	if bd.c == nil || !complete {
		ix.scratch = bd.dir
		return ix, stats, nil
	}
	ix, err = bd.c.commit(ix, bd.dir, bd.b, bd.files, bd.opts.Keep, bd.warn)
	if err != nil {
		return nil, nil, err
	}
	if bd.tarball && ix.scratch == nil {
		if data, err := bd.pass.wait(); err == nil {
			_ = writeTarball(ix.dir, bd.sigs, data)
		}
	}
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

// building is an index being made in a directory by one scan: it is the scan's visitor that
// makes each log's templates and chunks.
type building struct {
	cw      *chunkWriter
	bodiesF *os.File
	bodiesW *bufio.Writer
	bodies  bodyWriter
	// free holds the stream builders, one per worker, each with its chunk builder: a worker
	// takes one for each log it scans and gives it back, with the template builders it made,
	// for the next (making them anew for every log of a job's thousands allocated more than
	// the rest of the scan: 430 of 1,100 MB at 16,384 ranks).
	free   chan *streamBuilder
	budget *logscan.Budget
	heads  [][]byte
	tdocs  [][]int32 // the text of each template of each log
	// docSums summarise each template text's templates (under mu)
	docSums  []docSum
	builders []*streamBuilder
	mu       sync.Mutex
	werr     error
}

// startBuilding opens the files of an index being built in dir, for a scan of logs by
// workers goroutines.
func startBuilding(dir string, logs []bundle.LogStream, workers int) (*building, error) {
	cw, err := newChunkWriter(filepath.Join(dir, filtersFile))
	if err != nil {
		return nil, err
	}
	bodiesF, err := os.Create(filepath.Join(dir, bodiesFile))
	if err != nil {
		cw.finish()
		return nil, err
	}
	g := &building{cw: cw, bodiesF: bodiesF,
		bodiesW: bufio.NewWriterSize(bodiesF, 256<<10), // many small logs: one write each otherwise
		free:    make(chan *streamBuilder, workers), heads: make([][]byte, len(logs)), tdocs: make([][]int32, len(logs)), builders: make([]*streamBuilder, len(logs))}
	for i := 0; i < workers; i++ {
		g.free <- &streamBuilder{chunk: &chunkBuilder{w: cw}}
	}
	var size int64
	for _, ls := range logs {
		size += ls.Size
	}
	g.bodies.w = g.bodiesW
	g.budget = &logscan.Budget{Max: int(min(max(size/docBytes, minDocs), MaxDocs))}
	return g, nil
}

func (g *building) fail(err error) {
	g.mu.Lock()
	if g.werr == nil {
		g.werr = err
	}
	g.mu.Unlock()
}

// Log returns what adds log i's lines to the index.
func (g *building) Log(i int) func(*logscan.Scanned) {
	sb := <-g.free
	sb.start(i)
	g.builders[i] = sb
	return sb.add
}

// Done encodes log i's part of the index. A log that failed gives its stream builder back too,
// or the next logs' Log would wait for one forever once every builder had gone to a failed log
// (a cancelled build).
func (g *building) Done(i int, st logscan.Stats, err error) {
	sb := g.builders[i]
	g.builders[i] = nil
	if err != nil {
		if sb != nil {
			g.free <- sb
		}
		return
	}
	if err := sb.finish(); err != nil {
		g.fail(err)
	}
	// The body and the head are made in the builder's buffers (the body is copied as it is
	// written, the head kept at its size): made anew for each log, they and their growing
	// were a tenth of what the scan allocated at 16,384 ranks.
	body, cpLen := encodeBody(sb.body[:0], sb)
	sb.body = body
	g.mu.Lock()
	off, werr := g.bodies.add(body)
	g.mu.Unlock()
	if werr != nil {
		g.fail(werr)
	}
	sb.head = appendHead(sb.head[:0], st, sb, off, body, cpLen)
	g.heads[i] = slices.Clone(sb.head)
	g.tdocs[i] = make([]int32, len(sb.templates))
	g.mu.Lock()
	for k, tb := range sb.templates {
		g.tdocs[i][k] = int32(tb.doc)
		if tb.doc >= len(g.docSums) {
			g.docSums = append(g.docSums, make([]docSum, tb.doc+1-len(g.docSums))...)
		}
		g.docSums[tb.doc].add(tb)
	}
	g.mu.Unlock()
	g.free <- sb
}

// finish closes the files of the index after the scan (stats and err are what it returned)
// and, when it went through every log, writes the rest of the index in dir and opens it.
// keyed says the logs were hashed, for the cache key.
func (g *building) finish(ctx context.Context, dir string, b *bundle.Bundle, logs []bundle.LogStream, want meta, stats []logscan.Stats, err error, keyed bool) (*Index, error) {
	werr := g.werr
	close(g.free)
	for sb := range g.free {
		if err := sb.chunk.close(); err != nil && werr == nil {
			werr = err
		}
	}
	if ferr := g.bodies.finish(); werr == nil {
		werr = ferr
	}
	if ferr := g.bodiesW.Flush(); werr == nil {
		werr = ferr
	}
	if cerr := g.bodiesF.Close(); werr == nil {
		werr = cerr
	}
	if ferr := g.cw.finish(); werr == nil {
		werr = ferr
	}
	if err != nil {
		return nil, err
	}
	if werr != nil {
		return nil, werr
	}
	if keyed {
		want.Key = contentKey(want, logs, stats)
	}
	heads, err := writeIndex(ctx, dir, logs, stats, g.heads, g.bodies.frames, g.tdocs, g.budget.Keys(), g.docSums, g.cw, want)
	if err != nil {
		return nil, err
	}
	g.heads, g.tdocs = nil, nil // in the heads file now
	return openDirHeads(dir, b.FS, false, &want, written{heads, logs})
}

// writeIndex writes the files of an index besides the bodies and filters: the heads, the
// documents (and their bleve index), the chunk table, and meta.json last. It returns the heads
// file unpacked, for the index to be opened from.
func writeIndex(ctx context.Context, dir string, logs []bundle.LogStream, stats []logscan.Stats, heads [][]byte, frames []frame, tdocs [][]int32, docs []string, docSums []docSum, cw *chunkWriter, want meta) ([]byte, error) {
	// The heads file and the lists of the logs each text is in are made at their sizes: grown
	// by appending, they allocated four to seven times that (50 MB for the heads at 16,384
	// logs as at 200,000) at the end of the scan, where the heap is at its largest.
	identities := func(each func(i int, id []byte)) {
		var id []byte
		var prev bundle.LogStream
		var prevFirst int64
		for i := range heads {
			first := unixNano(stats[i].First)
			id = appendIdentity(id[:0], prev, logs[i], prevFirst, first)
			each(i, id)
			prev, prevFirst = logs[i], first
		}
	}
	size := binary.MaxVarintLen64 + len(frames)*(1+2*binary.MaxVarintLen64+4)
	identities(func(i int, id []byte) { size += len(id) + len(heads[i]) })
	h := binary.AppendUvarint(make([]byte, 0, size), uint64(len(heads)))
	identities(func(i int, id []byte) { h = append(append(h, id...), heads[i]...) })
	h = appendFrames(h, frames)
	in := make([]int32, len(docs)) // how many templates have each text
	nrefs := 0
	for i, ds := range tdocs {
		for _, d := range ds {
			if int(d) >= len(docs) {
				return nil, fmt.Errorf("log %s: template text %d of %d", logs[i].Path, d, len(docs))
			}
			in[d]++
		}
		nrefs += len(ds)
	}
	refs, all := make([][]tref, len(docs)), make([]tref, nrefs)
	for d, n := range in {
		refs[d], all = all[:0:n], all[n:]
	}
	for i, ds := range tdocs {
		for k, d := range ds {
			refs[d] = append(refs[d], tref{int32(i), int32(k)})
		}
	}
	files := map[string][]byte{headsFile: pack(headsMagic, h), docsFile: encodeDocs(docs, refs, docSums), chunksFile: encodeChunks(cw)}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	if err := writeBleve(ctx, filepath.Join(dir, bleveDir), docs); err != nil {
		return nil, err
	}
	want.Docs = len(docs)
	return h, writeMeta(dir, want)
}

// finishHit is Finish of a cache hit: the cached index, with its tarball's access points
// written when they were not.
func (bd *Builder) finishHit() *Index {
	ix := bd.hit
	if bd.tarball {
		if _, err := readTarball(ix.dir, bd.sigs); err != nil {
			if data, err := bd.pass.wait(); err == nil {
				_ = writeTarball(ix.dir, bd.sigs, data)
			}
		}
	}
	return ix
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
func contentKey(m meta, logs []bundle.LogStream, stats []logscan.Stats) string {
	h := sha256.New()
	fmt.Fprintf(h, "coroner-index %d\nversion %q\nmax-line %d\n", m.Format, m.Version, m.MaxLine)
	for i, ls := range logs {
		fmt.Fprintf(h, "%q %d %x\n", ls.Path, stats[i].Bytes, stats[i].Sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}
