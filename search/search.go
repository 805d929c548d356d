// Package search searches what a bundle (or plain logs) holds: its logs through their index,
// and its events and objects as text indexed the same way. It opens the input as analyze does
// (diagnose.Open), reuses or builds the indexes (a tarball indexed before is searched without
// extracting it), and returns the hits of a query by time, their secrets masked. The query
// language is search/syntax.
package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"time"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/index"
)

// Options say how a Source opens its input and indexes it.
type Options struct {
	// Cache keeps and reuses indexes; nil builds private ones, removed on Close.
	Cache *index.Cache
	// Version is coroner's version: an index is reused only by the version that built it.
	Version string
	Limits  bundle.Limits
	// Workers is how many logs are indexed at once; 0 means one per CPU.
	Workers int
	// Progress, when set, is called after each log is indexed.
	Progress func(done, total int, bytes int64)
	// Log, when set, is told what a search does without: a cache it cannot write, a damaged
	// index it rebuilds.
	Log func(format string, args ...any)
	// Keep is the key of a cached index that IndexObjects must not evict to make room (the
	// logs' index analyze built just before): see index.BuildOptions.Keep.
	Keep string
}

// Source is an input opened for searching, with its indexes: the logs', and the events' and
// objects'. It may be searched many times, one search at a time. Close it.
type Source struct {
	inputs   []string
	stdin    io.Reader
	opts     Options
	b        *bundle.Bundle
	reopened *bundle.Bundle // the tarball opened to rebuild its damaged cached index
	ixs      []searched
	broken   error // an index was damaged and could not be rebuilt
}

// searched is one index searched: the logs, or the events and objects.
type searched struct {
	ix      *index.Index
	objects bool
	rebuild func(ctx context.Context) (*index.Index, error) // builds it anew when the cached one is damaged
}

