package analyze

import (
	"bytes"
	"cmp"
	"fmt"
	"math/bits"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/logscan"
)

const (
	contextBefore = 4
	contextAfter  = 3
	// maxExcerpt bounds one evidence line in the report.
	maxExcerpt = MaxExcerpt
	// maxEvidence bounds how many evidence entries one finding keeps.
	maxEvidence = 3
)

// MaxExcerpt is the longest line Excerpt leaves as it is.
const MaxExcerpt = 600

// logScanner matches one log's lines against the rule set. Package logscan reads the log
// (once, for the index too) and hands it every line (see Scan).
type logScanner struct {
	ls bundle.LogStream
	// line is the line being visited and, once made, its excerpt.
	line     lineText
	rs       *RuleSet
	sc       *Scratch
	byRule   map[*Rule]*Finding
	findings []*Finding
	// shapes holds, by shape id, how many lines of the shape were seen and then its filter.
	shapes []shapeSeen
	// latest is the latest time the log has shown (ns): a line is never ordered before one
	// printed above it.
	latest int64
	// procs follows each process of the log (by launcher prefix; "" for lines without one).
	procs map[string]*procState
	// lastProc is the process of the line before, named lastStream: a log's lines are mostly
	// one process's, and looking it up by name was 4-5% of a repetitive log's scan.
	lastStream string
	lastProc   *procState
	// progress holds, by shape id, whether lines of the shape are progress lines.
	progress []progressMemo
	// facts are the object facts the log's lines rendered (see rules.TextFact).
	facts []textFact
	// tail keeps the log's last lines for its terminal failure (terminal.go), found when
	// the scan ends; the lines are then dropped.
	tail     tailBuf
	terminal *terminalFailure
	// join follows the lines that look cut, to match them joined with their continuation.
	join joiner
	// rank is the first torchrun rank the log's lines show, or -1.
	rank int
	// ignored follows a traceback Python printed as ignored (recovered.go).
	ignored ignoredTrace
	// numbers follows a log viewer's line numbers in front of the lines (prefix.go).
	numbers lineNumbers
	// record holds the line a structured log record carried (recordMessage), for the line
	// being visited.
	recordText []byte
	// otherFailures: the line is in the "Failures:" part of torchelastic's failure table, above
	// its "Root Cause (first observed failure):" (elasticTable).
	otherFailures bool
	// retryWatch is the finding of a line just visited that did not itself say it is retried,
	// while the lines up to retryUntil may say so (recovery.go, announcesRetry).
	retryWatch *Finding
	retryUntil int
	// groups are the log's last lines in which an elastic agent restarted or started its
	// worker group (recovery.go), at most maxGroupLines.
	groups []groupLine
}

// textFact is an object fact read from a log line.
type textFact struct {
	rule   *Rule
	fields map[string]string
	line   int
	time   int64
	text   string
	// part: the line did not name the pod (a describe block's or YAML's line), and may be
	// one part of a fact written on several lines (joinTerminated).
	part bool
}

// progressMemo decides once per shape whether its lines are progress lines, and which of
// its variable words holds the step: lines of one shape differ only in their numbers.
type progressMemo struct {
	seen, matched int
	// stepVar, once decided, is the variable word that held the step on every line seen (-1:
	// the pattern has no step; -2: no single word held it, so each line runs the pattern).
	stepVar int
	decided bool
	// While undecided: whether matched lines had a step and lines had none, and the words
	// (bit i: the i-th of the first 64) that held the step on every line that had one. A
	// word that holds the step on one line only by chance ("step 3 | loss 3.25") drops
	// out at the next line, so the memo still finds the step's word.
	stepped, stepless bool
	words             uint64
}

// progressDecideAfter is how many lines of a shape are matched before its memo decides.
const progressDecideAfter = 8

type shapeSeen struct {
	lines int
	memo  *shapeMemo
	// tail is which lines of the shape can hold a tail word (newTailFilter).
	tail *shapeMemo
	// group says whether the shape's lines say that a launcher restarts or starts its
	// worker group (groupLineOf): 0 not yet known, else groupWordNone or groupWordSome.
	group int8
}

