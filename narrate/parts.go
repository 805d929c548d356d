package narrate

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/coroner-dev/coroner/analyze"
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
// report.PartKind, a field below that holds it, a case in compose, and its shorter forms in
// forms and shorten.
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
	// role is a role part's diagnosis.
	role *Role
	// order is an event's, timeline entry's or role's place in the report, which the prompt
	// keeps.
	order int
	// form is how far the part is shortened: 0 is whole, forms()-1 the shortest.
	form int
}

// Shorter forms of parts.
const (
	// compactEvidence bounds the evidence text of a finding in its shortest form.
	compactEvidence = 200
	// shortMessage bounds an event's message, and a role's diagnosis, when shortened.
	shortMessage = 160
	// minWindow is the fewest lines of a log window.
	minWindow = 3
)

// forms counts the forms of the part, from whole to shortest: a finding drops to one
// evidence line and then cuts that line; a log window narrows line by line around its
// evidence line (or keeps the last lines of a log that just stops); an event's message and
// a role's diagnosis are cut. A timeline entry has one form.
func (p *part) forms() int {
	switch p.kind {
	case report.PartFinding:
		return 3
	case report.PartLog:
		// The shortest keeps the evidence line and two around it: the evidence line alone
		// is what its finding already says.
		return len(p.window.Lines) - min(len(p.window.Lines), minWindow) + 1
	case report.PartEvent:
		if len(p.event.Message) > shortMessage {
			return 2
		}
	case report.PartRole:
		if len(p.role.Diagnosis) > shortMessage {
			return 2
		}
	}
	return 1
}

// shorten returns the part in form f (0 <= f < forms()).
func (p part) shorten(f int) part {
	p.form = f
	if f == 0 {
		return p
	}
	switch p.kind {
	case report.PartLog:
		w := *p.window
		keep := len(w.Lines) - f
		from := w.From + len(w.Lines) - keep // a log that just stops keeps its end
		if len(p.hits) > 0 && p.hits[0] >= w.From && p.hits[0] <= w.To {
			hit := p.hits[0]
			before, after := hit-w.From, w.To-hit
			// Narrow both sides in proportion, so the evidence line stays where it was.
			b := min(before, (keep-1)*before/max(before+after, 1))
			if a := keep - 1 - b; a > after {
				b = min(before, keep-1-after)
			}
			from = hit - b
		}
		w.Lines = w.Lines[from-w.From : from-w.From+keep]
		w.From, w.To = from, from+keep-1
		p.window = &w
		p.ref = fmt.Sprintf("%s:%d-%d", w.File, w.From, w.To)
	case report.PartEvent:
		e := *p.event
		e.Message = truncate(cut(e.Message), shortMessage)
		p.event = &e
	case report.PartRole:
		r := *p.role
		r.Diagnosis = truncate(r.Diagnosis, shortMessage)
		p.role = &r
	}
	return p
}

