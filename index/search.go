package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/coroner-dev/coroner/internal/literal"
	"github.com/coroner-dev/coroner/logscan"
)

// SearchOptions say what to look for and how to show it.
type SearchOptions struct {
	// Query is a query (see the package's query language); Regex a Go regular expression
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
	// Context is how many lines before and after each hit to show.
	Context int
}

// DefaultLimit is how many hits a search returns when not told.
const DefaultLimit = 200

// CollapseAt is how many matching lines of one template in one log are listed before they
// become one hit with a count.
const CollapseAt = 3

// Hit is one matching line, or, for a repetitive line, the first of many of the same
// template in the same log.
type Hit struct {
	Line
	// Count is how many matching lines the hit stands for (1 for a single line).
	Count int `json:"count"`
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
	// Lines counts every matching line, Omitted the hits past the limit.
	Lines   int `json:"lines"`
	Omitted int `json:"omitted"`
}

// QueryError is a query or regular expression that cannot be read.
type QueryError struct{ Err error }

func (e *QueryError) Error() string { return e.Err.Error() }
func (e *QueryError) Unwrap() error { return e.Err }

// matcher answers whether a template, a block of one, or a line matches.
type matcher interface {
	template(s *Stream, t *Template) tri
	block(s *Stream, t *Template, bl *block) tri
	line(s *Stream, t *Template, text []byte) bool
}

// group is what one template of one log contributed.
type group struct {
	s     *Stream
	si    int
	t     *Template
	whole bool  // every line of the template matches
	lines []int // otherwise the matching lines, sorted
}

func (g *group) count() int {
	if g.whole {
		return g.t.Count
	}
	return len(g.lines)
}

