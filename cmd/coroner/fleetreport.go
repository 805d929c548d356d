package main

import (
	"context"
	"fmt"
	goio "io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/fleetreport"
	"github.com/coroner-dev/coroner/internal/fleetseed"
	"github.com/coroner-dev/coroner/report"
	"github.com/coroner-dev/coroner/store"
)

// FleetReportOptions are those of `coroner fleet report`.
type FleetReportOptions struct {
	Store  string
	Since  string
	Until  string
	Top    int
	Trial  string
	Format string
	Output string
	Quiet  bool
	Now    func() time.Time
}

func newCmdFleetReport(io *IOStreams) *cobra.Command {
	opts := &FleetReportOptions{Now: time.Now}
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Report what kept killing the fleet's jobs over a period (HTML, Markdown or JSON)",
		Long: `Count the fleet store's current analyses of a period (docs/fleet.md): interruptions per week by
root cause and by fault, the interruption table (category, count, share, GPU-hours lost), the
nodes to drain (hardware and collective failures, with their Xid codes), failure rates of
clusters, namespaces, job kinds and images, what retries did, and the time from a failure to
its diagnosis. HTML draws its charts as inline SVG: one self-contained file, no script.`,
		Example: `  coroner fleet report --store postgres://coroner@db/fleet -o fleet.html
  coroner fleet report --since 7d --format md
  coroner fleet report --since 90d --until 2026-07-01 --format json > q2.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFleetReport(cmd.Context(), opts, io)
		},
	}
	f := cmd.Flags()
	addStoreURLFlag(cmd, &opts.Store, "the fleet store's `URL` (postgres://user@host/db)")
	f.StringVar(&opts.Since, "since", "30d", "count failures from this long ago on (`AGE`: 30d, 12h, 2w; all: everything)")
	f.StringVar(&opts.Until, "until", "", "count failures before this `TIME` (2026-07-01 or RFC 3339; default: now)")
	f.IntVar(&opts.Top, "top", 20, "list at most `N` nodes, and N of each failure rate's clusters, namespaces, kinds and images")
	f.StringVar(&opts.Trial, "trial", "", "also compare the trial `NAME` (fleet reanalyze) with the current analyses")
	f.StringVar(&opts.Format, "format", "", "html, md or json (default: from -o's extension, else md)")
	f.StringVarP(&opts.Output, "output", "o", "", "write the report to `FILE` (complete or not at all)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "with -o, print nothing")
	return cmd
}

func runFleetReport(ctx context.Context, opts *FleetReportOptions, io *IOStreams) error {
	format := opts.Format
	if format == "" && opts.Output != "" {
		format = report.FormatFromPath(opts.Output)
	}
	if format == "" {
		format = "md"
	}
	if !slices.Contains(fleetreport.Formats, format) {
		return flagErrorf("unknown --format %q (use %s)", format, strings.Join(fleetreport.Formats, ", "))
	}
	if opts.Top <= 0 {
		return flagErrorf("--top must be at least 1")
	}
	until := opts.Now().UTC()
	if opts.Until != "" {
		t, err := parseTime(opts.Until)
		if err != nil {
			return flagErrorf("--until: %v", err)
		}
		until = t
	}
	var since time.Time
	if opts.Since != "all" {
		age, err := parseAge(opts.Since)
		if err != nil {
			return flagErrorf("--since: %v (or all)", err)
		}
		since = until.Add(-age)
	}
	s, err := openStore(ctx, opts.Store)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := s.Report(ctx, store.ReportOptions{Since: since, Until: until, Top: opts.Top})
	if err != nil {
		return storeError(err)
	}
	if opts.Trial != "" {
		if r.Trial, err = s.CompareTrial(ctx, opts.Trial); err != nil {
			return err
		}
	}
	return emitReport(ctx, io, opts.Output, format, opts.Quiet,
		func(w goio.Writer) error { return fleetreport.Render(w, r, format) },
		func(w goio.Writer) error {
			_, err := fmt.Fprintf(w, "Fleet:       %d interruptions of %d job runs, %.0f GPU-hours lost\n",
				r.Totals.Interruptions, r.Totals.Runs, r.Totals.GPUHoursLost)
			return err
		})
}

// parseTime reads a date (UTC midnight) or an RFC 3339 time.
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a date (2026-07-01) nor an RFC 3339 time", s)
	}
	return t.UTC(), nil
}

// newCmdFleetSeed builds the hidden `coroner fleet seed`: synthetic diagnoses (fleetseed) into
// a store, for the report's picture and the sizing of docs/fleet.md. Never on a real store.
func newCmdFleetSeed(io *IOStreams) *cobra.Command {
	var url, start string
	o := fleetseed.Options{}
	var workers int
	cmd := &cobra.Command{
		Use:    "seed",
		Short:  "Fill a fleet store with synthetic diagnoses (for testing and sizing only)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTime(start)
			if err != nil {
				return flagErrorf("--start: %v", err)
			}
			o.Start = t
			ctx := cmd.Context()
			s, err := openStore(ctx, url)
			if err != nil {
				return err
			}
			defer s.Close()
			return seedStore(ctx, s, o, workers, io)
		},
	}
	f := cmd.Flags()
	addStoreURLFlag(cmd, &url, "the fleet store's `URL`")
	f.StringVar(&start, "start", "2025-01-06", "the first `DAY`")
	f.IntVar(&o.Days, "days", 365, "how many `DAYS`")
	f.IntVar(&o.PerDay, "per-day", 100, "job runs a `DAY`")
	f.Uint64Var(&o.Seed, "seed", 1, "the random `SEED`")
	f.IntVar(&o.Clusters, "clusters", 4, "`N` clusters")
	f.IntVar(&workers, "workers", 4, "`N` writers at once")
	return cmd
}

// seedStore writes the generator's analyses with a few writers; the store's keys make the
// result the same whatever their order.
func seedStore(ctx context.Context, s *store.Store, o fleetseed.Options, workers int, io *IOStreams) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *store.Analysis, 64)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		n        int
	)
	for range max(1, workers) {
		wg.Go(func() {
			for a := range work {
				if err := s.Put(ctx, a); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
				}
			}
		})
	}
	began := time.Now()
	err := fleetseed.Generate(o, func(a *store.Analysis) error {
		select {
		case work <- a:
			n++
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(work)
	wg.Wait()
	if firstErr != nil {
		return storeError(firstErr)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "%d analyses written in %s\n", n, time.Since(began).Round(time.Second))
	return nil
}
