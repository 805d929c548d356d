// Package analyze explains a job's failure from its bundle: the spec layer (what the job asked
// for), the control layer (job, pod and container status, events, nodes) and the execution
// layer (the container logs, against the rule set), correlated on one timeline into a verdict
// and a root cause, each finding with the evidence that shows it.
//
// Rules are data (package rules); LoadRules checks their words and NewRuleSet compiles them
// behind a literal prefilter (internal/literal) and per-shape filters (logscan.Shape). The
// logs are read once, by package logscan: Scan is the rules' visitor of that read, beside the
// index's (package diagnose runs the scan with both), and Run analyses what it found. analyze
// works with typed values (Verdict, Category, Severity, Layer, Fault, Retry) and no encoding:
// package report owns the JSON contract.
package analyze

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

// Options tune an analysis.
type Options struct {
	// Lines reads the lines around evidence back from the logs, for its context; nil leaves
	// evidence without context lines.
	Lines Lines
	// StuckAfter is how long a job that has not failed may wait for what it needs to start
	// (an image, a node, a runtime, a container that keeps crashing) before that wait is its
	// failure; 0 means DefaultStuckAfter and a negative value no wait at all.
	StuckAfter time.Duration
	// Vocabulary is the second tier's model; nil uses the built-in one.
	Vocabulary *Vocabulary
}

// Lines reads lines of a log back: those of the log at path numbered from line-before to
// line+after, as the scan saw them (package index's Index.Window).
type Lines func(path string, line, before, after int) ([]ContextLine, error)

// Result is the outcome of an analysis.
type Result struct {
	Verdict Verdict
	// VerdictReason says in one sentence why the verdict is what it is.
	VerdictReason string
	// VerdictAt is the place the reason names (the root cause's), nil when it names none.
	VerdictAt *Place
	RootCause *Finding
	// Confidence says how sure the root cause is ("" without one): see Confidence.
	Confidence Confidence
	// ConfidenceBasis says why the confidence is what it is when the usual reason for that
	// level does not ("" when it does): see Basis.
	ConfidenceBasis Basis
	// Findings are sorted by time (findings without a time last), ids f1, f2... in that order.
	Findings []*Finding
	// Timeline is the job's life in time order.
	Timeline *Timeline
	// Logs summarises each scanned log.
	Logs []LogSummary
	// Warnings are problems met while analysing (unreadable logs, cut lines).
	Warnings []string
	// FlightRecorder is what the NCCL Flight Recorder dumps show; nil without dumps.
	FlightRecorder *FlightRecorder
	// NodeEvidence is what the bundle shows of the health of the job's GPU nodes; nil without
	// them (plain logs, a CPU job, a bundle without nodes).
	NodeEvidence *NodeEvidence
}

// LogSummary describes one scanned log.
type LogSummary struct {
	Path      string
	Pod       string
	Container string
	// Previous and Truncated sit together: a LogSummary is kept for each of 200,000 logs
	// (bools between words take a word each: 152 -> 144 bytes).
	Previous  bool
	Truncated bool
	Bytes     int64
	Lines     int
	// First and Last are the first and last times the log showed (nil: none).
	First, Last *time.Time
	// Rank is the first torchrun rank the log's lines show ("[rank3]:"), or -1.
	Rank int
	// Findings counts the findings of the log's lines.
	Findings int
	// LastProgress is the time of the log's last training progress line (nil: none, or none
	// with a time).
	LastProgress *time.Time
	// NodeAgent names the GPU agent whose log it is (bundle.NodeAgents), on node Node; "" for
	// the job's logs.
	NodeAgent, Node string
}

// Scan is the rules' visitor of the scan of a bundle's logs (a logscan.Visitor): it matches
// every line of every log against the rule set, in the read that builds the index too. Run
// analyses what it found.
type Scan struct {
	logs     []bundle.LogStream
	rs       *RuleSet
	scanners []*logScanner
	// done holds what analyze reads of each log once its scan has ended: 200,000 logs do
	// not keep 200,000 scanners until the last is read.
	done []scannedLog
	// A log's scratch space and shape memos serve its scan only: 200,000 logs do not keep
	// 200,000 of them.
	scratch sync.Pool
}

