package index

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/logscan"
)

// SearchOptions say what to look for and how to show it.
type SearchOptions struct {
	// Query is a query of search/syntax's language; Regex a Go regular expression
	// matched against each line's cleaned text. Exactly one is given.
	Query string
	Regex string
	// Pods and Containers, when given, keep logs whose pod (container) matches one of these
	// globs.
	Pods, Containers []string
	// Since and Until keep lines whose time is within them (inclusive); lines with no time are
	// then left out. Zero means open.
	Since, Until time.Time
	// All lists every matching line; otherwise a template matching more than CollapseAt lines
	// of a log is one hit with its count.
	All bool
	// Limit bounds the hits returned (0: DefaultLimit).
	Limit int
	// Context is how many lines before and after each hit to show: at most MaxContext. The
	// context lines of all hits together hold at most ContextBudget bytes (see
	// Result.ContextCut).
	Context int
}

// MaxContext is the most context lines a search shows before and after each hit.
const MaxContext = 1000

// ContextBudget bounds the memory the context lines of one search's hits take (their text,
// and a little for each line): past it, the later hits get less context or none.
const ContextBudget = 64 << 20

// contextBudget is ContextBudget; tests lower it.
var contextBudget int64 = ContextBudget

// DefaultLimit is how many hits a search returns when not told.
const DefaultLimit = 200

// CollapseAt is how many matching lines of one shape in one log are listed before they
// become one hit with a count.
const CollapseAt = 3

// VerifyBudget is how many lines a search reads back to check them before it becomes a
// limited one (unless it lists every line, SearchOptions.All): it then reads candidate lines
// in time order and stops once the hits it shows are settled (see Result.Partial).
const VerifyBudget = 1 << 16

// verifyBudget is VerifyBudget; tests lower it.
var verifyBudget = VerifyBudget

// Hit is one matching line, or, for a repetitive line, the first of many of the same shape
// in the same log.
type Hit struct {
	Line
	// Count is how many matching lines the hit stands for (1 for a single line); with
	// Partial, at least that many.
	Count int `json:"count"`
	// Partial: the search stopped before reading every line that might match: Count is a
	// lower bound.
	Partial bool `json:"partial,omitempty"`
	// LastLine and LastTime are where the last of them is, when Count > 1.
	LastLine int        `json:"lastLine,omitempty"`
	LastTime *time.Time `json:"lastTime,omitempty"`
	// Template is the line's shape, variable words as <*>, when Count > 1.
	Template string `json:"template,omitempty"`
	Before   []Line `json:"before,omitempty"`
	After    []Line `json:"after,omitempty"`
}

// Result is what a search found.
type Result struct {
	// Hits are sorted by time across all logs; lines with no time come last, in file order.
	Hits []Hit `json:"hits"`
	// Lines counts every matching line, Omitted the hits past the limit; with Partial, they
	// are lower bounds.
	Lines   int `json:"lines"`
	Omitted int `json:"omitted"`
	// Partial: the search had more than VerifyBudget lines to check and stopped once the
	// first Limit hits were found (and each repeated line's first and last): the hits are
	// the right ones, counts are lower bounds. SearchOptions.All reads everything.
	Partial bool `json:"partial,omitempty"`
	// ContextCut: the context lines reached ContextBudget, and the later hits show fewer than
	// SearchOptions.Context lines or none.
	ContextCut bool `json:"contextCut,omitempty"`
}

// QueryError is a query or regular expression that cannot be read.
type QueryError struct{ Err error }

func (e *QueryError) Error() string { return e.Err.Error() }
func (e *QueryError) Unwrap() error { return e.Err }

// RegexError is a regular expression that does not compile. The caller knows how the user
// gave it.
type RegexError struct{ Err error }

func (e *RegexError) Error() string { return "regular expression: " + e.Err.Error() }
func (e *RegexError) Unwrap() error { return e.Err }

// Search finds the lines a query (or regex) matches. Every line a scan of the logs with the
// same words would find is found, and nothing else: the index only decides which lines need
// not be read, and every line it is unsure of is read back from the bundle and checked. When
// ctx is done it stops and returns ctx's error, wrapped. A damaged index gives ErrDamaged,
// wrapped, and is removed from the cache.
func (ix *Index) Search(ctx context.Context, opts SearchOptions) (*Result, error) {
	res, err := ix.search(ctx, opts)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("searching the logs: %w", ctx.Err())
	}
	if errors.Is(err, errCorrupt) {
		ix.drop()
		return nil, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return res, err
}

