package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/coroner-dev/coroner/bucket"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/internal/outfile"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/report"
	"github.com/coroner-dev/coroner/search"
	"github.com/coroner-dev/coroner/search/syntax"
)

// SearchOptions hold everything a search needs; tests build them directly.
type SearchOptions struct {
	// Inputs are what analyze takes: one bundle, or plain log files and "-" for stdin.
	Inputs     []string
	Query      string
	Regex      string
	Pods       []string
	Containers []string
	Since      string
	SinceTime  string
	Until      string
	Context    int
	All        bool
	Limit      int
	// Format is text or json; Output a file to write instead of standard output.
	Format  string
	Output  string
	Color   string
	Cache   CacheOptions
	Limits  bundle.Limits
	Workers int
	// NoRedact prints the lines as the bundle has them, secrets included (local use).
	NoRedact bool
}

// CacheOptions say where indexes are kept.
type CacheOptions struct {
	Dir     string
	NoCache bool
	// Max bounds the cache's size in bytes.
	Max int64
}

// searchFormats are the formats of search's output.
var searchFormats = []string{"text", "json"}

// NewCmdSearch builds `coroner search`. runF replaces the run function in tests.
//
// Its flags are parsed here rather than by cobra, so that a query word starting with "-"
// ("NCCL -info": NOT info) is a word of the query and not an unknown flag.
func NewCmdSearch(io *IOStreams, runF func(*SearchOptions) error) *cobra.Command {
	opts := &SearchOptions{Limits: bundle.DefaultLimits()}
	cmd := &cobra.Command{
		Use:   "search (BUNDLE | LOG... | -) [QUERY...]",
		Short: "Search the logs, events and objects of a bundle, or plain logs",
		Long: `Search every log line of a bundle, its events (one line each, timed like the logs) and the text
of its objects (the resources' YAML); or plain log files, or - for standard input, as analyze
takes them. The first search (or analyze) of a bundle indexes it and keeps the index in a cache
keyed by the content, so later searches answer at once.

The inputs are the leading arguments that name files (or -); the words after them are the
query. A query finds whole words, in any case; words side by side are all required:
  NCCL timeout              lines with both words (as NCCL AND timeout)
  "out of memory"           the words in sequence
  nccl OR gloo, -info, NOT info, ( ... ), word*
  pod:*worker-3 container:pytorch level:error rank:5
A word starting with - is a word of the query (NOT that word), not a flag; a single letter
after - (-n, -l) is taken for a flag search lacks: put it after -- to search for it. A number finds
exactly that number ("step 48120"). level:error finds lines with an error level word,
glog's E0314, tracebacks and exception lines (torch.OutOfMemoryError: ...). --regex matches
a Go regular expression against each line instead.

Hits are sorted by time across all pods (lines without a time come last, in file order), as
POD/CONTAINER:LINE TIME TEXT; a plain log is named by its file, an event or object by its
path in the bundle, and the same object line in many files is one hit. When a query hits a
line repeated many times in a log, it is shown once with its count and time span; --all lists
every line. On a terminal the matched words are highlighted (--color, NO_COLOR).

Secrets in the lines shown are masked as analyze masks its report ([REDACTED:hf-token:1a2b3c4d],
the same token for the same secret of the same bundle); --no-redact shows them.
`,
		Example: `  coroner search bundle.tar.gz NCCL timeout
  coroner search bundle 'out of memory' --pod '*worker-*' --container pytorch --since 10:02 --until 10:05 -C 3
  coroner search bundle NCCL -info                   # NCCL, without the lines that say info
  coroner search bundle --regex 'loss[=:] *nan'
  coroner search bundle 'step 48120' --format json
  coroner search train.log worker-1.log 'CUDA error'
  kubectl logs train-job-worker-4 | coroner search - level:error`,
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			flagArgs, rest, err := splitSearchArgs(f, args)
			if err != nil {
				return &FlagError{err}
			}
			if err := f.Parse(flagArgs); err != nil {
				return &FlagError{err}
			}
			if help, _ := f.GetBool("help"); help {
				return pflag.ErrHelp
			}
			if len(rest) == 0 {
				return flagErrorf("give a bundle, log files or - (standard input), then a QUERY or --regex")
			}
			if opts.SinceTime != "" {
				if opts.Since != "" {
					return flagErrorf("give --since or --since-time, not both")
				}
				if _, err := time.ParseDuration(opts.SinceTime); err == nil {
					return flagErrorf("--since-time %s is a duration: use --since %s", opts.SinceTime, opts.SinceTime)
				}
				opts.Since = opts.SinceTime
			}
			var words []string
			opts.Inputs, words = splitInputs(rest, opts.Regex != "")
			opts.Query = strings.Join(words, " ")
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
	f.StringArrayVar(&opts.Pods, "pod", nil, "only pods matching this `GLOB` (repeatable; it must match a pod)")
	f.StringArrayVarP(&opts.Containers, "container", "c", nil, "only containers matching this `GLOB` (repeatable; it must match a container)")
	f.StringVar(&opts.Since, "since", "", "only lines of the last `DURATION` of the logs (10m, 2h), or at or after a TIME as --since-time reads it")
	f.StringVar(&opts.SinceTime, "since-time", "", "only lines at or after `TIME` (RFC 3339, \"2006-01-02 15:04[:05]\" or \"15:04[:05]\" on the logs' first day, UTC)")
	f.StringVar(&opts.Until, "until", "", "only lines at or before `TIME` (as --since)")
	f.IntVarP(&opts.Context, "context", "C", 0, "show `N` lines before and after each hit")
	f.BoolVar(&opts.All, "all", false, "list every matching line instead of counting repeated ones")
	f.IntVar(&opts.Limit, "limit", index.DefaultLimit, "show at most `N` hits")
	f.StringVar(&opts.Format, "format", "", "output format: text or json (default: from -o, else text)")
	f.StringVarP(&opts.Output, "output", "o", "", "write the hits to `FILE` (format from its extension, .json or .txt, or --format)")
	f.IntVar(&opts.Workers, "workers", 0, "logs indexed at once (default: one per CPU)")
	f.BoolVar(&opts.NoRedact, "no-redact", false, "show secrets in the lines found (for local use; masked by default, as analyze masks them)")
	addColorFlag(cmd, &opts.Color)
	addCacheFlags(cmd, &opts.Cache)
	addLimitFlags(cmd, &opts.Limits)
	return cmd
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// splitSearchArgs separates flags (and their values) from the other arguments. A word that
// starts with "-" and is not one of the command's flags belongs to the query ("-x" is a flag
// when x is a shorthand, "-C3" when C takes a number; "-oom" is a word); "--" ends the flags;
// an unknown "--name" is still an error.
func splitSearchArgs(f *pflag.FlagSet, args []string) (flags, rest []string, err error) {
	needsValue := func(fl *pflag.Flag) bool { return fl.NoOptDefVal == "" }
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(rest, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a[2:], "=")
			fl := f.Lookup(name)
			if fl == nil {
				return nil, nil, fmt.Errorf("unknown flag: --%s", name)
			}
			flags = append(flags, a)
			if !hasValue && needsValue(fl) {
				if i+1 == len(args) {
					return nil, nil, fmt.Errorf("flag needs an argument: --%s", name)
				}
				flags = append(flags, args[i+1])
				i++
			}
		case len(a) >= 2 && a[0] == '-':
			fl := f.ShorthandLookup(a[1:2])
			switch {
			case fl != nil && len(a) == 2:
				flags = append(flags, a)
				if needsValue(fl) {
					if i+1 == len(args) {
						return nil, nil, fmt.Errorf("flag needs an argument: -%s", a[1:2])
					}
					flags = append(flags, args[i+1])
					i++
				}
			case fl != nil && fl.Value.Type() == "int":
				flags = append(flags, a) // -C3; but -oom is a word, not -o om
			case len(a) == 2 && isLetter(a[1]):
				// "-l app=x", "-n ml", "-f": a kubectl or stern habit, not "NOT l".
				return nil, nil, fmt.Errorf("unknown shorthand flag: %q (search has no -%c; a query word that starts with - goes after --: -- %s)", a, a[1], a)
			default:
				rest = append(rest, a) // a query word: -info
			}
		default:
			rest = append(rest, a)
		}
	}
	return flags, rest, nil
}