// NewScan returns the rules' visitor of a scan of logs (the model's Logs, in that order).
func NewScan(logs []bundle.LogStream, rs *RuleSet) *Scan {
	s := &Scan{logs: logs, rs: rs, scanners: make([]*logScanner, len(logs)), done: make([]scannedLog, len(logs))}
	s.scratch.New = func() any { return rs.NewScratch() }
	return s
}

// Log returns what matches the lines of log i.
func (s *Scan) Log(i int) func(*logscan.Scanned) {
	s.scanners[i] = newLogScanner(s.logs[i], s.rs, s.scratch.Get().(*Scratch))
	return s.scanners[i].visit
}

// Done finds log i's terminal failure, closes its processes and gives back what only its
// scan needed: the scan's end, where every log's processes are live together, is the peak
// of a bundle of many logs.
func (s *Scan) Done(i int, st logscan.Stats, err error) {
	if sc := s.scanners[i]; sc != nil {
		sc.terminal = terminalOf(&sc.tail, sc.ls.Path, sc.ls.Pod, sc.ls.Container)
		sc.markSurvived()
		scratch := sc.release()
		if err == nil {
			s.done[i] = sc.scanned(st, scratch)
			s.scanners[i] = nil
			scratch.scanner = sc // what the log found is in done[i]: the next log's scanner
		}
		s.scratch.Put(scratch)
	}
}

// maxSpareMap bounds the maps a log's scan hands to the next log's: a log of thousands of
// processes leaves no map that costs its size to clear.
const maxSpareMap = 64

// scannedLog is what analyze reads of a log once its scan has ended.
type scannedLog struct {
	procs []*procState
	rank  int
	// found is what the scan found in the log, nil when nothing: most of 200,000 logs of a
	// line or two have no finding, terminal failure, fact or group line, and the slots of
	// every log are live together at the scan's end (40 bytes a log instead of 112).
	found *logFound
}

// logFound is what a log's scan found in it (see scannedLog).
type logFound struct {
	findings []*Finding
	terminal *terminalFailure
	facts    []textFact
	// groups are the lines in which an elastic agent restarted or started its worker group.
	groups []groupLine
}

// foundIn is what the scan of a log found, nil for nothing.
func foundIn(findings []*Finding, terminal *terminalFailure, facts []textFact, groups []groupLine) *logFound {
	if len(findings) == 0 && terminal == nil && len(facts) == 0 && len(groups) == 0 {
		return nil
	}
	return &logFound{findings: findings, terminal: terminal, facts: facts, groups: groups}
}

// scanned closes the log's processes and settles them (see procState.settle): the scan's
// end, where every log's processes are live together, is the peak of a bundle of many logs.
// What the processes let go goes to spare (may be nil), for the next log's.
func (s *logScanner) scanned(st logscan.Stats, spare *Scratch) scannedLog {
	procs := s.finish(st)
	for _, p := range procs {
		p.settle(spare)
	}
	if spare != nil && len(s.byRule) <= maxSpareMap && len(s.procs) <= maxSpareMap {
		// The log's maps, emptied, serve the next log (newLogScanner).
		clear(s.byRule)
		clear(s.procs)
		spare.byRule, spare.procs, s.byRule, s.procs = s.byRule, s.procs, nil, nil
	}
	return scannedLog{procs: procs, rank: s.rank, found: foundIn(s.findings, s.terminal, s.facts, s.groups)}
}

// scannedLogs returns what analyze reads of each log: a log whose scan did not end (Done
// was given an error) is closed with stats.
func (s *Scan) scannedLogs(stats []logscan.Stats) []scannedLog {
	for i, sc := range s.scanners {
		if sc != nil {
			s.done[i], s.scanners[i] = sc.scanned(stats[i], nil), nil
		}
	}
	return s.done
}

