package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/collect"
	"github.com/coroner-dev/coroner/report"
)

// CollectOptions hold everything a collect needs; tests build them directly.
type CollectOptions struct {
	Target string // KIND/NAME (KIND NAME on the command line is joined to it)
	Output string

	CollectLimits
	Strict bool
	Quiet  bool

	Kubeconfig string
	Overrides  clientcmd.ConfigOverrides
	Now        func() time.Time
}

// NewCmdCollect builds `coroner collect`. runF replaces the run function in tests.
func NewCmdCollect(io *IOStreams, runF func(*CollectOptions) error) *cobra.Command {
	opts := &CollectOptions{}
	cmd := &cobra.Command{
		Use:   "collect KIND/NAME | KIND NAME",
		Short: "Snapshot a training job from a live cluster into a bundle",
		Long: `Collect a job and everything it stands on into one bundle (.tar.gz): the job object, the
objects it owns down to its pods (JobSets, Jobs, PodGroups; a TrainJob's runtime), every pod,
their events, the nodes they ran on, the namespace's ResourceQuotas and LimitRanges, and the log
of every container (the previous one too after a restart), with timestamps.

KIND is a kind, its plural or short name, optionally with its group: pytorchjob,
pytorchjobs.kubeflow.org, trainjob, colossalaijob, job... As with kubectl, the job is KIND/NAME
or KIND NAME (pytorchjob/train-job or pytorchjob train-job).

Secrets are redacted before anything is written (--no-redact to keep them). What could not be
collected (forbidden by RBAC, gone, truncated) is listed in the bundle's manifest and after the
summary; the collect still succeeds unless --strict. The bundle is written to a temporary file
and renamed when complete, so an interrupted collect leaves nothing under the final name.
`,
		Example: `  coroner collect pytorchjob/train-job -n ml
  coroner collect trainjob/llama-ft -n team-a -o ticket-4711.tar.gz --since 6h --max-log-bytes 20Mi
  coroner collect colossalaijob/cai-demo --context prod-gpu --kubeconfig ~/.kube/air-gapped
  kubectl coroner collect job/preprocess -n ml --no-redact
  kubectl coroner collect pytorchjobs.kubeflow.org train-job -n ml`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := collectTarget(args)
			if err != nil {
				return err
			}
			opts.Target = target
			if runF != nil {
				return runF(opts)
			}
			return runCollect(cmd.Context(), opts, io)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Output, "output", "o", "", "write the bundle to `FILE` (default ./coroner-<namespace>-<name>-<UTC time>.tar.gz)")
	addCollectLimitFlags(cmd, &opts.CollectLimits)
	f.BoolVar(&opts.Strict, "strict", false, "fail, and write no bundle, when anything could not be collected (truncation aside)")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but errors")
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	clientcmd.BindOverrideFlags(&opts.Overrides, f, clientcmd.RecommendedConfigOverrideFlags(""))
	return cmd
}

// collectTarget reads the job as kubectl users write it: KIND/NAME, or KIND NAME.
func collectTarget(args []string) (string, error) {
	if len(args) == 2 {
		if strings.Contains(args[0], "/") {
			return "", flagErrorf("%q %q: name the job once, as KIND/NAME or KIND NAME (one job a collect)", args[0], args[1])
		}
		if strings.Contains(args[1], "/") {
			return "", flagErrorf("%q: a job's name has no \"/\"; want KIND NAME, e.g. pytorchjob train-job", args[1])
		}
		return args[0] + "/" + args[1], nil
	}
	return args[0], nil
}

// kubectlOutputs are the values kubectl users give -o; collect's -o is the bundle's file.
var kubectlOutputs = []string{"json", "yaml", "wide", "name", "text", "md", "html"}

