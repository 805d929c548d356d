package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/search"
)

// TimelineIn filters the timeline.
type TimelineIn struct {
	BundleArg
	Pod    string `json:"pod,omitempty" jsonschema:"only entries about pods this glob matches (the job's own entries are kept)"`
	From   string `json:"from,omitempty" jsonschema:"only entries at or after this time: RFC 3339, '2006-01-02 15:04[:05]' or '15:04[:05]' on the timeline's first day (UTC)"`
	To     string `json:"to,omitempty" jsonschema:"only entries at or before this time (as from)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous page"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many entries (default 100)"`
}

// TimelineEntry is one moment of the job's life.
type TimelineEntry struct {
	Time      string `json:"time"`
	Kind      string `json:"kind" jsonschema:"job, pod, container, event or finding"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	Text      string `json:"text"`
	Severity  string `json:"severity,omitempty"`
	FindingID string `json:"findingId,omitempty"`
	// Group, Count and LastTime: an entry each of a pod group's Count pods had, the last at
	// LastTime (report format version 3).
	Group    string `json:"group,omitempty" jsonschema:"the pod group (replicas' groups) whose pods each had this entry"`
	Count    int    `json:"count,omitempty" jsonschema:"how many pods of the group had it"`
	LastTime string `json:"lastTime,omitempty" jsonschema:"when the last of them had it"`
}

// TimelineOut is a page of the timeline, by time.
type TimelineOut struct {
	Bundle  string          `json:"bundle"`
	Entries []TimelineEntry `json:"entries"`
	Page
}

func (s *Server) timeline(_ context.Context, b *openBundle, in TimelineIn) (TimelineOut, error) {
	r := b.d.Report
	if err := checkGlob("pod", in.Pod); err != nil {
		return TimelineOut{}, err
	}
	var first time.Time
	if len(r.Timeline) > 0 {
		first = r.Timeline[0].Time
	}
	from, err := when("from", in.From, first)
	if err != nil {
		return TimelineOut{}, err
	}
	to, err := when("to", in.To, first)
	if err != nil {
		return TimelineOut{}, err
	}
	var all []TimelineEntry
	for _, e := range r.Timeline {
		if in.Pod != "" && e.Pod != "" && !globMatch(in.Pod, e.Pod) || !from.IsZero() && e.Time.Before(from) || !to.IsZero() && e.Time.After(to) {
			continue
		}
		te, err := as[TimelineEntry](e)
		if err != nil {
			return TimelineOut{}, err
		}
		te.Text = cut(te.Text, maxLineBytes)
		all = append(all, te)
	}
	c := cursor{"timeline", TimelineIn{BundleArg: BundleArg{b.id}, Pod: in.Pod, From: in.From, To: in.To}}
	items, pg, err := page(all, c, in.Cursor, clamp(in.Limit, 100, 1, 1000), s.opts.MaxBytes, "timeline entries")
	return TimelineOut{Bundle: b.id, Entries: items, Page: pg}, err
}

func when(bound, s string, first time.Time) (time.Time, error) {
	t, err := search.ParseWhen(s, first)
	if err != nil {
		return t, fmt.Errorf("%s: %w", bound, err)
	}
	return t, nil
}

const searchHelp = `Search every log line of the bundle, its events (one line each) and the text of its objects (their YAML), with coroner's query language, and get the matching lines by time, secrets masked:
  NCCL timeout              lines with both words
  "out of memory"           the words in sequence
  nccl OR gloo, -info, NOT info, ( ... ), word*
  pod:*worker-3 container:pytorch level:error rank:5
Words are whole words in any case; a number finds exactly that number ("step 48120"); level:error finds error lines, tracebacks and exceptions. regex matches a Go regular expression against each line instead. A line repeated many times in a log is one hit with its count (all lists every line). Each hit names its pod, container and line: log_window reads around it.`

// SearchIn is a search.
type SearchIn struct {
	BundleArg
	Query     string `json:"query,omitempty" jsonschema:"a query of coroner's language (see the tool's description); give query or regex"`
	Regex     string `json:"regex,omitempty" jsonschema:"a Go regular expression matched against each line instead of a query"`
	Pod       string `json:"pod,omitempty" jsonschema:"only logs and events of pods this glob matches (the whole name: *worker-3)"`
	Container string `json:"container,omitempty" jsonschema:"only containers this glob matches"`
	Since     string `json:"since,omitempty" jsonschema:"only lines at or after this time: RFC 3339, '2006-01-02 15:04[:05]' or '15:04[:05]' on the logs' first day (UTC)"`
	Until     string `json:"until,omitempty" jsonschema:"only lines at or before this time (as since)"`
	Context   int    `json:"context,omitempty" jsonschema:"lines before and after each hit (at most 20)"`
	All       bool   `json:"all,omitempty" jsonschema:"list every matching line instead of counting repeated ones"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many hits in this page (default 50)"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous page"`
}

// LogLine is a log line (or an event's or object's line) read back from the bundle.
type LogLine struct {
	Path      string `json:"path,omitempty" jsonschema:"the log's path in the bundle (or the event's or object's); left out in a log window, which says it once"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	Previous  bool   `json:"previous,omitempty" jsonschema:"the log of the container before its last restart"`
	Line      int    `json:"line"`
	Time      string `json:"time,omitempty"`
	Text      string `json:"text"`
}

