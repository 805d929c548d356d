// Package analyze explains a job's failure from its bundle: the spec, control and execution
// layers of DESIGN.md, correlated on one timeline into a verdict and a root cause.
package analyze

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/coroner-dev/coroner/parse"
)

// Verdicts.
const (
	VerdictHealthy   = "healthy"
	VerdictUnhealthy = "unhealthy"
	VerdictUnknown   = "unknown"
)

// Options tune an analysis.
type Options struct {
	Rules *RuleSet
	// Workers is how many logs are scanned at once; 0 means one per CPU.
	Workers int
	// Progress, when set, is called after each log is scanned.
	Progress func(done, total int, bytes int64)
}

// Result is the outcome of an analysis.
type Result struct {
	Verdict string
	// VerdictReason says in one sentence why the verdict is what it is.
	VerdictReason string
	RootCause     *Finding
	// Findings are sorted by time (findings without a time last), ids f1, f2... in that order.
	Findings []*Finding
	Timeline []TimelineEntry
	// Logs summarises each scanned log.
	Logs []LogSummary
	// Warnings are problems met while analysing (unreadable logs, cut lines).
	Warnings []string
}

// LogSummary describes one scanned log.
type LogSummary struct {
	Path      string     `json:"path"`
	Pod       string     `json:"pod"`
	Container string     `json:"container"`
	Previous  bool       `json:"previous,omitempty"`
	Bytes     int64      `json:"bytes"`
	Lines     int        `json:"lines"`
	First     *time.Time `json:"first,omitempty"`
	Last      *time.Time `json:"last,omitempty"`
	Truncated bool       `json:"truncated,omitempty"`
	Findings  int        `json:"findings"`
}

// Run analyses a loaded bundle.
func Run(m *parse.Model, opts Options) *Result {
	a := &analyzer{m: m, rs: opts.Rules, res: &Result{}}
	a.scanLogs(opts)
	a.control()
	a.spec()
	a.correlate()
	a.timeline()
	return a.res
}

type analyzer struct {
	m        *parse.Model
	rs       *RuleSet
	res      *Result
	findings []*Finding
	// logsFor records which pod/containers have logs in the bundle.
	logsFor map[string]bool
	// inJob holds the names of the job's pods (see eventOfJob).
	inJob map[string]bool
}

func (a *analyzer) add(f *Finding) { a.findings = append(a.findings, f) }

func (a *analyzer) warnf(format string, args ...any) {
	a.res.Warnings = append(a.res.Warnings, fmt.Sprintf(format, args...))
}

// scanLogs scans every log once, in parallel: logs are independent streams. Results are
// merged in bundle order so the output does not depend on scheduling.
func (a *analyzer) scanLogs(opts Options) {
	logs := a.m.Logs
	a.logsFor = map[string]bool{}
	results := make([]streamResult, len(logs))
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	var doneBytes int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = scanLog(a.m.Bundle.FS, logs[i], a.rs, a.m.Bundle.Limits.MaxLineBytes)
				if opts.Progress != nil {
					mu.Lock()
					done++
					doneBytes += results[i].bytes
					opts.Progress(done, len(logs), doneBytes)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range logs {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for i, r := range results {
		ls := logs[i]
		a.logsFor[ls.Pod+"/"+ls.Container] = true
		a.logsFor[ls.Pod] = true
		if r.err != nil {
			a.warnf("%s: %v (the rest of the log was not read)", ls.Path, r.err)
		}
		if r.longLines > 0 {
			a.warnf("%s: %d line(s) longer than %d bytes were cut (--max-line-bytes)", ls.Path, r.longLines, a.m.Bundle.Limits.MaxLineBytes)
		}
		a.res.Logs = append(a.res.Logs, LogSummary{
			Path: ls.Path, Pod: ls.Pod, Container: ls.Container, Previous: ls.Previous, Bytes: r.bytes,
			Lines: r.lines, First: r.first, Last: r.last, Truncated: ls.Truncated, Findings: len(r.findings),
		})
		for _, f := range r.findings {
			a.add(f)
		}
	}
}

// sortFindings orders findings by time (none last), then by place, so ids are stable.
func sortFindings(fs []*Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		switch {
		case a.Time != nil && b.Time != nil && !a.Time.Equal(*b.Time):
			return a.Time.Before(*b.Time)
		case (a.Time == nil) != (b.Time == nil):
			return a.Time != nil
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
	})
}
