package index

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/scratch"
	"github.com/coroner-dev/coroner/logscan"
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
	Visit func(i int) func(*logscan.Scanned)
	// Log, when set, is told what happened to the cache (a damaged index rebuilt...).
	Log func(format string, args ...any)
}

// Build returns the index of a bundle's logs: from the cache when it holds one for exactly
// these log contents, coroner version and line limit; otherwise each log is read once, all
// logs in parallel, and the index is built in the same pass (and stored in the cache). The
// stats describe each log in the order of logs.
//
// When ctx is done Build stops reading, removes what it had written and returns ctx's error,
// wrapped; the cache is left as it was.
func Build(ctx context.Context, b *bundle.Bundle, logs []parse.LogStream, opts BuildOptions) (*Index, []logscan.Stats, error) {
	maxLine := b.Limits.MaxLineBytes
	if maxLine <= 0 || maxLine > maxLineLimit {
		return nil, nil, fmt.Errorf("the line limit must be between 1 and %d bytes (got %d)", maxLineLimit, maxLine)
	}
	want := meta{Format: FormatVersion, Version: opts.Version, MaxLine: maxLine, Streams: len(logs)}
	var sigs []fileSig
	if c := opts.Cache; c != nil {
		sigs = statLogs(b.FS, logs) // before reading: a file changed meanwhile misses next time
		ix, err := c.lookup(ctx, b, logs, sigs, want, opts.Visit == nil, opts.Log)
		if err != nil {
			return nil, nil, err
		}
		if ix != nil {
			if opts.Visit == nil {
				return ix, statsOf(ix), nil
			}
			stats, err := logscan.ScanAll(ctx, b.FS, logs, logscan.AllOptions{MaxLine: maxLine, Workers: opts.Workers,
				Visit: opts.Visit, Progress: opts.Progress})
			if err != nil {
				ix.Close()
				return nil, nil, err
			}
			return ix, stats, nil
		}
	}
	// The index is built in a scratch directory: a run killed while building leaves it, and
	// the next run removes it.
	var sd *scratch.Dir
	var err error
	if opts.Cache != nil {
		if err = os.MkdirAll(opts.Cache.Dir, 0o755); err == nil {
			scratch.Sweep(opts.Cache.Dir, buildPrefix)
			scratch.Sweep(opts.Cache.Dir, trashPrefix)
			sd, err = scratch.MkdirTemp(opts.Cache.Dir, buildPrefix+"*")
		}
	} else {
		scratch.Sweep("", privatePrefix)
		sd, err = scratch.MkdirTemp("", privatePrefix+"*")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("index directory: %w", err)
	}
	dir := sd.Path
	ix, stats, err := buildIn(ctx, dir, b, logs, want, opts)
	if err != nil {
		sd.Remove()
		return nil, nil, err
	}
	complete := true
	for _, st := range stats {
		if st.Err != nil {
			complete = false // a log that could not be read whole is not cached
		}
	}
	if opts.Cache == nil || !complete {
		ix.temp, ix.release = true, func() { sd.Remove() }
		return ix, stats, nil
	}
	if err := sd.Keep(); err != nil {
		ix.Close()
		sd.Remove()
		return nil, nil, fmt.Errorf("index directory: %w", err)
	}
	ix, err = opts.Cache.commit(ix, b, sigs)
	return ix, stats, err
}

// The names of the index's scratch directories: builds in the cache directory, private
// indexes (no cache) in the temporary directory, and cache entries on their way out.
const (
	buildPrefix   = ".build-"
	privatePrefix = "coroner-index-"
	trashPrefix   = ".trash-"
)

// buildIn scans every log into dir and opens the result.
func buildIn(ctx context.Context, dir string, b *bundle.Bundle, logs []parse.LogStream, want meta, opts BuildOptions) (*Index, []logscan.Stats, error) {
	if err := os.MkdirAll(filepath.Join(dir, "streams"), 0o755); err != nil {
		return nil, nil, err
	}
	streams := make([]*Stream, len(logs))
	errs := make([]error, len(logs))
	builders := make([]*streamBuilder, len(logs))
	stats, err := logscan.ScanAll(ctx, b.FS, logs, logscan.AllOptions{
		MaxLine: want.MaxLine, Workers: opts.Workers, Progress: opts.Progress, Sum: opts.Cache != nil,
		Visit: func(i int) func(*logscan.Scanned) {
			sb := newStreamBuilder()
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
			data := encodeStream(logs[i], st, builders[i])
			builders[i] = nil
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(streamFile(i))), data, 0o644); err != nil {
				errs[i] = err
				return
			}
			// bleve needs the templates, not the body: memory stays flat as the logs grow.
			if streams[i], errs[i] = decodeStream(data, i); errs[i] == nil {
				streams[i].dropBody()
			}
		},
	})
	if err != nil {
		return nil, nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	want.Key = contentKey(want, logs, stats)
	if err := writeBleve(ctx, filepath.Join(dir, "bleve"), streams); err != nil {
		return nil, nil, err
	}
	if err := writeMeta(dir, want); err != nil {
		return nil, nil, err
	}
	ix, err := openDir(dir, b.FS, false, &want)
	return ix, stats, err
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
