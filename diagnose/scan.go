package diagnose

import (
	"context"
	"fmt"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

// scan reads every log of the model once, one log per worker (logscan.ScanAll), with two
// visitors of that one read: the index's, which builds the index of the logs for searches
// and evidence context (none when the cache holds it already), and the rules', then
// visitors. It returns
// the rules' visitor, the index (the caller closes it) and the scan's stats.
func scan(ctx context.Context, m *parse.Model, rs *analyze.RuleSet, visitors []logscan.Visitor, opts Options) (*analyze.Scan, *index.Index, []logscan.Stats, error) {
	b := m.Bundle
	bd, err := index.Prepare(ctx, b, m.Logs, index.BuildOptions{Cache: opts.Cache, Version: opts.Version,
		Workers: opts.Workers, Progress: opts.Progress, Log: opts.Log})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("indexing the logs: %w", err)
	}
	rules := analyze.NewScan(m.Logs, rs)
	stats, err := logscan.ScanAll(ctx, b.FS, m.Logs, bd.ScanOptions(logscan.AllOptions{
		Progress: opts.Progress, Visitors: append([]logscan.Visitor{rules}, visitors...)}))
	ix, stats, err := bd.Finish(ctx, stats, err)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("indexing the logs: %w", err)
	}
	return rules, ix, stats, nil
}