// Hit is a matching line, or the first of many of the same shape in one log.
type Hit struct {
	LogLine
	Count    int       `json:"count" jsonschema:"how many matching lines it stands for"`
	Partial  bool      `json:"partial,omitempty" jsonschema:"count is a lower bound"`
	LastLine int       `json:"lastLine,omitempty"`
	LastTime string    `json:"lastTime,omitempty"`
	Template string    `json:"template,omitempty" jsonschema:"the repeated line's shape, variable words as <*>"`
	Before   []LogLine `json:"before,omitempty"`
	After    []LogLine `json:"after,omitempty"`
}

// SearchOut is a page of hits, by time (lines with no time last).
type SearchOut struct {
	Bundle string `json:"bundle"`
	Hits   []Hit  `json:"hits"`
	// Lines counts the matching lines; Partial says it is a lower bound (the search stopped
	// once the hits shown were settled).
	Lines   int  `json:"lines"`
	Partial bool `json:"partial,omitempty"`
	// Masked counts the secrets masked in these lines.
	Masked int `json:"masked,omitempty"`
	Page
}

// maxSearchHits is how deep paging reaches into one search's hits.
const maxSearchHits = 1000

func (s *Server) search(ctx context.Context, b *openBundle, in SearchIn) (SearchOut, error) {
	if (in.Query == "") == (in.Regex == "") {
		return SearchOut{}, fmt.Errorf("give a query or a regex (one of them)")
	}
	c := cursor{"search", SearchIn{BundleArg: BundleArg{b.id}, Query: in.Query, Regex: in.Regex, Pod: in.Pod, Container: in.Container,
		Since: in.Since, Until: in.Until, Context: in.Context, All: in.All}}
	off, err := c.offset(in.Cursor)
	if err != nil {
		return SearchOut{}, err
	}
	limit := clamp(in.Limit, 50, 1, 200)
	if off >= maxSearchHits {
		return SearchOut{}, fmt.Errorf("paging stops at %d hits: narrow the query (pod, container, since, until)", maxSearchHits)
	}
	if b.src == nil {
		d := s.opts.Diagnose
		src, err := search.Open(ctx, []string{b.real}, nil, search.Options{Cache: d.Cache, Version: d.Version, Limits: d.Limits, Workers: d.Workers, Log: d.Log})
		if err != nil {
			return SearchOut{}, err
		}
		b.src = src
	}
	q := search.Query{Query: in.Query, Regex: in.Regex, Since: in.Since, Until: in.Until, Context: clamp(in.Context, 0, 0, 20),
		All: in.All, Limit: min(off+limit+1, maxSearchHits), NoRedact: s.opts.Diagnose.KeepSecrets}
	if in.Pod != "" {
		q.Pods = []string{in.Pod}
	}
	if in.Container != "" {
		q.Containers = []string{in.Container}
	}
	res, err := b.src.Search(ctx, q)
	if err != nil {
		return SearchOut{}, err
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		x := Hit{LogLine: lineOf(h.Line), Count: h.Count, Partial: h.Partial, LastLine: h.LastLine, Template: cut(h.Template, maxLineBytes),
			Before: linesOf(h.Before), After: linesOf(h.After)}
		if h.LastTime != nil {
			x.LastTime = h.LastTime.UTC().Format(time.RFC3339Nano)
		}
		hits = append(hits, x)
	}
	items, pg, err := page(hits, c, in.Cursor, limit, s.opts.MaxBytes, "hits")
	if err != nil {
		return SearchOut{}, err
	}
	if total := len(res.Hits) + res.Omitted; total > pg.Total {
		pg.Total = total
		if pg.NextCursor == "" && off+len(items) < total {
			pg.Note = fmt.Sprintf("%d-%d of %d hits; paging stops at %d: narrow the query (pod, container, since, until)", off+1, off+len(items), total, maxSearchHits)
		} else if pg.NextCursor != "" {
			pg.Note = strings.Replace(pg.Note, fmt.Sprintf(" of %d hits", len(res.Hits)), fmt.Sprintf(" of %d hits", total), 1)
		}
	}
	return SearchOut{Bundle: b.id, Hits: items, Lines: res.Lines, Partial: res.Partial, Masked: res.Masked, Page: pg}, nil
}

