package analyze

import (
	"encoding/binary"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"
)

// State across lines. One line cannot show a divergence or a hang; these match kinds follow
// each process (a log, or a rank within a log when launcher prefixes say so) through its
// lines:
//   - progress entries mark the lines that show training advancing (a step counter, a
//     progress bar, a loss line);
//   - a streak rule counts its condition on consecutive lines of one process;
//   - a sequence rule collects the collectives each rank reports, to find the rank behind;
//   - a silence rule compares where each process's progress stopped.

// maxPeriods bounds a silence rule's periods: each process keeps its last maxPeriods
// progress lines.
const maxPeriods = 64

// mark is a line of a process: its number, time (ns, 0 when none) and the step it showed
// (-1 when none).
type mark struct {
	line int
	time int64
	step int64
}

// procState is what one process's lines showed.
type procState struct {
	log, stream    string
	pod, container string
	rank           int
	// progress counts progress lines; what they showed is in progressMarks, made at the
	// first: a job of 200,000 logs has 200,000 processes, most with no progress line, and
	// they are all live at the end of the scan, the peak.
	progress int
	*progressMarks
	// step is the last step the process showed.
	step int64
	// streaks holds the state of each streak rule; active counts those under way.
	streaks map[*Rule]*streak
	active  int
	// reports are the collectives and culprits sequence rules saw.
	reports []seqReport
	// lastLine is the process's last line (any line, not only progress).
	lastLine mark
	// said is the rank the process's own lines gave it (see contentRanks), when the process
	// has no rank from a prefix.
	said contentRanks
	// settled: the log's scan has ended (see settle).
	settled bool
	// previous: the log is a restarted container's previous log (the same process as its
	// current log, before the restart). The flags come after said's 12 bytes: a process
	// is 176 bytes, not 208, and every log has one, live from the scan's end.
	previous bool
}

// progressMarks is what a process's progress lines showed.
type progressMarks struct {
	// first is the first progress line, recent the last maxPeriods (a ring:
	// recent[(progress-1)%maxPeriods] is the last), grown as lines come.
	first  mark
	recent []mark
	// newest and packed are the ring once the log's scan has ended (settle), recent let go:
	// the last mark, then each older one as the zigzag varints of how far its line, time and
	// step are from the next newer one's (about 8 bytes a mark instead of 24).
	newest   mark
	packed   []byte
	lastText []byte
	// intervals holds the last gaps between progress lines with times (ns), for the period,
	// as a ring once full (the period is their median: their order does not matter);
	// gaps counts the gaps seen.
	intervals []int64
	gaps      int
	// median is the period once the log's scan has ended (settle): the gaps are then let go.
	median int64
}

// progressBufs are a process's ring of recent marks and its gaps, empty, at their bound.
type progressBufs struct {
	recent    []mark
	intervals []int64
}

// maxSpareRings bounds the rings a scratch keeps for later logs: a log of thousands of
// processes does not leave thousands behind.
const maxSpareRings = 16

// lend gives the process a ring and gaps an earlier log's process let go, if sc has one,
// before its first progress line.
func (p *procState) lend(sc *Scratch) {
	if sc == nil || len(sc.rings) == 0 || p.progress > 0 || p.settled {
		return
	}
	b := sc.rings[len(sc.rings)-1]
	sc.rings = sc.rings[:len(sc.rings)-1]
	l := p.marks()
	l.recent, l.intervals = b.recent, b.intervals
}

// marks returns the process's progress lines, made at the first.
func (p *procState) marks() *progressMarks {
	if p.progressMarks == nil {
		p.progressMarks = &progressMarks{}
	}
	return p.progressMarks
}

func newProcState(log, stream, pod, container string, rank int) *procState {
	return &procState{log: log, stream: stream, pod: pod, container: container, rank: rank, step: -1}
}

// same says whether two processes are one rank: the same rank, or the same stream of the
// same pod and container (a container's previous and current logs are one process across a
// restart).
func (p *procState) same(o *procState) bool {
	if p.rank >= 0 && o.rank >= 0 {
		return p.rank == o.rank
	}
	return p.pod != "" && p.pod == o.pod && p.container == o.container && p.stream == o.stream
}

// lastProgress is the process's last progress line.
func (p *procState) lastProgress() mark {
	m, _ := p.progressBack(0)
	return m
}