// splitInputs takes the inputs from the front of the arguments: the first, then, after a
// plain log, every argument that names a file (or is -). The rest is the query. With
// --regex every argument is an input.
func splitInputs(args []string, regex bool) (inputs, query []string) {
	if regex {
		return args, nil
	}
	inputs = args[:1]
	i := 1
	if args[0] == "-" || !bundle.IsBundlePath(args[0]) && !bucket.IsURI(args[0]) {
		for ; i < len(args); i++ {
			if st, err := os.Stat(args[i]); args[i] != "-" && (err != nil || st.IsDir()) {
				break
			}
		}
		inputs = args[:i]
	}
	return inputs, args[i:]
}

func addCacheFlags(cmd *cobra.Command, c *CacheOptions) {
	f := cmd.Flags()
	f.StringVar(&c.Dir, "cache-dir", "", "keep log indexes in `DIR` (default $XDG_CACHE_HOME/coroner/index)")
	f.BoolVar(&c.NoCache, "no-cache", false, "build a private index and remove it afterwards")
	c.Max = index.DefaultCacheMax
	addSizeFlag(cmd, &c.Max, "cache-max", "keep at most this much of indexes, removing the least recently used")
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
	return &index.Cache{Dir: dir, MaxBytes: c.Max}, nil
}

