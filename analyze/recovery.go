package analyze

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/internal/literal"
	"github.com/coroner-dev/coroner/logscan"
)

// Training went on past an error when its process printed at least minResumed progress lines
// after it, spread over at least resumeSpan. The spread tells resumed training from progress
// lines that stdout's buffer let out all at once when a process died or was killed.
const (
	minResumed = 3
	resumeSpan = time.Minute
)

// recoveredByRestart lowers the errors training went on past, within the container that
// printed them: its previous log ends with the error and its current log trains again (the
// container restarted), or the same log shows training resume for a while after it (an
// elastic agent restarted the workers). Such an error did not end the job: it becomes a
// warning that says it was recovered from, and the failure that did end the job is the root
// cause. A streak says itself when it recovered (Finding.recovered).
func (a *analyzer) recoveredByRestart() {
	previous := map[string]bool{} // the logs of a previous container (few: a log absent is not)
	for _, l := range a.res.Logs {
		if l.Previous {
			previous[l.Path] = true
		}
	}
	// The processes that made progress by container, in their order within one: a job of
	// 200,000 logs has as many, so they are one sorted slice, not a map of slices.
	var procs []*procState
	for _, p := range a.procs {
		if p.progress > 0 {
			procs = append(procs, p)
		}
	}
	byContainer := func(p *procState, pod, container string) int {
		return cmp.Or(strings.Compare(p.pod, pod), strings.Compare(p.container, container))
	}
	slices.SortStableFunc(procs, func(p, q *procState) int { return byContainer(p, q.pod, q.container) })
	// The processes of the logs in which an elastic agent restarted its worker group.
	logProcs := map[string][]*procState{}
	for _, p := range procs {
		if len(a.groups[p.log]) > 0 {
			logProcs[p.log] = append(logProcs[p.log], p)
		}
	}
	for _, f := range a.findings {
		if f.recovered != nil && f.Severity >= SeverityWarning {
			a.markRecovered(f) // a streak that ended: the values were good again
			continue
		}
		if f.Severity < SeverityError || f.derived || f.Layer != LayerExecution || f.log == "" || f.rule != nil && f.rule.Match.Streak != nil {
			continue
		}
		if m, ok := a.resumedAfterGroupRestart(f, logProcs); ok {
			f.recovered, f.restarted, f.groupRestart = &m, true, true
			a.markRecovered(f)
			continue
		}
		i, _ := slices.BinarySearchFunc(procs, f, func(p *procState, f *Finding) int { return byContainer(p, f.Pod, f.Container) })
		for _, p := range procs[i:] {
			if p.pod != f.Pod || p.container != f.Container {
				break
			}
			if f.stream != "" && p.stream != f.stream {
				continue
			}
			var m mark
			var ok bool
			switch {
			case p.log == f.log && f.Category != CategoryNaNLoss:
				// Steps go on after a NaN loss; only finite values say it recovered (a streak).
				m, ok = resumedAfter(p, f, true)
				if !ok && f.retried {
					// A retry is no process's end: its progress lines need no times.
					m, ok = resumedAfter(p, f, false)
					f.retriedPast = ok
				}
			case previous[f.log] && !previous[p.log]:
				m, ok = resumedAfterRestart(p, f)
			}
			if ok {
				f.recovered, f.restarted = &m, p.log != f.log
				a.markRecovered(f)
				break
			}
		}
	}
}

// recoveryOnly is a copy of streak rule r that tells the second tier alone which failures a
// process got past, and names no cause: what a later line showed (ssh reached the host it
// could not resolve on the launcher's next try, the loss was finite again) is no wording
// of a failure, and without it the tier would take a failure that was retried for the end.
func recoveryOnly(r *Rule) *Rule {
	c := *r
	c.recoveryOnly = true
	return &c
}

// dropUnrecovered removes the findings of recoveryOnly rules that did not recover: such a
// rule is there for its recovery alone, and a failure it names is the first tier's to name.
func (a *analyzer) dropUnrecovered() {
	a.findings = slices.DeleteFunc(a.findings, func(f *Finding) bool {
		return f.rule != nil && f.rule.recoveryOnly && f.recovered == nil
	})
}

// markRecovered lowers a finding the job recovered from to a warning that says how.
func (a *analyzer) markRecovered(f *Finding) {
	f.Severity = SeverityWarning
	f.Title += " (recovered: " + f.recoveryText() + ")"
	a.recoveredErrors = append(a.recoveredErrors, f)
}