// info is the part as the report lists it, with the bytes it added to the prompt.
func (p *part) info(bytes int) report.PromptPart {
	return report.PromptPart{Kind: p.kind, Ref: p.ref, Bytes: bytes, Shortened: p.form > 0}
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

// hasAny reports whether the scope holds one of the pods (a folded finding's are many).
func (s scope) hasAny(pods []string) bool {
	if s == nil {
		return true
	}
	for _, p := range pods {
		if s[p] {
			return true
		}
	}
	return false
}

// candidates lists the parts of the prompt by relevance: the root cause and its log context
// first, then the roles' diagnoses (the job's prompt only: roles is nil for a role's), the
// other primary findings, the symptoms, the other findings' log context, warning events, and
// the lifecycle timeline. In the per-role mode (rolesFirst), the job's prompt exists to carry
// the roles' diagnoses, which each saw its role's evidence: they come right after the root
// cause, before its log context. Log windows are read through win, which stops when ctx ends
// (the caller checks it).
func candidates(ctx context.Context, rep *report.Report, win Windows, sc scope, roles []Role, rolesFirst bool) []part {
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
		w := &LogWindow{File: flat(file), From: lines[0].Number, To: lines[len(lines)-1].Number, Why: why}
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

	rolesAdded := false
	addRoles := func() {
		for i := range roles {
			add(&part{kind: report.PartRole, ref: roles[i].Name, role: &roles[i], order: i})
		}
	}

	// The root cause and its context.
	if i, ok := byID[rootID]; ok && sc.has(rep.Findings[i].Pod) {
		f := rep.Findings[i]
		add(&part{kind: report.PartFinding, ref: f.ID, entry: &errorEntry{first: i, findings: []Finding{convertFinding(f, rootID)}, pods: nonEmpty(flat(f.Pod)), count: f.Count}})
		if rolesFirst {
			addRoles()
			rolesAdded = true
		}
		logEvidence := false
		for _, ev := range f.Evidence {
			if ev.Source == analyze.SourceLog && ev.Line > 0 {
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

	// The roles' diagnoses: a summary of every pod and finding, or the model's own (per-role
	// mode), that holds for all the detail below when it does not fit.
	if !rolesAdded {
		addRoles()
	}

	// Primary findings, then the symptoms; each the same failure on many pods as one entry,
	// most severe first.
	var primary, secondary []int
	for i, f := range rep.Findings {
		if f.ID == rootID || !sc.hasAny(f.PodNames()) {
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
				if ev.Source == analyze.SourceLog && ev.Line > 0 {
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
		ev := Event{Time: fmtTime(e.Time), Type: flat(e.Type), Reason: flat(e.Reason), Object: flat(e.Object), Message: e.Message, Count: e.Count}
		add(&part{kind: report.PartEvent, ref: e.Object + " " + e.Reason, event: &ev, order: i})
	}

	// The lifecycle timeline (findings and events are above already).
	for i, e := range rep.Timeline {
		if e.Kind == "finding" || e.Kind == "event" || (e.Pod != "" && !sc.has(e.Pod)) || (e.Group != "" && !sc.has(e.Group)) {
			continue
		}
		te := TimelineEntry{Time: fmtTime(&e.Time), Kind: e.Kind, Where: where(e.Pod, e.Container), Text: e.Text}
		if e.Group != "" {
			// A pod group's entry: each of its pods had it, from Time to LastTime.
			te.Where = where(report.Commas(e.Count)+" pods of group "+e.Group, e.Container)
			if e.LastTime != nil {
				te.Time += " to " + fmtTime(e.LastTime)
			}
		}
		add(&part{kind: report.PartTimeline, ref: te.Time + " " + te.Where, timeline: &te, order: i})
	}
	return out
}

// groupFindings makes one entry of the findings of one rule and title (the same failure on
// several pods), the most severe entries first.
func groupFindings(rep *report.Report, idx []int, rootID string) []*errorEntry {
	var groups []*errorEntry
	groupOf := map[string]*errorEntry{}
	seen := map[*errorEntry]map[string]bool{}
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
		for _, p := range f.PodNames() { // a folded finding's are many
			if p = flat(p); p != "" && !seen[g][p] {
				if seen[g] == nil {
					seen[g] = map[string]bool{}
				}
				seen[g][p] = true
				g.pods = append(g.pods, p)
			}
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
	if e.ObjectRef.Kind == "Pod" {
		return e.ObjectRef.Name
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

// compose builds the data holding the chosen parts (each in its form), and says how many of
// each kind were left out.
func compose(b *Data, chosen []part, left Left) *Data {
	d := *b
	d.Findings, d.Events, d.Logs, d.Timeline, d.RootCause, d.Roles = nil, nil, nil, nil, nil, nil
	d.Left, d.Omitted = left, left.total()
	type entryForm struct {
		e    *errorEntry
		form int
	}
	var entries []entryForm
	var events, tl, roles []*part
	type fileWins struct {
		file string
		wins []*part
	}
	var files []*fileWins
	fileIdx := map[string]*fileWins{}
	for i := range chosen {
		p := &chosen[i]
		switch p.kind {
		case report.PartFinding:
			entries = append(entries, entryForm{p.entry, p.form})
		case report.PartEvent:
			events = append(events, p)
		case report.PartTimeline:
			tl = append(tl, p)
		case report.PartRole:
			roles = append(roles, p)
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
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].e.first < entries[j].e.first })
	var errInfo strings.Builder
	told := map[string]string{}
	for _, e := range entries {
		d.Findings = append(d.Findings, e.e.findings...)
		writeEntry(&errInfo, e.e, told, e.form)
	}
	leftLine(&errInfo, report.PartFinding, left.Findings)
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
	leftLine(&evInfo, report.PartEvent, left.Events)
	sort.SliceStable(tl, func(i, j int) bool { return tl[i].order < tl[j].order })
	for _, p := range tl {
		d.Timeline = append(d.Timeline, *p.timeline)
	}
	var logInfo strings.Builder
	for _, fw := range files {
		for _, w := range mergeWindows(fw.wins, told) {
			d.Logs = append(d.Logs, w)
			fmt.Fprintf(&logInfo, "--- %s lines %d-%d (%s) ---\n%s\n", w.File, w.From, w.To, w.Why, strings.Join(w.Lines, "\n"))
		}
	}
	leftLine(&logInfo, report.PartLog, left.Logs)
	sort.SliceStable(roles, func(i, j int) bool { return roles[i].order < roles[j].order })
	for _, p := range roles {
		d.Roles = append(d.Roles, *p.role)
	}
	d.Metadata = metadata(b.rep, d.Roles, b.roleParts)
	d.ErrorInfo = strings.TrimRight(errInfo.String(), "\n")
	d.EventInfo = strings.TrimRight(evInfo.String(), "\n")
	d.LogInfo = strings.TrimRight(logInfo.String(), "\n")
	return &d
}

// leftLine ends a block with how many of its entries were left out.
func leftLine(b *strings.Builder, k report.PartKind, n int) {
	if n > 0 {
		fmt.Fprintf(b, "(left out to fit the context: %s.)\n", k.Plural(n))
	}
}

// writeEntry writes one entry of ErrorInfo in its form: whole (form 0), or its title, where,
// when and first evidence line (1), that line cut short (2). An evidence text already told
// (the same message on another pod, or matched by two rules) is referred to, not repeated.
func writeEntry(b *strings.Builder, e *errorEntry, told map[string]string, form int) {
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
	fmt.Fprintf(b, ", %s", f.Time)
	if form == 0 {
		fmt.Fprintf(b, "; fault: %s; retry: %s", f.Fault, f.Retry)
		if e.count > 1 {
			fmt.Fprintf(b, "; seen %d times", e.count)
		}
	}
	b.WriteByte('\n')
	n := 2
	if len(e.findings) > 1 || form > 0 {
		n = 1
	}
	for i, ev := range f.evidence {
		if i == n {
			break
		}
		if id, ok := told[cut(ev[1])]; ok {
			fmt.Fprintf(b, "    evidence: %s: the same text as %s's\n", ev[0], id)
			continue
		}
		told[cut(ev[1])] = f.ID
		text := cut(ev[1])
		if form > 1 {
			text = truncate(text, compactEvidence)
		}
		fmt.Fprintf(b, "    evidence: %s: %s\n", ev[0], text)
	}
}

// mergeWindows joins the windows of one file that overlap or touch, keeping the lines in
// order and marking every evidence line. An evidence line whose text the findings above told
// already (told: text to finding id) is referred to, not repeated.
func mergeWindows(ps []*part, told map[string]string) []LogWindow {
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
			mark, line := " ", cut(text)
			if m.hits[n] {
				mark = ">"
				if id, ok := told[line]; ok {
					line = "(the same text as " + id + "'s evidence, above)"
				}
			}
			w.Lines = append(w.Lines, fmt.Sprintf("%s %6d | %s", mark, n, line))
		}
		res = append(res, w)
	}
	return res
}

// caretLine is a line of Python's "^^^^" markers under a traceback's code: no information for
// a reader who has the code line above it, and many tokens.
var caretLine = regexp.MustCompile(`^(\[rank\d+\]:)?\s*[\^~]+\s*$`)