// pack writes the ring's marks, newest first, as newest and packed (see procState).
func (p *procState) pack() {
	n := min(p.progress, maxPeriods)
	if n == 0 || p.recent == nil {
		return
	}
	var buf [maxPeriods * 3 * binary.MaxVarintLen64]byte
	b := buf[:0]
	newer := p.recent[(p.progress-1)%maxPeriods]
	for k := 1; k < n; k++ {
		m := p.recent[(p.progress-1-k)%maxPeriods]
		b = binary.AppendVarint(b, int64(newer.line)-int64(m.line))
		b = binary.AppendVarint(b, newer.time-m.time)
		b = binary.AppendVarint(b, newer.step-m.step)
		newer = m
	}
	p.newest, p.packed, p.recent = p.recent[(p.progress-1)%maxPeriods], slices.Clone(b), nil
}

// progressBack returns the progress line k lines before the last (0: the last), when the
// ring still holds it.
func (p *procState) progressBack(k int) (mark, bool) {
	if k >= p.progress || k >= maxPeriods {
		return mark{}, false
	}
	if p.recent != nil {
		return p.recent[(p.progress-1-k)%maxPeriods], true
	}
	m, b := p.newest, p.packed
	for range k {
		var d [3]int64
		for j := range d {
			v, n := binary.Varint(b)
			if n <= 0 {
				return mark{}, false // not written by pack
			}
			d[j], b = v, b[n:]
		}
		m = mark{line: int(int64(m.line) - d[0]), time: m.time - d[1], step: m.step - d[2]}
	}
	return m, true
}

// period is the median gap between progress lines, or 0 when the lines had no times.
func (p *procState) period() time.Duration {
	if p.progressMarks == nil {
		return 0
	}
	if p.settled {
		return time.Duration(p.median)
	}
	if len(p.intervals) == 0 {
		return 0
	}
	s := slices.Clone(p.intervals)
	slices.Sort(s)
	return time.Duration(s[len(s)/2])
}

// settle keeps of the process's progress what analyze reads once its log's scan has ended
// (finish has run): the period instead of the gaps it is the median of, the ring of recent
// marks packed (pack) and the last progress line too. 16,384 ranks keep 16,384 processes until
// the end of the scan, the bundle's peak. The ring and the gaps, at their bound, go to sc (may
// be nil) for a later log's processes (lend).
func (p *procState) settle(sc *Scratch) {
	if p.settled {
		return
	}
	p.streaks = nil // finish has reported the streaks that lasted
	if p.progressMarks == nil {
		p.settled = true
		return
	}
	// period's median, sorting the gaps where they are: they are let go below
	if n := len(p.intervals); n > 0 {
		slices.Sort(p.intervals)
		p.median = p.intervals[n/2]
	}
	p.settled = true
	spare := progressBufs{recent: p.recent, intervals: p.intervals}
	p.intervals = nil
	p.pack()
	p.recent = nil
	if sc != nil && cap(spare.recent) == maxPeriods && cap(spare.intervals) == maxIntervals && len(sc.rings) < maxSpareRings {
		sc.rings = append(sc.rings, progressBufs{recent: spare.recent[:0], intervals: spare.intervals[:0]})
	}
	if len(p.lastText) < cap(p.lastText) {
		p.lastText = slices.Clone(p.lastText)
	}
}

// ring lists the marks the ring holds, oldest first.
func (p *procState) ring() []mark {
	n := min(p.progress, maxPeriods)
	out := make([]mark, 0, n)
	for k := n - 1; k >= 0; k-- {
		m, _ := p.progressBack(k)
		out = append(out, m)
	}
	return out
}

// mergeRing adds the progress lines of o, a process of the same log, to p's: the two rings'
// marks in line order, the last maxPeriods kept where the ring's index wants them.
func (p *procState) mergeRing(o *procState) {
	marks := append(p.ring(), o.ring()...)
	slices.SortStableFunc(marks, func(a, b mark) int { return a.line - b.line })
	if len(marks) > maxPeriods {
		marks = marks[len(marks)-maxPeriods:]
	}
	total := p.progress + o.progress
	recent := make([]mark, len(marks))
	for i, m := range marks {
		recent[(total-len(marks)+i)%maxPeriods] = m
	}
	l := p.marks()
	l.recent, l.newest, l.packed, p.progress = recent, mark{}, nil, total
}

// maxIntervals bounds the gaps kept for the period.
const maxIntervals = 256

func (p *procState) sawProgress(m mark, text []byte) {
	p.marks()
	if p.progress > 0 {
		if last := p.lastProgress(); last.time != 0 && m.time > last.time {
			if p.intervals == nil {
				p.intervals = make([]int64, 0, maxIntervals)
			}
			if len(p.intervals) < maxIntervals {
				p.intervals = append(p.intervals, m.time-last.time)
			} else {
				p.intervals[p.gaps%maxIntervals] = m.time - last.time
			}
			p.gaps++
		}
	} else {
		p.first = m
	}
	if m.step >= 0 {
		p.step = m.step
	} else {
		m.step = p.step
	}
	p.progress++
	if p.recent == nil {
		p.recent = make([]mark, 0, maxPeriods)
	}
	if len(p.recent) < maxPeriods {
		p.recent = append(p.recent, m)
	} else {
		p.recent[(p.progress-1)%maxPeriods] = m
	}
	p.lastText = append(p.lastText[:0], text...)
}

