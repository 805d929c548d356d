package analyze

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
	"github.com/coroner-dev/coroner/rules"
)

// jobState is what the sequence and silence rules need to know besides the logs.
type jobState struct {
	// collectedAt is when the bundle was collected (zero for plain logs).
	collectedAt time.Time
	// running: the job was still running then.
	running bool
}

// stateful evaluates the sequence and silence rules over every process of the logs, once
// all logs are scanned and the other findings are known.
func (a *analyzer) stateful() {
	js := jobState{}
	if mf := a.m.Bundle.Manifest; mf != nil && mf.CollectedAt != nil {
		js.collectedAt = *mf.CollectedAt
	}
	js.running = a.stillRunning()
	for _, r := range a.rs.stateful {
		var found []*Finding
		switch {
		case r.Match.Sequence != nil:
			found = evalSequence(r, a.procs, a.findings)
		case r.Match.Silence != nil:
			found = evalSilence(r, a.procs, a.findings, js)
		}
		for _, f := range found {
			a.add(f)
		}
	}
}

// stillRunning says whether the bundle shows the job, or without one its every pod, still
// running when it was collected.
func (a *analyzer) stillRunning() bool {
	if j := a.m.Job; j != nil && j.Object != nil {
		return j.Phase == parse.PhaseRunning || j.Phase == parse.PhaseCreated && len(j.Pods()) > 0 && allRunning(j)
	}
	if len(a.m.Pods) == 0 {
		return false
	}
	for _, p := range a.m.Pods {
		if p.Status.Phase != corev1.PodRunning {
			return false
		}
	}
	return true
}

// podRanks gives the processes and findings of a pod's logs the pod's rank when nothing in
// the logs said: the RANK its spec sets, when the pod runs one process.
func (a *analyzer) podRanks() {
	ranks := map[string]int{}
	for _, p := range a.jobPods() {
		if r, ok := podRank(p); ok {
			ranks[p.Name] = r
		}
	}
	for _, p := range a.procs {
		if r, ok := ranks[p.pod]; ok && p.rank < 0 && p.stream == "" {
			p.rank = r
		}
	}
	for _, f := range a.findings {
		if r, ok := ranks[f.Pod]; ok && f.Rank < 0 && f.stream == "" {
			f.Rank = r
		}
	}
}

// podRank is the rank a pod's spec gives its process: the RANK the training operator sets,
// unless the pod starts several processes per node (PET_NPROC_PER_NODE above 1), whose
// ranks torchrun gives.
func podRank(p *corev1.Pod) (int, bool) {
	rank, nproc := -1, 1
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			switch e.Name {
			case "RANK":
				if n, err := strconv.Atoi(e.Value); err == nil && n >= 0 {
					rank = n
				}
			case "PET_NPROC_PER_NODE":
				if n, err := strconv.Atoi(e.Value); err == nil {
					nproc = n
				}
			}
		}
	}
	return rank, rank >= 0 && nproc == 1
}

// rankName names a process in a title: "rank 3", or its stream or pod.
func (p *procState) name() string {
	switch {
	case p.rank >= 0:
		return "rank " + strconv.Itoa(p.rank)
	case p.stream != "":
		return p.stream
	}
	return p.pod
}

