package narrate

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/coroner-dev/coroner/report"
)

// Limits of the parts: how many candidates, and the lines of log around evidence.
const (
	maxCandidates = 400
	rootBefore    = 20
	rootAfter     = 10
	tailLines     = 30
	otherBefore   = 6
	otherAfter    = 4
	symptomBefore = 3
	symptomAfter  = 2
)

// part is one candidate part of the prompt. Candidates are listed most relevant first: that
// order is their priority when the context cannot hold them all. A kind of part is a
// report.PartKind, a field below that holds it, and a case in compose.
type part struct {
	kind report.PartKind
	// ref names the part in the report's list of what was sent.
	ref string

	// entry is a finding part's finding, or the findings of one failure on several pods.
	entry *errorEntry
	// window is a log part's lines; hits are its evidence lines, marked in the prompt.
	window *LogWindow
	hits   []int
	// event and timeline are an event part's and a timeline part's entry.
	event    *Event
	timeline *TimelineEntry
	// order is an event's or timeline entry's place in the report, which the prompt keeps.
	order int
}

// info is the part as the report lists it, with the bytes it added to the prompt.
func (p *part) info(bytes int) report.PromptPart {
	return report.PromptPart{Kind: p.kind, Ref: p.ref, Bytes: bytes}
}

// errorEntry is one finding, or several of the same rule and title that follow from the same
// cause ("collective-timeout on 7 pods").
type errorEntry struct {
	first    int // index of the first finding in the report, for ordering
	findings []Finding
	pods     []string
	count    int
}

// scope restricts data to some pods (a role); nil means the whole job.
type scope map[string]bool

func (s scope) has(pod string) bool { return s == nil || s[pod] }

// candidates lists the parts of the prompt by relevance: the root cause and its log context
// first, then the other primary findings, the symptoms, the other findings' log context,
// warning events, and the lifecycle timeline. Log windows are read through win, which stops
// when ctx ends (the caller checks it).
func candidates(ctx context.Context, rep *report.Report, win Windows, sc scope) []part {
	var out []part
	byID := map[string]int{}
	for i, f := range rep.Findings {
		byID[f.ID] = i
	}
	rootID := ""
	if rc := rep.RootCause; rc != nil {
		rootID = rc.ID
	}
	window := func(file string, line, before, after int, why string) *part {
		if win == nil || file == "" || line <= 0 {
			return nil
		}
		lines, err := win.Around(ctx, file, line, before, after)
		if err != nil || len(lines) == 0 {
			return nil
		}
		w := &LogWindow{File: file, From: lines[0].Number, To: lines[len(lines)-1].Number, Why: why}
		for _, l := range lines {
			w.Lines = append(w.Lines, l.Text)
		}
		return &part{kind: report.PartLog, ref: fmt.Sprintf("%s:%d-%d", file, w.From, w.To), window: w, hits: []int{line}}
	}
	seen := map[string]bool{}
	add := func(p *part) {
		// Two findings on one line would bring the same window twice.
		if p == nil || p.kind == report.PartLog && seen[p.ref] {
			return
		}
		if p.kind == report.PartLog {
			seen[p.ref] = true
		}
		out = append(out, *p)
	}

	// The root cause and its context.
	if i, ok := byID[rootID]; ok && sc.has(rep.Findings[i].Pod) {
		f := rep.Findings[i]
		add(&part{kind: report.PartFinding, ref: f.ID, entry: &errorEntry{first: i, findings: []Finding{convertFinding(f, rootID)}, pods: nonEmpty(f.Pod), count: f.Count}})
		logEvidence := false
		for _, ev := range f.Evidence {
			if ev.Source == "log" && ev.Line > 0 {
				logEvidence = true
				add(window(ev.File, ev.Line, rootBefore, rootAfter, "root cause "+f.ID))
			}
		}
		if !logEvidence && f.Pod != "" {
			// Killed from outside (OOMKilled, evicted): its log just stops, and how it
			// stopped is the context.
			for _, l := range rep.Logs {
				if l.Pod == f.Pod && (f.Container == "" || l.Container == f.Container) && l.Lines > 0 {
					p := window(l.Path, l.Lines, tailLines-1, 0, "end of the log of "+f.ID+"'s container")
					if p != nil {
						p.hits = nil
					}
					add(p)
				}
			}
		}
	}

	// Primary findings, then the symptoms; each the same failure on many pods as one entry,
	// most severe first.
	var primary, secondary []int
	for i, f := range rep.Findings {
		if f.ID == rootID || !sc.has(f.Pod) {
			continue
		}
		if f.SecondaryOf == "" {
			primary = append(primary, i)
		} else {
			secondary = append(secondary, i)
		}
	}
	primaries, groups := groupFindings(rep, primary, rootID), groupFindings(rep, secondary, rootID)
	for _, g := range append(append([]*errorEntry{}, primaries...), groups...) {
		var ids []string
		for _, f := range g.findings {
			ids = append(ids, f.ID)
		}
		add(&part{kind: report.PartFinding, ref: idList(ids, ","), entry: g})
	}

	// The log context of the other primary findings, then of the symptoms (the other ranks'
	// side of the story): around each entry's first log evidence.
	firstLog := func(gs []*errorEntry, before, after int) {
		for _, g := range gs {
			f := rep.Findings[g.first]
			for _, ev := range f.Evidence {
				if ev.Source == "log" && ev.Line > 0 {
					add(window(ev.File, ev.Line, before, after, f.ID))
					break
				}
			}
		}
	}
	firstLog(primaries, otherBefore, otherAfter)
	firstLog(groups, symptomBefore, symptomAfter)

	// Warning events.
	for i, e := range rep.Events {
		if e.Type == "Normal" || !sc.has(eventPod(e)) {
			continue
		}
		ev := Event{Time: fmtTime(e.Time), Type: e.Type, Reason: e.Reason, Object: e.Object, Message: e.Message, Count: e.Count}
		add(&part{kind: report.PartEvent, ref: e.Object + " " + e.Reason, event: &ev, order: i})
	}

	// The lifecycle timeline (findings and events are above already).
	for i, e := range rep.Timeline {
		if e.Kind == "finding" || e.Kind == "event" || (e.Pod != "" && !sc.has(e.Pod)) {
			continue
		}
		te := TimelineEntry{Time: fmtTime(&e.Time), Kind: e.Kind, Where: where(e.Pod, e.Container), Text: e.Text}
		add(&part{kind: report.PartTimeline, ref: te.Time + " " + te.Where, timeline: &te, order: i})
	}
	return out
}