func lineOf(l index.Line) LogLine {
	out := LogLine{Path: l.Path, Pod: l.Pod, Container: l.Container, Previous: l.Previous, Line: l.Number, Text: cut(l.Text, maxLineBytes)}
	if l.Time != nil {
		out.Time = l.Time.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func linesOf(ls []index.Line) []LogLine {
	var out []LogLine
	for _, l := range ls {
		out = append(out, lineOf(l))
	}
	return out
}

// WindowIn names lines of a log.
type WindowIn struct {
	BundleArg
	Pod       string `json:"pod" jsonschema:"the pod (for a plain log file: its name as hits show it)"`
	Container string `json:"container,omitempty" jsonschema:"the container; may be left out when the pod has one log"`
	Line      int    `json:"line" jsonschema:"the line number (from 1)"`
	Before    *int   `json:"before,omitempty" jsonschema:"lines before it (default 10, at most 200)"`
	After     *int   `json:"after,omitempty" jsonschema:"lines after it (default 10, at most 200)"`
	Previous  bool   `json:"previous,omitempty" jsonschema:"the log of the container before its last restart"`
}

// WindowOut is the lines of a log around a line, secrets masked.
type WindowOut struct {
	Bundle    string `json:"bundle"`
	Path      string `json:"path"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	Previous  bool   `json:"previous,omitempty"`
	// TotalLines is how many lines the log has.
	TotalLines int       `json:"totalLines"`
	Lines      []LogLine `json:"lines"`
}

const maxWindow = 200

// span is how many lines a window takes on one side: 10 when not said, 0 to maxWindow.
func span(n *int) int {
	if n == nil {
		return 10
	}
	return max(0, min(*n, maxWindow))
}

func (s *Server) window(ctx context.Context, b *openBundle, in WindowIn) (WindowOut, error) {
	var st *index.Stream
	var names []string
	for _, x := range b.d.Index.Streams() {
		names = append(names, where(x))
		if x.Pod == in.Pod && x.Previous == in.Previous && (x.Container == in.Container || in.Container == "") {
			if st != nil && in.Container == "" {
				return WindowOut{}, fmt.Errorf("pod %s has several containers (%s, %s): name one", in.Pod, st.Container, x.Container)
			}
			st = x
		}
	}
	if st == nil {
		return WindowOut{}, fmt.Errorf("no log of pod %q container %q (previous: %v) in %s; the logs: %s", in.Pod, in.Container, in.Previous, b.id, diagnose.ListSome(names, 12))
	}
	if in.Line < 1 || in.Line > st.Lines {
		return WindowOut{}, fmt.Errorf("line %d is not in %s, which has %d lines", in.Line, st.Path, st.Lines)
	}
	before, after := span(in.Before), span(in.After)
	ls, err := b.d.Index.Window(st.Path, in.Line, before, after)
	if err != nil {
		return WindowOut{}, err
	}
	first := in.Line - before
	var lead []string
	if first > 1 {
		lines, err := b.d.Index.Window(st.Path, first-1, redact.WindowLead-1, 0)
		if err != nil {
			return WindowOut{}, err
		}
		for _, l := range lines {
			lead = append(lead, l.Text)
		}
	}
	texts := make([]string, len(ls))
	for i, l := range ls {
		texts[i] = l.Text
	}
	masked, err := s.mask(ctx, b, lead, texts)
	if err != nil {
		return WindowOut{}, err
	}
	out := WindowOut{Bundle: b.id, Path: st.Path, Pod: st.Pod, Container: st.Container, Previous: st.Previous, TotalLines: st.Lines, Lines: []LogLine{}}
	for i, l := range ls {
		l.Text = masked[i]
		x := lineOf(l)
		x.Path, x.Pod, x.Container, x.Previous = "", "", "", false // said once, above
		out.Lines = append(out.Lines, x)
	}
	return out, nil
}

// where names a log as hits and findings do: pod/container, "(previous)" for the log before
// a restart.
func where(x *index.Stream) string {
	w := x.Pod + "/" + x.Container
	if x.Previous {
		w += " (previous)"
	}
	return w
}
