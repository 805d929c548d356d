package watch

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/internal/outfile"
	"github.com/coroner-dev/coroner/report"
)

// Analyze runs the diagnosis `coroner analyze` runs (diagnose.Run) on a bundle, its report
// redacted the same way. The index of the logs is private and removed before it returns:
// nothing is left in a cache. stuckAfter is how long a job may wait to start before the wait
// is its failure (analyze.Options.StuckAfter): the watcher passes its own --pending-after, the
// wait it already judged too long, so that a job it collected for pending is diagnosed by the
// same measure.
func Analyze(ctx context.Context, path string, rules *analyze.RuleSet, lim bundle.Limits, stuckAfter time.Duration, version string) (*report.Report, error) {
	d, err := diagnoseBundle(ctx, path, rules, lim, stuckAfter, version)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Report, nil
}

// diagnoseBundle is Analyze with the whole diagnosis (for the fleet store); Close it.
func diagnoseBundle(ctx context.Context, path string, rules *analyze.RuleSet, lim bundle.Limits, stuckAfter time.Duration, version string) (*diagnose.Diagnosis, error) {
	if rules == nil {
		return nil, fmt.Errorf("analyzing %s: no rule set", path)
	}
	return diagnose.Run(ctx, diagnose.Input{Paths: []string{path}}, diagnose.Options{
		Rules: rules, Limits: lim, Workers: 1, Version: version, StuckAfter: stuckAfter,
	})
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