// Run analyses a loaded bundle with what the scan of its logs found: sc saw every line of
// m.Logs, stats are the scan's (logscan.ScanAll), in the same order. Problems with the bundle
// itself become warnings; Run fails only when the built-in vocabulary does not load.
func Run(m *parse.Model, sc *Scan, stats []logscan.Stats, opts Options) (*Result, error) {
	if len(stats) != len(m.Logs) || len(sc.done) != len(m.Logs) {
		return nil, fmt.Errorf("analyze: %d logs, but %d scanned and %d stats", len(m.Logs), len(sc.done), len(stats))
	}
	a := &analyzer{m: m, rs: sc.rs, res: &Result{}, lines: opts.Lines,
		stuckAfter: opts.stuckAfter(), vocab: opts.Vocabulary}
	if a.vocab == nil {
		v, err := defaultVocabulary()
		if err != nil {
			return nil, fmt.Errorf("built-in vocabulary: %w", err)
		}
		a.vocab = v
	}
	a.logs(sc.scannedLogs(stats), stats)
	a.control()
	a.loggedFacts()
	a.spec()
	a.podRanks()
	a.flightRecorder()
	a.stateful()
	a.correlate()
	a.timeline()
	return a.res, nil
}

type analyzer struct {
	m        *parse.Model
	rs       *RuleSet
	res      *Result
	findings []*Finding
	// buf and termFields are scratch for each container's termination (terminated),
	// podScratch for each pod's facts (podFields); titles the findings' titles of facts
	// (intern) and texts their evidence's texts (internText).
	buf        []byte
	termFields map[string]string
	podScratch map[string]string
	titles     map[string]string
	texts      map[string]string
	titleBuf   []byte
	// lastTime is the time of the last fact's findings (sharedTime).
	lastTime *time.Time
	// podLogs records which pods have logs in the bundle (podFields' started), and
	// containerLogs which containers do, made only when a termination message asks
	// (hasLogs): at 200,000 logs a set of every container was 16 MB live through the
	// analysis and 20 MB of garbage as it grew, for a question no exit without a message asks.
	podLogs       map[string]bool
	containerLogs map[[2]string]bool
	// recovered counts the errors of a job that succeeded that it recovered from.
	recovered int
	// recoveredErrors are the errors training went on past (see recoveredByRestart), in
	// the order found.
	recoveredErrors []*Finding
	// groups holds, by log, the lines in which an elastic agent restarted or started its
	// worker group (few logs have any).
	groups map[string][]groupLine
	// textFacts are the object facts log lines rendered, in bundle order.
	textFacts []loggedFact
	// procs are the processes the logs showed, in bundle order.
	procs []*procState
	// vocab is the second tier's model and terminals each log's terminal failure, in
	// bundle order (tier2.go).
	vocab     *Vocabulary
	terminals []*terminalFailure
	// inJob and onNode hold the names of the job's pods and of the nodes they ran on (see
	// eventOfJob).
	inJob, onNode map[string]bool
	// agents maps "namespace/name" to the GPU node agents' pods (agentPods).
	agents map[string]*corev1.Pod
	// nodeFailure is the pod's failure a node's GPU fault explains, when hardwareBehind found
	// one.
	nodeFailure *Finding
	// lines reads the context of evidence back (nil: none).
	lines Lines
	// stuckAfter is how long a job may wait to start before the wait is its failure.
	stuckAfter time.Duration
}

func (a *analyzer) add(f *Finding) { a.findings = append(a.findings, f) }

// hasLogs says whether the bundle has a log of the pod's container.
func (a *analyzer) hasLogs(pod, container string) bool {
	if a.containerLogs == nil {
		a.containerLogs = map[[2]string]bool{}
		for _, ls := range a.m.Logs {
			a.containerLogs[[2]string{ls.Pod, ls.Container}] = true
		}
	}
	return a.containerLogs[[2]string{pod, container}]
}

func (a *analyzer) warnf(format string, args ...any) {
	a.res.Warnings = append(a.res.Warnings, fmt.Sprintf(format, args...))
}

