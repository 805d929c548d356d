package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/internal/outfile"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
	"github.com/coroner-dev/coroner/report"
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
	// Max bounds the cache's size (a size such as 4Gi).
	Max string
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
A word starting with - is a word of the query (NOT that word), not a flag. A number finds
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
	f.StringArrayVar(&opts.Containers, "container", nil, "only containers matching this `GLOB` (repeatable; it must match a container)")
	f.StringVar(&opts.Since, "since", "", "only lines at or after `TIME` (RFC 3339, \"2006-01-02 15:04[:05]\" or \"15:04[:05]\" on the logs' first day, UTC)")
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
	if args[0] == "-" || !bundle.IsBundlePath(args[0]) {
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
	f.StringVar(&c.Max, "cache-max", "4Gi", "keep at most `SIZE` of indexes, removing the least recently used")
}

// cache resolves the cache options: the only place that reads the environment for them.
func (c CacheOptions) cache() (*index.Cache, error) {
	if c.NoCache {
		return nil, nil
	}
	var max int64 // 0: index.DefaultCacheMax
	if c.Max != "" {
		var err error
		if max, err = parseSize("cache-max", c.Max); err != nil {
			return nil, err
		}
	}
	dir := c.Dir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no cache directory (%v): use --cache-dir or --no-cache", err)
		}
		dir = filepath.Join(base, "coroner", "index")
	}
	return &index.Cache{Dir: dir, MaxBytes: max}, nil
}

