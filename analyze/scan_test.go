package analyze

import (
	"context"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

// scanWith reads logs once as package diagnose does, the index's visitor beside visitors, and
// returns the index and the scan's stats.
func scanWith(ctx context.Context, b *bundle.Bundle, logs []bundle.LogStream, opts index.BuildOptions, visitors ...logscan.Visitor) (*index.Index, []logscan.Stats, error) {
	bd, err := index.Prepare(ctx, b, logs, opts)
	if err != nil {
		return nil, nil, err
	}
	stats, err := logscan.ScanAll(ctx, b.FS, logs, bd.ScanOptions(logscan.AllOptions{Workers: opts.Workers, Visitors: visitors}))
	return bd.Finish(ctx, stats, err)
}

// windowLines reads evidence context back through an index.
func windowLines(ix *index.Index) Lines {
	return func(path string, line, before, after int) ([]ContextLine, error) {
		lines, err := ix.Window(path, line, before, after)
		out := make([]ContextLine, len(lines))
		for i, l := range lines {
			out[i] = ContextLine{Line: l.Number, Text: l.Text}
		}
		return out, err
	}
}

// analyzeModel scans m's logs with the rules and the index in one read and analyses them, as
// package diagnose does. The caller closes the index.
func analyzeModel(ctx context.Context, m *parse.Model, rs *RuleSet, opts index.BuildOptions, aopts Options) (*Result, *index.Index, error) {
	sc := NewScan(m.Logs, rs)
	ix, stats, err := scanWith(ctx, m.Bundle, m.Logs, opts, sc)
	if err != nil {
		return nil, nil, err
	}
	aopts.Lines = windowLines(ix)
	res, err := Run(m, sc, stats, aopts)
	if err != nil {
		ix.Close()
		return nil, nil, err
	}
	return res, ix, nil
}
