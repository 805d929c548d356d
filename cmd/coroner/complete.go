package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/collect"
	"github.com/coroner-dev/coroner/compare"
	"github.com/coroner-dev/coroner/report"
)

// completeTimeout bounds what a completion asks of a cluster or reads of a bundle: a shell
// waits for it, so past this it offers nothing rather than hang.
const completeTimeout = 3 * time.Second

// completeListLimit is the most objects a completion lists from a cluster.
const completeListLimit = 500

// addCompletions registers the dynamic completions of the command tree (cobra's __complete,
// which the completion scripts and kubectl_complete-coroner call): enum values of flags, rule
// ids, the kinds, jobs and namespaces of the kubeconfig's cluster, and the pods and containers
// of a bundle. Every one is silent on failure: no cluster, no bundle, a timeout offer nothing.
func addCompletions(root *cobra.Command) {
	enums := map[string]map[string][]string{
		"analyze":     {"format": report.Formats, "fail-on": severities(), "tiers": {"all", "fallback"}},
		"diff":        {"format": compare.Formats, "fail-on": append(severities(), "any")},
		"fleet query": {"format": {"table", "csv", "json"}},
	}
	walk(root, func(c *cobra.Command) {
		for name, values := range enums[subcommandPath(c)] {
			registerValues(c, name, values)
		}
		registerValues(c, "color", colorModes)
		if c.Flags().Lookup("rules") != nil {
			_ = c.RegisterFlagCompletionFunc("rules", dirsOnly)
		}
		if c.Flags().Lookup("context") != nil && c.Flags().Lookup("kubeconfig") != nil {
			_ = c.RegisterFlagCompletionFunc("context", completeContexts)
			_ = c.RegisterFlagCompletionFunc("namespace", completeNamespaces)
		}
	})
	for _, c := range root.Commands() {
		switch c.Name() {
		case "collect":
			c.ValidArgsFunction = completeCollectTarget
		case "search":
			c.ValidArgsFunction = completeSearch
		case "rules":
			for _, sub := range c.Commands() {
				if sub.Name() == "show" {
					sub.ValidArgsFunction = completeRuleIDs
				}
			}
		}
	}
}

// subcommandPath is c's path below the root ("fleet query"), whatever the root is called.
func subcommandPath(c *cobra.Command) string {
	path := c.Name()
	for p := c.Parent(); p != nil && p.HasParent(); p = p.Parent() {
		path = p.Name() + " " + path
	}
	return path
}

func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

func severities() []string { return []string{"info", "warning", "error", "critical"} }