// searched is one index searched: the logs, or the events and objects.
type searched struct {
	ix      *index.Index
	objects bool
	rebuild func() (*index.Index, error) // builds it anew when the cached one is damaged
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
	color = color && opts.Output == "" && format == "text"
	if err := checkOutput("-o", opts.Output, opts.Inputs...); err != nil {
		return err
	}
	cache, err := opts.Cache.cache()
	if err != nil {
		return err
	}
	var ixs []searched
	defer func() {
		for _, s := range ixs {
			s.ix.Close()
		}
	}()
	// A tarball indexed before (by analyze or search) is searched without extracting it: its
	// logs through the index's access points into the gzip stream, its events and objects read
	// as the tarball streams by.
	var b *bundle.Bundle
	if len(opts.Inputs) == 1 && opts.Inputs[0] != "-" {
		ix, err := index.OpenTarball(cache, opts.Inputs[0], version, opts.Limits.MaxLineBytes)
		if err != nil {
			return err
		}
		if ix != nil {
			ixs = append(ixs, searched{ix: ix})
			if files, ok := ix.TarballResources(); ok {
				b = resourceBundle(opts.Inputs[0], files, opts.Limits)
			} else if b, err = streamResources(ctx, opts.Inputs[0], opts.Limits); err != nil {
				return err
			}
		}
	}
	if b == nil {
		if b, err = diagnose.Open(ctx, opts.Inputs, io.In, opts.Limits); err != nil {
			return inputError(err)
		}
	}
	defer b.Close()
	var reopened *bundle.Bundle // the tarball opened to rebuild its damaged cached index
	defer func() {
		if reopened != nil {
			reopened.Close()
		}
	}()
	var progress func(int, int, int64)
	if io.IsTerminal {
		progress = func(done, total int, n int64) {
			fmt.Fprintf(io.ErrOut, "\rindexing logs: %d/%d (%s)", done, total, humanBytes(n))
			if done == total {
				fmt.Fprint(io.ErrOut, "\r\033[K")
			}
		}
	}
	build := func(b *bundle.Bundle, logs []parse.LogStream, progress func(int, int, int64)) (*index.Index, error) {
		ix, _, err := index.Build(ctx, b, logs, index.BuildOptions{Cache: cache, Version: version, Workers: opts.Workers,
			Progress: progress, Log: func(format string, args ...any) {
				fmt.Fprintf(io.ErrOut, "coroner: %s\n", report.TerminalSafe(fmt.Sprintf(format, args...)))
			}})
		if err != nil {
			return nil, fmt.Errorf("%s: indexing: %w", diagnose.InputName(opts.Inputs), err)
		}
		return ix, nil
	}
	logs, _ := parse.LogStreams(b)
	if len(ixs) == 0 && len(logs) > 0 {
		ix, err := build(b, logs, progress)
		if err != nil {
			return err
		}
		ixs = append(ixs, searched{ix: ix, rebuild: func() (*index.Index, error) { return build(b, logs, progress) }})
	} else if len(ixs) == 1 {
		// The tarball's cached index: built anew the slow way, from the opened tarball.
		ixs[0].rebuild = func() (*index.Index, error) {
			full, err := diagnose.Open(ctx, opts.Inputs, io.In, opts.Limits)
			if err != nil {
				return nil, err
			}
			reopened = full
			logs, _ := parse.LogStreams(full)
			return build(full, logs, progress)
		}
	}
	if !b.Plain {
		ob, streams, err := objectText(b)
		if err != nil {
			return err
		}
		if len(streams) > 0 {
			ix, err := build(ob, streams, nil)
			if err != nil {
				return err
			}
			ixs = append(ixs, searched{ix: ix, objects: true, rebuild: func() (*index.Index, error) { return build(ob, streams, nil) }})
		}
	}
	if len(ixs) == 0 {
		return fmt.Errorf("%s: nothing to search: no logs, events or objects", diagnose.InputName(opts.Inputs))
	}
	if err := checkGlobs(ixs, opts); err != nil {
		return err
	}
	so := index.SearchOptions{Query: opts.Query, Regex: opts.Regex, Pods: opts.Pods, Containers: opts.Containers,
		All: opts.All, Limit: opts.Limit, Context: opts.Context}
	var first time.Time
	for _, s := range ixs {
		if t := firstTime(s.ix); !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
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
	var results []*index.Result
	objectPaths := map[string]bool{}
	for i := range ixs {
		s := &ixs[i]
		res, err := s.ix.Search(ctx, so)
		if errors.Is(err, index.ErrDamaged) && s.rebuild != nil {
			// Search removed the damaged index from the cache: this build replaces it.
			fmt.Fprintf(io.ErrOut, "coroner: %s; rebuilding it\n", report.TerminalSafe(err.Error()))
			s.ix.Close()
			if s.ix, err = s.rebuild(); err != nil {
				return err
			}
			res, err = s.ix.Search(ctx, so)
		}
		var qe *index.QueryError
		if errors.As(err, &qe) {
			return &FlagError{err}
		}
		if err != nil {
			return err
		}
		if s.objects {
			for _, st := range s.ix.Streams() {
				objectPaths[st.Path] = true
			}
		}
		results = append(results, res)
	}
	res := mergeResults(results, opts.Limit)
	if res.ContextCut {
		fmt.Fprintf(io.ErrOut, "coroner: the context lines reached %s: later hits show fewer or none (lower --context or --limit)\n", humanBytes(index.ContextBudget))
	}
	if !opts.NoRedact {
		n, rules, err := redactHits(ctx, res, b, opts.Inputs)
		if err != nil {
			return err
		}
		if n > 0 {
			fmt.Fprintf(io.ErrOut, "coroner: %d secret(s) in these lines were masked (%s); --no-redact shows them\n", n, rules)
		}
	}
	var out strings.Builder
	if format == "json" {
		enc := json.NewEncoder(&out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		p := hitPrinter{plain: b, objects: objectPaths, context: opts.Context > 0, all: opts.All}
		if color {
			p.highlight = highlighter(opts.Query, opts.Regex)
		}
		p.print(&out, res)
	}
	if opts.Output != "" {
		return outfile.WriteFile(opts.Output, []byte(out.String()))
	}
	_, err = io.Out.Write([]byte(out.String()))
	return err
}

// checkGlobs fails when a --pod or --container glob matches nothing searched: the user
// almost certainly meant something else (a glob matches the whole name).
func checkGlobs(ixs []searched, opts *SearchOptions) error {
	check := func(flag string, globs []string, name func(*index.Stream) string) error {
		var names []string
		seen := map[string]bool{}
		for _, s := range ixs {
			for _, st := range s.ix.Streams() {
				if n := name(st); n != "" && !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
		sort.Strings(names)
		for _, g := range globs {
			if _, err := path.Match(g, ""); err != nil {
				return flagErrorf("--%s %q: bad pattern", flag, g)
			}
			found := false
			for _, n := range names {
				if ok, _ := path.Match(g, n); ok {
					found = true
					break
				}
			}
			if !found {
				return fmt.Errorf("--%s %q matches none of the %s: %s (a glob matches the whole name: try '*%s*')",
					flag, g, nThings(len(names), flag, flag+"s"), report.NameList(names, 6), strings.Trim(g, "*"))
			}
		}
		return nil
	}
	if err := check("pod", opts.Pods, func(s *index.Stream) string { return s.Pod }); err != nil {
		return err
	}
	return check("container", opts.Containers, func(s *index.Stream) string { return s.Container })
}

// mergeResults merges the results of several indexes: by time, untimed hits last (each
// index's in its order), at most limit hits; partial when one is.
func mergeResults(rs []*index.Result, limit int) *index.Result {
	if len(rs) == 1 {
		return rs[0]
	}
	out := &index.Result{Hits: []index.Hit{}}
	for _, r := range rs {
		out.Lines += r.Lines
		out.Omitted += r.Omitted
		out.Partial = out.Partial || r.Partial
		out.ContextCut = out.ContextCut || r.ContextCut
		out.Hits = append(out.Hits, r.Hits...)
	}
	sort.SliceStable(out.Hits, func(i, j int) bool {
		a, b := out.Hits[i].Time, out.Hits[j].Time
		switch {
		case a == nil || b == nil:
			return a != nil && b == nil
		}
		return a.Before(*b)
	})
	if len(out.Hits) > limit {
		out.Omitted += len(out.Hits) - limit
		out.Hits = out.Hits[:limit]
	}
	return out
}

// resourceBundle is a bundle of a tarball's resource files (what objectText reads), as the
// tarball's index kept them. A resource over the resource limit is left out, as parse leaves
// it out of an opened bundle.
func resourceBundle(p string, files fstest.MapFS, lim bundle.Limits) *bundle.Bundle {
	var kept []bundle.File
	for name, f := range files {
		if int64(len(f.Data)) > lim.MaxResourceBytes {
			delete(files, name)
			continue
		}
		kept = append(kept, bundle.File{Path: name, Size: int64(len(f.Data))})
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].Path < kept[j].Path })
	return &bundle.Bundle{Source: p, FS: files, Files: kept, Limits: lim}
}

// streamResources reads the resources of a bundle tarball as it decompresses, without
// extracting it, into a bundle of those files alone (what objectText reads). A resource over
// the resource limit is left out, as parse leaves it out of an opened bundle. The files carry
// the tarball's modification time, which the objects index's cache entry compares.
func streamResources(ctx context.Context, p string, lim bundle.Limits) (*bundle.Bundle, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	files := fstest.MapFS{}
	_, err = bundle.Stream(ctx, p, lim, func(f bundle.File, r io.Reader) error {
		if !strings.HasPrefix(f.Path, "resources/") || f.Size > lim.MaxResourceBytes {
			return nil
		}
		data, err := io.ReadAll(io.LimitReader(r, lim.MaxResourceBytes+1))
		if err != nil {
			return err
		}
		files[f.Path] = &fstest.MapFile{Data: data, Mode: 0o444, ModTime: info.ModTime()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resourceBundle(p, files, lim), nil
}

// objectText makes a bundle's events and objects searchable like logs: the events of each
// object as one timestamped line each ("events/Pod/ml/x"), and each resource's YAML as it is
// (Event resources aside: their events are the lines). The resources are read from the
// bundle; only the events' lines are made, in memory. Its index is cached like the logs',
// keyed by content, and a warm search reads nothing but the event files.
func objectText(b *bundle.Bundle) (*bundle.Bundle, []parse.LogStream, error) {
	var eventFiles []bundle.File
	var streams []parse.LogStream
	for _, f := range b.Files {
		parts := strings.Split(f.Path, "/")
		if len(parts) != 5 || parts[0] != "resources" {
			continue
		}
		if parts[2] == "Event" {
			eventFiles = append(eventFiles, f)
			continue
		}
		// No pod: --pod narrows to pods' logs and events (a file may hold a List of pods).
		streams = append(streams, parse.LogStream{Path: f.Path, Namespace: parts[3], Size: f.Size})
	}
	// Only the events are parsed (parse reads them whatever their API version or form).
	m, err := parse.Load(&bundle.Bundle{Source: b.Source, FS: b.FS, Files: eventFiles, Limits: b.Limits})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", b.Source, err)
	}
	var newest time.Time
	for _, f := range eventFiles {
		if st, err := fs.Stat(b.FS, f.Path); err == nil && st.ModTime().After(newest) {
			newest = st.ModTime()
		}
	}
	type eventLog struct {
		lines []string
		pod   string
		ns    string
	}
	byObject := map[string]*eventLog{}
	var order []string
	for i := range m.Events {
		e := &m.Events[i]
		io := e.InvolvedObject
		p := path.Join("events", io.Kind, nonEmpty(io.Namespace, "_cluster"), io.Name)
		el, ok := byObject[p]
		if !ok {
			el = &eventLog{ns: io.Namespace}
			if io.Kind == "Pod" {
				el.pod = io.Name
			}
			byObject[p] = el
			order = append(order, p)
		}
		line := e.Type + " " + e.Reason + ": " + strings.Join(strings.Fields(e.Message), " ")
		if e.Count > 1 {
			line += fmt.Sprintf(" (x%d, last %s)", e.Count, parse.EventTime(e).UTC().Format(time.RFC3339))
		}
		if t := parse.EventFirstTime(e); !t.IsZero() {
			line = t.UTC().Format(time.RFC3339Nano) + " " + line
		}
		el.lines = append(el.lines, line)
	}
	events := fstest.MapFS{}
	for _, p := range order {
		el := byObject[p]
		data := []byte(strings.Join(el.lines, "\n") + "\n")
		// The modification time is what the cache's stat entry compares.
		events[p] = &fstest.MapFile{Data: data, Mode: 0o444, ModTime: newest}
		streams = append(streams, parse.LogStream{Path: p, Namespace: el.ns, Pod: el.pod, Container: "events", Size: int64(len(data))})
	}
	sort.Slice(streams, func(i, j int) bool { return streams[i].Path < streams[j].Path })
	ob := &bundle.Bundle{Source: b.Source + "#objects", FS: overlayFS{base: b.FS, extra: events}, Limits: b.Limits}
	return ob, streams, nil
}

// overlayFS is a bundle's files with the event lines made for search beside them.
type overlayFS struct {
	base  fs.FS
	extra fstest.MapFS
}

func (o overlayFS) Open(name string) (fs.File, error) {
	if _, ok := o.extra[name]; ok {
		return o.extra.Open(name)
	}
	return o.base.Open(name)
}

func nonEmpty(s, or string) string {
	if s == "" {
		return or
	}
	return s
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
	text := terminalSafe(l.Text)
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

// nThings is "1 pod", "8 pods".
func nThings(n int, one, many string) string { return commas(n) + " " + pluralWord(n, one, many) }

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