func runSearch(ctx context.Context, opts *SearchOptions, io *IOStreams) error {
	if slices.Contains(searchFormats, opts.Output) {
		return flagErrorf("-o %s would write a file named %q: -o names the output file; the format is --format %s", opts.Output, opts.Output, opts.Output)
	}
	format := opts.Format
	if format == "" && opts.Output != "" {
		switch report.FormatFromPath(opts.Output) {
		case "json":
			format = "json"
		case "text":
			format = "text"
		default:
			return flagErrorf("cannot tell the format of %q from its extension: use --format text|json", opts.Output)
		}
	}
	if format == "" {
		format = "text"
	}
	if !slices.Contains(searchFormats, format) {
		return flagErrorf("unknown --format %q (use text or json)", format)
	}
	if opts.Context < 0 || opts.Limit < 1 {
		return flagErrorf("--context must be 0 or more and --limit 1 or more")
	}
	if opts.Context > index.MaxContext {
		return flagErrorf("--context %d: at most %d lines before and after each hit", opts.Context, index.MaxContext)
	}
	color, err := io.Color(opts.Color)
	if err != nil {
		return err
	}
	deferGC(searchGCBound)
	color = color && opts.Output == "" && format == "text"
	if err := checkOutput("-o", opts.Output, opts.Inputs...); err != nil {
		return err
	}
	cache, err := opts.Cache.cache()
	if err != nil {
		return err
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
	inputs, fetched, err := fetchInputs(ctx, opts.Inputs, opts.Limits) // s3:// bundles
	if err != nil {
		return err
	}
	defer fetched()
	src, err := search.Open(ctx, inputs, io.In, search.Options{Cache: cache, Version: version, Limits: opts.Limits,
		Workers: opts.Workers, Progress: progress, Log: func(format string, args ...any) {
			fmt.Fprintf(io.ErrOut, "coroner: %s\n", report.TerminalSafe(fmt.Sprintf(format, args...)))
		}})
	if err != nil {
		return inputError(err)
	}
	defer src.Close()
	res, err := src.Search(ctx, search.Query{Query: opts.Query, Regex: opts.Regex, Pods: opts.Pods, Containers: opts.Containers,
		Since: opts.Since, Until: opts.Until, Context: opts.Context, All: opts.All, Limit: opts.Limit, NoRedact: opts.NoRedact})
	if err != nil {
		return searchError(err)
	}
	if res.ContextCut {
		fmt.Fprintf(io.ErrOut, "coroner: the context lines reached %s: later hits show fewer or none (lower --context or --limit)\n", humanBytes(index.ContextBudget))
	}
	if res.Masked > 0 {
		fmt.Fprintf(io.ErrOut, "coroner: %d secret(s) in these lines were masked (%s); --no-redact shows them\n", res.Masked, res.MaskedBy)
	}
	var out strings.Builder
	if format == "json" {
		enc := json.NewEncoder(&out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res.Result); err != nil {
			return err
		}
	} else {
		p := hitPrinter{plain: src.Bundle(), objects: res.Objects, context: opts.Context > 0, all: opts.All}
		if color {
			p.highlight = highlighter(opts.Query, opts.Regex)
		}
		p.print(&out, res.Result)
	}
	if opts.Output != "" {
		return outfile.WriteFile(opts.Output, []byte(out.String()))
	}
	_, err = io.Out.Write([]byte(out.String()))
	return err
}

// searchError says a search's errors in the command's words: a query, glob or time that
// cannot be used is bad usage, naming its flag.
func searchError(err error) error {
	var qe *index.QueryError
	var ge *search.GlobError
	var te *search.TimeError
	switch {
	case errors.As(err, &qe):
		return &FlagError{describeQueryError(err)}
	case errors.As(err, &ge) && ge.Bad:
		return flagErrorf("--%s %q: bad pattern", ge.Field, ge.Glob)
	case errors.As(err, &ge):
		return fmt.Errorf("--%s %q matches none of the %s: %s (a glob matches the whole name: try '*%s*')",
			ge.Field, ge.Glob, nThings(len(ge.Names), ge.Field, ge.Field+"s"), report.NameList(ge.Names, 6), strings.Trim(ge.Glob, "*"))
	case errors.As(err, &te):
		return flagErrorf("--%s: %v", te.Bound, te.Err)
	}
	return err
}

// hitPrinter writes hits as NAME:LINE TIME TEXT: a log as POD/CONTAINER, a plain log by its
// file, an event or object by its path. Context lines have "-" for ":", a repeated line a
// count line under it, and one object line found in many files (the same env of 64 pods) is
// shown once with the others named. Text from the bundle is made safe for a terminal.
type hitPrinter struct {
	plain     *bundle.Bundle
	objects   map[string]bool
	context   bool
	all       bool
	highlight func(string) string
}

func (p hitPrinter) name(l index.Line) string {
	if n := p.plain.PlainName(l.Path); n != "" {
		return n
	}
	if p.objects[l.Path] {
		return l.Path
	}
	return where(l)
}

func (p hitPrinter) print(w io.Writer, res *index.Result) {
	hits := res.Hits
	// Fold the same object line in many files.
	also := map[int][]string{}
	if !p.all {
		var kept []index.Hit
		first := map[string]int{}
		for _, h := range hits {
			if p.objects[h.Path] && h.Container != "events" && len(h.Before)+len(h.After) == 0 {
				k := h.Text
				if i, ok := first[k]; ok {
					also[i] = append(also[i], h.Path)
					continue
				}
				first[k] = len(kept)
			}
			kept = append(kept, h)
		}
		hits = kept
	}
	for i, h := range hits {
		if p.context && i > 0 {
			fmt.Fprintln(w, "--")
		}
		for _, l := range h.Before {
			p.line(w, l, '-', false)
		}
		p.line(w, h.Line, ':', true)
		if h.Count > 1 {
			fmt.Fprintf(w, "    … this line %s%s times in %s, lines %s–%s%s\n", atLeast(h.Partial), commas(h.Count), p.name(h.Line),
				commas(h.Number), commas(h.LastLine), span(h.Time, h.LastTime))
		}
		if o := also[i]; len(o) > 0 {
			var files []string
			for _, f := range o {
				if f != h.Path && !slices.Contains(files, f) {
					files = append(files, f)
				}
			}
			where := "in " + h.Path
			if len(files) > 0 {
				where = "in " + nThings(len(files), "other file", "other files") + ": " + diagnose.ListSome(files, 3)
			}
			fmt.Fprintf(w, "    … the same line %s more, %s\n", nThings(len(o), "time", "times"), where)
		}
		for _, l := range h.After {
			p.line(w, l, '-', false)
		}
	}
	if res.Omitted > 0 {
		fmt.Fprintf(w, "… %s%s more hits not shown (--limit)\n", atLeast(res.Partial), commas(res.Omitted))
	}
	fmt.Fprintf(w, "%s%s matching %s, %d %s shown\n", atLeast(res.Partial), commas(res.Lines), pluralWord(res.Lines, "line", "lines"), len(res.Hits), pluralWord(len(res.Hits), "hit", "hits"))
	if res.Partial {
		fmt.Fprintln(w, "(the search stopped once these hits were found; --all reads every line and counts them all)")
	}
}

// atLeast marks a count that is a lower bound (a search that stopped early).
func atLeast(partial bool) string {
	if partial {
		return "at least "
	}
	return ""
}

func (p hitPrinter) line(w io.Writer, l index.Line, sep byte, hit bool) {
	ts := "-"
	if l.Time != nil {
		ts = l.Time.Format("2006-01-02T15:04:05.000Z")
	}
	text := report.TerminalSafe(l.Text)
	if hit && p.highlight != nil {
		text = p.highlight(text)
	}
	fmt.Fprintf(w, "%s%c%d %s %s\n", p.name(l), sep, l.Number, ts, text)
}

// highlighter marks what a query or regex matched in a line, for a terminal: the query's
// terms (syntax.TermsOf: not what it excludes, nor field clauses) as whole words in any case,
// a prefix's words, or the regex's matches.
func highlighter(query, regex string) func(string) string {
	on := func(s string) string { return "\x1b[1;30;43m" + s + "\x1b[0m" }
	if regex != "" {
		re, err := regexp.Compile(regex)
		if err != nil {
			return nil
		}
		return func(s string) string { return re.ReplaceAllStringFunc(s, on) }
	}
	n, err := syntax.Parse(query)
	if err != nil {
		return nil
	}
	terms := syntax.TermsOf(n)
	if terms.Empty() {
		return nil
	}
	return func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); {
			if !logscan.IsWordByte(s[i]) {
				b.WriteByte(s[i])
				i++
				continue
			}
			j := i
			for j < len(s) && logscan.IsWordByte(s[j]) {
				j++
			}
			if terms.Match(string(logscan.Fold(nil, []byte(s[i:j])))) {
				b.WriteString(on(s[i:j]))
			} else {
				b.WriteString(s[i:j])
			}
			i = j
		}
		return b.String()
	}
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

func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// nThings is "1 pod", "8 pods".
func nThings(n int, one, many string) string { return commas(n) + " " + pluralWord(n, one, many) }

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