// streak is the state of one streak rule in one process.
type streak struct {
	n           int
	first, last evidenceLine
	firstStep   int64
	lastGroups  map[string]string
	falling     float64
	// found is the finding the streak gave (a streak without toEnd reports as soon as it is
	// long enough; later lines of the same streak extend it).
	found *Finding
}

// evidenceLine is a line kept as evidence.
type evidenceLine struct {
	mark
	text string
}

// seqReport is a collective a rank reported (or, culprit, a desync report naming ranks).
type seqReport struct {
	rule    *Rule
	culprit bool
	rank    int
	ranks   []int
	seq     int64
	op      string
	// pg and enqueued are the process group and the last work the rank enqueued in it (-1
	// when the line does not say).
	pg       string
	enqueued int64
	line     evidenceLine
}

// sawState records a line in its process: a progress line (m.step its step, -1 when it has
// none) and the stateful matches. bracket is the number taken off the front of the line
// ("[1] "), or -1: a culprit pattern that matched without its own rank group (the bracket was
// taken off) names it.
func (p *procState) sawState(hits []stateHit, progress bool, m mark, t *lineText, rank, bracket int, onFinding func(*Finding)) {
	if progress {
		p.sawProgress(m, t.b)
	}
	if m.step < 0 {
		m.step = p.step
	}
	for _, h := range hits {
		switch h.kind {
		case kindStreak:
			if progress || !h.rule.Match.Streak.Progress {
				p.streakLine(h, m, t, onFinding)
			}
		case kindSequence, kindCulprit:
			r := seqReport{rule: h.rule, culprit: h.kind == kindCulprit, rank: rank, op: h.groups["op"], pg: h.groups["pg"],
				enqueued: -1, line: evidenceLine{m, t.excerpt()}}
			if v, ok := h.groups["enqueued"]; ok {
				r.enqueued, _ = strconv.ParseInt(v, 10, 64)
			}
			if v, ok := h.groups["rank"]; ok {
				if n, ok := atoi([]byte(v)); ok {
					r.rank = n
				}
			}
			if v, ok := h.groups["ranks"]; ok {
				r.ranks = parseRanks(v)
			}
			if _, named := h.groups["rank"]; r.culprit && !named && len(r.ranks) == 0 {
				// No rank in the text: the number taken off the front of the line names the
				// culprit, and without one the line names none (not the line's process).
				if bracket < 0 {
					continue
				}
				r.ranks = []int{bracket}
			}
			if r.culprit && r.rank >= 0 && len(r.ranks) == 0 {
				r.ranks = []int{r.rank}
			}
			if v, ok := h.groups["seq"]; ok {
				r.seq, _ = strconv.ParseInt(v, 10, 64)
			}
			p.reports = append(p.reports, r)
		}
	}
}

func hasHit(hits []stateHit, r *Rule, kind patKind) bool {
	for _, h := range hits {
		if h.rule == r && h.kind == kind {
			return true
		}
	}
	return false
}

// parseRanks reads a list of ranks: "3", "0, 1, 2", "[3, 7]".
func parseRanks(s string) []int {
	var out []int
	n, in := 0, false
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			n, in = n*10+int(s[i]-'0'), true
			continue
		}
		if in {
			out = append(out, n)
		}
		n, in = 0, false
	}
	return out
}

// recover ends the streaks under way whose recovering patterns match a line that is not
// one of their condition lines. It runs only while a streak is under way: recovering lines
// (every finite loss) are most of a log.
func (p *procState) recover(text []byte, hits []stateHit, m mark) {
	for r, s := range p.streaks {
		if s.n == 0 || hasHit(hits, r, kindStreak) {
			continue
		}
		for _, cp := range r.res {
			if cp.kind == kindRecover && cp.re.Match(text) && sameGroups(cp.re, text, s.lastGroups) {
				s.recovered(m)
				s.n, s.found = 0, nil
				p.active--
				break
			}
		}
	}
}

