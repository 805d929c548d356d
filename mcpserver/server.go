// Package mcpserver serves coroner's bundles to AI agents as Model Context Protocol tools,
// resources and a prompt (`coroner mcp`): the diagnosis, findings with their evidence, the
// timeline, searches, log windows, objects, events and the rules, each answer bounded and
// paged with a cursor, deterministic, and redacted as reports are. It stands on the same
// libraries as the CLI: a bundle is opened by diagnose.Run and searched through search.Open;
// nothing here makes a diagnosis of its own. It takes no flags and prints nothing: cmd/coroner
// runs it over stdio or HTTP.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/search"
)

// DefaultMaxBytes is the size of one tool answer (its JSON) when Options.MaxBytes is not set:
// a few thousand tokens, so that a page of findings or hits leaves an agent room to think.
const DefaultMaxBytes = 48 << 10

// DefaultMaxOpen is how many bundles may be open at once when Options.MaxOpen is not set.
const DefaultMaxOpen = 16

// Options configure a Server.
type Options struct {
	// Roots are the directories under which open_bundle may open bundles (and list_bundles
	// looks for them). Without roots only the bundles given to New are served.
	Roots []string
	// Diagnose says how a bundle is diagnosed: rules, limits, index cache, version, and
	// whether its secrets are kept (KeepSecrets; by default every answer is redacted).
	Diagnose diagnose.Options
	// MaxBytes bounds one tool answer (0: DefaultMaxBytes); MaxOpen the bundles open at once.
	MaxBytes int
	MaxOpen  int
}

// Server is coroner's MCP server: the bundles it has open and the SDK server whose tools read
// them. Close it.
type Server struct {
	opts  Options
	srv   *mcp.Server
	roots []root

	mu      sync.Mutex
	bundles []*openBundle
	opening map[string]bool

	// diffs are the latest diff reports, kept for their next pages.
	diffMu sync.Mutex
	diffs  []diffRun
}

// root is an allowed directory: as given, and resolved (links followed) for containment.
type root struct{ given, real string }

// openBundle is one diagnosed bundle. Its index and search source serve one call at a time.
type openBundle struct {
	id     string // short, URI-safe name the tools take
	path   string // the path as given or found under a root
	real   string // what was opened (links resolved)
	origin string // "argument" or "root"

	mu  sync.Mutex
	d   *diagnose.Diagnosis
	src *search.Source // opened at the first search
	key []byte         // the redaction key (the bundle's digest), made at the first secret
}

// New diagnoses each of paths (one bundle or plain log file each) and returns the server of
// them and of the bundles under opts.Roots. A root that is not a directory, and a path that
// cannot be diagnosed, are errors; on error nothing is left open.
func New(ctx context.Context, paths []string, opts Options) (_ *Server, err error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxOpen <= 0 {
		opts.MaxOpen = DefaultMaxOpen
	}
	if opts.Diagnose.Rules == nil {
		if opts.Diagnose.LoadRules == nil {
			return nil, errors.New("mcpserver: no rule set")
		}
		if opts.Diagnose.Rules, err = opts.Diagnose.LoadRules(); err != nil {
			return nil, err
		}
	}
	s := &Server{opts: opts, opening: map[string]bool{}}
	for _, r := range opts.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, err
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", r, err)
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("root %s: not a directory", r)
		}
		s.roots = append(s.roots, root{given: abs, real: real})
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for _, p := range paths {
		if p == "-" {
			return nil, errors.New("a bundle cannot come on standard input: it carries the protocol")
		}
		real, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if _, err := s.open(ctx, p, real, "argument"); err != nil {
			return nil, err
		}
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "coroner", Title: "coroner: post-mortems of failed training jobs", Version: opts.Diagnose.Version},
		&mcp.ServerOptions{Instructions: instructions, Capabilities: &mcp.ServerCapabilities{}})
	s.addTools()
	s.addPrompt()
	s.mu.Lock()
	for _, b := range s.bundles {
		s.addResources(b)
	}
	s.mu.Unlock()
	return s, nil
}

