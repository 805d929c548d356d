// Package analyze explains a job's failure from its bundle: the spec layer (what the job asked
// for), the control layer (job, pod and container status, events, nodes) and the execution
// layer (the container logs, against the rule set), correlated on one timeline into a verdict
// and a root cause, each finding with the evidence that shows it.
//
// Rules are data (package rules); LoadRules checks their words and NewRuleSet compiles them
// behind a literal prefilter (internal/literal) and per-shape filters (logscan.Shape). The
// logs are read once, by the index build (package index over package logscan), which hands
// every line to the rules. analyze works with typed values (Verdict, Category, Severity,
// Layer, Fault, Retry) and no encoding: package report owns the JSON contract.
package analyze

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

// Options tune an analysis.
type Options struct {
	Rules *RuleSet
	// Workers is how many logs are scanned at once; 0 means one per CPU.
	Workers int
	// Progress, when set, is called after each log is scanned.
	Progress func(done, total int, bytes int64)
	// Cache keeps the index of the bundle's logs for later searches; nil builds a private one.
	Cache *index.Cache
	// Version is coroner's version, part of the index cache key.
	Version string
	// Log, when set, hears about the index cache (a damaged index rebuilt).
	Log func(format string, args ...any)
	// StuckAfter is how long a job that has not failed may wait for what it needs to start
	// (an image, a node, a runtime, a container that keeps crashing) before that wait is its
	// failure; 0 means DefaultStuckAfter and a negative value no wait at all.
	StuckAfter time.Duration
	// Vocabulary is the second tier's model; nil uses the built-in one.
	Vocabulary *Vocabulary
}

// Result is the outcome of an analysis.
type Result struct {
	Verdict Verdict
	// VerdictReason says in one sentence why the verdict is what it is.
	VerdictReason string
	RootCause     *Finding
	// Confidence says how sure the root cause is ("" without one): see Confidence.
	Confidence Confidence
	// Findings are sorted by time (findings without a time last), ids f1, f2... in that order.
	Findings []*Finding
	Timeline []TimelineEntry
	// Logs summarises each scanned log.
	Logs []LogSummary
	// Warnings are problems met while analysing (unreadable logs, cut lines).
	Warnings []string
	// Index is the index of the bundle's logs, built in the same pass as the rules ran (or
	// reused from the cache). The caller closes it; it reads from the bundle, which must stay
	// open meanwhile.
	Index *index.Index
}

// LogSummary describes one scanned log.
type LogSummary struct {
	Path      string
	Pod       string
	Container string
	Previous  bool
	Bytes     int64
	Lines     int
	// First and Last are the first and last times the log showed (nil: none).
	First, Last *time.Time
	Truncated   bool
	// Findings counts the findings of the log's lines.
	Findings int
}

// Run analyses a loaded bundle. It fails only when the index of the logs cannot be built
// (a full disk) or when ctx is done (its error, wrapped); problems with the bundle itself
// become warnings.
func Run(ctx context.Context, m *parse.Model, opts Options) (*Result, error) {
	a := &analyzer{m: m, rs: opts.Rules, res: &Result{}, stuckAfter: opts.stuckAfter(), vocab: opts.Vocabulary}
	if a.vocab == nil {
		v, err := defaultVocabulary()
		if err != nil {
			return nil, fmt.Errorf("built-in vocabulary: %w", err)
		}
		a.vocab = v
	}
	if err := a.scanLogs(ctx, opts); err != nil {
		return nil, err
	}
	a.control()
	a.loggedFacts()
	a.spec()
	a.podRanks()
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
	// logsFor records which pod/containers have logs in the bundle.
	logsFor map[string]bool
	// recovered counts the errors of a job that succeeded that it recovered from.
	recovered int
	// recoveredErrors are the errors training went on past (see recoveredByRestart), in
	// the order found.
	recoveredErrors []*Finding
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
	// stuckAfter is how long a job may wait to start before the wait is its failure.
	stuckAfter time.Duration
}

func (a *analyzer) add(f *Finding) { a.findings = append(a.findings, f) }

func (a *analyzer) warnf(format string, args ...any) {
	a.res.Warnings = append(a.res.Warnings, fmt.Sprintf(format, args...))
}

// scanLogs scans every log once, in parallel (logs are independent streams), building the
// index in the same pass. Results are merged in bundle order so the output does not depend on
// scheduling; evidence context is read back through the index.
func (a *analyzer) scanLogs(ctx context.Context, opts Options) error {
	logs := a.m.Logs
	a.logsFor = map[string]bool{}
	scanners := make([]*logScanner, len(logs))
	// A log's scratch space and shape memos serve its scan only: 200,000 logs do not keep
	// 200,000 of them.
	scratch := sync.Pool{New: func() any { return a.rs.NewScratch() }}
	ix, stats, err := index.Build(ctx, a.m.Bundle, logs, index.BuildOptions{
		Cache: opts.Cache, Version: opts.Version, Workers: opts.Workers, Progress: opts.Progress, Log: opts.Log,
		Visit: func(i int) func(*logscan.Scanned) {
			scanners[i] = newLogScanner(logs[i], a.rs, scratch.Get().(*Scratch))
			return scanners[i].visit
		},
		Scanned: func(i int) {
			if s := scanners[i]; s != nil {
				s.terminal = terminalOf(&s.tail, s.ls.Path, s.ls.Pod, s.ls.Container)
				s.tail = tailBuf{}
				scratch.Put(s.release())
			}
		},
	})
	if err != nil {
		return fmt.Errorf("indexing the logs: %w", err)
	}
	a.res.Index = ix
	for i, st := range stats {
		ls := logs[i]
		a.logsFor[ls.Pod+"/"+ls.Container] = true
		a.logsFor[ls.Pod] = true
		if st.Err != nil {
			a.warnf("%s: %v (the rest of the log was not read)", ls.Path, st.Err)
		}
		if st.LongLines > 0 {
			a.warnf("%s: %d line(s) longer than the line length limit of %d bytes were cut", ls.Path, st.LongLines, a.m.Bundle.Limits.MaxLineBytes)
		}
		a.procs = append(a.procs, scanners[i].finish(st)...)
		if tf := scanners[i].terminal; tf != nil {
			a.terminals = append(a.terminals, tf)
		}
		for _, tf := range scanners[i].facts {
			a.textFacts = append(a.textFacts, loggedFact{textFact: tf, ls: ls})
		}
		found := scanners[i].findings
		a.res.Logs = append(a.res.Logs, LogSummary{
			Path: ls.Path, Pod: ls.Pod, Container: ls.Container, Previous: ls.Previous, Bytes: st.Bytes,
			Lines: st.Lines, First: timePtr(st.First), Last: timePtr(st.Last), Truncated: ls.Truncated, Findings: len(found),
		})
		for _, f := range found {
			if err := addContext(ix, f); err != nil {
				a.warnf("%s: context lines: %v", ls.Path, err)
			}
			a.add(f)
		}
	}
	return nil
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