// sameGroups says whether a recovering line's named groups hold what the streak's last
// condition line held under the same names: ssh that later reached a host recovers from that
// host's failure to resolve, not from another's. A pattern without named groups (a finite
// loss) needs no agreement.
func sameGroups(re *regexp.Regexp, text []byte, last map[string]string) bool {
	if re.NumSubexp() == 0 {
		return true
	}
	m := re.FindSubmatch(text)
	for i, name := range re.SubexpNames() {
		if v, ok := last[name]; ok && name != "" && i < len(m) && string(m[i]) != v {
			return false
		}
	}
	return true
}

// streakLine counts a streak rule's condition line.
func (p *procState) streakLine(h stateHit, m mark, t *lineText, onFinding func(*Finding)) {
	if p.streaks == nil {
		p.streaks = map[*Rule]*streak{}
	}
	s := p.streaks[h.rule]
	if s == nil {
		s = &streak{}
		p.streaks[h.rule] = s
	}
	sr := h.rule.Match.Streak
	if g := sr.Falling; g != "" {
		v, err := strconv.ParseFloat(h.groups[g], 64)
		if err == nil && s.n > 0 && v > s.falling {
			s.recovered(m)
			s.n, s.found = 0, nil // the value rose again: the process recovered
			p.active--
		}
		if err == nil {
			s.falling = v
		}
	}
	if s.n == 0 {
		p.active++
	}
	s.n++
	line := evidenceLine{m, t.excerpt()}
	if s.n == 1 {
		s.first, s.firstStep = line, m.step
	}
	s.last, s.lastGroups = line, h.groups
	if s.found != nil {
		s.found.Count = s.n
		extendTo(s.found, line)
		return
	}
	if !sr.ToEnd && s.ready(h.rule) {
		s.found = p.streakFinding(h.rule, s)
		onFinding(s.found)
	}
}

// recovered records, on the finding the streak gave, the line that ended it: the process
// showed a good value again (see Finding.recovered).
func (s *streak) recovered(m mark) {
	if s.found != nil {
		s.found.recovered = &m
		s.found.Title = s.found.rule.TitleFor(s.vars())
	}
}

// ready says whether the streak is long enough and its last line meets the rule's
// conditions.
func (s *streak) ready(r *Rule) bool {
	return s.n >= r.Match.Streak.Min && r.last.holds(s.lastGroups)
}

// finish reports the streaks that last to the end of the process's log.
func (p *procState) finish(onFinding func(*Finding)) {
	for _, r := range sortedRules(p.streaks) {
		s := p.streaks[r]
		if r.Match.Streak.ToEnd && s.ready(r) {
			onFinding(p.streakFinding(r, s))
		}
		if s.found != nil {
			// Reported when it was long enough; its title counts it whole.
			s.found.Title = r.TitleFor(s.vars())
		}
	}
}

func sortedRules[V any](m map[*Rule]V) []*Rule {
	out := make([]*Rule, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// streakFinding makes the finding of a streak: evidence its first and last line; its title
// may name {count}, {firstStep}, {lastStep}, {from} ("step 30", or "line 212" when no step
// is known) and the last line's groups.
func (p *procState) streakFinding(r *Rule, s *streak) *Finding {
	f := newFinding(r, s.vars())
	f.Pod, f.Container, f.Rank = p.pod, p.container, p.rank
	f.Count = s.n
	f.log, f.stream, f.streams, f.order, f.step = p.log, p.stream, []string{p.stream}, s.first.line, s.firstStep
	f.Time = nsPtr(s.first.time)
	f.Evidence = []Evidence{{Source: SourceLog, File: p.log, Line: s.first.line, Time: f.Time, Text: s.first.text}}
	extendTo(f, s.last)
	return f
}

// vars are the values a streak's title may name.
func (s *streak) vars() map[string]string {
	vars := map[string]string{"count": strconv.Itoa(s.n)}
	for k, v := range s.lastGroups {
		vars[k] = v
	}
	vars["from"] = "line " + strconv.Itoa(s.first.line)
	if s.firstStep >= 0 {
		vars["firstStep"] = strconv.FormatInt(s.firstStep, 10)
		vars["from"] = "step " + vars["firstStep"]
	}
	if s.last.step >= 0 {
		vars["lastStep"] = strconv.FormatInt(s.last.step, 10)
	}
	return vars
}

// extendTo makes a streak's last line the finding's second evidence.
func extendTo(f *Finding, last evidenceLine) {
	if last.line == f.Evidence[0].Line {
		return
	}
	ev := Evidence{Source: SourceLog, File: f.Evidence[0].File, Line: last.line, Time: nsPtr(last.time), Text: last.text}
	if len(f.Evidence) == 1 {
		f.Evidence = append(f.Evidence, ev)
	} else {
		f.Evidence[1] = ev
	}
}

func nsPtr(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	return timePtr(time.Unix(0, ns))
}