// instructions tell a client what the server is for and where to start.
const instructions = `coroner serves post-mortem bundles of distributed training jobs on Kubernetes (a job's objects, pods, events, nodes and container logs, collected after it failed). Start with list_bundles, then diagnosis: it names the root cause with its evidence and what to do. finding shows a finding's evidence windows, search finds log lines, events and object text with coroner's query language, log_window reads lines around any line. Answers are bounded: when one says truncated, call again with its nextCursor. Secrets are masked ([REDACTED:rule:token]).`

// MCP is the SDK server to run over a transport.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Close releases every open bundle.
func (s *Server) Close() error {
	s.mu.Lock()
	bs := s.bundles
	s.bundles = nil
	s.mu.Unlock()
	var errs []error
	for _, b := range bs {
		errs = append(errs, b.close())
	}
	return errors.Join(errs...)
}

func (b *openBundle) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	if b.src != nil {
		errs = append(errs, b.src.Close())
		b.src = nil
	}
	if b.d != nil {
		errs = append(errs, b.d.Close())
		b.d = nil
	}
	return errors.Join(errs...)
}

// open diagnoses the bundle at real (shown as path) and adds it, or returns it when it is
// open already. A second call for a path being opened waits for nothing: it is refused.
func (s *Server) open(ctx context.Context, path, real, origin string) (*openBundle, error) {
	s.mu.Lock()
	for _, b := range s.bundles {
		if b.real == real {
			s.mu.Unlock()
			return b, nil
		}
	}
	if s.opening[real] {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s is being opened by another call: try again when it returns", path)
	}
	if len(s.bundles) >= s.opts.MaxOpen {
		s.mu.Unlock()
		return nil, fmt.Errorf("%d bundles are open, the most this server keeps", s.opts.MaxOpen)
	}
	s.opening[real] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.opening, real)
		s.mu.Unlock()
	}()

	d, err := diagnose.Run(ctx, diagnose.Input{Paths: []string{real}}, s.opts.Diagnose)
	if err != nil {
		return nil, err
	}
	b := &openBundle{path: path, real: real, origin: origin, d: d}
	s.mu.Lock()
	defer s.mu.Unlock()
	b.id = s.newID(path)
	s.bundles = append(s.bundles, b)
	return b, nil
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// newID names a bundle after its file, made safe for a URI, numbered when the name is taken.
// The caller holds s.mu.
func (s *Server) newID(path string) string {
	base := filepath.Base(path)
	for _, ext := range []string{".tar.gz", ".tgz", ".gz", ".log", ".txt"} {
		if strings.HasSuffix(base, ext) && len(base) > len(ext) {
			base = strings.TrimSuffix(base, ext)
			break
		}
	}
	base = strings.Trim(unsafeID.ReplaceAllString(base, "-"), "-.")
	if base == "" {
		base = "bundle"
	}
	id := base
	for n := 2; s.byID(id) != nil; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	return id
}

func (s *Server) byID(id string) *openBundle {
	for _, b := range s.bundles {
		if b.id == id {
			return b
		}
	}
	return nil
}

// bundle finds the open bundle a tool names: by id, or the only one when none is named.
func (s *Server) bundle(id string) (*openBundle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		if len(s.bundles) == 1 {
			return s.bundles[0], nil
		}
		if len(s.bundles) == 0 {
			return nil, errors.New("no bundle is open: list_bundles lists those under the allowed roots, open_bundle opens one")
		}
		return nil, fmt.Errorf("%d bundles are open: name one (bundle: %s)", len(s.bundles), strings.Join(s.ids(), ", "))
	}
	if b := s.byID(id); b != nil {
		return b, nil
	}
	// The path it was opened by also names it.
	for _, b := range s.bundles {
		if b.path == id {
			return b, nil
		}
	}
	msg := fmt.Sprintf("no open bundle %q", id)
	if len(s.bundles) > 0 {
		msg += " (open: " + strings.Join(s.ids(), ", ") + ")"
	}
	return nil, errors.New(msg + "; open_bundle opens one")
}

