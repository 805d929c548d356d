package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/bundle"
)

// Exit codes. Main maps every error to one of them; exitStatuses documents them.
const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitFailOn     = 3
	exitInterrupt  = 130 // 128 + SIGINT, as a shell reports it
	exitTerminated = 143 // 128 + SIGTERM
)

// exitStatus is one line of a command's EXIT STATUS help. Commands lists the command paths
// (without "coroner") the line is for; empty means every command that runs.
type exitStatus struct {
	Code     int
	Commands []string
	Text     string
}

// exitStatuses is the one table of exit codes: Main's mapping and every command's help come
// from it (a test checks that each command's help lists exactly the codes it can return).
var exitStatuses = []exitStatus{
	{exitOK, []string{"analyze"}, "analysis done, whatever the verdict"},
	{exitOK, []string{"search"}, "search done, with or without hits"},
	{exitOK, []string{"collect"}, "bundle written (what could not be collected is listed as gaps)"},
	{exitOK, []string{"redact"}, "redacted bundle written"},
	{exitOK, []string{"rules list", "rules show", "prompts list", "prompts show"}, "done"},
	{exitOK, []string{"rules lint"}, "every rule is valid and every example holds"},
	{exitOK, []string{"store migrate"}, "the schema is at the latest version"},
	{exitOK, []string{"fleet query"}, "the view (or the list of views) was printed"},
	{exitOK, []string{"flight-recorder-read"}, "the dumps were printed (one that cannot be read is a line saying why)"},
	{exitError, []string{"flight-recorder-read"}, "error: the directory of PREFIX cannot be read"},
	{exitOK, []string{"fleet report"}, "the report was written"},
	{exitOK, []string{"fleet reanalyze"}, "the manifest was written or applied; with --run, every bundle of the shard was re-analyzed into the trial"},
	{exitOK, []string{"fleet promote"}, "the trial's analyses are current"},
	{exitOK, []string{"fleet seed"}, "the synthetic analyses were written"},
	{exitOK, []string{"watch"}, "stopped by a signal (SIGTERM, Ctrl-C), after letting go of held pods and the Lease"},
	{exitOK, []string{"mcp"}, "the client ended the session (closed coroner's standard input), or a signal stopped the server once it served"},
	{exitError, []string{"analyze"}, "error: an unreadable or hostile bundle, input that is neither a bundle nor log lines (an empty directory or file, a directory of bundles, a bundle's logs/ folder: \"0 lines read\"), a bad rule file, a --rules directory that does not exist, a --store that cannot be reached or written (the report is still written); one line on stderr"},
	{exitError, []string{"search"}, "error: an unreadable or hostile bundle, input that is neither a bundle nor log lines, a --pod or --container glob that matches nothing (the pods are listed); one line on stderr"},
	{exitError, []string{"collect"}, "error: no access to the cluster, an unknown kind or job, --strict with gaps; nothing is written"},
	{exitError, []string{"redact"}, "error: an unreadable bundle, a bad rules file; nothing is written"},
	{exitError, []string{"rules list", "prompts list", "prompts show"}, "error: an unreadable rule or template file, or directory"},
	{exitError, []string{"rules show"}, "error: no rule of that id, an unreadable rule file or --rules directory"},
	{exitError, []string{"rules lint"}, "a rule is invalid or an example does not hold (each problem is printed), or DIR cannot be read"},
	{exitError, []string{"store migrate"}, "error: the store cannot be reached, a migration failed (the ones before it stay applied), or the store's schema is newer than this coroner"},
	{exitError, []string{"fleet query"}, "error: the store cannot be reached or has no schema yet"},
	{exitError, []string{"fleet report", "fleet seed"}, "error: the store cannot be reached or its schema is not this coroner's"},
	{exitError, []string{"fleet reanalyze"}, "error: unreadable rules, a cluster that refused the objects (or a Job of that trial exists); with --run, a bundle that could not be re-analyzed (the others are written) or a store or bucket that cannot be reached"},
	{exitError, []string{"fleet promote"}, "error: no such trial, or the store cannot be reached"},
	{exitError, []string{"watch"}, "error, or the Lease was lost (the pod restarts and stands again)"},
	{exitError, []string{"mcp"}, "error: a BUNDLE that cannot be diagnosed, a --root that is not a directory, an address that cannot be listened on; one line on stderr (a bundle an agent opens gives a tool error, never this)"},
	{exitOK, []string{"diff"}, "diff done, whatever it found"},
	{exitError, []string{"diff"}, "error: an unreadable or hostile input (as analyze), a bad rule or redaction rules file; one line on stderr"},
	{exitFailOn, []string{"diff"}, "--fail-on: BAD has a finding at or above that severity in a category GOOD has none of, or (--fail-on any) the runs differ"},
	{exitUsage, nil, "bad usage: an unknown flag or command, a missing argument, a malformed value"},
	{exitFailOn, []string{"analyze"}, "--fail-on: a finding at or above that severity exists (the report is still written)"},
	{exitInterrupt, []string{"analyze", "search", "collect", "redact", "mcp", "diff"}, "interrupted (Ctrl-C): stopped at once, nothing written under the output name, no temporary file left"},
	{exitTerminated, []string{"analyze", "search", "collect", "redact", "mcp", "diff"}, "terminated (SIGTERM): as for Ctrl-C"},
}

