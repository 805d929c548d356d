// Package diagnose is coroner's one pipeline from an input to a report: open the bundle or
// logs, parse them into a model, read the logs once (package logscan) with two visitors, the
// index builder and the rules, analyse, build the report and redact its text. `coroner analyze`, `coroner watch` and every command
// that shows a diagnosis call Run; they keep their flags, streams and exit codes, and nothing
// of how a diagnosis is made.
package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
	"github.com/coroner-dev/coroner/report"
)

// Input is what to diagnose: one bundle (a directory or a .tar.gz) or plain log files, "-"
// for Stdin.
type Input struct {
	Paths []string
	Stdin io.Reader
}

// Options tune a diagnosis.
type Options struct {
	// Rules is the compiled rule set. When nil, LoadRules is called while the input is read
	// (the two are independent and both come before the scan).
	Rules     *analyze.RuleSet
	LoadRules func() (*analyze.RuleSet, error)
	// Limits bound what is read from the input.
	Limits bundle.Limits
	// Workers is how many logs are scanned at once; 0 means one per CPU.
	Workers int
	// Cache keeps the index of the logs for later searches; nil builds a private index that
	// Close removes.
	Cache *index.Cache
	// Version is coroner's version, in the report and the index cache key.
	Version string
	// StuckAfter is how long a job that has not failed may wait to start before the wait is
	// its failure (analyze.Options.StuckAfter: 0 is the default, negative no wait at all).
	StuckAfter time.Duration
	// Progress, when set, hears after each log is scanned; Log about the index cache.
	Progress func(done, total int, bytes int64)
	Log      func(format string, args ...any)
	// KeepSecrets leaves the report's text as the input has it. By default it is redacted as
	// `coroner redact` redacts a bundle, with RedactRules added to the built-in rules.
	KeepSecrets bool
	RedactRules []redact.Rule
	// RedactHint ends the report's warning about masked secrets (how to see them, in the
	// caller's words); empty says nothing more.
	RedactHint string
	// Visitors see every log line in the same one scan as the rules and the index (package
	// compare's progress curves): a front end that needs more of the logs than the report
	// says adds a visitor instead of reading them again.
	Visitors []logscan.Visitor
}

// BuiltinRules is coroner's own rules, compiled once a process.
func BuiltinRules() (*analyze.RuleSet, error) {
	return analyze.BuiltinRuleSet()
}

// DefaultOptions are the options of `coroner analyze` without flags: the built-in rules
// (compiled while the input is read), the default limits and stuck threshold, the report
// redacted. The caller sets Version and what else it has.
func DefaultOptions() Options {
	return Options{LoadRules: BuiltinRules, Limits: bundle.DefaultLimits(), StuckAfter: analyze.DefaultStuckAfter}
}

// Diagnosis is a finished diagnosis. Close releases the input and the index.
type Diagnosis struct {
	// Bundle is the opened input, Model what was parsed of it.
	Bundle *bundle.Bundle
	Model  *parse.Model
	// Result is the analysis, without its findings and timeline: the report holds what it
	// shows of them.
	Result *analyze.Result
	// Index is the index of the logs, built in the scan that ran the rules (or taken from
	// the cache): it answers searches and context windows until Close.
	Index *index.Index
	// Report is the report, its text redacted unless Options.KeepSecrets.
	Report *report.Report
	// Masked is how many secrets the report's redaction masked.
	Masked int
}

// Close releases the index and the input.
func (d *Diagnosis) Close() error {
	var errs []error
	if d.Index != nil {
		errs = append(errs, d.Index.Close())
	}
	if d.Bundle != nil {
		errs = append(errs, d.Bundle.Close())
	}
	return errors.Join(errs...)
}

// collectOver is the live heap (at the last collection) over which the end of a stage of Run
// is worth a collection of its own. Each stage lets go of most of what it allocated (the
// scan its per-log state, analyze.Run its scratch, the report the analysis's findings and
// timeline), but the collector's goal is twice the live heap it last marked, so the next
// stage allocates on top of the last one's garbage and the heap's high is that sum: at
// 16,384 ranks the index's writing and the report's rendering ended 80 MB above the live
// heap, at 200,000 files analyze.Run and report.Build over 200 MB. A collection at each end
// costs a mark of the live heap (tens of milliseconds against seconds of such a diagnosis);
// under the bound (4,096 ranks is about 40 MB) the heap is small and is left to the pacer.
// The bound is on what this diagnosis added to the live heap, not the process's whole heap:
// a caller holding other diagnoses (the MCP server, diff, watch) must not pay a mark of its
// own heap for a small bundle.
const collectOver = 64 << 20

