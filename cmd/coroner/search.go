package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/parse"
	"github.com/coroner-dev/coroner/report"
)

// SearchOptions hold everything a search needs; tests build them directly.
type SearchOptions struct {
	Bundle     string
	Query      string
	Regex      string
	Pods       []string
	Containers []string
	Since      string
	Until      string
	Context    int
	All        bool
	Limit      int
	Output     string
	Cache      CacheOptions
	Limits     bundle.Limits
	Workers    int
}

// CacheOptions say where indexes are kept.
type CacheOptions struct {
	Dir     string
	NoCache bool
}

// NewCmdSearch builds `coroner search`. runF replaces the run function in tests.
func NewCmdSearch(io *IOStreams, runF func(*SearchOptions) error) *cobra.Command {
	opts := &SearchOptions{Limits: bundle.DefaultLimits()}
	cmd := &cobra.Command{
		Use:   "search BUNDLE [QUERY]",
		Short: "Search a bundle's logs",
		Long: `Search every log line of a bundle. The first search (or analyze) of a bundle indexes its logs
and keeps the index in a cache keyed by the logs' content, so later searches answer at once.

A query finds whole words, in any case; words side by side are all required:
  NCCL timeout              lines with both words (as NCCL AND timeout)
  "out of memory"           the words in sequence
  nccl OR gloo, -info, NOT info, ( ... ), word*
  pod:*worker-3 container:pytorch level:error rank:5
A number finds exactly that number ("step 48120"). --regex matches a Go regular expression
against each line instead.

Hits are sorted by time across all pods (lines without a time come last, in file order), as
POD/CONTAINER:LINE TIME TEXT. When a query hits a line repeated many times in a log, it is shown
once with its count and time span; --all lists every line.
`,
		Example: `  coroner search bundle.tar.gz 'NCCL AND timeout'
  coroner search bundle 'out of memory' --pod 'worker-*' --container pytorch --since 10:02 --until 10:05 -C 3
  coroner search bundle --regex 'loss[=:] *nan'
  coroner search bundle 'step 48120' --output json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Bundle = args[0]
			if len(args) == 2 {
				opts.Query = args[1]
			}
			if (opts.Query == "") == (opts.Regex == "") {
				return flagErrorf("give a QUERY or --regex (one of them)")
			}
			if runF != nil {
				return runF(opts)
			}
			return runSearch(cmd.Context(), opts, io)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Regex, "regex", "", "match this Go regular `EXPR` against each line instead of a query")
	f.StringArrayVar(&opts.Pods, "pod", nil, "only pods matching this `GLOB` (repeatable)")
	f.StringArrayVar(&opts.Containers, "container", nil, "only containers matching this `GLOB` (repeatable)")
	f.StringVar(&opts.Since, "since", "", "only lines at or after `TIME` (RFC 3339, \"2006-01-02 15:04[:05]\" or \"15:04[:05]\" on the logs' first day, UTC)")
	f.StringVar(&opts.Until, "until", "", "only lines at or before `TIME` (as --since)")
	f.IntVarP(&opts.Context, "context", "C", 0, "show `N` lines before and after each hit")
	f.BoolVar(&opts.All, "all", false, "list every matching line instead of counting repeated ones")
	f.IntVar(&opts.Limit, "limit", index.DefaultLimit, "show at most `N` hits")
	f.StringVar(&opts.Output, "output", "text", "output format: text or json")
	f.IntVar(&opts.Workers, "workers", 0, "logs indexed at once (default: one per CPU)")
	addCacheFlags(cmd, &opts.Cache)
	addLimitFlags(cmd, &opts.Limits)
	return cmd
}

func addCacheFlags(cmd *cobra.Command, c *CacheOptions) {
	f := cmd.Flags()
	f.StringVar(&c.Dir, "cache-dir", "", "keep log indexes in `DIR` (default $XDG_CACHE_HOME/coroner/index)")
	f.BoolVar(&c.NoCache, "no-cache", false, "build a private index and remove it afterwards")
}

// cache resolves the cache options: the only place that reads the environment for them.
func (c CacheOptions) cache() (*index.Cache, error) {
	if c.NoCache {
		return nil, nil
	}
	dir := c.Dir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no cache directory (%v): use --cache-dir or --no-cache", err)
		}
		dir = filepath.Join(base, "coroner", "index")
	}
	return &index.Cache{Dir: dir}, nil
}

func runSearch(ctx context.Context, opts *SearchOptions, io *IOStreams) error {
	if opts.Output != "text" && opts.Output != "json" {
		return flagErrorf("unknown --output %q (use text or json)", opts.Output)
	}
	if opts.Context < 0 || opts.Limit < 1 {
		return flagErrorf("--context must be 0 or more and --limit 1 or more")
	}
	cache, err := opts.Cache.cache()
	if err != nil {
		return err
	}
	if !bundle.IsBundlePath(opts.Bundle) {
		if _, err := os.Stat(opts.Bundle); err != nil {
			return err
		}
		return fmt.Errorf("%s: not a bundle (a directory or a .tar.gz)", opts.Bundle)
	}
	b, err := bundle.Open(ctx, opts.Bundle, opts.Limits)
	if err != nil {
		return err
	}
	defer b.Close()
	logs, _ := parse.LogStreams(b)
	if len(logs) == 0 {
		return fmt.Errorf("%s: the bundle holds no logs", opts.Bundle)
	}
	var progress func(int, int, int64)
	if io.IsTerminal {
		progress = func(done, total int, n int64) {
			fmt.Fprintf(io.ErrOut, "\rindexing logs: %d/%d (%s)", done, total, humanBytes(n))
			if done == total {
				fmt.Fprint(io.ErrOut, "\r\033[K")
			}
		}
	}
	ix, _, err := index.Build(ctx, b, logs, index.BuildOptions{Cache: cache, Version: version, Workers: opts.Workers,
		Progress: progress, Log: func(format string, args ...any) {
			fmt.Fprintf(io.ErrOut, "coroner: %s\n", report.TerminalSafe(fmt.Sprintf(format, args...)))
		}})
	if err != nil {
		return fmt.Errorf("%s: indexing the logs: %w", opts.Bundle, err)
	}
	defer ix.Close()
	so := index.SearchOptions{Query: opts.Query, Regex: opts.Regex, Pods: opts.Pods, Containers: opts.Containers,
		All: opts.All, Limit: opts.Limit, Context: opts.Context}
	first := firstTime(ix)
	if so.Since, err = parseWhen(opts.Since, first); err != nil {
		return flagErrorf("--since: %v", err)
	}
	from := first
	if !so.Since.IsZero() {
		from = so.Since
	}
	if so.Until, err = parseWhen(opts.Until, from); err != nil {
		return flagErrorf("--until: %v", err)
	}
	res, err := ix.Search(ctx, so)
	var qe *index.QueryError
	if errors.As(err, &qe) {
		return &FlagError{err}
	}
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(res)
	}
	return printHits(io.Out, res, opts.Context > 0)
}

// firstTime is the earliest timestamp of the bundle's logs: "10:02" means 10:02 of that day.
func firstTime(ix *index.Index) time.Time {
	var first int64
	for _, s := range ix.Streams() {
		if s.First != 0 && (first == 0 || s.First < first) {
			first = s.First
		}
	}
	if first == 0 {
		return time.Time{}
	}
	return time.Unix(0, first).UTC()
}

// parseWhen reads a time: RFC 3339, a date and time, or a time of day, which means its first
// occurrence at or after from (times are UTC, as kubelet timestamps are).
func parseWhen(s string, from time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if c, err := time.Parse(layout, s); err == nil {
			if from.IsZero() {
				return time.Time{}, fmt.Errorf("%q is a time of day, but the logs have no timestamps to give it a date", s)
			}
			t := time.Date(from.Year(), from.Month(), from.Day(), c.Hour(), c.Minute(), c.Second(), 0, time.UTC)
			if t.Before(from.Truncate(time.Minute)) {
				t = t.AddDate(0, 0, 1)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read %q as a time (use 2006-01-02T15:04:05Z, \"2006-01-02 15:04\" or 15:04)", s)
}

// printHits writes hits as POD/CONTAINER:LINE TIME TEXT, context lines with "-" for ":", and
// a count line under a repeated one. Text from the bundle is made safe for a terminal.
func printHits(w io.Writer, res *index.Result, context bool) error {
	for i, h := range res.Hits {
		if context && i > 0 {
			fmt.Fprintln(w, "--")
		}
		for _, l := range h.Before {
			printLine(w, l, '-')
		}
		printLine(w, h.Line, ':')
		if h.Count > 1 {
			fmt.Fprintf(w, "    … this line %s times in %s, lines %s–%s%s\n", commas(h.Count), where(h.Line),
				commas(h.Number), commas(h.LastLine), span(h.Time, h.LastTime))
		}
		for _, l := range h.After {
			printLine(w, l, '-')
		}
	}
	if res.Omitted > 0 {
		fmt.Fprintf(w, "… %s more hits not shown (--limit)\n", commas(res.Omitted))
	}
	_, err := fmt.Fprintf(w, "%s matching %s, %d %s shown\n", commas(res.Lines), plural(res.Lines, "line", "lines"), len(res.Hits), plural(len(res.Hits), "hit", "hits"))
	return err
}

func printLine(w io.Writer, l index.Line, sep byte) {
	ts := "-"
	if l.Time != nil {
		ts = l.Time.Format("2006-01-02T15:04:05.000Z")
	}
	fmt.Fprintf(w, "%s%c%d %s %s\n", where(l), sep, l.Number, ts, terminalSafe(l.Text))
}

func where(l index.Line) string {
	c := l.Container
	if l.Previous {
		c += ".previous"
	}
	return report.TerminalSafe(l.Pod + "/" + c)
}

func span(a, b *time.Time) string {
	if a == nil || b == nil {
		return ""
	}
	return ", between " + a.Format("15:04:05") + " and " + b.Format("15:04:05")
}

// terminalSafe replaces control characters (a log may hold any) so that printing a line
// cannot move the cursor or change the terminal.
func terminalSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
