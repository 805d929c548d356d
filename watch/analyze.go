package watch

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/outfile"
	"github.com/coroner-dev/coroner/parse"
	"github.com/coroner-dev/coroner/report"
)

// Analyze runs the same analysis as `coroner analyze` on a bundle (open, parse.Load,
// analyze.Run, report.Build). The index of the logs is private and removed before it
// returns: nothing is left in a cache. stuckAfter is how long a job may wait to start before
// the wait is its failure (analyze.Options.StuckAfter): the watcher passes its own
// --pending-after, the wait it already judged too long, so that a job it collected for
// pending is diagnosed by the same measure.
func Analyze(ctx context.Context, path string, rules *analyze.RuleSet, lim bundle.Limits, stuckAfter time.Duration, version string) (*report.Report, error) {
	if rules == nil {
		return nil, fmt.Errorf("analyzing %s: no rule set", path)
	}
	b, err := bundle.Open(ctx, path, lim)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	m, err := parse.Load(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Source, err)
	}
	res, err := analyze.Run(ctx, m, analyze.Options{Rules: rules, Workers: 1, Version: version, StuckAfter: stuckAfter})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Source, err)
	}
	defer res.Index.Close()
	return report.Build(m, res, version), nil
}

// builtinRules compiles coroner's own rules.
func builtinRules() (*analyze.RuleSet, error) {
	rs, err := analyze.DefaultRules()
	if err != nil {
		return nil, err
	}
	return analyze.NewRuleSet(rs)
}

// writeReports renders the report as HTML and JSON beside the bundle, each written to a
// temporary file and renamed.
func writeReports(rep *report.Report, p paths) error {
	for _, f := range [][2]string{{"html", p.html}, {"json", p.json}} {
		var buf bytes.Buffer
		if err := report.Render(&buf, rep, f[0]); err != nil {
			return fmt.Errorf("rendering the %s report: %w", f[0], err)
		}
		if err := outfile.WriteFile(f[1], buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