// logs takes in what the scan of each log found. Results are merged in bundle order so the
// output does not depend on scheduling; evidence context is read back through lines.
func (a *analyzer) logs(scanned []scannedLog, stats []logscan.Stats) {
	logs := a.m.Logs
	a.podLogs = map[string]bool{}
	a.res.Logs = slices.Grow(a.res.Logs, len(stats))
	nprocs := 0
	for i := range scanned {
		nprocs += len(scanned[i].procs)
	}
	a.procs = slices.Grow(a.procs, nprocs)
	var nothing logFound
	for i, st := range stats {
		ls := logs[i]
		a.podLogs[ls.Pod] = true
		if st.Err != nil {
			a.warnf("%s: %v (the rest of the log was not read)", ls.Path, st.Err)
		}
		if st.LongLines > 0 {
			a.warnf("%s: %d line(s) longer than the line length limit of %d bytes were cut", ls.Path, st.LongLines, a.m.Bundle.Limits.MaxLineBytes)
		}
		procs, more := scanned[i].procs, scanned[i].found
		if more == nil {
			more = &nothing
		}
		found := more.findings
		agent := a.agentPods()[ls.Namespace+"/"+ls.Pod]
		if agent != nil {
			// A GPU agent's log is its node's evidence: no process of the job, no terminal
			// failure for the second tier, no facts of the job's pods.
			procs, found = nil, a.agentFindings(agent, found)
		} else {
			a.procs = append(a.procs, procs...)
			if tf := more.terminal; tf != nil {
				a.terminals = append(a.terminals, tf)
			}
			for _, tf := range more.facts {
				a.textFacts = append(a.textFacts, loggedFact{textFact: tf, ls: ls})
			}
			if g := more.groups; len(g) > 0 {
				if a.groups == nil {
					a.groups = map[string][]groupLine{}
				}
				a.groups[ls.Path] = g
			}
		}
		sum := LogSummary{
			Path: ls.Path, Pod: ls.Pod, Container: ls.Container, Previous: ls.Previous, Bytes: st.Bytes,
			Lines: st.Lines, Truncated: ls.Truncated,
			Rank: scanned[i].rank, Findings: len(found), LastProgress: lastProgress(procs),
		}
		sum.First, sum.Last = timePtrs(st.First, st.Last)
		if agent != nil {
			sum.NodeAgent, sum.Node, sum.Rank = bundle.AgentOf(agent.Labels), agent.Spec.NodeName, -1
		}
		a.res.Logs = append(a.res.Logs, sum)
		for _, f := range found {
			if a.lines != nil {
				if err := addContext(a.lines, f); err != nil {
					a.warnf("%s: context lines: %v", ls.Path, err)
				}
			}
			a.add(f)
		}
	}
}

// lastProgress is the time of the last timed progress line of any of a log's processes (nil:
// none): where the work a failure throws away starts (the fleet store's GPU-hours lost).
func lastProgress(procs []*procState) *time.Time {
	var last int64
	for _, p := range procs {
		if p.progress > 0 {
			last = max(last, p.lastProgress().time)
		}
	}
	if last == 0 {
		return nil
	}
	return timePtr(time.Unix(0, last))
}

// sortFindings orders findings in time, so ids are stable and the first failure comes
// first: lines of one log in line order; findings of different logs or objects by time; two
// lines without a time in different logs by how far their ranks had trained; findings
// nothing orders last, by place.
func sortFindings(fs []*Finding) {
	sort.SliceStable(fs, func(i, j int) bool { return findingLess(fs[i], fs[j]) })
}

func findingLess(a, b *Finding) bool {
	if a.log != "" && a.log == b.log && a.order != b.order {
		return a.order < b.order
	}
	switch {
	case a.at != nil && b.at != nil && !a.at.Equal(*b.at):
		return a.at.Before(*b.at)
	case (a.at == nil || b.at == nil) && a.step >= 0 && b.step >= 0 && a.step != b.step:
		return a.step < b.step
	case (a.at == nil) != (b.at == nil):
		return a.at != nil
	}
	if (a.Layer == LayerSpec) != (b.Layer == LayerSpec) {
		return a.Layer == LayerSpec // at the same moment, what was asked comes before what followed
	}
	if a.Pod != b.Pod {
		return a.Pod < b.Pod
	}
	if a.Container != b.Container {
		return a.Container < b.Container
	}
	if a.order != b.order {
		return a.order < b.order
	}
	if a.Severity != b.Severity {
		return a.Severity > b.Severity
	}
	return a.RuleID < b.RuleID
}