// filterAfter is how many lines of a shape are matched in full before its filter is worked
// out: most shapes occur a few times, and the filter costs as much as matching a hundred
// lines.
const filterAfter = 16

func newLogScanner(ls bundle.LogStream, rs *RuleSet, sc *Scratch) *logScanner {
	s := sc.scanner
	if s == nil {
		s = new(logScanner)
	}
	*s = logScanner{ls: ls, rs: rs, sc: sc, byRule: sc.byRule, procs: sc.procs, rank: -1}
	sc.scanner, sc.byRule, sc.procs = nil, nil, nil
	if s.byRule == nil {
		s.byRule = map[*Rule]*Finding{}
	}
	if s.procs == nil {
		s.procs = map[string]*procState{}
	}
	s.tail = tailBuf{lines: sc.tail.lines, marks: sc.tail.marks}
	s.shapes, s.progress = sc.shapes[:0], sc.progress[:0]
	return s
}

// release drops what only the scan needed and returns the scratch space, for the next log.
func (s *logScanner) release() *Scratch {
	sc := s.sc
	clear(s.shapes) // the next log starts with no memo, and these go with this log
	clear(s.progress)
	sc.tail, sc.shapes, sc.progress = s.tail, s.shapes, s.progress
	s.sc, s.tail, s.shapes, s.progress = nil, tailBuf{}, nil, nil
	return sc
}

// proc returns the state of a process of the log.
func (s *logScanner) proc(stream string, rank int) *procState {
	p := s.procs[stream]
	if p == nil {
		p = newProcState(s.ls.Path, stream, s.ls.Pod, s.ls.Container, rank)
		p.previous = s.ls.Previous
		s.procs[stream] = p
	}
	return p
}

func (s *logScanner) addFinding(f *Finding) { s.findings = append(s.findings, f) }

func (s *logScanner) visit(l *logscan.Scanned) {
	if l.Time > s.latest {
		s.latest = l.Time
	}
	if s.rank < 0 && len(l.Text) > 0 && l.Text[0] == '[' {
		s.rank = logscan.RankPrefix(l.Text)
	}
	line := l.Text
	decoded := false
	if len(line) > 0 && (line[0] == '{' || line[0] == ' ') {
		if msg, ok, escaped := recordMessage(s.recordText[:0], line); ok {
			// An escape the record's message decodes ("persistentvolumeclaim \"data-01\"")
			// makes bytes the raw line, whose shape the filters are made of, does not hold:
			// the line is matched in full (and its tail words read). Every other step from
			// the raw line to the text matched keeps a part of it (prefixes stripped) or is
			// made before its shape (ANSI sequences removed); rejoined pieces are matched in
			// full.
			decoded = escaped
			s.recordText, line = msg, msg
		}
	}
	text, bracket := s.numbers.strip(line)
	text, pre := splitPrefix(text)
	if s.retryWatch != nil {
		s.watchRetry(l.Number, text)
	}
	if pre.stream == "" && bracket >= 0 {
		pre.rank, pre.stream = bracket, rankStream(bracket)
	}
	match := s.mayMatch(l) || decoded // mayMatch first: it counts the shape's lines
	// A line the progress patterns and the rules both look at is read for their literals
	// once: the progress patterns' pass finds the rules' literals too.
	s.sc.both, s.sc.found = match, false
	progress, step := s.progressOf(l, text)
	s.sc.both = false
	if !progress {
		s.seeGroup(l, text)
	}
	s.tail.add(l.Number, l.Time, text, pre.stream, pre.rank, !decoded && l.Offset >= s.ls.Size-quietWindow && s.tailQuiet(l))
	if progress {
		t := &s.tail
		t.earlierProgress[0], t.earlierProgress[1], t.lastProgress = t.earlierProgress[1], t.lastProgress, l.Number
	}
	var hits []Hit
	s.sc.state = s.sc.state[:0]
	if match {
		hits = s.rs.Match(text, s.sc)
	}
	s.sc.found = false
	hits = s.seeElasticTable(text, hits)
	survived := s.ignored.survived(text, pre.stream)
	if survived {
		hits, s.sc.state = nil, s.sc.state[:0] // no finding, fact or streak is made of it
	}
	// Every process the log shows is known, whether a line of it matched or not: a rank
	// that printed only routine lines is still one the others may have waited for.
	p := s.lastProc
	if p == nil || pre.stream != s.lastStream {
		p = s.procs[pre.stream]
		if p == nil {
			p = s.proc(pre.stream, pre.rank)
		}
		s.lastStream, s.lastProc = pre.stream, p
	}
	if p.active > 0 {
		m := mark{line: l.Number, time: s.latest, step: step}
		if m.step < 0 {
			m.step = p.step
		}
		p.recover(text, s.sc.state, m)
	}
	if pre.rank < 0 && p.rank < 0 {
		p.said.see(text)
	}
	rank := pre.rank
	if rank < 0 && (len(hits) > 0 || len(s.sc.state) > 0 || progress) {
		rank = contentRank(text)
	}
	if !survived {
		defer s.rejoin(l, text, pre, rank, hits) // a survived line neither is nor continues a cut message
	}
	if len(hits) == 0 && len(s.sc.state) == 0 && !progress {
		return
	}
	s.line = lineText{b: l.Text}
	for _, h := range s.sc.state {
		if h.kind == kindFact {
			fields := map[string]string{}
			for k, v := range h.rule.factSet {
				fields[k] = v
			}
			for k, v := range h.groups {
				fields[k] = v
			}
			_, named := fields["pod"]
			if !named && s.tail.describedPod != nil && !s.tail.describedPods {
				// A line of a kubectl describe block: the pod is the one its "Name:" gave.
				fields["pod"] = string(s.tail.describedPod)
			}
			s.facts = append(s.facts, textFact{rule: h.rule, fields: fields, line: l.Number, time: l.Time, text: s.line.excerpt(), part: !named})
		}
	}
	proc := p
	if progress && proc.progress == 0 {
		proc.lend(s.sc)
	}
	if progress || len(s.sc.state) > 0 {
		proc.sawState(s.sc.state, progress, mark{line: l.Number, time: s.latest, step: step}, &s.line, rank, s.numbers.number, s.addFinding)
	}
	if len(hits) == 0 {
		return
	}
	s.record(hits, l.Number, l.Time, s.latest, &s.line, pre.stream, rank, proc)
}