// resumedAfter finds, in the process's own log, training that went on after the finding's
// last line (the same failure printed again later is not recovered from by the training
// before it): enough progress lines, spread over time when timed, reaching past the step the
// error was at. Lines without times cannot tell resumed training from a buffer's last lines,
// unless the failure said it was retried (no process ended there): then timed is false.
func resumedAfter(p *procState, f *Finding, timed bool) (mark, bool) {
	var after []mark
	last := f.lastLine()
	for k := range min(p.progress, maxPeriods) {
		m, _ := p.progressBack(k)
		if m.line <= last {
			break
		}
		after = append(after, m)
	}
	if len(after) < minResumed {
		return mark{}, false
	}
	first, end := after[len(after)-1], after[0]
	if p.first.line > last {
		first = p.first
	}
	if timed && (first.time == 0 || end.time == 0 || time.Duration(end.time-first.time) < resumeSpan) {
		return mark{}, false
	}
	if f.step >= 0 && end.step >= 0 && end.step <= f.step {
		return mark{}, false
	}
	return first, true
}

// An elastic agent restarts its worker group after a worker failed while it has restarts
// left (torchrun's --max-restarts) and says so: "[default] Worker group FAILED. 3/3 attempts
// left; will restart worker group", then "Stopping worker group", "Rendezvous'ing worker
// group" and "Starting worker group" (torchelastic's words in shun-zheng/Doc2EDAG#24; NVIDIA's
// fault-tolerance launcher, ft_launcher, prints the same: "[default] Worker group FAILED. 3/5
// attempts left; will restart worker group", NeMo RL's docs/guides/ft-launcher-guide.md).
// When its restarts are spent it stops the group and raises ChildFailedError instead. Ray
// Train's controller decides the same under FailureConfig(max_failures): "[FailurePolicy]
// Decision: FailureDecision.RETRY, Error source: ..., Error count / maximum errors allowed:
// 1/inf, Error: ...", then "Attempting to start training worker group of size 8" (its words
// in ray-project/ray#60376; FailureDecision.RAISE when it gives up). A failure in the log
// before such a restart, or while the old group was torn down before the new one started,
// after which the new group trained, did not end the job.
//
// Ray Train restores a failed run from its last checkpoint itself (FailureConfig(max_failures))
// and says so when the new trainer starts: "(TorchTrainer pid=512, ip=172.19.0.5) Restored on
// 172.19.0.5 from checkpoint: Checkpoint(filesystem=..., path=.../checkpoint_000004)"
// (ray-project/ray#46814; Ray's fault-tolerance example of fine-tuning a ResNet, "failed at
// epoch 7, the training automatically resumes using checkpoint_000006"); Tune's trial runner
// said "Attempting to recover trial state from last checkpoint." (ray-project/ray#4076), later
// "Trial <name>: Attempting to restore trial state from last checkpoint." (ray-project/ray#31701),
// only when it retries a failed trial. Such a restore is a restart of the group: a failure
// before it, after which training went on, did not end the run (a memory monitor's kill of a
// worker, a lost node). The "Restored on" line counts only from a trainer (its actor's prefix
// "(...Trainer pid="): Trainable.restore prints it for every restore of any trial, a population
// based training's clone of one trial into another or a pause's resume too, which says nothing
// of a failed trial (a review of session 26).
var (
	groupRestartWords = [][]byte{[]byte("will restart worker group"), []byte("FailureDecision.RETRY"),
		[]byte("recover trial state from last checkpoint"), []byte("restore trial state from last checkpoint")}
	groupStartWords   = [][]byte{[]byte("Starting worker group"), []byte("start training worker group")}
	attemptsLeftWords = []byte(" attempts left")
	// restoredWords: "Restored on <ip> from checkpoint", both words in this order, after a
	// trainer actor's prefix.
	restoredWords = [2][]byte{[]byte("Restored on "), []byte(" from checkpoint")}
	trainerPrefix = []byte("Trainer pid=")
	// groupWords are in every line of either kind; a tail line without one of them (tailWordsOf's
	// hasGroupWord, which finds them without case) is neither.
	groupWords = func() (ws [][]byte) {
		for _, w := range groupWordList {
			ws = append(ws, []byte(w))
		}
		return ws
	}()
)

var groupWordList = [...]string{"worker group", "FailureDecision", "from checkpoint", "from last checkpoint"}

// groupLine is a line in which an agent restarted (restart) or started its worker group.
type groupLine struct {
	line    int
	restart bool
}

// maxGroupLines bounds the group lines a log keeps (its last): an agent that restarts its
// workers hundreds of times keeps the restarts that may have recovered its last failures.
const maxGroupLines = 64

// Values of shapeSeen.group.
const (
	groupWordNone int8 = iota + 1
	groupWordSome
)