// groupFindings makes one entry of the findings of one rule and title (the same failure on
// several pods), the most severe entries first.
func groupFindings(rep *report.Report, idx []int, rootID string) []*errorEntry {
	var groups []*errorEntry
	groupOf := map[string]*errorEntry{}
	for _, i := range idx {
		f := rep.Findings[i]
		key := f.RuleID + "\x00" + f.Title + "\x00" + f.Severity.String()
		g := groupOf[key]
		if g == nil {
			g = &errorEntry{first: i}
			groupOf[key] = g
			groups = append(groups, g)
		}
		g.findings = append(g.findings, convertFinding(f, rootID))
		g.count += f.Count
		if f.Pod != "" && !contains(g.pods, f.Pod) {
			g.pods = append(g.pods, f.Pod)
		}
	}
	sort.SliceStable(groups, func(a, b int) bool {
		return rep.Findings[groups[a].first].Severity > rep.Findings[groups[b].first].Severity
	})
	return groups
}

// idList names the findings of an entry; a long list (the same symptom on 64 ranks) is cut.
func idList(ids []string, sep string) string {
	if len(ids) <= 4 {
		return strings.Join(ids, sep)
	}
	return strings.Join(ids[:3], sep) + fmt.Sprintf(" and %d more", len(ids)-3)
}

func eventPod(e report.Event) string {
	if rest, ok := strings.CutPrefix(e.Object, "Pod "); ok {
		if i := strings.LastIndexByte(rest, '/'); i >= 0 {
			return rest[i+1:]
		}
		return rest
	}
	return ""
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// compose builds the data holding the included parts.
func compose(b *Data, parts []part, included []bool) *Data {
	d := *b
	d.Findings, d.Events, d.Logs, d.Timeline, d.RootCause = nil, nil, nil, nil, nil
	var entries []*errorEntry
	var events []*part
	var tl []*part
	type fileWins struct {
		file string
		wins []*part
	}
	var files []*fileWins
	fileIdx := map[string]*fileWins{}
	for i := range parts {
		if !included[i] {
			continue
		}
		p := &parts[i]
		switch p.kind {
		case report.PartFinding:
			entries = append(entries, p.entry)
		case report.PartEvent:
			events = append(events, p)
		case report.PartTimeline:
			tl = append(tl, p)
		case report.PartLog:
			fw := fileIdx[p.window.File]
			if fw == nil {
				fw = &fileWins{file: p.window.File}
				fileIdx[p.window.File] = fw
				files = append(files, fw)
			}
			fw.wins = append(fw.wins, p)
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].first < entries[j].first })
	var errInfo strings.Builder
	told := map[string]string{}
	for _, e := range entries {
		d.Findings = append(d.Findings, e.findings...)
		writeEntry(&errInfo, e, told)
	}
	for i := range d.Findings {
		if d.Findings[i].RootCause {
			d.RootCause = &d.Findings[i]
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].order < events[j].order })
	var evInfo strings.Builder
	for _, p := range events {
		e := *p.event
		d.Events = append(d.Events, e)
		fmt.Fprintf(&evInfo, "%s %s %s %s: %s", e.Time, e.Type, e.Reason, e.Object, cut(e.Message))
		if e.Count > 1 {
			fmt.Fprintf(&evInfo, " (x%d)", e.Count)
		}
		evInfo.WriteByte('\n')
	}
	sort.SliceStable(tl, func(i, j int) bool { return tl[i].order < tl[j].order })
	for _, p := range tl {
		d.Timeline = append(d.Timeline, *p.timeline)
	}
	var logInfo strings.Builder
	for _, fw := range files {
		for _, w := range mergeWindows(fw.wins) {
			d.Logs = append(d.Logs, w)
			fmt.Fprintf(&logInfo, "--- %s lines %d-%d (%s) ---\n%s\n", w.File, w.From, w.To, w.Why, strings.Join(w.Lines, "\n"))
		}
	}
	d.ErrorInfo = strings.TrimRight(errInfo.String(), "\n")
	d.EventInfo = strings.TrimRight(evInfo.String(), "\n")
	d.LogInfo = strings.TrimRight(logInfo.String(), "\n")
	return &d
}