// Search finds the lines a query (or regex) matches. Every line a scan of the logs with the
// same words would find is found, and nothing else: the index only decides which lines need
// not be read, and every line it is unsure of is read back from the bundle and checked. When
// ctx is done it stops and returns ctx's error, wrapped.
func (ix *Index) Search(ctx context.Context, opts SearchOptions) (*Result, error) {
	res, err := ix.search(ctx, opts)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("searching the logs: %w", ctx.Err())
	}
	return res, err
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
	if opts.Limit <= 0 {
		opts.Limit = DefaultLimit
	}
	timed := !opts.Since.IsZero() || !opts.Until.IsZero()
	since, until := int64(-1<<63), int64(1<<63-1)
	if !opts.Since.IsZero() {
		since = opts.Since.UnixNano()
	}
	if !opts.Until.IsZero() {
		until = opts.Until.UnixNano()
	}
	inTime := func(ts int64) bool { return !timed || (ts != 0 && ts >= since && ts <= until) }

	var groups []*group
	for si, s := range ix.streams {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !globsMatch(opts.Pods, s.Pod) || !globsMatch(opts.Containers, s.Container) {
			continue
		}
		type candidate struct {
			line int
			g    *group
		}
		var verify []candidate
		var sgroups []*group
		for _, t := range s.Templates {
			if t.Count == 0 || (timed && (t.Last < since || (t.First > until && t.First != 0))) {
				continue
			}
			v := m.template(s, t)
			if v == no {
				continue
			}
			g := &group{s: s, si: si, t: t}
			sgroups = append(sgroups, g)
			if v == yes && !timed {
				g.whole = true
				continue
			}
			if err := ix.load(s); err != nil {
				return nil, err
			}
			var lines []int
			err := t.eachBlock(func(bl *block) error {
				if timed && (bl.tmax < since || (bl.tmin > until && bl.tmin != 0)) {
					return nil
				}
				bv := v
				if bv == maybe {
					bv = m.block(s, t, bl)
				}
				if bv == no {
					return nil
				}
				var err error
				if lines, err = t.blockLines(bl, lines[:0]); err != nil {
					return err
				}
				if bv == yes && (!timed || (bl.tmin != 0 && bl.tmin >= since && bl.tmax <= until)) {
					g.lines = append(g.lines, lines...)
					return nil
				}
				for _, n := range lines {
					verify = append(verify, candidate{n, g})
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.Path, err)
			}
		}
		if len(verify) > 0 {
			sort.Slice(verify, func(i, j int) bool { return verify[i].line < verify[j].line })
			nums := make([]int, len(verify))
			for i, c := range verify {
				nums[i] = c.line
			}
			k := 0
			err := ix.readLines(ctx, s, nums, func(n int, ts int64, text []byte) error {
				for k < len(verify) && verify[k].line < n {
					k++
				}
				if k < len(verify) && verify[k].line == n {
					g := verify[k].g
					if inTime(ts) && m.line(s, g.t, text) {
						g.lines = append(g.lines, n)
					}
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		for _, g := range sgroups {
			if g.whole || len(g.lines) > 0 {
				sort.Ints(g.lines)
				groups = append(groups, g)
			}
		}
	}
	return ix.hits(ctx, groups, opts)
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
func (ix *Index) hits(ctx context.Context, groups []*group, opts SearchOptions) (*Result, error) {
	res := &Result{Hits: []Hit{}}
	// Which lines of each log to read.
	type entry struct {
		g           *group
		first, last int
		count       int
	}
	var entries []entry
	want := map[int][]int{}
	perStream := map[int]int{}
	for _, g := range groups {
		n := g.count()
		res.Lines += n
		if !opts.All && n > CollapseAt {
			first, last := g.t.FirstLine, g.t.LastLine
			if !g.whole {
				first, last = g.lines[0], g.lines[len(g.lines)-1]
			}
			entries = append(entries, entry{g: g, first: first, last: last, count: n})
			want[g.si] = append(want[g.si], first, last)
			continue
		}
		lines := g.lines
		if g.whole {
			if err := ix.load(g.s); err != nil {
				return nil, err
			}
			var err error
			if lines, err = g.t.allLines(); err != nil {
				return nil, fmt.Errorf("%s: %w", g.s.Path, err)
			}
		}
		for _, n := range lines {
			entries = append(entries, entry{g: g, first: n, count: 1})
		}
	}
	// Within a log, time follows line order: only the first Limit lines of each can make the
	// cut, so only those are read.
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.g.si != b.g.si {
			return a.g.si < b.g.si
		}
		return a.first < b.first
	})
	kept := entries[:0]
	for _, e := range entries {
		if perStream[e.g.si] < opts.Limit {
			perStream[e.g.si]++
			kept = append(kept, e)
			if e.count == 1 {
				want[e.g.si] = append(want[e.g.si], e.first)
			}
		} else {
			res.Omitted++
		}
	}
	type read struct {
		ts   int64
		text string
	}
	got := map[[2]int]read{}
	for si, lines := range want {
		sort.Ints(lines)
		err := ix.readLines(ctx, ix.streams[si], lines, func(n int, ts int64, text []byte) error {
			got[[2]int{si, n}] = read{ts, string(text)}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, e := range kept {
		s := e.g.s
		r := got[[2]int{e.g.si, e.first}]
		h := Hit{Line: Line{Path: s.Path, Pod: s.Pod, Container: s.Container, Previous: s.Previous, Number: e.first,
			Time: timeOf(r.ts), Text: r.text}, Count: e.count}
		if e.count > 1 {
			h.LastLine, h.LastTime, h.Template = e.last, timeOf(got[[2]int{e.g.si, e.last}].ts), e.g.t.Text
		}
		res.Hits = append(res.Hits, h)
	}
	sort.SliceStable(res.Hits, func(i, j int) bool { return hitLess(&res.Hits[i], &res.Hits[j]) })
	if len(res.Hits) > opts.Limit {
		res.Omitted += len(res.Hits) - opts.Limit
		res.Hits = res.Hits[:opts.Limit]
	}
	if opts.Context > 0 {
		for i := range res.Hits {
			h := &res.Hits[i]
			win, err := ix.Window(h.Path, h.Number, opts.Context, opts.Context)
			if err != nil {
				return nil, err
			}
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
func (t *Template) allLines() ([]int, error) {
	lines, err := decodeRuns(t.lines, 0, 0, t.Count, make([]int, 0, t.Count))
	if err == nil && len(lines) != t.Count {
		err = errCorrupt
	}
	return lines, err
}

// queryMatch evaluates a parsed query: leaves are answered for templates by bleve, for
// blocks by their slot summaries, and for lines by their words.
type queryMatch struct {
	root node
	sets map[node]map[*Template]float64
	// The leaf answers of the template whose blocks are being checked: a large template has
	// hundreds of blocks, and its leaves answer the same for each.
	leafOf   *Template
	leafTmpl map[node]tri
}

func (ix *Index) queryMatcher(ctx context.Context, q string) (*queryMatch, error) {
	root, err := parseQuery(q)
	if err != nil {
		return nil, &QueryError{err}
	}
	m := &queryMatch{root: root, sets: map[node]map[*Template]float64{}}
	for _, l := range leaves(root, nil) {
		var bq query.Query
		switch n := l.(type) {
		case *wordNode:
			bq = termQuery("text", n.shape)
		case *phraseNode:
			terms := make([]string, len(n.words))
			for i, w := range n.words {
				terms[i] = w.shape
			}
			bq = bleve.NewPhraseQuery(terms, "text")
		case *prefixNode:
			pq := bleve.NewPrefixQuery(n.prefix)
			pq.SetField("text")
			bq = pq
		case *fieldNode:
			bq = fieldQuery(n)
		}
		set, err := ix.templatesMatching(ctx, bq)
		if err != nil {
			return nil, err
		}
		m.sets[l] = set
	}
	return m, nil
}

func fieldQuery(f *fieldNode) query.Query {
	switch f.field {
	case "rank":
		r := float64(0)
		fmt.Sscan(f.value, &r)
		inc := true
		q := bleve.NewNumericRangeInclusiveQuery(&r, &r, &inc, &inc)
		q.SetField("rank")
		return q
	case "level":
		return termQuery("level", f.value)
	}
	q := bleve.NewWildcardQuery(f.value)
	q.SetField(f.field)
	return q
}

func (m *queryMatch) template(s *Stream, t *Template) tri {
	return eval(m.root, func(l node) tri { return m.leafTemplate(l, s, t) })
}

func (m *queryMatch) leafTemplate(l node, s *Stream, t *Template) tri {
	if t.Overflow {
		if f, ok := l.(*fieldNode); ok {
			if fieldMatches(f, s, t) {
				return yes
			}
			return no
		}
		return maybe
	}
	_, in := m.sets[l][t]
	switch n := l.(type) {
	case *wordNode:
		switch {
		case !in:
			return no
		case n.digit:
			return maybe
		}
		return yes
	case *phraseNode:
		if !in {
			return no
		}
		for _, w := range n.words {
			if w.digit {
				return maybe
			}
		}
		return yes
	case *prefixNode:
		// Without digits, a shape starting with the prefix means every word there does (digits
		// only replace digits); with digits, any variable word may.
		digits := logscan.HasDigit(n.prefix)
		if in && !digits {
			return yes
		}
		for _, tok := range t.toks() {
			if tok.kind == tokWhole || (tok.kind == tokRun && digits) {
				return maybe
			}
		}
		return no
	}
	// A field: bleve's document has the values of every log with the template's text.
	if f, ok := l.(*fieldNode); ok && in && fieldMatches(f, s, t) {
		return yes
	}
	return no
}

func (m *queryMatch) block(s *Stream, t *Template, bl *block) tri {
	if m.leafOf != t {
		m.leafOf = t
		if m.leafTmpl == nil {
			m.leafTmpl = map[node]tri{}
		}
		for _, l := range leaves(m.root, nil) {
			m.leafTmpl[l] = m.leafTemplate(l, s, t)
		}
	}
	return eval(m.root, func(l node) tri {
		v := m.leafTmpl[l]
		if v != maybe || t.Overflow {
			return v
		}
		switch n := l.(type) {
		case *wordNode:
			return slotMayHold(t, bl, n)
		case *phraseNode:
			for _, w := range n.words {
				if w.digit && slotMayHold(t, bl, w) == no {
					return no
				}
			}
		case *prefixNode:
			if logscan.HasDigit(n.prefix) {
				return maybe
			}
			for _, tok := range t.toks() {
				if tok.kind == tokWhole && bl.ranges[tok.slot].mayStartWith(n.prefix) {
					return maybe
				}
			}
			return no
		}
		return v
	})
}

// slotMayHold: could a slot of the word's shape hold the word's value in this block?
func slotMayHold(t *Template, bl *block, w *wordNode) tri {
	for _, tok := range t.toks() {
		if tok.kind != tokConst && tok.shape == w.shape && bl.ranges[tok.slot].mayHold(w.value) {
			return maybe
		}
	}
	return no
}

func (m *queryMatch) line(s *Stream, t *Template, text []byte) bool {
	// Lines are verified because of words with digits, which the index cannot answer for every
	// line: a line without a word's longest digit run cannot hold the word, and digits have
	// no case, so that is settled before the line is split into words.
	quick := eval(m.root, func(l node) tri {
		switch n := l.(type) {
		case *wordNode:
			if n.digit && !bytes.Contains(text, n.run) {
				return no
			}
		case *phraseNode:
			for _, w := range n.words {
				if w.digit && !bytes.Contains(text, w.run) {
					return no
				}
			}
		case *fieldNode:
			if fieldMatches(n, s, t) {
				return yes
			}
			return no
		}
		return maybe
	})
	if quick != maybe {
		return quick == yes
	}
	return matchLine(m.root, logscan.Words(text), s, t)
}

// regexMatch runs a regular expression on the lines of the templates that could hold a
// match: every literal set the expression requires must have a literal that occurs in the
// template's constant text or could overlap one of its variable words.
type regexMatch struct {
	re   *regexp.Regexp
	sets [][]string
}

func (ix *Index) regexMatcher(expr string) (*regexMatch, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, &QueryError{fmt.Errorf("--regex: %v", err)}
	}
	return &regexMatch{re: re, sets: literal.Required(expr)}, nil
}

func (m *regexMatch) template(s *Stream, t *Template) tri {
	if t.Overflow {
		return maybe
	}
	consts := literal.Lower(t.key)
	var slots uint64
	for _, mk := range t.masks {
		slots |= mk
	}
	for _, set := range m.sets {
		found := false
		for _, lit := range set {
			if strings.Contains(consts, lit) || logscan.Classes([]byte(lit))&slots != 0 {
				found = true
				break
			}
		}
		if !found {
			return no
		}
	}
	return maybe
}

func (m *regexMatch) block(*Stream, *Template, *block) tri { return maybe }

func (m *regexMatch) line(_ *Stream, _ *Template, text []byte) bool { return m.re.Match(text) }
