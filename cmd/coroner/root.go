package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/coroner-dev/coroner/report"
)

// commandName is how the user called us: "coroner", or "kubectl coroner" as a kubectl plugin.
var commandName = "coroner"

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// IOStreams are the command's standard streams; tests hand in buffers.
type IOStreams struct {
	In         io.Reader
	Out        io.Writer
	ErrOut     io.Writer
	IsTerminal bool // ErrOut is a terminal: progress may be shown
	// OutTerminal is true when Out is a terminal (colour may be used), Width its width in
	// columns (0 when unknown: lines are not cut).
	OutTerminal bool
	Width       int
	// NoColor is true when the environment asks for no colour (NO_COLOR, TERM=dumb).
	NoColor bool
}

// SystemStreams returns the process's streams.
func SystemStreams() *IOStreams {
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, IsTerminal: isTerminal(os.Stderr),
		OutTerminal: isTerminal(os.Stdout), NoColor: os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb"}
	if s.OutTerminal {
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil && w > 0 {
			s.Width = w
		} else if w, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && w > 0 {
			s.Width = w
		}
	}
	return s
}

// colorModes are the values of --color.
var colorModes = []string{"auto", "always", "never"}

// Color says whether to colour Out: --color always or never, or auto: when Out is a
// terminal and the environment does not say NO_COLOR.
func (s *IOStreams) Color(mode string) (bool, error) {
	switch mode {
	case "", "auto":
		return s.OutTerminal && !s.NoColor, nil
	case "always":
		return true, nil
	case "never":
		return false, nil
	}
	return false, flagErrorf("unknown --color %q (use %s)", mode, strings.Join(colorModes, ", "))
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// FlagError is a usage mistake: exit 2 and show usage.
type FlagError struct{ err error }

func (e *FlagError) Error() string { return e.err.Error() }
func (e *FlagError) Unwrap() error { return e.err }

func flagErrorf(format string, args ...any) error {
	return &FlagError{fmt.Errorf(format, args...)}
}

// errFailOn reports that --fail-on's threshold was met; the report was still written.
var errFailOn = errors.New("a finding at or above the --fail-on severity exists")

// Main runs coroner with args and returns the exit code (see exitStatuses). ctx is cancelled
// with an *Interrupted cause when a signal asks coroner to stop.
func Main(ctx context.Context, args []string, io *IOStreams) int {
	root := NewCmdRoot(io)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code := exitCode(ctx, err)
	switch code {
	case exitOK, exitFailOn:
	case exitInterrupt, exitTerminated:
		fmt.Fprintf(io.ErrOut, "coroner: %v; nothing written\n", context.Cause(ctx))
	case exitUsage:
		fmt.Fprintf(io.ErrOut, "coroner: %s\n", report.TerminalSafe(describeError(err)))
		fmt.Fprintf(io.ErrOut, "Run '%s --help' for usage.\n", commandName)
	default:
		// An error may quote a name from a bundle (a tar entry): shown, never acted on.
		fmt.Fprintf(io.ErrOut, "coroner: %s\n", report.TerminalSafe(describeError(err)))
	}
	return code
}

// isCobraUsageError recognises cobra's own errors for unknown flags, commands and arguments.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand flag", "unknown command", "flag needs an argument", "invalid argument", "accepts ", "requires at least"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(io *IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:           "coroner",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: commandName},
		Short:         "Explain why a distributed training job on Kubernetes failed",
		Long:          "coroner analyzes a bundle (a snapshot of a training job: its object, pods, events, nodes and logs)\nwith no cluster access, names the root cause with its evidence, and writes a report.\n\nEach command's help ends with its EXIT STATUS.",
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version,
	}
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &FlagError{err} })
	root.AddCommand(NewCmdAnalyze(io, nil), NewCmdCollect(io, nil), NewCmdSearch(io, nil), NewCmdRedact(io, nil), NewCmdRules(io), NewCmdPrompts(io))
	root.AddCommand(NewCmdWatch(io, nil))
	root.AddCommand(NewCmdMCP(io, nil))
	root.AddCommand(NewCmdDiff(io, nil))
	root.AddCommand(NewCmdStore(io), NewCmdFleet(io))
	root.AddCommand(newCmdFlightRecorderRead(io))
	addCompletions(root)
	addExitHelp(root)
	return root
}

// addColorFlag adds --color.
func addColorFlag(cmd *cobra.Command, mode *string) {
	cmd.Flags().StringVar(mode, "color", "auto", "colour the output: auto (on a terminal, unless NO_COLOR is set), always or never")
}