// exitHelp is the EXIT STATUS section of a command's help.
func exitHelp(command string) string {
	var b strings.Builder
	b.WriteString("EXIT STATUS\n")
	for _, s := range exitStatuses {
		if len(s.Commands) == 0 || containsString(s.Commands, command) {
			fmt.Fprintf(&b, "  %-3d  %s\n", s.Code, s.Text)
		}
	}
	return b.String()
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// addExitHelp appends the EXIT STATUS section to the help of every command that runs.
func addExitHelp(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c != root {
			if c.Long == "" {
				c.Long = c.Short + "."
			}
			c.Long = strings.TrimRight(c.Long, "\n") + "\n\n" + exitHelp(commandPath(c))
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// commandPath is a command's path without the root's name: "analyze", "rules lint".
func commandPath(c *cobra.Command) string {
	var parts []string
	for ; c != nil && c.HasParent(); c = c.Parent() {
		parts = append([]string{c.Name()}, parts...)
	}
	return strings.Join(parts, " ")
}

// Interrupted is the cause of the context's cancellation when a signal stopped coroner.
type Interrupted struct{ Signal os.Signal }

func (e *Interrupted) Error() string {
	if e.Signal == syscall.SIGTERM {
		return "terminated"
	}
	return "interrupted"
}

// exitCode maps what a command returned to the process's exit code.
func exitCode(ctx context.Context, err error) int {
	var in *Interrupted
	if err != nil && errors.As(context.Cause(ctx), &in) {
		if in.Signal == syscall.SIGTERM {
			return exitTerminated
		}
		return exitInterrupt
	}
	var fe *FlagError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFailOn):
		return exitFailOn
	case errors.As(err, &fe) || isCobraUsageError(err):
		return exitUsage
	}
	return exitError
}

// limitFlags names the flag that raises each of the bundle's limits.
var limitFlags = map[bundle.LimitKind]string{
	bundle.LimitFileBytes:     "max-file-bytes",
	bundle.LimitTotalBytes:    "max-total-bytes",
	bundle.LimitEntries:       "max-entries",
	bundle.LimitLineBytes:     "max-line-bytes",
	bundle.LimitResourceBytes: "max-resource-bytes",
	bundle.LimitExpansion:     "max-expansion",
	bundle.LimitLogBudget:     "max-total-log-bytes",
}

// describeError adds what a user can do to a library error: the flag that raises a limit.
func describeError(err error) string {
	msg := err.Error()
	var le *bundle.LimitError
	if errors.As(err, &le) {
		msg += raiseHint(le.Kind)
	}
	return msg
}

// raiseHint names the flag that raises a limit: " (raise it with --max-file-bytes)", or "".
func raiseHint(k bundle.LimitKind) string {
	if f, ok := limitFlags[k]; ok {
		return " (raise it with --" + f + ")"
	}
	return ""
}