// record makes the findings of a line's hits, or counts the line in the findings its rules
// already have in this log. lt is the line's time and at the latest time the log had shown (0:
// none), raw the line as printed.
func (s *logScanner) record(hits []Hit, num int, lt, latest int64, raw *lineText, stream string, rank int, proc *procState) {
	var ts, at time.Time
	if lt != 0 {
		ts, at = time.Unix(0, lt), time.Unix(0, latest)
	}
	// A line that names its cause by a code is also what that code's own line would be.
	for _, h := range hits {
		if text, ok := h.Rule.restated(h.Groups); ok {
			for _, h2 := range s.rs.MatchString(text) {
				if h2.Rule != h.Rule {
					hits = append(hits, h2)
				}
			}
		}
	}
	for _, h := range hits {
		f := s.byRule[h.Rule]
		if f != nil && s.restartedSince(f) {
			f = nil // the new worker group's failure is its own (recovery.go)
		}
		if f != nil {
			f.Count++
			s.noteRetry(f, num, raw.b)
			f.notePrintedWait(raw.b)
			f.addStream(stream)
			if last := &f.Evidence[len(f.Evidence)-1]; num > last.LastLine {
				last.LastLine = num
				last.LastTime = timePtr(ts)
			}
			continue
		}
		f = newFinding(h.Rule, h.Groups)
		f.Pod, f.Container, f.Rank = s.ls.Pod, s.ls.Container, rank
		if r, ok := h.Groups["rank"]; ok {
			// The rule's pattern names the rank ("process rank 3 ... exited on signal 9").
			if n, ok := atoi([]byte(r)); ok {
				f.rankNamed = true
				if rank < 0 {
					f.Rank = n
				}
			}
		}
		f.Time, f.at = timePtr(ts), timePtr(at)
		f.order, f.log, f.stream, f.step = num, s.ls.Path, stream, proc.step
		f.Evidence = []Evidence{{Source: SourceLog, File: s.ls.Path, Line: num, Time: timePtr(ts), Text: raw.excerpt()}}
		f.addStream(stream)
		s.noteRetry(f, num, raw.b)
		f.notePrintedWait(raw.b)
		s.byRule[h.Rule] = f
		s.findings = append(s.findings, f)
	}
}