// liveHeap is the live heap the last collection marked, 0 when the runtime cannot say.
func liveHeap() uint64 {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	if live[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return live[0].Value.Uint64()
}

// collectLarge collects when the live heap has grown by collectOver since start, the live
// heap when Run began (see collectOver).
func collectLarge(start uint64) {
	if liveHeap() >= start+collectOver {
		runtime.GC()
	}
}

// Run diagnoses in. Plain logs in which no line was read are an error: there was nothing to
// diagnose. On error nothing is left open.
func Run(ctx context.Context, in Input, opts Options) (_ *Diagnosis, err error) {
	heapAtStart := liveHeap()
	type loaded struct {
		rs  *analyze.RuleSet
		err error
	}
	rules := make(chan loaded, 1)
	switch {
	case opts.Rules != nil:
		rules <- loaded{rs: opts.Rules}
	case opts.LoadRules != nil:
		go func() {
			rs, err := opts.LoadRules()
			rules <- loaded{rs, err}
		}()
	default:
		return nil, errors.New("diagnose: no rule set")
	}
	d := &Diagnosis{}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	b, err := Open(ctx, in.Paths, in.Stdin, opts.Limits)
	if err == nil {
		d.Bundle = b
		if d.Model, err = parse.Load(b); err != nil {
			err = fmt.Errorf("%s: %w", b.Source, err)
		}
	}
	rs := <-rules
	if rs.err != nil {
		return nil, rs.err
	}
	if err != nil {
		return nil, err
	}
	// The report's redaction: its rules, with a throwaway key (see redactReport), and a
	// visitor of the scan that finds the lines a secret of several lines may begin at.
	var probe *redact.Redactor
	var carry *Carry
	visitors := opts.Visitors
	if !opts.KeepSecrets {
		if probe, err = redact.New(redact.Options{Extra: opts.RedactRules}); err != nil {
			return nil, err
		}
		carry = NewCarry(probe, d.Model.Logs)
		visitors = append([]logscan.Visitor{carry}, visitors...)
	}
	sc, pending, stats, err := scan(ctx, d.Model, rs.rs, visitors, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Source, err)
	}
	defer pending.abandon() // nothing once finished
	collectLarge(heapAtStart)
	later := newLaterContext()
	d.Result, err = analyze.Run(d.Model, sc, stats, analyze.Options{Lines: later.record, StuckAfter: opts.StuckAfter})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Source, err)
	}
	collectLarge(heapAtStart)
	d.Report = report.Build(d.Model, d.Result, opts.Version)
	// The report holds what it shows of the findings and the timeline: the analysis's own
	// (a finding and timeline entries a container, 140 MB at 200,000 containers) are let go
	// before the index is written and opened (see pendingIndex), as nothing reads them after.
	kept := *d.Result
	kept.Findings, kept.Timeline = nil, nil
	d.Result = &kept
	collectLarge(heapAtStart)
	if d.Index, err = pending.finish(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", b.Source, err)
	}
	later.fill(d.Index, d.Report)
	if b.Plain && d.Report.Bundle.LogLines == 0 && len(d.Model.FlightRecords) == 0 && len(d.Model.Objects) == 0 {
		return nil, fmt.Errorf("%s: 0 lines read: expected log lines, or a bundle (a directory or .tar.gz made by coroner collect)", InputName(in.Paths))
	}
	if !opts.KeepSecrets {
		if d.Masked, err = redactReport(ctx, d.Report, b, &WindowMasker{Index: d.Index, Carry: carry}, probe, opts.RedactRules, opts.RedactHint); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// redactReport masks the secrets of the report's text (report.Redact), each evidence window as
// one text read with the lines above it. The tokens' key is the bundle's digest: the same
// bundle gives the same report, and a reader of the report cannot test guesses of a masked
// value. Most reports hold no secret: a first pass with a throwaway key finds out before the
// bundle is hashed. A warning says how many were masked.
func redactReport(ctx context.Context, rep *report.Report, b *bundle.Bundle, windows *WindowMasker, probe *redact.Redactor, extra []redact.Rule, hint string) (int, error) {
	found := false
	rep.RedactWindows(func(lines []string) []string {
		for _, l := range lines {
			found = found || probe.Text(l) != l
		}
		if !found && len(lines) > 1 {
			t := strings.Join(lines, "\n")
			found = probe.Text(t) != t
		}
		return lines
	}, func(e *report.Evidence, lines []string) []string {
		out := windows.Mask(probe, e, lines)
		for i := range lines {
			found = found || out[i] != lines[i]
		}
		return lines
	})
	if windows.Err() != nil || !found {
		return 0, windows.Err()
	}
	key, err := b.Digest(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", b.Source, err)
	}
	red, err := redact.New(redact.Options{Key: key, Extra: extra})
	if err != nil {
		return 0, err
	}
	rep.RedactWindows(func(lines []string) []string { return RedactWindow(red, lines) },
		func(e *report.Evidence, lines []string) []string { return windows.Mask(red, e, lines) })
	if windows.Err() != nil {
		return 0, windows.Err()
	}
	total, byRule := red.Masked()
	w := fmt.Sprintf("%d secret(s) in the report's text were masked (%s)", total, byRule)
	if hint != "" {
		w += "; " + hint
	}
	rep.Warnings = append(rep.Warnings, w)
	return total, nil
}

// RedactWindow redacts the lines of a window as one text (what a line says of the next is
// seen), keeping one line for one.
func RedactWindow(red *redact.Redactor, lines []string) []string {
	out := make([]string, len(lines))
	joined := len(lines) > 1
	for _, l := range lines {
		joined = joined && !strings.Contains(l, "\n")
	}
	if joined {
		if parts := strings.Split(red.Text(strings.Join(lines, "\n")), "\n"); len(parts) == len(lines) {
			return parts
		}
	}
	for i, l := range lines {
		out[i] = red.Text(l)
	}
	return out
}