// group is the matching lines of one shape (key) in one log: those of its template that
// surely match (whole), and those read and checked.
type group struct {
	s     *Stream
	si    int
	key   string
	whole *template
	lines []int
	times []int64
	// bound[i]: times[i] is no earlier than the line's time, not its time (a line of a block
	// that matches throughout, given the block's last time: see searcher.templates)
	bound   []bool
	pending bool    // lines that may match were left unread: the count is a lower bound
	skipped []*unit // units left unread because the group was settled (see searcher.partial)
	// its entries in the hit clock (see hitClock.regroup)
	gen, counted int
}

func (g *group) count() int {
	n := len(g.lines)
	if g.whole != nil {
		n += int(g.whole.count)
	}
	return n
}

// unit is a run of lines that may match: a block of a template, or a log's segment of a
// chunk.
type unit struct {
	s                          *Stream
	si                         int
	t                          *template // nil: a chunk segment
	g                          *group    // a template's group
	lineOff, skip, prevLine, n int
	tmin                       int64
	check                      bool // each line must be checked (else each matches)
	first                      int  // its first line, when ordered by time (see readPartial)
	lines                      []int
}

// runs are the line runs the unit's lines are in.
func (u *unit) runs() []byte {
	if u.t != nil {
		return u.t.lines
	}
	return u.s.cp.overLines
}

func (u *unit) decode() error {
	if u.lines != nil {
		return nil
	}
	var err error
	u.lines, err = decodeRuns(u.runs()[u.lineOff:], u.prevLine, u.skip, u.n, make([]int, 0, u.n))
	if err == nil && len(u.lines) != u.n {
		err = errCorrupt
	}
	if err != nil {
		return fmt.Errorf("%s: %w", u.s.Path, err)
	}
	return nil
}

type gkey struct {
	si  int
	key string
}

type searcher struct {
	ix           *Index
	m            matcher
	opts         SearchOptions
	timed        bool
	since, until int64
	groups       map[gkey]*group
	units        []*unit
	keyer        logscan.Keyer
	partial      bool
	// While reading in time order (readPartial): the hits found so far, by time.
	clock *hitClock
	// blk is where the block summaries of one template after another are decoded.
	blk block
}

// hitClock counts, while units are read in time order, the hits found so far that are
// earlier than the next unit: once Limit of them are, no later unit can change which hits
// come first. A group's hits change as it gets lines (and fold into one past CollapseAt):
// its entries are then replaced (see regroup).
type hitClock struct {
	pending hitHeap
	below   int
}

type hitEntry struct {
	t   int64
	g   *group
	gen int
}

type hitHeap []hitEntry

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return h[i].t < h[j].t }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(hitEntry)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// regroup replaces the entries of a group whose hits changed.
func (c *hitClock) regroup(g *group) {
	g.gen++
	c.below -= g.counted
	g.counted = 0
	for _, t := range g.hitTimes(nil) {
		heap.Push(&c.pending, hitEntry{t, g, g.gen})
	}
}

// before counts the hits earlier than t (t never goes back).
func (c *hitClock) before(t int64) int {
	for len(c.pending) > 0 && c.pending[0].t < t {
		e := heap.Pop(&c.pending).(hitEntry)
		if e.gen == e.g.gen {
			c.below++
			e.g.counted++
		}
	}
	return c.below
}

func (sr *searcher) inTime(ts int64) bool {
	return !sr.timed || (ts != 0 && ts >= sr.since && ts <= sr.until)
}

func (sr *searcher) group(si int, key string) *group {
	k := gkey{si, key}
	g := sr.groups[k]
	if g == nil {
		g = &group{s: sr.ix.streams[si], si: si, key: key}
		sr.groups[k] = g
	}
	return g
}