// finish closes the log's processes (streaks that last to its end), makes a log whose
// prefixed lines all name one process that process (its other lines are its own too), and
// dates the findings of lines printed before the log showed any time with the first time it
// showed (they happened no later than that).
func (s *logScanner) finish(st logscan.Stats) []*procState {
	s.lastProc = nil // procs may be merged below
	s.proc("", -1)   // every log is a process, whether a line of it matched or not
	var named []string
	for k := range s.procs {
		if k != "" {
			named = append(named, k)
		}
	}
	if len(named) == 1 {
		one := s.procs[named[0]]
		merged := mergeProcs(s.procs[""], one)
		merged.stream, merged.rank = "", one.rank
		s.procs = map[string]*procState{"": merged}
		for _, f := range s.findings {
			f.stream, f.streams = "", nil
			if f.Rank < 0 {
				f.Rank = one.rank
			}
		}
	}
	keys := make([]string, 0, len(s.procs))
	for k := range s.procs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// A process no prefix named takes the rank its own NCCL lines gave it, and so do its
		// findings: plain logs and bundles without pods name ranks as bundles do.
		if p := s.procs[k]; p.rank < 0 {
			if p.rank = p.said.get(); p.rank >= 0 {
				for _, f := range s.findings {
					if f.Rank < 0 && f.stream == p.stream {
						f.Rank = p.rank
					}
				}
			}
		}
	}
	procs := make([]*procState, 0, len(keys))
	for _, k := range keys {
		p := s.procs[k]
		p.lastLine = mark{line: st.Lines, time: st.Last.UnixNano(), step: p.step}
		if st.Last.IsZero() {
			p.lastLine.time = 0
		}
		p.finish(s.addFinding)
		procs = append(procs, p)
	}
	for _, f := range s.findings {
		if f.at == nil && !st.First.IsZero() {
			f.at = timePtr(st.First)
		}
	}
	return procs
}

// mergeProcs makes one process of the lines of a log without a prefix (a, may be nil) and
// those with the log's only prefix (b).
func mergeProcs(a, b *procState) *procState {
	if a == nil {
		return b
	}
	base, other := a, b
	if b.progress > a.progress {
		base, other = b, a
	}
	if other.progress > 0 {
		base.marks()
		if other.first.line < base.first.line || base.progress == 0 {
			base.first = other.first
		}
		later := base.progress == 0 || other.lastProgress().line > base.lastProgress().line
		base.mergeRing(other)
		if later {
			base.lastText = slices.Clone(other.lastText)
			if other.step >= 0 {
				base.step = other.step
			}
		}
		for _, g := range other.intervals {
			if len(base.intervals) >= maxIntervals {
				break
			}
			base.intervals = append(base.intervals, g)
			base.gaps++
		}
	}
	base.said.merge(other.said)
	base.reports = append(base.reports, other.reports...)
	slices.SortStableFunc(base.reports, func(x, y seqReport) int { return cmp.Compare(x.line.line, y.line.line) })
	for r, st := range other.streaks {
		if base.streaks == nil {
			base.streaks = map[*Rule]*streak{}
		}
		if cur := base.streaks[r]; cur == nil || st.n > cur.n {
			base.streaks[r] = st
		}
	}
	if base.step < 0 {
		base.step = other.step
	}
	return base
}