// evalSequence finds the rank the others waited for in a collective: the rank a desync
// report names; else, among ranks of one process group that report how far they enqueued
// work (group enqueued), the one that enqueued least (it never entered the collective the
// others wait in); else the rank that reported nothing while the others timed out. Sequence
// numbers of different process groups are not compared.
func evalSequence(r *Rule, procs []*procState, findings []*Finding) []*Finding {
	// The reports are counted first, and gathered as pointers to the processes' own: at
	// 16,384 ranks, a slice grown report by report (136 bytes each) made 20 MB of garbage
	// where the analysis's heap is at its largest, and one of their copies 4 MB.
	n := 0
	for _, p := range procs {
		for i := range p.reports {
			if p.reports[i].rule == r {
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	reports := make([]*seqReport, 0, n)
	procOf := make(map[int]*procState, len(procs))
	var world []int
	known := make(map[int]bool, len(procs))
	addRank := func(n int, p *procState) {
		if n >= 0 && !known[n] {
			known[n] = true
			world = append(world, n)
		}
		if n >= 0 && procOf[n] == nil {
			procOf[n] = p
		}
	}
	for _, p := range procs {
		addRank(p.rank, p)
		for i := range p.reports {
			if rep := &p.reports[i]; rep.rule == r {
				addRank(rep.rank, p)
				reports = append(reports, rep)
			}
		}
	}
	if len(reports) == 0 {
		return nil
	}
	// The world is every rank NCCL numbered, whether its log is here or not.
	for n := range worldSize(procs) {
		addRank(n, nil)
	}
	sort.Ints(world)
	var culprits []int
	var why string
	vars := map[string]string{}
	first := *reports[0]
	for _, rep := range reports {
		if rep.culprit && len(rep.ranks) > 0 {
			culprits, first, why = rep.ranks, *rep, "the desync report names it"
			break
		}
	}
	// The last report of each rank.
	last := map[int]seqReport{}
	for _, rep := range reports {
		if !rep.culprit && rep.rank >= 0 {
			cur, ok := last[rep.rank]
			switch {
			case !ok || rep.seq > cur.seq:
				last[rep.rank] = *rep
			case rep.seq == cur.seq:
				// Two lines about the same collective: each may say a part.
				if cur.op == "" {
					cur.op = rep.op
				}
				if cur.enqueued < 0 {
					cur.enqueued, cur.pg = rep.enqueued, rep.pg
				}
				last[rep.rank] = cur
			}
		}
	}
	reporters := make([]int, 0, len(last))
	for rank := range last {
		reporters = append(reporters, rank)
	}
	sort.Ints(reporters)
	if len(culprits) == 0 && len(reporters) > 0 {
		first = last[reporters[0]]
		culprits, why = behind(last, reporters)
	}
	if len(culprits) == 0 && len(reporters) > 0 {
		// A rank whose own collectives failed or timed out (its watchdog tore it down) was
		// waiting too, even when its report is not in the log.
		absent := without(without(world, reporters), collectiveTrouble(findings))
		if len(absent) == 0 || len(absent) >= len(reporters) && len(world) > 2 {
			return nil
		}
		culprits = absent
		why = fmt.Sprintf("%s timed out waiting for it", rankList(reporters))
		if p := procOf[absent[0]]; p != nil && p.progress > 0 && p.lastProgress().step >= 0 {
			why += fmt.Sprintf(", and its progress stopped at step %d", p.lastProgress().step)
		}
		if p := procOf[absent[0]]; p != nil && len(absent) == 1 && stalled(p, findings) {
			if w, ok := stoppedBefore(p, first, reporters, world); ok {
				why = w
			}
		}
	}
	if len(culprits) == 0 {
		return nil
	}
	culprit := culprits[0]
	vars["rank"], vars["ranks"], vars["why"] = strconv.Itoa(culprit), rankList(culprits), why
	seq, op := first.seq, first.op
	if first.culprit {
		// A desync report's line names the ranks, not the collective: the one held up is
		// the one the waiting ranks' watchdogs report.
		for _, rep := range reports {
			if !rep.culprit && rep.seq > 0 {
				seq, op = rep.seq, rep.op
				break
			}
		}
	}
	vars["seq"], vars["op"] = strconv.FormatInt(seq, 10), op
	if waited := without(reporters, culprits); len(waited) > 0 {
		// The ranks that waited, never the culprit itself (a desync report may name a rank
		// whose own watchdog fired too).
		vars["reporters"] = rankList(waited)
	}
	f := newFinding(r, vars)
	f.Rank, f.derived = culprit, true
	f.Time, f.at = nsPtr(first.line.time), nsPtr(first.line.time)
	reporter := procOfReport(procs, first)
	f.Evidence = []Evidence{{Source: SourceLog, File: reporter.log, Line: first.line.line, Time: f.Time, Text: first.line.text}}
	// The finding is about the culprit's process, placed in its log where it stopped
	// progressing; its evidence is the report and that line.
	p := procOf[culprit]
	if p == nil {
		p = reporter
	}
	f.Pod, f.Container, f.log, f.stream, f.streams, f.order = p.pod, p.container, p.log, p.stream, []string{p.stream}, first.line.line
	if p.log != reporter.log {
		// Learnt from other logs: it is ordered by the time of the report, not by a line of
		// the culprit's log.
		f.log, f.order = "", 0
		if p.progress > 0 {
			// Where the culprit stopped comes first: the finding is about it.
			m := p.lastProgress()
			f.Evidence = append([]Evidence{{Source: SourceLog, File: p.log, Line: m.line, Time: nsPtr(m.time), Text: excerpt(p.lastText)}}, f.Evidence...)
		}
	}
	if p.rank == culprit && p.progress > 0 && p.lastProgress().time != 0 && p.lastProgress().time < first.line.time && stalled(p, findings) {
		// The culprit went wrong when it stopped, not when the others' watchdogs fired: that
		// is the finding's time, and the lanes draw the stall from it.
		m := p.lastProgress()
		f.Time, f.at, f.step = nsPtr(m.time), nsPtr(m.time), m.step
		if f.log != "" {
			f.order = m.line
			if f.Evidence[0].Line != m.line {
				f.Evidence = append([]Evidence{{Source: SourceLog, File: p.log, Line: m.line, Time: nsPtr(m.time), Text: excerpt(p.lastText)}}, f.Evidence...)
			}
		}
	}
	return []*Finding{f}
}

// stalled says whether a process stopped with no error of its own after its last progress:
// the others waited for a stall, not for a failure that its own finding names (and dates).
func stalled(p *procState, findings []*Finding) bool {
	return p.progress > 0 && !failedAfter(p, p.lastProgress().line, findings) && !failedOwn(p, findings)
}

// maxWorld bounds the world size NCCL's lines may claim (they come from the bundle).
const maxWorld = 1 << 20

// worldSize is the number of ranks NCCL's start-up lines gave the job's largest
// communicator (0 when none said).
func worldSize(procs []*procState) int {
	n := 0
	for _, p := range procs {
		n = max(n, int(p.said.nranks))
	}
	return min(n, maxWorld)
}

// stoppedBefore says when the culprit of a collective stopped, against when the others
// timed out: "it stopped at 10:17:30 (step 480); the other 3 ranks timed out 30 min later".
func stoppedBefore(p *procState, report seqReport, reporters, world []int) (string, bool) {
	if p.progress == 0 {
		return "", false
	}
	m := p.lastProgress()
	if m.time == 0 || report.line.time == 0 || m.time >= report.line.time {
		return "", false
	}
	at := time.Unix(0, m.time).UTC().Format("15:04:05")
	if m.step >= 0 {
		at += fmt.Sprintf(" (step %d)", m.step)
	}
	waited := rankList(reporters)
	if len(reporters) > 1 && len(reporters) == len(world)-1 {
		waited = fmt.Sprintf("the other %d ranks", len(reporters))
	}
	return fmt.Sprintf("it stopped at %s; %s timed out %s later", at, waited, roundDuration(time.Duration(report.line.time-m.time))), true
}

// collectiveTrouble lists the ranks with collective timeouts or errors of their own.
func collectiveTrouble(findings []*Finding) []int {
	var out []int
	for _, f := range findings {
		if f.Rank >= 0 && (f.Category == CategoryCollectiveTimeout || f.Category == CategoryCollectiveError) {
			out = append(out, f.Rank)
		}
	}
	return out
}

// behind finds, within each process group, the ranks that enqueued less work than the
// others when the watchdog fired.
func behind(last map[int]seqReport, reporters []int) ([]int, string) {
	byPG := map[string][]int{}
	var pgs []string
	for _, rank := range reporters {
		rep := last[rank]
		if rep.enqueued < 0 {
			continue
		}
		if byPG[rep.pg] == nil {
			pgs = append(pgs, rep.pg)
		}
		byPG[rep.pg] = append(byPG[rep.pg], rank)
	}
	sort.Strings(pgs)
	for _, pg := range pgs {
		ranks := byPG[pg]
		if len(ranks) < 2 {
			continue
		}
		lo, hi := last[ranks[0]].enqueued, last[ranks[0]].enqueued
		for _, rank := range ranks {
			lo, hi = min(lo, last[rank].enqueued), max(hi, last[rank].enqueued)
		}
		if lo == hi {
			continue
		}
		var out []int
		for _, rank := range ranks {
			if last[rank].enqueued == lo {
				out = append(out, rank)
			}
		}
		return out, fmt.Sprintf("it enqueued work up to #%d while %s reached #%d", lo, rankList(without(ranks, out)), hi)
	}
	return nil, ""
}

func procOfReport(procs []*procState, rep seqReport) *procState {
	for _, p := range procs {
		for _, r := range p.reports {
			if r.line.line == rep.line.line && r.line.text == rep.line.text {
				return p
			}
		}
	}
	return procs[0]
}

// without returns the numbers of all that are not in drop, in all's order. A long drop is
// looked up sorted: the ranks that did not report, the world without 16,384 reporters, were
// 268M comparisons.
func without(all, drop []int) []int {
	in := func(n int) bool { return slices.Contains(drop, n) }
	if len(drop) > 16 {
		sorted := slices.Clone(drop)
		slices.Sort(sorted)
		in = func(n int) bool {
			_, found := slices.BinarySearch(sorted, n)
			return found
		}
	}
	var out []int
	for _, n := range all {
		if !in(n) {
			out = append(out, n)
		}
	}
	return out
}

// rankList writes "rank 3" or "ranks 0, 1 and 3".
func rankList(ranks []int) string {
	if len(ranks) == 1 {
		return "rank " + strconv.Itoa(ranks[0])
	}
	parts := make([]string, len(ranks))
	for i, n := range ranks {
		parts[i] = strconv.Itoa(n)
	}
	if len(parts) > 8 {
		parts = append(parts[:8], fmt.Sprintf("… (%d in all)", len(ranks)))
		return "ranks " + strings.Join(parts, ", ")
	}
	return "ranks " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// before says whether mark a comes before mark b of another process: by line in the same
// log, else by time, else by step.
func before(pa, pb *procState, a, b mark) bool {
	switch {
	case pa.log == pb.log:
		return a.line < b.line
	case a.time != 0 && b.time != 0:
		return a.time < b.time
	case a.step >= 0 && b.step >= 0:
		return a.step < b.step
	}
	return false
}

// failedAfter says whether the process shows an error (not a symptom) after line: it did
// not stop silently.
func failedAfter(p *procState, line int, findings []*Finding) bool {
	for _, f := range findings {
		onStream := p.stream == "" || f.stream == p.stream || slices.Contains(f.streams, p.stream)
		if f.log == p.log && onStream && f.order > line && f.Severity >= SeverityError && !f.symptom && f.Layer == LayerExecution {
			return true
		}
	}
	return false
}

// steadyProgress is how many progress lines a process shows before its silence may be a
// stall (a step period needs a few; a rank that only loaded its checkpoint shards showed none).
const steadyProgress = 5

// mayStall says whether a process's progress could have stalled: it showed steady progress,
// and no error of its own explains the end. A restarted container's previous log ends with
// the restart, not a stall; its current log goes on as the same process.
func mayStall(p *procState, findings []*Finding) bool {
	return !p.previous && p.progress >= steadyProgress && !failedAfter(p, p.lastProgress().line, findings) && !failedOwn(p, findings)
}

// failedOwn says whether the process's pod, container or rank shows a primary failure of its
// own (an OOM, a CUDA error, an exception: not a timeout waiting for others, not a signal it
// was sent) at or after its last progress: that failure, not a stall, ended its progress,
// and a hang never outranks it. Lines lost with a killed process's buffered output are not a
// stall either.
func failedOwn(p *procState, findings []*Finding) bool {
	last := p.lastProgress()
	for _, f := range findings {
		if f.Severity < SeverityError || f.symptom || f.generic || f.derived || f.Layer == LayerSpec {
			continue
		}
		switch f.Category {
		case CategoryHang, CategoryCollectiveTimeout, CategoryCrashSignal, CategoryUnknown:
			continue
		}
		mine := p.rank >= 0 && f.Rank == p.rank || p.pod != "" && f.Pod == p.pod && (f.Container == "" || f.Container == p.container)
		if !mine {
			continue
		}
		if f.log == p.log && f.order < last.line || f.log != p.log && f.Time != nil && last.time != 0 && f.Time.UnixNano() < last.time {
			continue // an error the process went on from
		}
		return true
	}
	return false
}

// wentOn finds another process that progressed materially past p's last progress line:
// `periods` more progress lines, to a later step when both show steps, and, when the lines
// have times, over at least `periods` of p's step periods and the rule's atLeast. Ranks are
// not in lockstep to the second, and a lag of a few steps is no stall. The same rank (a
// restarted container's other log) is never compared with itself.
func wentOn(r *Rule, p *procState, procs []*procState) *procState {
	s := r.Match.Silence
	last := p.lastProgress()
	for _, o := range procs {
		if o == p || o.same(p) || o.name() == p.name() {
			continue
		}
		m, ok := o.progressBack(s.Periods - 1)
		if !ok || !before(p, o, last, m) {
			continue
		}
		end := o.lastProgress()
		if last.step >= 0 && end.step >= 0 && end.step <= last.step {
			continue
		}
		if last.time != 0 && end.time != 0 {
			lead := time.Duration(end.time - last.time)
			if lead < r.atLeast || lead < time.Duration(s.Periods)*max(p.period(), o.period()) {
				continue
			}
		}
		return o
	}
	return nil
}

// evalSilence finds progress that stopped without an error.
func evalSilence(r *Rule, procs []*procState, findings []*Finding, js jobState) []*Finding {
	s := r.Match.Silence
	var stopped *procState
	var witness *procState
	switch s.Scope {
	case "rank":
		var latest int64
		for _, p := range procs {
			if p.progress > 0 {
				latest = max(latest, p.lastProgress().time)
			}
		}
		for _, p := range procs {
			if p.previous || p.progress < steadyProgress {
				continue
			}
			if t := p.lastProgress().time; t != 0 && time.Duration(latest-t) < r.atLeast {
				continue // nobody went on long enough after it (at 4,096 ranks, most are here)
			}
			goes := wentOn(r, p, procs)
			if goes == nil || !mayStall(p, findings) {
				continue
			}
			if stopped == nil || before(p, stopped, p.lastProgress(), stopped.lastProgress()) {
				stopped, witness = p, goes
			}
		}
	case "job":
		if js.collectedAt.IsZero() || !js.running {
			return nil
		}
		var latest int64
		var period time.Duration
		for _, p := range procs {
			if p.progress < 2 {
				continue
			}
			last := p.lastProgress()
			if last.time == 0 || failedAfter(p, last.line, findings) {
				return nil
			}
			latest = max(latest, last.time)
			period = max(period, p.period())
			if stopped == nil || last.time < stopped.lastProgress().time {
				stopped = p
			}
		}
		if stopped == nil || period == 0 {
			return nil
		}
		quiet := js.collectedAt.Sub(time.Unix(0, latest))
		if quiet < time.Duration(s.Periods)*period || quiet < r.atLeast {
			return nil
		}
	}
	if stopped == nil {
		return nil
	}
	last := stopped.lastProgress()
	vars := map[string]string{"rank": stopped.name()}
	if last.step >= 0 {
		vars["step"] = strconv.FormatInt(last.step, 10)
	}
	if witness != nil {
		vars["others"] = witness.name()
		if w := witness.lastProgress(); w.step >= 0 {
			vars["otherStep"] = strconv.FormatInt(w.step, 10)
		}
	}
	if !js.collectedAt.IsZero() && last.time != 0 {
		vars["quiet"] = roundDuration(js.collectedAt.Sub(time.Unix(0, last.time)))
	}
	f := newFinding(r, vars)
	f.Pod, f.Container, f.Rank = stopped.pod, stopped.container, stopped.rank
	f.log, f.stream, f.streams, f.order, f.step = stopped.log, stopped.stream, []string{stopped.stream}, last.line, last.step
	f.Time = nsPtr(last.time)
	f.Evidence = []Evidence{{Source: SourceLog, File: stopped.log, Line: last.line, Time: f.Time, Text: excerpt(stopped.lastText)}}
	if witness != nil {
		w := witness.lastProgress()
		f.Evidence = append(f.Evidence, Evidence{Source: SourceLog, File: witness.log, Line: w.line, Time: nsPtr(w.time), Text: excerpt(witness.lastText)})
	}
	return []*Finding{f}
}

// roundDuration writes a duration the way a person says it: "2 h 5 min", "12 min", "40 s".
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	}
	return fmt.Sprintf("%d s", int(d.Seconds()))
}

// matchLog runs a streak, sequence or silence rule, among the built-in rules (which give
// the progress lines and the errors that tell a silence from a failure), on an example log:
// one line each, launcher prefixes and timestamps allowed. A silence example may say when
// the bundle was collected and the job's phase then. site, when set, is the user's rules the
// rule came with (they join the built-in ones, replacing them by id).
func (r *Rule) matchLog(ex rules.Example, site []*Rule) (bool, error) {
	builtin, err := DefaultRules()
	if err != nil {
		return false, err
	}
	rs, err := NewRuleSet(builtin, site, []*Rule{r})
	if err != nil {
		return false, err
	}
	js := jobState{running: ex.JobPhase == string(parse.PhaseRunning)}
	if ex.CollectedAt != "" {
		if js.collectedAt, err = time.Parse(time.RFC3339, ex.CollectedAt); err != nil {
			return false, fmt.Errorf("collectedAt: %v", err)
		}
	}
	s := newLogScanner(bundle.LogStream{Path: "example.log", Pod: "example"}, rs, rs.NewScratch())
	var clock logscan.Clock
	var st logscan.Stats
	var clean []byte
	for i, line := range strings.Split(strings.TrimSuffix(ex.Text, "\n"), "\n") {
		text, _ := clock.Split([]byte(line))
		clean = logscan.Clean(clean[:0], text)
		s.visit(&logscan.Scanned{Number: i + 1, Time: clock.Last, Text: clean})
		st.Lines = i + 1
		if clock.Last != 0 {
			if st.First.IsZero() {
				st.First = time.Unix(0, clock.Last)
			}
			st.Last = time.Unix(0, clock.Last)
		}
	}
	procs := s.finish(st)
	for _, f := range s.findings {
		if f.at == nil {
			f.at = f.Time
		}
	}
	found := s.findings
	switch {
	case r.Match.Sequence != nil:
		found = append(found, evalSequence(r, procs, s.findings)...)
	case r.Match.Silence != nil:
		found = append(found, evalSilence(r, procs, s.findings, js)...)
	}
	for _, f := range found {
		if f.RuleID == r.ID {
			return true, nil
		}
	}
	return false, nil
}