// registerValues offers values for the flag name of c, when c has it.
func registerValues(c *cobra.Command, name string, values []string) {
	if c.Flags().Lookup(name) == nil {
		return
	}
	_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

func dirsOnly(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}

// completeRuleIDs offers the ids of the built-in rules and of the --rules directories given.
func completeRuleIDs(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	dirs, _ := c.Flags().GetStringArray("rules")
	rs, err := loadRuleSet(dirs, "all")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var ids []cobra.Completion
	for _, r := range rs.Rules() {
		if strings.HasPrefix(r.ID, toComplete) && !slices.Contains(args, r.ID) {
			ids = append(ids, cobra.CompletionWithDesc(r.ID, r.Title))
		}
	}
	return ids, cobra.ShellCompDirectiveNoFileComp
}

// completeSearch completes search, which parses its own flags (a query word may start with
// "-"), so cobra leaves its flags' values to it: --pod and --container (the pods and
// containers of the bundle searched), --format and --color; else file names, for the inputs.
func completeSearch(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	none := cobra.ShellCompDirectiveNoFileComp
	flag, prefix, before := "", "", args
	if name, value, ok := strings.Cut(toComplete, "="); ok && strings.HasPrefix(name, "--") {
		flag, prefix, toComplete = name, name+"=", value
	} else if strings.HasPrefix(toComplete, "-") {
		return nil, none // cobra offers the flag names
	} else if len(args) > 0 {
		flag, before = args[len(args)-1], args[:len(args)-1]
	}
	var values []string
	switch flag {
	case "--pod", "--container", "-c":
		_, rest, err := splitSearchArgs(c.Flags(), before)
		if err != nil || len(rest) == 0 {
			return nil, none
		}
		values = bundleLogNames(rest[0], flag == "--pod")
	case "--format":
		values = searchFormats
	case "--color":
		values = colorModes
	default:
		return nil, cobra.ShellCompDirectiveDefault // an input, a query word, another flag's value
	}
	var out []cobra.Completion
	for _, v := range values {
		if strings.HasPrefix(v, toComplete) {
			out = append(out, prefix+v)
		}
	}
	return out, none
}

// bundleLogNames lists the pods (or the containers) of the bundle at path, sorted, read
// without its resources within completeTimeout; plain logs have none.
func bundleLogNames(path string, pods bool) []string {
	if !bundle.IsBundlePath(path) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	b, err := bundle.Open(ctx, path, bundle.DefaultLimits())
	if err != nil {
		return nil
	}
	defer b.Close()
	logs, _ := bundle.LogStreams(b)
	var out []string
	for _, l := range logs {
		v := l.Container
		if pods {
			v = l.Pod
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// kubeConfig is the client config the command's kubeconfig flags (--kubeconfig, --context,
// -n, --server...) as typed so far describe.
func kubeConfig(c *cobra.Command) clientcmd.ClientConfig {
	var ov clientcmd.ConfigOverrides
	fs := pflag.NewFlagSet("overrides", pflag.ContinueOnError)
	clientcmd.BindOverrideFlags(&ov, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	c.Flags().Visit(func(f *pflag.Flag) {
		if fs.Lookup(f.Name) != nil && f.Value.Type() != "stringSlice" {
			_ = fs.Set(f.Name, f.Value.String())
		}
	})
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f := c.Flags().Lookup("kubeconfig"); f != nil {
		rules.ExplicitPath = f.Value.String()
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &ov)
}

// clusterClients connects to the cluster of the command's kubeconfig, every request bounded by
// completeTimeout.
func clusterClients(c *cobra.Command) (*collect.Clients, string, error) {
	kc := kubeConfig(c)
	cfg, err := kc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	cfg.Timeout = completeTimeout
	cfg.UserAgent = "coroner/" + version + " (completion)"
	ns, _, err := kc.Namespace()
	if err != nil {
		return nil, "", err
	}
	cl, err := collect.NewClients(cfg)
	return cl, ns, err
}

// completeContexts offers the contexts of the kubeconfig: no cluster is asked.
func completeContexts(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	raw, err := kubeConfig(c).RawConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for name := range raw.Contexts {
		if strings.HasPrefix(name, toComplete) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeNamespaces offers the namespaces of the cluster.
func completeNamespaces(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cl, _, err := clusterClients(c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	list, err := cl.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: completeListLimit})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, ns := range list.Items {
		if strings.HasPrefix(ns.Name, toComplete) {
			out = append(out, ns.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeCollectTarget completes collect's KIND/NAME or KIND NAME: the training kinds the
// cluster serves, then the jobs of that kind in the namespace.
func completeCollectTarget(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	none := cobra.ShellCompDirectiveNoFileComp
	if len(args) > 1 || len(args) == 1 && strings.Contains(args[0], "/") {
		return nil, none
	}
	cl, ns, err := clusterClients(c)
	if err != nil {
		return nil, none
	}
	cat, _, err := collect.Discover(cl.Discovery)
	if err != nil {
		return nil, none
	}
	kind, prefix := "", ""
	switch {
	case len(args) == 1:
		kind = args[0]
	case strings.Contains(toComplete, "/"):
		kind, _, _ = strings.Cut(toComplete, "/")
		prefix = kind + "/"
	default:
		var out []cobra.Completion
		for _, r := range cat.TrainingKinds() {
			k := strings.ToLower(r.Kind)
			if strings.HasPrefix(k, strings.ToLower(toComplete)) && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		return out, none
	}
	res, err := cat.Resolve(kind)
	if err != nil {
		return nil, none
	}
	if !res.Namespaced {
		return nil, none // a job is namespaced: nothing of this kind can be collected
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	list, err := cl.Dynamic.Resource(res.GVR).Namespace(ns).List(ctx, metav1.ListOptions{Limit: completeListLimit})
	if err != nil {
		return nil, none
	}
	var out []cobra.Completion
	for _, it := range list.Items {
		if name := prefix + it.GetName(); strings.HasPrefix(name, toComplete) {
			out = append(out, name)
		}
	}
	return out, none
}