// progressOf says whether a line shows training progress, and its step (-1 when none):
// per shape once it has decided, else by the progress patterns.
func (s *logScanner) progressOf(l *logscan.Scanned, text []byte) (bool, int64) {
	if len(s.rs.progress) == 0 {
		return false, -1
	}
	sh := l.Shape
	if sh == nil {
		return s.matchProgress(text)
	}
	for sh.ID >= len(s.progress) {
		s.progress = append(s.progress, progressMemo{})
	}
	m := &s.progress[sh.ID]
	if m.decided {
		switch {
		case m.matched == 0:
			return false, -1
		case m.stepVar >= 0 && m.stepVar < len(l.Vars) && l.Vars[m.stepVar].Num != 0:
			return true, int64(l.Vars[m.stepVar].Num & (1<<59 - 1))
		case m.stepVar == -1:
			return true, -1
		}
		return s.matchProgress(text)
	}
	ok, step := s.matchProgress(text)
	m.seen++
	if ok {
		m.matched++
		if step >= 0 {
			want := logscan.NumberValue(len(strconv.FormatInt(step, 10)), uint64(step))
			var words uint64
			for i, v := range l.Vars[:min(len(l.Vars), 64)] {
				if v.Num == want {
					words |= 1 << i
				}
			}
			if !m.stepped {
				m.stepped, m.words = true, words
			} else {
				m.words &= words
			}
		} else {
			m.stepless = true
		}
	}
	if m.seen >= progressDecideAfter && (m.matched == 0 || m.matched == m.seen) {
		m.decided = true
		m.stepVar = -2
		switch {
		case m.stepless && !m.stepped:
			m.stepVar = -1
		case m.stepped && !m.stepless && bits.OnesCount64(m.words) == 1:
			m.stepVar = bits.TrailingZeros64(m.words)
		}
	}
	return ok, step
}

// mayMatch reports whether the rules could match a line, from what they can match in lines
// of its shape (see shapeFilter).
func (s *logScanner) mayMatch(l *logscan.Scanned) bool {
	sh := l.Shape
	if sh == nil {
		return true
	}
	for sh.ID >= len(s.shapes) {
		s.shapes = append(s.shapes, shapeSeen{})
	}
	seen := &s.shapes[sh.ID]
	if seen.memo == nil && seen.lines == 0 {
		// A shape an earlier log made the filter of needs no lines matched in full first:
		// a log of 100 lines has few shapes of more than filterAfter lines.
		seen.memo = s.sc.rules[sh.Key]
		if seen.memo == nil {
			// A shape another worker made the filter of, or that filterAfter earlier logs
			// showed (it has had as many lines matched in full as one that a log shows
			// filterAfter times: at 16,384 ranks the NCCL banner and watchdog lines, a few of
			// each shape in every log), is filtered from its first line.
			if _, ok := s.rs.shapes.Load(sh.Key); ok || s.sc.recurs(sh.Key) {
				seen.memo = s.sc.keepMemo(&s.sc.rules, sh.Key, newShapeMemo(s.rs.shapeFilter(sh)))
			}
		}
	}
	if seen.memo == nil {
		if seen.lines++; seen.lines <= filterAfter {
			return true
		}
		seen.memo = s.sc.keepMemo(&s.sc.rules, sh.Key, newShapeMemo(s.rs.shapeFilter(sh)))
	}
	return seen.memo.mayMatch(l.VarClasses)
}

// quietWindow is how near its log's end a line is asked whether it is quiet (tailQuiet): a
// line further up is most likely not among the log's last lines, and the few that are get
// their pass when the log ends, so a log of millions of lines does not ask each.
const quietWindow = 64 << 10

// tailQuiet says that line l holds no word its terminal failure is read for (newTailFilter);
// false when its shape does not show it. mayMatch has seen the line.
func (s *logScanner) tailQuiet(l *logscan.Scanned) bool {
	sh := l.Shape
	if sh == nil {
		return false
	}
	seen := &s.shapes[sh.ID]
	if seen.tail == nil {
		seen.tail = s.sc.tailMemo(sh)
	}
	return !seen.tail.mayMatch(l.VarClasses)
}

// addContext reads the lines around each log evidence line back through lines.
func addContext(read Lines, f *Finding) error {
	for i := range f.Evidence {
		ev := &f.Evidence[i]
		if ev.Source != SourceLog || ev.Line == 0 {
			continue
		}
		lines, err := read(ev.File, ev.Line, contextBefore, contextAfter)
		if err != nil {
			return err
		}
		ev.Before, ev.After = nil, nil
		for _, l := range lines {
			switch {
			case l.Line < ev.Line:
				ev.Before = append(ev.Before, ContextLine{Line: l.Line, Text: excerpt([]byte(l.Text))})
			case l.Line > ev.Line:
				ev.After = append(ev.After, ContextLine{Line: l.Line, Text: excerpt([]byte(l.Text))})
			}
		}
	}
	return nil
}

