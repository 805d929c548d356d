package diagnose

import (
	"context"
	"errors"
	"fmt"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

// scan reads every log of the model once, one log per worker (logscan.ScanAll), with two
// visitors of that one read: the index's, which builds the index of the logs for searches
// and evidence context (none when the cache holds it already), and the rules', then
// visitors. It returns the rules' visitor, the index still to be finished (the caller
// finishes or abandons it) and the scan's stats.
func scan(ctx context.Context, m *parse.Model, rs *analyze.RuleSet, visitors []logscan.Visitor, opts Options) (*analyze.Scan, *pendingIndex, []logscan.Stats, error) {
	b := m.Bundle
	bd, err := index.Prepare(ctx, b, m.Logs, index.BuildOptions{Cache: opts.Cache, Version: opts.Version,
		Workers: opts.Workers, Progress: opts.Progress, Log: opts.Log})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("indexing the logs: %w", err)
	}
	rules := analyze.NewScan(m.Logs, rs)
	stats, err := logscan.ScanAll(ctx, b.FS, m.Logs, bd.ScanOptions(logscan.AllOptions{
		Progress: opts.Progress, Visitors: append([]logscan.Visitor{rules}, visitors...)}))
	if err != nil || stats == nil {
		// A failed scan is the index's to report (and clean up); a scan without stats takes
		// the cached index's.
		ix, stats, err := bd.Finish(ctx, stats, err)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("indexing the logs: %w", err)
		}
		return rules, &pendingIndex{ix: ix}, stats, nil
	}
	return rules, &pendingIndex{bd: bd, stats: stats}, stats, nil
}

// pendingIndex is the index of a scan, written and opened only when the analysis and the
// report are made: its opened heads (about 500 bytes a log, 100 MB at 200,000 logs) would be
// live through the analysis, which allocates the most, for the few windows the report
// reads back at its end.
type pendingIndex struct {
	bd    *index.Builder
	stats []logscan.Stats
	ix    *index.Index
}

// errAbandoned ends a pending index whose diagnosis failed.
var errAbandoned = errors.New("diagnosis abandoned")

// finish writes and opens the index (a cached one is open already): the caller closes it.
func (p *pendingIndex) finish(ctx context.Context) (*index.Index, error) {
	if p.bd != nil {
		ix, _, err := p.bd.Finish(ctx, p.stats, nil)
		p.bd = nil
		if err != nil {
			return nil, fmt.Errorf("indexing the logs: %w", err)
		}
		p.ix = ix
	}
	ix := p.ix
	p.ix = nil
	return ix, nil
}

// abandon releases an index that was not finished (and removes a private one). Its context
// is cancelled: an abandoned build is not a cache that cannot be written, which Finish would
// answer by indexing the logs again privately.
func (p *pendingIndex) abandon() {
	if p.bd != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if ix, _, _ := p.bd.Finish(ctx, nil, errAbandoned); ix != nil {
			ix.Close()
		}
		p.bd = nil
	}
	if p.ix != nil {
		p.ix.Close()
		p.ix = nil
	}
}