func (ix *Index) search(ctx context.Context, opts SearchOptions) (*Result, error) {
	var m matcher
	var err error
	switch {
	case opts.Query != "" && opts.Regex != "":
		return nil, &QueryError{errors.New("give a query or a regular expression, not both")}
	case opts.Regex != "":
		m, err = ix.regexMatcher(opts.Regex)
	case strings.TrimSpace(opts.Query) != "":
		m, err = ix.queryMatcher(ctx, opts.Query)
	default:
		return nil, &QueryError{errors.New("nothing to search for")}
	}
	if err != nil {
		return nil, err
	}
	for _, g := range append(append([]string{}, opts.Pods...), opts.Containers...) {
		if _, err := path.Match(g, ""); err != nil {
			return nil, &QueryError{fmt.Errorf("bad pattern %q", g)}
		}
	}
	if opts.Context > MaxContext {
		return nil, &QueryError{fmt.Errorf("%d context lines: at most %d before and after each hit", opts.Context, MaxContext)}
	}
	if opts.Limit <= 0 {
		opts.Limit = DefaultLimit
	}
	sr := &searcher{ix: ix, m: m, opts: opts, groups: map[gkey]*group{}, since: math.MinInt64, until: math.MaxInt64}
	sr.timed = !opts.Since.IsZero() || !opts.Until.IsZero()
	if !opts.Since.IsZero() {
		sr.since = opts.Since.UnixNano()
	}
	if !opts.Until.IsZero() {
		sr.until = opts.Until.UnixNano()
	}
	if err := sr.templates(ctx); err != nil {
		return nil, err
	}
	if err := sr.chunks(ctx); err != nil {
		return nil, err
	}
	if err := sr.read(ctx); err != nil {
		return nil, err
	}
	return sr.hits(ctx)
}

// keep reports whether a log is searched (--pod, --container).
func (sr *searcher) keep(s *Stream) bool {
	return globsMatch(sr.opts.Pods, s.Pod) && globsMatch(sr.opts.Containers, s.Container)
}

// outside reports whether every time of a span is outside the time window.
func (sr *searcher) outside(tmin, tmax int64) bool {
	return sr.timed && (tmax < sr.since || (tmin > sr.until && tmin != 0))
}

