package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/mcpserver"
)

// MCPOptions hold everything `coroner mcp` needs; tests build them directly.
type MCPOptions struct {
	// Inputs are bundles (or plain log files), each diagnosed at start; Roots the directories
	// under which an agent may open others.
	Inputs []string
	Roots  []string
	// HTTP, when set, serves the streamable HTTP transport on this address instead of stdio.
	HTTP string
	// TokenFile holds the bearer token HTTP requests must carry; the environment's
	// CORONER_MCP_TOKEN is read when it is not given.
	TokenFile string
	RuleDirs  []string
	Cache     CacheOptions
	Limits    bundle.Limits
	Workers   int
	MaxOutput int64
	NoRedact  bool
	// Listening, when set, is told the address the HTTP transport listens on (tests).
	Listening func(addr string)
}

// tokenEnv names the environment variable of the HTTP transport's bearer token.
const tokenEnv = "CORONER_MCP_TOKEN"

// NewCmdMCP builds `coroner mcp`. runF replaces the run function in tests.
func NewCmdMCP(io *IOStreams, runF func(*MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{Limits: bundle.DefaultLimits(), MaxOutput: mcpserver.DefaultMaxBytes}
	cmd := &cobra.Command{
		Use:   "mcp [--root DIR]... [BUNDLE...]",
		Short: "Serve bundles to AI agents as Model Context Protocol tools",
		Long: `Serve bundles to AI agents and chat clients that speak the Model Context Protocol (Claude Code,
Cursor, VS Code, Goose...): the client starts 'coroner mcp' and talks to it over standard input
and output. Each BUNDLE (a directory or .tar.gz, or a plain log file) is diagnosed at start; with
--root DIR the agent may list and open the bundles under DIR, and nothing outside.

Tools, all read-only: list_bundles, open_bundle, diagnosis, findings, finding, timeline, search
(coroner's query language), log_window, resources, events and rules. Each answer is bounded
(--max-output; a longer list is paged with a cursor), the same for the same bundle, and
redacted as analyze's report is (--no-redact shows secrets). Resources: each open bundle's
report (Markdown, HTML, JSON) and manifest. Prompt: investigate.

--http ADDR serves the streamable HTTP transport at http://ADDR/mcp instead: on a loopback
address (127.0.0.1:8765, localhost:8765) by default; any other address is refused unless a
bearer token is set (--token-file, or the CORONER_MCP_TOKEN environment variable), which every
request must then carry. docs/mcp.md documents every tool and the clients' configuration.
`,
		Example: `  coroner mcp bundle.tar.gz
  coroner mcp --root /var/lib/coroner/bundles
  claude mcp add coroner -- coroner mcp --root ~/incidents
  coroner mcp --http 127.0.0.1:8765 --root ~/incidents
  CORONER_MCP_TOKEN=$(cat token) coroner mcp --http 0.0.0.0:8765 --root /bundles`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Inputs = args
			if runF != nil {
				return runF(opts)
			}
			return runMCP(cmd.Context(), opts, io)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.Roots, "root", nil, "let the agent list and open the bundles under `DIR` (repeatable); nothing outside is opened")
	f.StringVar(&opts.HTTP, "http", "", "serve the streamable HTTP transport on `ADDR` (host:port; loopback unless a token is set) instead of stdio")
	f.StringVar(&opts.TokenFile, "token-file", "", "the bearer token HTTP requests must carry, read from `FILE` (default: $"+tokenEnv+")")
	f.StringArrayVar(&opts.RuleDirs, "rules", nil, "add the rules in `DIR` (as analyze --rules)")
	f.IntVar(&opts.Workers, "workers", 0, "logs scanned at once (default: one per CPU)")
	f.BoolVar(&opts.NoRedact, "no-redact", false, "show secrets in the answers (for local use; masked by default, as analyze masks them)")
	addSizeFlag(cmd, &opts.MaxOutput, "max-output", "largest answer of one tool call; longer lists are paged")
	addCacheFlags(cmd, &opts.Cache)
	addLimitFlags(cmd, &opts.Limits)
	return cmd
}

func runMCP(ctx context.Context, opts *MCPOptions, io *IOStreams) error {
	for _, in := range opts.Inputs {
		if in == "-" {
			return flagErrorf("a bundle cannot come on standard input: the MCP client talks to coroner there")
		}
	}
	if opts.MaxOutput < 4<<10 || opts.MaxOutput > 16<<20 {
		return flagErrorf("--max-output must be between 4 KiB and 16 MiB")
	}
	token, err := mcpToken(opts)
	if err != nil {
		return err
	}
	if opts.HTTP == "" && token != "" && opts.TokenFile != "" {
		return flagErrorf("--token-file guards the HTTP transport: give --http ADDR too")
	}
	if opts.HTTP != "" {
		if err := mcpserver.CheckAddress(opts.HTTP, token); err != nil {
			if errors.Is(err, mcpserver.ErrNeedsToken) {
				return flagErrorf("--http %s: %v: set one with --token-file or %s, or serve on 127.0.0.1", opts.HTTP, mcpserver.ErrNeedsToken, tokenEnv)
			}
			return flagErrorf("--http: %v", err)
		}
	}
	cache, err := opts.Cache.cache()
	if err != nil {
		return err
	}
	d := diagnose.DefaultOptions()
	d.LoadRules = func() (*analyze.RuleSet, error) { return loadRuleSet(opts.RuleDirs, "all") }
	d.Limits, d.Workers, d.Cache, d.Version, d.KeepSecrets = opts.Limits, opts.Workers, cache, version, opts.NoRedact
	d.Log = logTo(io, false)
	srv, err := mcpserver.New(ctx, opts.Inputs, mcpserver.Options{Roots: opts.Roots, Diagnose: d, MaxBytes: int(opts.MaxOutput)})
	if err != nil {
		return inputError(err)
	}
	defer srv.Close()
	if opts.HTTP == "" {
		if f, ok := io.In.(*os.File); ok && isTerminal(f) {
			fmt.Fprintf(io.ErrOut, "coroner: serving MCP on standard input and output: an MCP client starts coroner mcp (docs/mcp.md); Ctrl-D ends\n")
		}
		err := srv.MCP().Run(ctx, &mcp.IOTransport{Reader: readCloser{io.In}, Writer: writeCloser{io.Out}})
		if ctx.Err() != nil {
			return nil // stopped by a signal, as a server is
		}
		return sessionEnded(err)
	}
	return serveHTTP(ctx, opts, srv.HTTPHandler(token), io)
}

// serveHTTP serves h on opts.HTTP until ctx is done.
func serveHTTP(ctx context.Context, opts *MCPOptions, h http.Handler, io *IOStreams) error {
	ln, err := net.Listen("tcp", opts.HTTP)
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	fmt.Fprintf(io.ErrOut, "coroner: serving MCP on http://%s%s\n", addr, mcpserver.HTTPPath)
	if opts.Listening != nil {
		opts.Listening(addr)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(stop)
		return nil // stopped by a signal, as a server is
	}
}

// mcpToken reads the HTTP transport's bearer token: --token-file, else the environment.
func mcpToken(opts *MCPOptions) (string, error) {
	token := os.Getenv(tokenEnv)
	if opts.TokenFile != "" {
		b, err := os.ReadFile(opts.TokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		token = string(b)
	}
	token = strings.TrimSpace(token)
	if (opts.TokenFile != "" || os.Getenv(tokenEnv) != "") && len(token) < 16 {
		return "", flagErrorf("the bearer token must be at least 16 characters (openssl rand -hex 32 makes one)")
	}
	return token, nil
}

// sessionEnded is nil when the client ended the session by closing coroner's input.
func sessionEnded(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return err
}

// readCloser and writeCloser hand the command's streams to the SDK, which closes its
// transport's ends when the session ends: the process's own streams stay open.
type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }

type writeCloser struct{ io.Writer }

func (writeCloser) Close() error { return nil }
