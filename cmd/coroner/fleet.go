package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/report"
	"github.com/coroner-dev/coroner/store"
)

// NewCmdFleet builds `coroner fleet`: what the fleet store says about many jobs.
func NewCmdFleet(io *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Read the fleet store: what keeps killing the cluster's jobs",
		Long: `Read the fleet store that 'coroner analyze --store' and 'coroner watch --store' fill
(docs/fleet.md): the weekly report of what failed, and its documented views.`,
	}
	cmd.AddCommand(newCmdFleetQuery(io), newCmdFleetReport(io), newCmdFleetReanalyze(io), newCmdFleetPromote(io), newCmdFleetSeed(io))
	return cmd
}

// FleetQueryOptions are those of `coroner fleet query`.
type FleetQueryOptions struct {
	Store  string
	View   string
	Since  string
	Limit  int
	Format string
	Now    func() time.Time
}

func newCmdFleetQuery(io *IOStreams) *cobra.Command {
	opts := &FleetQueryOptions{Now: time.Now}
	cmd := &cobra.Command{
		Use:   "query [VIEW]",
		Short: "Print one of the fleet store's views (without VIEW: list them)",
		Long: `Print one of the fleet store's documented views (docs/fleet.md) as a table, CSV or JSON, ordered
by its columns. --since keeps the rows of views that say when (their "at" column) from that
long ago on. Without VIEW the views are listed. Grafana and psql read the same views.`,
		Example: `  coroner fleet query --store postgres://coroner@db/fleet
  coroner fleet query fleet_causes --store postgres://coroner@db/fleet
  coroner fleet query fleet_interruptions --since 7d --format csv > week.csv`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.View = args[0]
			}
			return runFleetQuery(cmd, opts, io)
		},
	}
	f := cmd.Flags()
	addStoreURLFlag(cmd, &opts.Store, "the fleet store's `URL` (postgres://user@host/db)")
	f.StringVar(&opts.Since, "since", "", "keep rows from this long ago on (`AGE`: 30d, 12h, 2w; default: all)")
	f.IntVar(&opts.Limit, "limit", 0, "print at most `N` rows (0: all)")
	f.StringVar(&opts.Format, "format", "table", "table, csv or json")
	return cmd
}

func runFleetQuery(cmd *cobra.Command, opts *FleetQueryOptions, io *IOStreams) error {
	if opts.Format != "table" && opts.Format != "csv" && opts.Format != "json" {
		return flagErrorf("unknown --format %q (use table, csv or json)", opts.Format)
	}
	var since time.Time
	if opts.Since != "" {
		age, err := parseAge(opts.Since)
		if err != nil {
			return flagErrorf("--since: %v", err)
		}
		since = opts.Now().Add(-age)
	}
	ctx := cmd.Context()
	s, err := openStore(ctx, opts.Store)
	if err != nil {
		return err
	}
	defer s.Close()
	if opts.View == "" {
		views, err := s.Views(ctx)
		if err != nil {
			return err
		}
		if len(views) == 0 {
			return storeError(&store.SchemaError{Where: s.String(), Want: 1})
		}
		for _, v := range views {
			fmt.Fprintln(io.Out, v)
		}
		return nil
	}
	t, err := s.Query(ctx, opts.View, since, opts.Limit)
	var uv *store.UnknownViewError
	if errors.As(err, &uv) {
		return &FlagError{err}
	}
	if err != nil {
		return err
	}
	return writeTable(io.Out, t, opts.Format)
}

// writeTable prints a table as text columns, CSV or JSON. Text from the store came from
// bundles: the columns are made terminal-safe.
func writeTable(w io.Writer, t *store.Table, format string) error {
	switch format {
	case "json":
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(t)
	case "csv":
		c := csv.NewWriter(w)
		if err := c.Write(t.Columns); err != nil {
			return err
		}
		if err := c.WriteAll(t.Rows); err != nil {
			return err
		}
		c.Flush()
		return c.Error()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.Columns, "\t"))
	for _, r := range t.Rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = strings.ReplaceAll(report.TerminalSafe(c), "\t", " ")
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// parseAge reads an age: a Go duration ("36h", "90m") or a count of days or weeks ("30d", "2w").
func parseAge(s string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.Atoi(n)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("%q is not an age such as 30d, 2w or 12h", s)
			}
			return time.Duration(v) * unit, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age such as 30d, 2w or 12h", s)
	}
	return d, nil
}