// templates finds the templates that may match: surely matching ones become whole groups,
// the blocks of the others units to read.
func (sr *searcher) templates(ctx context.Context) error {
	ix := sr.ix
	// The logs whose blocks will be read, loaded first, together (see Index.loadAll).
	var load []*Stream
	var found []*doc
	for di := range ix.docs {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := &ix.docs[di]
		if sr.m.doc(d) == no {
			continue
		}
		found = append(found, d)
		refs, err := ix.refs(d)
		if err != nil {
			return err
		}
		for _, r := range refs {
			s := ix.streams[r.stream]
			t := &s.templates[r.id]
			if !sr.keep(s) || sr.outside(t.first, t.last) {
				continue
			}
			if v := sr.m.template(s, t, d); v == maybe || (v == yes && sr.timed) {
				load = append(load, s)
			}
		}
	}
	if err := ix.loadAll(load); err != nil {
		return err
	}
	for _, d := range found {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, r := range d.refs {
			s := ix.streams[r.stream]
			t := &s.templates[r.id]
			if !sr.keep(s) || sr.outside(t.first, t.last) {
				continue
			}
			v := sr.m.template(s, t, d)
			if v == no {
				continue
			}
			g := sr.group(int(r.stream), d.key)
			if v == yes && !sr.timed {
				g.whole = t
				continue
			}
			if err := ix.load(s); err != nil {
				return err
			}
			err := t.eachBlock(&sr.blk, func(bl *block) error {
				if sr.outside(bl.tmin, bl.tmax) {
					return nil
				}
				bv := v
				if bv == maybe {
					bv = sr.m.block(s, t, d, bl)
				}
				if bv == no {
					return nil
				}
				u := &unit{s: s, si: int(r.stream), t: t, g: g, lineOff: bl.lineOff, skip: bl.skip, prevLine: bl.prevLine, n: bl.n,
					tmin: bl.tmin, check: bv != yes || (sr.timed && !(bl.tmin != 0 && bl.tmin >= sr.since && bl.tmax <= sr.until))}
				if !u.check {
					// Every line of the block matches: no need to read them.
					if err := u.decode(); err != nil {
						return err
					}
					g.lines = append(g.lines, u.lines...)
					for range u.lines {
						g.times = append(g.times, bl.tmax)
						g.bound = append(g.bound, bl.n > 1)
					}
					return nil
				}
				sr.units = append(sr.units, u)
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s: %w", s.Path, err)
			}
		}
	}
	return nil
}

// chunks finds the chunk segments whose filter may hold a match.
func (sr *searcher) chunks(ctx context.Context) error {
	ix := sr.ix
	t := ix.chunks
	if len(t.segs) == 0 {
		return nil
	}
	ev, err := sr.m.chunks(ix)
	if err != nil {
		return err
	}
	for c := 0; c < t.chunks(); c++ {
		if c%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		for k := t.starts[c]; k < t.starts[c+1]; k++ {
			seg := &t.segs[k]
			s := ix.streams[seg.stream]
			if !sr.keep(s) || sr.outside(seg.tmin, seg.tmax) {
				continue
			}
			v := ev(seg, s, c)
			if v == no {
				continue
			}
			if err := ix.load(s); err != nil {
				return err
			}
			sd := s.cp.overDescs[seg.seg]
			if sd.n != int(seg.n) {
				return fmt.Errorf("%s: chunks: %w", s.Path, errCorrupt)
			}
			sr.units = append(sr.units, &unit{s: s, si: int(seg.stream), lineOff: sd.lineOff, skip: sd.skip, prevLine: sd.prevLine,
				n: sd.n, tmin: seg.tmin, check: v != yes || sr.timed})
		}
	}
	return nil
}

// timeKey orders by time, lines without one last.
func timeKey(ts int64) int64 {
	if ts == 0 {
		return math.MaxInt64
	}
	return ts
}

// read reads the units' lines back and checks them. Within VerifyBudget lines (or to list
// every line) it reads them all, log by log; past it, in time order, a unit at a time, and
// it stops once the first Limit hits are settled (see Result.Partial).
func (sr *searcher) read(ctx context.Context) error {
	total := 0
	for _, u := range sr.units {
		total += u.n
	}
	if sr.opts.All || total <= verifyBudget {
		return sr.readAll(ctx)
	}
	return sr.readPartial(ctx)
}

// add records a line that matches: to its template's group, or for a line of a chunk to the
// group of its shape in its log.
func (sr *searcher) add(u *unit, n int, ts int64, text []byte) {
	g := u.g
	if g == nil {
		g = sr.group(u.si, string(sr.keyer.Key(text)))
	}
	g.lines = append(g.lines, n)
	g.times = append(g.times, ts)
	g.bound = append(g.bound, false)
	if sr.clock != nil && g.count() <= CollapseAt+1 {
		sr.clock.regroup(g)
	}
}

// readUnitLines reads the lines of some units of one log, sorted, in one pass.
func (sr *searcher) readUnitLines(ctx context.Context, src *lineSource, units []*unit) error {
	type cand struct {
		line int
		u    *unit
	}
	size := 0
	for _, u := range units {
		size += u.n
	}
	cands := make([]cand, 0, size)
	for _, u := range units {
		if err := u.decode(); err != nil {
			return err
		}
		for _, n := range u.lines {
			cands = append(cands, cand{n, u})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(a.line, b.line) })
	nums := make([]int, len(cands))
	for i, c := range cands {
		nums[i] = c.line
	}
	// The lines of units that need no check are hits without holding the query's words.
	f := sr.m.filter()
	for _, u := range units {
		if !u.check {
			f = nil
		}
	}
	k := 0
	return src.read(ctx, nums, f, func(n int, ts int64, text []byte) error {
		for k < len(cands) && cands[k].line < n {
			k++
		}
		for ; k < len(cands) && cands[k].line == n; k++ {
			u := cands[k].u
			if !u.check || (sr.inTime(ts) && sr.m.line(u.s, text)) {
				sr.add(u, n, ts, text)
			}
		}
		return nil
	})
}

func (sr *searcher) readAll(ctx context.Context) error {
	sort.SliceStable(sr.units, func(i, j int) bool { return sr.units[i].si < sr.units[j].si })
	for i := 0; i < len(sr.units); {
		j := i
		for j < len(sr.units) && sr.units[j].si == sr.units[i].si {
			j++
		}
		n := 0
		for _, u := range sr.units[i:j] {
			n += u.n
		}
		src, err := sr.ix.source(sr.units[i].s, n)
		if err != nil {
			return err
		}
		err = sr.readUnitLines(ctx, src, sr.units[i:j])
		src.close()
		if err != nil {
			return err
		}
		i = j
	}
	return nil
}

// readPartial reads units in time order, skipping those of groups already shown as one hit
// (more than CollapseAt lines), and stops when the next unit starts after the Limit-th hit.
// Groups shown as one hit then get their last line from their last units.
func (sr *searcher) readPartial(ctx context.Context) error {
	units := sr.units
	// Only the first line of each unit is decoded to order them: most are never read.
	var one [1]int
	for _, u := range units {
		first, err := decodeRuns(u.runs()[u.lineOff:], u.prevLine, u.skip, 1, one[:0])
		if err != nil || len(first) != 1 {
			return fmt.Errorf("%s: %w", u.s.Path, errCorrupt)
		}
		u.first = first[0]
	}
	// No two units hold the same line of a log: the order is total, and needs no stable sort.
	slices.SortFunc(units, func(a, b *unit) int {
		if c := cmp.Compare(timeKey(a.tmin), timeKey(b.tmin)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.si, b.si); c != 0 {
			return c
		}
		return cmp.Compare(a.first, b.first)
	})
	sources := map[int]*lineSource{}
	defer func() {
		for _, src := range sources {
			src.close()
		}
	}()
	source := func(u *unit) (*lineSource, error) {
		if src := sources[u.si]; src != nil {
			return src, nil
		}
		if len(sources) >= 64 {
			for k, src := range sources {
				src.close()
				delete(sources, k)
			}
		}
		src, err := sr.ix.source(u.s, u.n)
		if err == nil {
			sources[u.si] = src
		}
		return src, err
	}
	sr.clock = &hitClock{}
	for _, g := range sr.groups {
		sr.clock.regroup(g)
	}
	for i, u := range units {
		if err := ctx.Err(); err != nil {
			return err
		}
		if u.g != nil && u.g.count() > CollapseAt {
			u.g.skipped = append(u.g.skipped, u)
			u.g.pending = true
			continue
		}
		if sr.clock.before(timeKey(u.tmin)) >= sr.opts.Limit {
			sr.partial = true
			for _, v := range units[i:] {
				if v.g != nil {
					v.g.skipped = append(v.g.skipped, v)
					v.g.pending = true
				}
			}
			break
		}
		src, err := source(u)
		if err != nil {
			return err
		}
		if err := sr.readUnitLines(ctx, src, []*unit{u}); err != nil {
			return err
		}
	}
	// The last line of each group shown as one hit: its units from the end until one has a
	// match. Only groups whose first hit may be among the first Limit are shown: hitTimes are
	// no earlier than the real times, so the Limit-th of them is no earlier than the real
	// Limit-th hit, and a group whose first hit is later is not shown.
	var times []int64
	for _, g := range sr.groups {
		times = g.hitTimes(times)
	}
	cutoff := int64(math.MaxInt64)
	if len(times) >= sr.opts.Limit {
		slices.Sort(times)
		cutoff = times[sr.opts.Limit-1]
	}
	for _, g := range sr.groups {
		if len(g.skipped) == 0 {
			continue
		}
		sr.partial = true
		if first := g.hitTimes(times[:0]); len(first) == 0 || first[0] > cutoff {
			continue
		}
		for k := len(g.skipped) - 1; k >= 0; k-- {
			u := g.skipped[k]
			before := len(g.lines)
			src, err := source(u)
			if err != nil {
				return err
			}
			if err := sr.readUnitLines(ctx, src, []*unit{u}); err != nil {
				return err
			}
			if len(g.lines) > before {
				break
			}
		}
	}
	return nil
}

// hitTimes appends the times of the group's hits as they stand, each no earlier than the
// hit's real time (lines of a whole template past its first are given its last time).
func (g *group) hitTimes(out []int64) []int64 {
	n := g.count()
	if n == 0 {
		return out
	}
	var times []int64
	if g.whole != nil {
		times = append(times, timeKey(g.whole.first))
		for k := 1; k < int(g.whole.count) && k <= CollapseAt; k++ {
			times = append(times, timeKey(g.whole.last))
		}
	}
	for _, ts := range g.times {
		times = append(times, timeKey(ts))
	}
	slices.Sort(times)
	if n > CollapseAt {
		return append(out, times[0])
	}
	return append(out, times...)
}

func globsMatch(globs []string, name string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// hits turns matching groups into hits: their lines read back, sorted by time, limited.
func (sr *searcher) hits(ctx context.Context) (*Result, error) {
	ix, opts := sr.ix, sr.opts
	res := &Result{Hits: []Hit{}, Partial: sr.partial}
	groups := make([]*group, 0, len(sr.groups))
	for _, g := range sr.groups {
		if g.count() > 0 {
			groups = append(groups, g)
		}
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].si != groups[j].si {
			return groups[i].si < groups[j].si
		}
		return groups[i].key < groups[j].key
	})
	// The logs whose whole templates' lines are listed, loaded together (see Index.loadAll).
	var load []*Stream
	for _, g := range groups {
		if g.whole != nil && (opts.All || g.count() <= CollapseAt) {
			load = append(load, g.s)
		}
	}
	if err := ix.loadAll(load); err != nil {
		return nil, err
	}
	var entries []entry
	want := map[int][]int{}
	perStream := map[int]int{}
	for _, g := range groups {
		n := g.count()
		res.Lines += n
		res.Partial = res.Partial || g.pending
		known := g.knownTimes()
		lines := g.lines
		if g.whole != nil && (opts.All || n <= CollapseAt) {
			if err := ix.load(g.s); err != nil {
				return nil, err
			}
			all, err := g.whole.allLines()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", g.s.Path, err)
			}
			lines = append(all, lines...)
		}
		slices.Sort(lines)
		if !opts.All && n > CollapseAt {
			first, last := math.MaxInt, 0
			if g.whole != nil {
				first, last = int(g.whole.firstLine), int(g.whole.lastLine)
			}
			if len(lines) > 0 {
				first, last = min(first, lines[0]), max(last, lines[len(lines)-1])
			}
			ts, ok := known[first]
			entries = append(entries, entry{g: g, first: first, last: last, count: n, ts: ts, known: ok})
			continue
		}
		for _, n := range lines {
			ts, ok := known[n]
			entries = append(entries, entry{g: g, first: n, count: 1, ts: ts, known: ok})
		}
	}
	// Where a log's time follows its line order, only its first Limit lines can make the cut,
	// so only those are read. In a log whose time goes back, the time of every line that may
	// be shown is read first, and its entries are put in time order.
	slices.SortStableFunc(entries, func(a, b entry) int {
		if c := cmp.Compare(a.g.si, b.g.si); c != 0 {
			return c
		}
		return cmp.Compare(a.first, b.first)
	})
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].g.si == entries[i].g.si {
			j++
		}
		if s := entries[i].g.s; s.unordered && j-i > opts.Limit {
			part := entries[i:j]
			lines := make([]int, len(part))
			for k, e := range part {
				lines[k] = e.first
			}
			times := make([]int64, len(part))
			k := 0
			err := ix.readLines(ctx, s, lines, func(n int, ts int64, _ []byte) error {
				for k < len(lines) && lines[k] != n {
					k++
				}
				if k < len(lines) {
					times[k] = timeKey(ts)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			order := make([]int, len(part))
			for k := range order {
				order[k] = k
			}
			slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(times[a], times[b]) })
			sorted := make([]entry, len(part))
			for k, o := range order {
				sorted[k] = part[o]
			}
			copy(part, sorted)
		}
		i = j
	}
	kept := entries[:0]
	for _, e := range entries {
		if perStream[e.g.si] < opts.Limit {
			perStream[e.g.si]++
			kept = append(kept, e)
		} else {
			res.Omitted++
		}
	}
	// Only the entries that may be among the first Limit hits are read back; the others are
	// counted as omitted all the same.
	shown := firstEntries(kept, opts.Limit)
	if len(kept) > opts.Limit {
		res.Omitted += len(kept) - opts.Limit
	}
	for _, e := range shown {
		want[e.g.si] = append(want[e.g.si], e.first)
		if e.count > 1 {
			want[e.g.si] = append(want[e.g.si], e.last)
		}
	}
	type read struct {
		ts   int64
		text string
	}
	got := map[[2]int]read{}
	sis := make([]int, 0, len(want))
	for si := range want {
		sis = append(sis, si)
	}
	sort.Ints(sis)
	for _, si := range sis {
		lines := want[si]
		sort.Ints(lines)
		err := ix.readLines(ctx, ix.streams[si], lines, func(n int, ts int64, text []byte) error {
			got[[2]int{si, n}] = read{ts, string(text)}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, e := range shown {
		s := e.g.s
		r := got[[2]int{e.g.si, e.first}]
		h := Hit{Line: Line{Path: s.Path, Pod: s.Pod, Container: s.Container, Previous: s.Previous, Number: e.first,
			Time: timeOf(r.ts), Text: r.text}, Count: e.count, Partial: e.g.pending}
		if e.count > 1 {
			h.LastLine, h.LastTime, h.Template = e.last, timeOf(got[[2]int{e.g.si, e.last}].ts), display(e.g.key)
		}
		res.Hits = append(res.Hits, h)
	}
	slices.SortStableFunc(res.Hits, func(a, b Hit) int {
		switch {
		case hitLess(&a, &b):
			return -1
		case hitLess(&b, &a):
			return 1
		}
		return 0
	})
	if len(res.Hits) > opts.Limit {
		res.Hits = res.Hits[:opts.Limit]
	}
	if opts.Context > 0 {
		budget := contextBudget
		for i := range res.Hits {
			h := &res.Hits[i]
			if budget <= 0 {
				res.ContextCut = true
				break
			}
			win, cut, err := ix.window(h.Path, h.Number, opts.Context, opts.Context, &budget)
			if err != nil {
				return nil, err
			}
			res.ContextCut = res.ContextCut || cut
			for _, l := range win {
				switch {
				case l.Number < h.Number:
					h.Before = append(h.Before, l)
				case l.Number > h.Number:
					h.After = append(h.After, l)
				}
			}
		}
	}
	return res, nil
}

// readEveryHit makes a search read every hit's line, as it did before firstEntries: the
// tests compare the two.
var readEveryHit = false

// entry is a hit to be: a line of a group, or a group shown as one hit (count > 1) from its
// first line to its last. ts is its first line's time when the index knows it without reading
// the line (known).
type entry struct {
	g           *group
	first, last int
	count       int
	ts          int64
	known       bool
}

// knownTimes are the times of the group's lines the index holds without reading them: those
// read and checked, and its template's last line.
func (g *group) knownTimes() map[int]int64 {
	known := make(map[int]int64, len(g.lines)+1)
	if g.whole != nil && g.whole.count > 0 {
		known[int(g.whole.lastLine)] = g.whole.last
	}
	for i, n := range g.lines {
		if !g.bound[i] {
			known[n] = g.times[i]
		}
	}
	return known
}

// firstEntries returns the entries that may be among the first limit hits in hitLess's
// order: those whose time is known and is among the first limit known ones, and every one
// whose time is not known. Reading the lines of these alone gives the same first limit hits
// as reading all of them.
func firstEntries(entries []entry, limit int) []entry {
	if readEveryHit || len(entries) <= limit {
		return entries
	}
	less := func(a, b *entry) bool {
		ka, kb := timeKey(a.ts), timeKey(b.ts)
		if ka != kb {
			return ka < kb
		}
		if a.g.s.Path != b.g.s.Path {
			return a.g.s.Path < b.g.s.Path
		}
		return a.first < b.first
	}
	var known []*entry
	for i := range entries {
		if entries[i].known {
			known = append(known, &entries[i])
		}
	}
	if len(known) < limit {
		return entries
	}
	slices.SortFunc(known, func(a, b *entry) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	cut := known[limit-1]
	out := make([]entry, 0, limit)
	for i := range entries {
		if e := &entries[i]; !e.known || !less(cut, e) {
			out = append(out, *e)
		}
	}
	return out
}

// hitLess orders hits by time; hits without one come last, in bundle and line order.
func hitLess(a, b *Hit) bool {
	switch {
	case a.Time != nil && b.Time != nil && !a.Time.Equal(*b.Time):
		return a.Time.Before(*b.Time)
	case (a.Time == nil) != (b.Time == nil):
		return a.Time != nil
	}
	if a.Path != b.Path {
		return a.Path < b.Path
	}
	return a.Number < b.Number
}

func timeOf(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

// allLines decodes every line of a template.
func (t *template) allLines() ([]int, error) {
	lines, err := decodeRuns(t.lines, 0, 0, int(t.count), make([]int, 0, t.count))
	if err == nil && len(lines) != int(t.count) {
		err = errCorrupt
	}
	return lines, err
}