// seeGroup records line l (its text after its prefix) when it says that an agent restarts
// or starts its worker group. Lines of one shape share their words, so a shape without
// those words is looked at once.
func (s *logScanner) seeGroup(l *logscan.Scanned, text []byte) {
	if sh := l.Shape; sh != nil && sh.ID < len(s.shapes) {
		seen := &s.shapes[sh.ID]
		if seen.group == groupWordNone {
			return
		}
		if seen.group == 0 {
			seen.group = groupWordNone
			for _, w := range groupWords {
				if bytes.Contains(text, w) {
					seen.group = groupWordSome
				}
			}
		}
	}
	// The whole line: Ray Train's restore counts only with its trainer actor's prefix.
	g, ok := groupLineOf(l.Text)
	if !ok {
		return
	}
	g.line = l.Number
	if len(s.groups) == maxGroupLines {
		s.groups = append(s.groups[:0], s.groups[1:]...)
	}
	s.groups = append(s.groups, g)
}

// restartedSince says whether the log's agent restarted its worker group after the last
// line of finding f: a line of f's rule after that is the new group's, and a finding of its
// own, which the restart did not recover from.
func (s *logScanner) restartedSince(f *Finding) bool {
	for i := len(s.groups) - 1; i >= 0; i-- {
		if g := s.groups[i]; g.restart {
			e := f.Evidence[len(f.Evidence)-1]
			return g.line > max(e.Line, e.LastLine)
		}
	}
	return false
}

// groupLineOf reads line t as an agent's restart or start of its worker group. A restart
// with no attempt left ("0/3 attempts left") is none.
func groupLineOf(t []byte) (groupLine, bool) {
	// Each phrase below holds one of groupWords: a line without them (most lines, and every
	// line of a shape seeGroup has not ruled out) is read once per group word, not once per
	// phrase.
	if !slices.ContainsFunc(groupWords, func(w []byte) bool { return bytes.Contains(t, w) }) {
		return groupLine{}, false
	}
	if i := bytes.Index(t, restoredWords[0]); i >= 0 && bytes.Contains(t[i:], restoredWords[1]) && bytes.Contains(t[:i], trainerPrefix) {
		return groupLine{restart: true}, true
	}
	for _, w := range groupRestartWords {
		i := bytes.Index(t, w)
		if i < 0 {
			continue
		}
		head := t[:i]
		if j := bytes.Index(head, attemptsLeftWords); j > 0 {
			k := bytes.LastIndexByte(head[:j], ' ')
			if bytes.HasPrefix(head[k+1:j], []byte("0/")) {
				return groupLine{}, false
			}
		}
		return groupLine{restart: true}, true
	}
	for _, w := range groupStartWords {
		if bytes.Contains(t, w) {
			return groupLine{}, true
		}
	}
	return groupLine{}, false
}

// restartEnd is, for the restart gs[i], the line that ended the old group's teardown: the
// new group's start when the log says it started before another restart, else the restart.
func restartEnd(gs []groupLine, i int) int {
	if i+1 < len(gs) && !gs[i+1].restart {
		return gs[i+1].line
	}
	return gs[i].line
}

// resumedAfterGroupRestart finds training that went on after an elastic agent restarted
// its worker group following finding f: the first restart after f's last line, and at
// least minResumed progress lines of the log after it (after the start of the new group,
// when the log says it started: lines a stopped worker had buffered may come out while the
// agent stops the old group). The new group's lines need not reach f's step (it resumes
// from a checkpoint) nor say when (the agent's own lines say the group was restarted).
// procs are the processes of the logs with such restarts.
func (a *analyzer) resumedAfterGroupRestart(f *Finding, procs map[string][]*procState) (mark, bool) {
	gs := a.groups[f.log]
	if len(gs) == 0 {
		return mark{}, false
	}
	last := f.lastLine()
	from := -1
	for i, g := range gs {
		if !g.restart {
			continue
		}
		// The finding was before the restart, or in the old group's teardown before the new
		// group started.
		if end := restartEnd(gs, i); last <= g.line || last < end {
			from = end
			break
		}
	}
	if from < 0 {
		return mark{}, false
	}
	n := 0
	var first mark
	for _, p := range procs[f.log] {
		for k := range min(p.progress, maxPeriods) {
			m, _ := p.progressBack(k)
			if m.line <= from {
				break
			}
			n++
			if first.line == 0 || m.line < first.line {
				first = m
			}
		}
	}
	return first, n >= minResumed
}

// lastLine is the last line of its log that finding f was seen on.
func (f *Finding) lastLine() int {
	last := f.order
	for _, e := range f.Evidence {
		if e.File == f.log {
			last = max(last, e.Line, e.LastLine)
		}
	}
	return last
}