// writeEntry writes one entry of ErrorInfo. An evidence text already told (the same message
// on another pod, or matched by two rules) is referred to, not repeated.
func writeEntry(b *strings.Builder, e *errorEntry, told map[string]string) {
	f := e.findings[0]
	ids := make([]string, len(e.findings))
	for i, g := range e.findings {
		ids[i] = g.ID
	}
	b.WriteString(idList(ids, ", "))
	if f.RootCause {
		b.WriteString(" [root cause]")
	}
	fmt.Fprintf(b, " %s %s: %s", f.Severity, f.Category, f.Title)
	if f.SecondaryOf != "" {
		fmt.Fprintf(b, " (follows %s)", f.SecondaryOf)
	}
	b.WriteString("\n    at ")
	switch {
	case len(e.pods) > 1:
		b.WriteString(report.PodList(e.pods))
	default:
		b.WriteString(where(f.Pod, f.Container))
	}
	fmt.Fprintf(b, ", %s; fault: %s; retry: %s", f.Time, f.Fault, f.Retry)
	if e.count > 1 {
		fmt.Fprintf(b, "; seen %d times", e.count)
	}
	b.WriteByte('\n')
	n := 2
	if len(e.findings) > 1 {
		n = 1
	}
	for i, ev := range f.evidence {
		if i == n {
			break
		}
		if id, ok := told[ev[1]]; ok {
			fmt.Fprintf(b, "    evidence: %s: the same text as %s's\n", ev[0], id)
			continue
		}
		told[ev[1]] = f.ID
		fmt.Fprintf(b, "    evidence: %s: %s\n", ev[0], cut(ev[1]))
	}
}

// mergeWindows joins the windows of one file that overlap or touch, keeping the lines in
// order and marking every evidence line.
func mergeWindows(ps []*part) []LogWindow {
	sorted := append([]*part(nil), ps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].window.From < sorted[j].window.From })
	type merged struct {
		file     string
		from, to int
		why      []string
		lines    map[int]string
		hits     map[int]bool
		priority int
	}
	// The earliest chosen window of a group decides its place.
	rank := map[*part]int{}
	for i, p := range ps {
		rank[p] = i
	}
	var out []*merged
	for _, p := range sorted {
		w := p.window
		var m *merged
		if n := len(out); n > 0 && w.From <= out[n-1].to+1 {
			m = out[n-1]
		} else {
			m = &merged{file: w.File, from: w.From, to: w.To, lines: map[int]string{}, hits: map[int]bool{}, priority: rank[p]}
			out = append(out, m)
		}
		m.to = max(m.to, w.To)
		if !contains(m.why, w.Why) {
			m.why = append(m.why, w.Why)
		}
		for i, l := range w.Lines {
			m.lines[w.From+i] = l
		}
		for _, h := range p.hits {
			m.hits[h] = true
		}
		m.priority = min(m.priority, rank[p])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].priority < out[j].priority })
	res := make([]LogWindow, 0, len(out))
	for _, m := range out {
		w := LogWindow{File: m.file, From: m.from, To: m.to, Why: strings.Join(m.why, ", ")}
		for n := m.from; n <= m.to; n++ {
			text, ok := m.lines[n]
			if !ok || !m.hits[n] && caretLine.MatchString(text) {
				continue
			}
			mark := " "
			if m.hits[n] {
				mark = ">"
			}
			w.Lines = append(w.Lines, fmt.Sprintf("%s %6d | %s", mark, n, cut(text)))
		}
		res = append(res, w)
	}
	return res
}

// caretLine is a line of Python's "^^^^" markers under a traceback's code: no information for
// a reader who has the code line above it, and many tokens.
var caretLine = regexp.MustCompile(`^(\[rank\d+\]:)?\s*[\^~]+\s*$`)