func (s *Server) ids() []string {
	ids := make([]string, len(s.bundles))
	for i, b := range s.bundles {
		ids[i] = b.id
	}
	return ids
}

// allowed resolves a path an agent asked to open: absolute, or relative to a root (the first
// root that has it). Links are followed before it is checked, so a link under a root that
// points outside it is refused. Only directories and regular files are opened.
func (s *Server) allowed(p string) (shown, real string, err error) {
	if len(s.roots) == 0 {
		return "", "", errors.New("this server has no allowed roots: it opens no bundle but those it was started with")
	}
	if p == "" || p == "-" {
		return "", "", errors.New("give the path of a bundle (a directory or .tar.gz) under an allowed root")
	}
	var cands []string
	if filepath.IsAbs(p) {
		cands = []string{filepath.Clean(p)}
	} else {
		for _, r := range s.roots {
			cands = append(cands, filepath.Join(r.given, p))
		}
	}
	for _, c := range cands {
		rl, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		for _, r := range s.roots {
			if within(r.real, rl) {
				st, err := os.Stat(rl)
				if err != nil {
					return "", "", err
				}
				if !st.IsDir() && !st.Mode().IsRegular() {
					return "", "", fmt.Errorf("%s is not a directory or a regular file", p)
				}
				return c, rl, nil
			}
		}
		return "", "", fmt.Errorf("%s is outside the allowed roots (%s): refused", p, strings.Join(s.rootNames(), ", "))
	}
	for _, c := range cands {
		if !s.underAny(c) {
			return "", "", fmt.Errorf("%s is outside the allowed roots (%s): refused", p, strings.Join(s.rootNames(), ", "))
		}
	}
	return "", "", fmt.Errorf("%s: no such file or directory under the allowed roots", p)
}

func (s *Server) underAny(p string) bool {
	for _, r := range s.roots {
		if within(r.given, p) || within(r.real, p) {
			return true
		}
	}
	return false
}

func (s *Server) rootNames() []string {
	var names []string
	for _, r := range s.roots {
		names = append(names, r.given)
	}
	return names
}

// within reports whether p is dir or under it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Bundles found under a root: a directory holding a manifest (not descended into), or a
// gzip'd tarball. The walk is bounded in depth and in entries, and follows no link.
const (
	maxWalkDepth   = 6
	maxWalkEntries = 50000
)

type found struct {
	path  string
	bytes int64
	dir   bool
}

func (s *Server) findBundles(ctx context.Context) ([]found, bool) {
	var out []found
	seen, cut := 0, false
	for _, r := range s.roots {
		_ = filepath.WalkDir(r.given, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if ctx.Err() != nil {
				return filepath.SkipAll
			}
			if seen++; seen > maxWalkEntries {
				cut = true
				return filepath.SkipAll
			}
			rel, _ := filepath.Rel(r.given, p)
			depth := strings.Count(rel, string(filepath.Separator)) + 1
			if d.IsDir() {
				if _, err := os.Lstat(filepath.Join(p, bundle.ManifestName)); err == nil && p != r.given {
					out = append(out, found{path: p, dir: true})
					return filepath.SkipDir
				}
				if depth > maxWalkDepth || (strings.HasPrefix(d.Name(), ".") && p != r.given) {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && (strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz")) {
				f := found{path: p}
				if info, err := d.Info(); err == nil {
					f.bytes = info.Size()
				}
				out = append(out, f)
			}
			return nil
		})
		// A root that is itself a bundle.
		if _, err := os.Lstat(filepath.Join(r.given, bundle.ManifestName)); err == nil {
			out = append(out, found{path: r.given, dir: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, cut
}

// guard runs a tool's handler, turning a panic into a tool error: a bundle that trips a bug
// ends that call, never the server every other call depends on.
func guard[Out any](name string, h func() (Out, error)) (out Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero Out
			out, err = zero, fmt.Errorf("%s failed: internal error (%v); the server goes on", name, r)
		}
	}()
	return h()
}