func runCollect(ctx context.Context, opts *CollectOptions, io *IOStreams) error {
	kind, name, ok := strings.Cut(opts.Target, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return flagErrorf("%q: want KIND/NAME or KIND NAME, e.g. pytorchjob/train-job", opts.Target)
	}
	if o := opts.Output; slices.Contains(kubectlOutputs, o) || strings.HasPrefix(o, "jsonpath") || strings.HasPrefix(o, "go-template") || strings.HasPrefix(o, "custom-columns") {
		return flagErrorf("-o %s: collect's -o names the bundle's file (-o ticket.tar.gz); the job's YAML goes into the bundle (coroner analyze reads it)", o)
	}
	co, err := opts.CollectLimits.options()
	if err != nil {
		return err
	}
	newRedactor, err := opts.CollectLimits.redactors()
	if err != nil {
		return err
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = opts.Kubeconfig
	kc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &opts.Overrides)
	cfg, err := kc.ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	cfg.UserAgent = "coroner/" + version
	ns, _, err := kc.Namespace()
	if err != nil {
		return fmt.Errorf("kubeconfig: %v", err)
	}
	clients, err := collect.NewClients(cfg)
	if err != nil {
		return err
	}
	if opts.FlightRecorderExec {
		co.Exec = collect.NewExecer(cfg, clients.Kube)
	}

	var red collect.Redactor
	if newRedactor != nil {
		if red, err = newRedactor(); err != nil {
			return err
		}
	}

	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	out := opts.Output
	if out == "" {
		out = fmt.Sprintf("coroner-%s-%s-%s.tar.gz", ns, name, now().UTC().Format("20060102T150405Z"))
	}
	bar := newProgressBar(io, name)
	co.Kind, co.Name, co.Namespace = kind, name, ns
	co.Strict, co.Redactor, co.Version, co.Now, co.Progress = opts.Strict, red, version, now, bar.update
	res, err := collect.Collect(ctx, clients, co, out)
	bar.done()
	if err != nil {
		var se *collect.StrictError
		if errors.As(err, &se) {
			printGaps(io, se.Gaps)
			return fmt.Errorf("--strict: %w", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if !opts.Quiet {
		agents := ""
		if res.NodeAgents > 0 {
			agents = fmt.Sprintf(", %d GPU agent pods", res.NodeAgents)
		}
		fmt.Fprintf(io.Out, "%s: %s; %d objects (%d pods, %d events, %d nodes%s), %d logs (%d truncated), %d gaps\n",
			res.Path, humanBytes(res.Bytes), res.Objects+res.Pods+res.Events+res.Nodes+res.NodeAgents, res.Pods, res.Events, res.Nodes, agents, res.Logs, res.Truncated, len(res.Gaps))
		printGaps(io, res.Gaps)
	}
	return nil
}

func printGaps(io *IOStreams, gaps []bundle.Gap) {
	for _, g := range gaps {
		fmt.Fprintf(io.ErrOut, "warning: %s\n", report.TerminalSafe(g.Step+" "+g.Object+": "+g.Message)+raiseHint(g.Limit))
	}
}

// progressBar shows objects and logs collected on a terminal, at most ten times a second.
type progressBar struct {
	io    *IOStreams
	name  string
	mu    sync.Mutex
	last  time.Time
	shown bool
}

func newProgressBar(io *IOStreams, name string) *progressBar {
	return &progressBar{io: io, name: name}
}

func (b *progressBar) update(p collect.Progress) {
	if !b.io.IsTerminal {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.last) < 100*time.Millisecond && p.LogsDone < p.LogsTotal {
		return
	}
	b.last = time.Now()
	bar := ""
	if p.LogsTotal > 0 {
		const width = 20
		n := p.LogsDone * width / p.LogsTotal
		bar = "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "] "
	}
	fmt.Fprintf(b.io.ErrOut, "\r\033[Kcollecting %s: %s%d objects, logs %d/%d, %s", b.name, bar, p.Objects, p.LogsDone, p.LogsTotal, humanBytes(p.LogBytes))
	b.shown = true
}

func (b *progressBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shown {
		fmt.Fprint(b.io.ErrOut, "\r\033[K")
	}
}