// resumedAfterRestart finds training in the log of the container that restarted after the
// error ended its previous log: enough progress, spread over time when the lines say when,
// and past the step the error was at when both say.
func resumedAfterRestart(p *procState, f *Finding) (mark, bool) {
	if p.progress < minResumed {
		return mark{}, false
	}
	first, last := p.first, p.lastProgress()
	if first.time != 0 && last.time != 0 && time.Duration(last.time-first.time) < resumeSpan {
		return mark{}, false
	}
	if f.at != nil && first.time != 0 && first.time < f.at.UnixNano() {
		return mark{}, false // the "current" log began before the error: not its restart
	}
	if f.step >= 0 && last.step >= 0 && last.step <= f.step {
		return mark{}, false
	}
	return first, true
}

// recoveryText says how a finding was recovered from: "restarted, resumed at step 4,800",
// "from step 100, recovered at step 150".
func (f *Finding) recoveryText() string {
	m := f.recovered
	if m == nil {
		return ""
	}
	switch {
	case f.groupRestart:
		return "worker group restarted, resumed at " + m.place()
	case f.restarted:
		return "restarted, resumed at " + m.place()
	case f.retriedPast:
		return "retried, training went on at " + m.place()
	case f.rule != nil && f.rule.Match.Streak != nil:
		from := mark{line: f.order, step: f.step}
		if f.Time != nil {
			from.time = f.Time.UnixNano()
		}
		return "from " + from.place() + ", recovered at " + m.place()
	}
	return "resumed at " + m.place()
}

// place names a point of a log the way a reader finds it: its step, else its time, else its
// line.
func (m mark) place() string {
	switch {
	case m.step >= 0:
		return "step " + thousands(m.step)
	case m.time != 0:
		return time.Unix(0, m.time).UTC().Format("15:04:05")
	}
	return "line " + strconv.Itoa(m.line)
}

// recoveredSummary says, in a clause, what the job recovered from: "worker-1: NCCL error at
// 10:02:11, restarted, resumed at step 4,800", the first and how many more.
func (a *analyzer) recoveredSummary() string {
	if len(a.recoveredErrors) == 0 {
		return ""
	}
	f := a.recoveredErrors[0]
	title, _, _ := strings.Cut(f.Title, " (recovered: ")
	s := title
	if f.Pod != "" {
		s = f.Pod + ": " + title
	}
	if f.Time != nil {
		s += " at " + f.Time.UTC().Format("15:04:05")
	}
	s += ", " + f.recoveryText()
	if n := len(a.recoveredErrors) - 1; n > 0 {
		s += fmt.Sprintf(", and %d more", n)
	}
	return s
}

// thousands writes n with thousands separators: 4800 -> "4,800".
func thousands(n int64) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// A client that fails an attempt and tries again says so, on the failure's own line or just
// below it: Ray's syncer "Caught sync error: ... Retrying after sleeping for 1.0 seconds...",
// c10d's "..., will retry", the Hugging Face Hub client's "Retrying in 1s [Retry 1/5]"
// (recovered.go). When the log's training then goes on, the attempt that failed did not end
// the job, whatever the failure's words (a checkpoint upload to an object store, a download,
// a rendezvous): it is recovered from, as a restart is, with no need for times on the
// progress lines (a retry is no process's end, so the lines after it are no dying process's
// buffer). A retry that says it is the last ("[Retry 5/5]", "(34/34)") or that it gave up
// is none.

// retryAnnounceWords say that an attempt is tried again, ASCII case folded; giveUpWords that
// the tries are over.
var (
	retryAnnounceWords = literal.NewMatcher([]string{"retrying", "will retry", "will be retried"})
	giveUpWords        = literal.NewMatcher([]string{"giving up", "gave up", "retries exhausted", "exhausted retries", "no more retries", "max retries"})
)

// retryLookahead is how many lines after a failure's line may say that it is retried: the
// retry line of a client comes next, or after a line of the error's detail.
const retryLookahead = 3

// announcesRetry says whether t says that what failed is tried again.
func announcesRetry(t []byte) bool {
	return literal.Any(retryAnnounceWords, t) && !literal.Any(giveUpWords, t) && !literal.Any(enteredLoop, t) && !lastTry(t)
}

// noteRetry records whether line num of finding f (raw) says it is retried, and if not, has
// the next few lines looked at (watchRetry). Each line of f decides anew: a failure retried
// once and then printed again without a retry was not got past by the retry.
func (s *logScanner) noteRetry(f *Finding, num int, raw []byte) {
	f.retried = announcesRetry(raw)
	if !f.retried {
		s.retryWatch, s.retryUntil = f, num+retryLookahead
	} else if s.retryWatch == f {
		s.retryWatch = nil
	}
}

// watchRetry marks the watched finding retried when line num (text) says so, and stops
// watching past the lookahead.
func (s *logScanner) watchRetry(num int, text []byte) {
	switch {
	case num > s.retryUntil:
		s.retryWatch = nil
	case announcesRetry(text):
		s.retryWatch.retried = true
		s.retryWatch = nil
	}
}