// Open opens inputs as analyze takes them (one bundle, or plain log files and "-" for stdin)
// and indexes what they hold. A tarball indexed before (by analyze or search) is searched
// without extracting it: its logs through the index's access points into the gzip stream,
// its events and objects read as the tarball streams by. Errors of diagnose.Open are
// returned as they are (a *diagnose.UsageError is the caller's mistake).
func Open(ctx context.Context, inputs []string, stdin io.Reader, opts Options) (_ *Source, err error) {
	s := &Source{inputs: inputs, stdin: stdin, opts: opts}
	// A search shows none of the bundle's warnings: the files it does not search are not read
	// to check them against the manifest's sums.
	ctx = bundle.WithManifestSizesOnly(ctx)
	if opts.Cache != nil {
		// A bundle whose logs were all plain text when indexed, unchanged since, is opened
		// without looking at each log's head again.
		ctx = bundle.WithFormMemo(ctx, opts.Cache.FormMemo(opts.Version))
		if len(inputs) == 1 && inputs[0] != "-" {
			// The directories unchanged since the last search are not listed again.
			ctx = bundle.WithTreeMemo(ctx, opts.Cache.TreeMemo(inputs[0]))
		}
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if len(inputs) == 1 && inputs[0] != "-" {
		ix, err := index.OpenTarball(opts.Cache, inputs[0], opts.Version, opts.Limits.MaxLineBytes)
		if err != nil {
			return nil, err
		}
		if ix != nil {
			s.ixs = append(s.ixs, searched{ix: ix})
			if files, ok := ix.TarballResources(); ok {
				s.b = resourceBundle(inputs[0], files, opts.Limits)
			} else if s.b, err = StreamResources(ctx, inputs[0], opts.Limits); err != nil {
				return nil, err
			}
		}
	}
	if s.b == nil {
		if s.b, err = diagnose.Open(ctx, inputs, stdin, opts.Limits); err != nil {
			return nil, err
		}
	}
	b := s.b
	if opts.Cache != nil {
		opts.Cache.KeepTreeMemo(b)
	}
	logs, _ := bundle.LogStreams(b)
	if len(s.ixs) == 0 && len(logs) > 0 {
		ix, err := s.build(ctx, b, logs, opts.Progress)
		if err != nil {
			return nil, err
		}
		s.ixs = append(s.ixs, searched{ix: ix, rebuild: func(ctx context.Context) (*index.Index, error) {
			return s.build(ctx, b, logs, opts.Progress)
		}})
	} else if len(s.ixs) == 1 {
		// The tarball's cached index: built anew the slow way, from the opened tarball.
		s.ixs[0].rebuild = func(ctx context.Context) (*index.Index, error) {
			full, err := diagnose.Open(ctx, inputs, stdin, opts.Limits)
			if err != nil {
				return nil, err
			}
			if s.reopened != nil {
				s.reopened.Close() // a tarball rebuilt before: its index is built anew, from this one
			}
			s.reopened = full
			logs, _ := bundle.LogStreams(full)
			return s.build(ctx, full, logs, opts.Progress)
		}
	}
	if !b.Plain {
		ob, streams, err := objectText(b)
		if err != nil {
			return nil, err
		}
		if len(streams) > 0 {
			// The objects' index never evicts the logs' one it is searched beside (a cache
			// bound too small for both would make every search rebuild the logs' index): when
			// there is no room for both, it is built for this search alone.
			var keep string
			if len(s.ixs) > 0 {
				keep = s.ixs[0].ix.Key()
			}
			ix, err := s.buildKeeping(ctx, ob, streams, nil, keep)
			if errors.Is(err, index.ErrNoRoom) {
				ix, err = s.buildKeeping(ctx, ob, streams, nil, "-")
			}
			if err != nil {
				return nil, err
			}
			s.ixs = append(s.ixs, searched{ix: ix, objects: true, rebuild: func(ctx context.Context) (*index.Index, error) {
				return s.build(ctx, ob, streams, nil)
			}})
		}
	}
	if len(s.ixs) == 0 {
		return nil, fmt.Errorf("%s: nothing to search: no logs, events or objects", diagnose.InputName(inputs))
	}
	return s, nil
}

// IndexObjects builds the index of a directory bundle's events and objects into opts.Cache,
// the one Open builds on the first search of the bundle when the cache does not hold it, and
// keeps the listing of the bundle's walk for the next search (b opened under
// bundle.WithTreeMemo). `coroner analyze` calls it after its report: it has read the bundle's
// logs into the cache already, and without this the first search after it indexed 16,384
// pods' YAML (0.6 s of CPU, three times a warm search's) and listed every directory again.
// The objects are keyed in the scan that indexes them (index.BuildOptions.KeyByScan): a
// bundle analyzed for the first time has no index of them to find by reading them first.
// Without a cache, or for plain logs, it does nothing.
func IndexObjects(ctx context.Context, b *bundle.Bundle, opts Options) error {
	if opts.Cache == nil || b.Plain {
		return nil
	}
	opts.Cache.KeepTreeMemo(b)
	ob, streams, err := objectText(b)
	if err != nil || len(streams) == 0 {
		return err
	}
	ix, err := index.Build(ctx, ob, streams, index.BuildOptions{Cache: opts.Cache, Version: opts.Version,
		Workers: opts.Workers, Log: opts.Log, KeyByScan: true, CacheOnly: true, Keep: opts.Keep})
	if err != nil {
		return err
	}
	return ix.Close()
}

func (s *Source) build(ctx context.Context, b *bundle.Bundle, logs []bundle.LogStream, progress func(int, int, int64)) (*index.Index, error) {
	return s.buildKeeping(ctx, b, logs, progress, "")
}

// buildKeeping builds an index beside the cached index keyed keep, which it must not evict
// (index.ErrNoRoom, returned as it is, when it would have to); keep "-" builds it without
// the cache.
func (s *Source) buildKeeping(ctx context.Context, b *bundle.Bundle, logs []bundle.LogStream, progress func(int, int, int64), keep string) (*index.Index, error) {
	cache := s.opts.Cache
	if keep == "-" {
		cache, keep = nil, ""
	}
	ix, err := index.Build(ctx, b, logs, index.BuildOptions{Cache: cache, Version: s.opts.Version,
		Workers: s.opts.Workers, Progress: progress, Log: s.opts.Log, Keep: keep})
	if err != nil && !errors.Is(err, index.ErrNoRoom) {
		return nil, fmt.Errorf("%s: indexing: %w", diagnose.InputName(s.inputs), err)
	}
	return ix, err
}

// Bundle is the bundle searched: a plain log's file name comes from it (Bundle.PlainName).
func (s *Source) Bundle() *bundle.Bundle { return s.b }

// Close closes the indexes (a private one is removed) and the bundle.
func (s *Source) Close() error {
	var errs []error
	for _, x := range s.ixs {
		errs = append(errs, x.ix.Close())
	}
	s.ixs = nil
	for _, b := range []*bundle.Bundle{s.reopened, s.b} {
		if b != nil {
			errs = append(errs, b.Close())
		}
	}
	s.reopened, s.b = nil, nil
	return errors.Join(errs...)
}

// Query is what to look for, where, and how to show it.
type Query struct {
	// Query is a query of search/syntax; Regex a Go regular expression matched against each
	// line instead. Exactly one is given.
	Query, Regex string
	// Pods and Containers keep the logs (and events) whose pod (container) one of these globs
	// matches; each must match one searched (else a *GlobError).
	Pods, Containers []string
	// Since and Until keep lines within them, as ParseWhen reads them: a time of day is
	// taken on the logs' first day (Until's after Since); Since may be a duration, the last
	// of the logs ("10m"). A bound that cannot be read is a *TimeError.
	Since, Until string
	// Context lines before and after each hit (at most index.MaxContext); All lists every
	// matching line instead of counting repeated ones; Limit bounds the hits (0: index.DefaultLimit).
	Context int
	All     bool
	Limit   int
	// NoRedact leaves secrets in the lines found; they are masked by default, as analyze
	// masks its report.
	NoRedact bool
}

// Result is what a search found: the hits of every index, merged by time.
type Result struct {
	*index.Result
	// Objects are the paths of the events and objects searched: their hits are named by path.
	Objects map[string]bool
	// Masked counts the secrets masked in the hits, MaskedBy by which rules ("hf-token 1, ...").
	Masked   int
	MaskedBy string
}

// GlobError is a pod or container glob that is malformed or matches nothing searched: the
// user almost certainly meant something else (a glob matches the whole name).
type GlobError struct {
	Field string // "pod" or "container"
	Glob  string
	Bad   bool     // a malformed pattern
	Names []string // the names it could have matched, sorted
}

func (e *GlobError) Error() string {
	if e.Bad {
		return fmt.Sprintf("%s glob %q: bad pattern", e.Field, e.Glob)
	}
	return fmt.Sprintf("%s glob %q matches none of the %d %ss searched", e.Field, e.Glob, len(e.Names), e.Field)
}

// TimeError is a Since or Until that cannot be read.
type TimeError struct {
	Bound string // "since" or "until"
	Err   error
}

func (e *TimeError) Error() string { return e.Bound + ": " + e.Err.Error() }
func (e *TimeError) Unwrap() error { return e.Err }

// Search runs a query over every index and merges the hits by time, masking their secrets
// unless told not to. A query that cannot be read is an *index.QueryError; a damaged cached
// index is rebuilt (Options.Log says so) and searched again.
func (s *Source) Search(ctx context.Context, q Query) (*Result, error) {
	if s.broken != nil {
		return nil, s.broken
	}
	if err := s.checkGlobs("pod", q.Pods, func(st *index.Stream) string { return st.Pod }); err != nil {
		return nil, err
	}
	if err := s.checkGlobs("container", q.Containers, func(st *index.Stream) string { return st.Container }); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = index.DefaultLimit
	}
	so := index.SearchOptions{Query: q.Query, Regex: q.Regex, Pods: q.Pods, Containers: q.Containers,
		All: q.All, Limit: limit, Context: q.Context}
	var err error
	if so.Since, so.Until, err = s.window(q.Since, q.Until); err != nil {
		return nil, err
	}
	var results []*index.Result
	objects := map[string]bool{}
	for i := range s.ixs {
		x := &s.ixs[i]
		res, err := x.ix.Search(ctx, so)
		if errors.Is(err, index.ErrDamaged) && x.rebuild != nil {
			// Search removed the damaged index from the cache: this build replaces it.
			if s.opts.Log != nil {
				s.opts.Log("%s; rebuilding it", err)
			}
			x.ix.Close()
			if x.ix, err = x.rebuild(ctx); err != nil {
				s.broken = fmt.Errorf("an index could not be rebuilt: %w", err)
				return nil, err
			}
			res, err = x.ix.Search(ctx, so)
		}
		if err != nil {
			return nil, err
		}
		if x.objects {
			for _, st := range x.ix.Streams() {
				objects[st.Path] = true
			}
		}
		results = append(results, res)
	}
	out := &Result{Result: Merge(results, limit), Objects: objects}
	if !q.NoRedact {
		if out.Masked, out.MaskedBy, err = redactHits(ctx, out.Result, s.b, s.inputs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkGlobs fails when a glob matches none of the names searched.
func (s *Source) checkGlobs(field string, globs []string, name func(*index.Stream) string) error {
	if len(globs) == 0 {
		return nil // no list of every name to make (a map and a sort of 200,000 containers' names)
	}
	var names []string
	seen := map[string]bool{}
	for _, x := range s.ixs {
		for _, st := range x.ix.Streams() {
			if n := name(st); n != "" && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return &GlobError{Field: field, Glob: g, Bad: true}
		}
		found := false
		for _, n := range names {
			if ok, _ := path.Match(g, n); ok {
				found = true
				break
			}
		}
		if !found {
			return &GlobError{Field: field, Glob: g, Names: names}
		}
	}
	return nil
}

// Merge merges the results of several indexes: by time, untimed hits last (each index's in
// its order), at most limit hits; partial when one is.
func Merge(rs []*index.Result, limit int) *index.Result {
	if len(rs) == 1 {
		return rs[0]
	}
	out := &index.Result{Hits: []index.Hit{}}
	for _, r := range rs {
		out.Lines += r.Lines
		out.Omitted += r.Omitted
		out.Partial = out.Partial || r.Partial
		out.ContextCut = out.ContextCut || r.ContextCut
		out.Hits = append(out.Hits, r.Hits...)
	}
	sort.SliceStable(out.Hits, func(i, j int) bool {
		a, b := out.Hits[i].Time, out.Hits[j].Time
		switch {
		case a == nil || b == nil:
			return a != nil && b == nil
		}
		return a.Before(*b)
	})
	if len(out.Hits) > limit {
		out.Omitted += len(out.Hits) - limit
		out.Hits = out.Hits[:limit]
	}
	return out
}

// window reads the bounds of a search: a time of day means that time on the day of the logs'
// first line (Until's: on or after Since); a duration as Since ("10m", as kubectl's and
// stern's --since) the last of the logs: what they hold newer than that before their end (a
// post-mortem's "now").
func (s *Source) window(since, until string) (from, to time.Time, err error) {
	var first, last time.Time
	for _, x := range s.ixs {
		if t := firstTime(x.ix); !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
		if t := lastTime(x.ix); t.After(last) {
			last = t
		}
	}
	if d, derr := time.ParseDuration(since); derr == nil && d > 0 {
		if last.IsZero() {
			return from, to, &TimeError{Bound: "since", Err: fmt.Errorf("%q is a duration before the logs' end, but the logs have no timestamps", since)}
		}
		from = last.Add(-d)
	} else if from, err = ParseWhen(since, first); err != nil {
		return from, to, &TimeError{Bound: "since", Err: err}
	}
	start := first
	if !from.IsZero() {
		start = from
	}
	if to, err = ParseWhen(until, start); err != nil {
		return from, to, &TimeError{Bound: "until", Err: err}
	}
	return from, to, nil
}

// firstTime is the earliest timestamp of an index's logs.
func firstTime(ix *index.Index) time.Time {
	var first int64
	for _, s := range ix.Streams() {
		if s.First != 0 && (first == 0 || s.First < first) {
			first = s.First
		}
	}
	if first == 0 {
		return time.Time{}
	}
	return time.Unix(0, first).UTC()
}

// lastTime is the latest timestamp of an index's logs.
func lastTime(ix *index.Index) time.Time {
	var last int64
	for _, s := range ix.Streams() {
		last = max(last, s.Last)
	}
	if last == 0 {
		return time.Time{}
	}
	return time.Unix(0, last).UTC()
}

// ParseWhen reads a time: RFC 3339, a date and time, or a time of day, which means its first
// occurrence at or after from (times are UTC, as kubelet timestamps are). "" is the zero time.
func ParseWhen(s string, from time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if c, err := time.Parse(layout, s); err == nil {
			if from.IsZero() {
				return time.Time{}, fmt.Errorf("%q is a time of day, but the logs have no timestamps to give it a date", s)
			}
			t := time.Date(from.Year(), from.Month(), from.Day(), c.Hour(), c.Minute(), c.Second(), 0, time.UTC)
			if t.Before(from.Truncate(time.Minute)) {
				t = t.AddDate(0, 0, 1)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read %q as a time (use 2006-01-02T15:04:05Z, \"2006-01-02 15:04\" or 15:04)", s)
}