// excerpt bounds a line for the report, on a rune boundary and never inside a word: half a
// token is no longer a token to the redactor, which masks the report after analysis, so the
// word that crosses the bound is left out whole (see cutWord).
// lineText is a log line's text and, once made, its excerpt: the records a line makes (a
// sequence report, a streak, a fact, a finding's evidence) share one string of it, not one
// each (at 16,384 ranks each rank's NCCL timeout lines are both reports and findings).
type lineText struct {
	b    []byte
	text string
	made bool
}

func (t *lineText) excerpt() string {
	if !t.made {
		t.text, t.made = excerpt(t.b), true
	}
	return t.text
}

func excerpt(b []byte) string {
	if len(b) <= maxExcerpt {
		return string(b)
	}
	cut := cutWord(b, maxExcerpt)
	return string(b[:cut]) + fmt.Sprintf(" … [%d more bytes]", len(b)-cut)
}

// cutWord is where to cut b at most at n bytes: before the word (a run of the characters
// tokens, keys and passwords are made of) that the n-th byte is inside of, on a rune boundary.
func cutWord(b []byte, n int) int {
	cut := n
	if cut < len(b) && wordByte(b[cut]) {
		for cut > 0 && wordByte(b[cut-1]) {
			cut--
		}
	}
	for cut > 0 && cut < len(b) && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return cut
}

// wordByte is a byte a secret may hold: letters, digits, the punctuation of base64, URLs and
// key=value, and any byte of a multi-byte rune.
func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80 ||
		strings.IndexByte("_-+/=.~%@:!#$&*?^|", c) >= 0
}

// truncateText bounds a message that came from a resource.
func truncateText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxExcerpt*2 {
		return s
	}
	return excerpt([]byte(s[:maxExcerpt*2]))
}

// Excerpt bounds a cleaned log line the way evidence lines are bounded.
func Excerpt(text string) string { return excerpt([]byte(text)) }

// seeElasticTable follows torchelastic's failure table and returns the line's hits without
// the SIGKILL of a process listed under its "Failures:" heading. torchrun lists there the
// processes that failed besides the first one, which it prints last under "Root Cause (first
// observed failure):"; when a worker fails, the agent stops the others with SIGTERM and then
// SIGKILL (pytorch/pytorch#160908), so a SIGKILL row in that part is the agent's teardown of a
// peer, not a kill of its own: it names no out-of-memory. The root cause's own SIGKILL row, and
// one in a table cut before its "Failures:" heading, still do.
func (s *logScanner) seeElasticTable(text []byte, hits []Hit) []Hit {
	trim := bytes.TrimSpace(text)
	if opens, closes := elasticHeading(trim); opens || closes {
		s.otherFailures = opens
		return hits
	}
	if !s.otherFailures || len(hits) == 0 || !sigkillRow.Match(trim) {
		return hits
	}
	kept := hits[:0:0]
	for _, h := range hits {
		if h.Rule.Category != CategoryHostOOM {
			kept = append(kept, h)
		}
	}
	return kept
}

// elasticHeading says whether trimmed line t opens the "Failures:" part of torchelastic's
// failure table, or closes it: the rule of dashes under its rows, "Root Cause (first observed
// failure):", or the table's closing rule of equals signs.
func elasticHeading(t []byte) (opens, closes bool) {
	if len(t) == 0 || t[0] != 'F' && t[0] != 'R' && t[0] != '-' && t[0] != '=' {
		return false, false // most lines: four compares saved, at every tail line of every log
	}
	if bytes.Equal(t, []byte("Failures:")) {
		return true, false
	}
	return false, bytes.HasPrefix(t, []byte("Root Cause")) || bytes.HasPrefix(t, []byte("-----")) || bytes.HasPrefix(t, []byte("====="))
}

// sigkillRow is a row of torchelastic's failure table that says its process was SIGKILLed.
var sigkillRow = regexp.MustCompile(`^(?:traceback\s*:\s*Signal 9 \(SIGKILL\) received by PID \d+|exitcode\s*:\s*-9\b)`)
