package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/report"
)

// Analysis is what the store keeps of one diagnosis: the rows of one Put. It is plain data
// (JSON), so that a Queue can keep it on disk while the store is away.
type Analysis struct {
	Job Job `json:"job"`
	// Attempt numbers the job's restarts as a whole (a JobSet's status.restarts; 0 for kinds
	// that do not count them): each attempt has one current analysis.
	Attempt int `json:"attempt"`
	// The analysis's key: the same bundle, coroner and rules give the same row.
	BundleDigest   string `json:"bundleDigest"`
	CoronerVersion string `json:"coronerVersion"`
	RulesVersion   string `json:"rulesVersion"`
	BundleURI      string `json:"bundleURI"`

	CollectedAt *time.Time `json:"collectedAt,omitempty"`
	AnalyzedAt  time.Time  `json:"analyzedAt"`
	// FailedAt is when the job failed: the root cause's time, else its last pod's end, else
	// when it was collected; nil when it did not fail.
	FailedAt      *time.Time `json:"failedAt,omitempty"`
	Status        string     `json:"status"`
	Verdict       string     `json:"verdict"`
	VerdictReason string     `json:"verdictReason"`
	Root          *Root      `json:"root,omitempty"`

	// GPUHoursUsed and GPUHoursLost sum the pods' (see Pod and docs/fleet.md).
	GPUHoursUsed float64 `json:"gpuHoursUsed"`
	GPUHoursLost float64 `json:"gpuHoursLost"`

	Findings []Finding `json:"findings"`
	Pods     []Pod     `json:"pods"`
	Nodes    []Node    `json:"nodes"`
}

// Job is the job an analysis is of. UID keys it within its cluster; plain logs, which have no
// job object, are keyed "sha256:" and their bundle's digest.
type Job struct {
	Cluster    string     `json:"cluster"`
	UID        string     `json:"uid"`
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Namespace  string     `json:"namespace"`
	Name       string     `json:"name"`
	OwnerKind  string     `json:"ownerKind,omitempty"`
	OwnerName  string     `json:"ownerName,omitempty"`
	Created    *time.Time `json:"created,omitempty"`
	WorldSize  int        `json:"worldSize"`
	GPUs       int        `json:"gpus"`
	Images     []string   `json:"images"`
}

// Root is the root cause.
type Root struct {
	Category   string `json:"category"`
	RuleID     string `json:"ruleId"`
	Title      string `json:"title"`
	Confidence string `json:"confidence"`
	Fault      string `json:"fault"`
	Retry      string `json:"retry"`
	Pod        string `json:"pod,omitempty"`
	Container  string `json:"container,omitempty"`
	Rank       *int   `json:"rank,omitempty"`
	Node       string `json:"node,omitempty"`
	ExitCode   *int   `json:"exitCode,omitempty"`
}

// Finding is one finding of the report.
type Finding struct {
	ID          string     `json:"id"`
	RuleID      string     `json:"ruleId"`
	Category    string     `json:"category"`
	Severity    string     `json:"severity"`
	Layer       string     `json:"layer"`
	Fault       string     `json:"fault"`
	Retry       string     `json:"retry"`
	Root        bool       `json:"root"`
	SecondaryOf string     `json:"secondaryOf,omitempty"`
	Title       string     `json:"title"`
	Pod         string     `json:"pod,omitempty"`
	Container   string     `json:"container,omitempty"`
	Node        string     `json:"node,omitempty"`
	Rank        *int       `json:"rank,omitempty"`
	First       *time.Time `json:"first,omitempty"`
	Last        *time.Time `json:"last,omitempty"`
	Count       int        `json:"count"`
	// Folded, Processes and Ranks say what a folded finding stands for (report.Finding's):
	// how many findings, on how many processes, of which ranks; 0, 1 and "" for one process.
	Folded    int    `json:"folded,omitempty"`
	Processes int    `json:"processes"`
	Ranks     string `json:"ranks,omitempty"`
}

// Pod is one pod of the job with the GPUs it held. Its GPU-hours used run from its start to
// its end (or to the collect, while it runs); those lost run from its last progress (the
// job's, when its own logs show none; its start when no log does) to the same end, when the
// job failed, plus the wait of a pod that never started, from its creation to the failure.
type Pod struct {
	Name         string     `json:"name"`
	Role         string     `json:"role,omitempty"`
	Node         string     `json:"node,omitempty"`
	Rank         *int       `json:"rank,omitempty"`
	GPUs         int        `json:"gpus"`
	Phase        string     `json:"phase"`
	Restarts     int        `json:"restarts"`
	ExitCode     *int       `json:"exitCode,omitempty"`
	Created      *time.Time `json:"created,omitempty"`
	Started      *time.Time `json:"started,omitempty"`
	Finished     *time.Time `json:"finished,omitempty"`
	LastProgress *time.Time `json:"lastProgress,omitempty"`
	GPUHoursUsed float64    `json:"gpuHoursUsed"`
	GPUHoursLost float64    `json:"gpuHoursLost"`
}

// Node is a node the job ran on, with its GPU labels when the bundle holds the node.
type Node struct {
	Name          string            `json:"name"`
	GPUProduct    string            `json:"gpuProduct,omitempty"`
	GPUCount      int               `json:"gpuCount,omitempty"`
	DriverVersion string            `json:"driverVersion,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	// Agents are the GPU health agents seen on the node (analyze.NodeCoverage); Attributed
	// says the job's failure was put down to the node's GPU with evidence that lines up.
	Agents     []string `json:"agents,omitempty"`
	Attributed bool     `json:"attributed,omitempty"`
}

// Meta is what the diagnosis does not know about itself.
type Meta struct {
	// Cluster names the cluster the job ran in.
	Cluster string
	// BundleURI says where the bundle is kept (file:///..., s3://...).
	BundleURI string
	// RulesVersion is RulesVersion of the rule set the diagnosis used.
	RulesVersion string
	// AnalyzedAt is when the diagnosis was made.
	AnalyzedAt time.Time
}

// RulesVersion is a digest of a rule set's rules: what they match and what they say, not the
// files they came from nor their examples. Two analyses of a bundle by the same coroner with
// the same RulesVersion are the same analysis.
func RulesVersion(rs *analyze.RuleSet) (string, error) {
	rules := append([]*analyze.Rule(nil), rs.Rules()...)
	sort.Slice(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
	h := sha256.New()
	for _, r := range rules {
		c := *r
		c.Source, c.Examples = "", analyze.Rule{}.Examples
		data, err := json.Marshal(&c)
		if err != nil {
			return "", fmt.Errorf("rule %s: %w", r.ID, err)
		}
		h.Write(data)
		h.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// FromDiagnosis makes the store's rows of a diagnosis: its report (the redacted text, as
// analyze shows it), the pods' GPU requests and the nodes' labels from its model, and the
// last progress of each log from its result.
func FromDiagnosis(ctx context.Context, d *diagnose.Diagnosis, meta Meta) (*Analysis, error) {
	if d == nil || d.Report == nil || d.Model == nil || d.Bundle == nil || d.Result == nil {
		return nil, errors.New("store: an incomplete diagnosis")
	}
	sum, err := d.Bundle.Digest(ctx)
	if err != nil {
		return nil, err
	}
	rep := d.Report
	a := &Analysis{
		BundleDigest: "sha256:" + hex.EncodeToString(sum), CoronerVersion: rep.CoronerVersion,
		RulesVersion: meta.RulesVersion, BundleURI: meta.BundleURI, CollectedAt: rep.Bundle.CollectedAt,
		AnalyzedAt: meta.AnalyzedAt.UTC(), Status: rep.Job.Status, Verdict: string(rep.Verdict), VerdictReason: rep.VerdictReason,
		Findings: []Finding{}, Pods: []Pod{}, Nodes: []Node{},
	}
	a.Job = Job{Cluster: meta.Cluster, UID: rep.Job.UID, APIVersion: rep.Job.APIVersion, Kind: rep.Job.Kind,
		Namespace: rep.Job.Namespace, Name: rep.Job.Name, Created: rep.Job.Created, Images: []string{}}
	if a.Job.UID == "" {
		a.Job.UID = a.BundleDigest
	}
	if j := d.Model.Job; j != nil && j.Object != nil {
		for _, ref := range j.Object.GetOwnerReferences() {
			if ref.Controller != nil && *ref.Controller || a.Job.OwnerName == "" {
				a.Job.OwnerKind, a.Job.OwnerName = ref.Kind, ref.Name
			}
		}
		if n, ok := j.Object.Object["status"].(map[string]any)["restarts"].(int64); ok && n > 0 {
			a.Attempt = int(n)
		}
	}

	podSpecs := map[string]*corev1.Pod{}
	for _, p := range d.Model.Pods {
		podSpecs[p.Name] = p
	}
	progress := map[string]time.Time{} // pod -> its logs' last progress
	var jobProgress time.Time
	for _, l := range d.Result.Logs {
		if l.LastProgress != nil {
			if l.LastProgress.After(progress[l.Pod]) {
				progress[l.Pod] = *l.LastProgress
			}
			if l.LastProgress.After(jobProgress) {
				jobProgress = *l.LastProgress
			}
		}
	}

	images := map[string]bool{}
	nodeNames := map[string]bool{}
	for _, r := range rep.Job.Replicas {
		if r.Expected != nil {
			a.Job.WorldSize += *r.Expected
		} else {
			a.Job.WorldSize += r.Created
		}
		pods := r.Pods
		if len(r.Groups) > 0 {
			// The store keeps a row per pod: a group's pods unfold here.
			pods = append([]report.Pod(nil), r.Pods...)
			for _, g := range r.Groups {
				pods = append(pods, g.Members()...)
			}
		}
		for _, p := range pods {
			pod := Pod{Name: p.Name, Role: r.Role, Node: p.Node, Rank: p.Rank, Phase: p.Phase, Restarts: p.Restarts,
				ExitCode: p.ExitCode, Created: p.Created, Started: p.Started, Finished: p.Finished}
			if spec := podSpecs[p.Name]; spec != nil {
				pod.GPUs = gpusOf(spec)
				for _, c := range append(append([]corev1.Container(nil), spec.Spec.InitContainers...), spec.Spec.Containers...) {
					if c.Image != "" {
						images[c.Image] = true
					}
				}
			}
			if t, ok := progress[p.Name]; ok {
				pod.LastProgress = &t
			}
			if p.Node != "" {
				nodeNames[p.Node] = true
			}
			a.Job.GPUs += pod.GPUs
			a.Pods = append(a.Pods, pod)
		}
	}
	a.Job.Images = sortedKeys(images)
	sort.Slice(a.Pods, func(i, j int) bool { return a.Pods[i].Name < a.Pods[j].Name })

	if rc := rep.RootCause; rc != nil {
		a.Root = &Root{Category: string(rc.Category), RuleID: rc.RuleID, Title: rc.Title, Confidence: string(rc.Confidence),
			Fault: string(rc.Fault), Retry: string(rc.Retry), Pod: rc.Pod, Container: rc.Container, Rank: rc.Rank, Node: rc.Node}
		for _, p := range a.Pods {
			if p.Name == rc.Pod {
				a.Root.ExitCode = p.ExitCode
				if a.Root.Node == "" {
					a.Root.Node = p.Node
				}
			}
		}
	}
	if rep.Verdict == analyze.VerdictUnhealthy {
		a.FailedAt = failedAt(rep, a.Pods)
	}
	for _, f := range rep.Findings {
		sf := Finding{ID: f.ID, RuleID: f.RuleID, Category: string(f.Category), Severity: f.Severity.String(), Layer: string(f.Layer),
			Fault: string(f.Fault), Retry: string(f.Retry), Root: rep.RootCause != nil && rep.RootCause.ID == f.ID,
			SecondaryOf: f.SecondaryOf, Title: f.Title, Pod: f.Pod, Container: f.Container, Node: f.Node, Rank: f.Rank,
			First: f.Time, Last: f.Time, Count: f.Count, Folded: f.Folded, Processes: max(1, f.Processes), Ranks: f.Ranks}
		if f.LastTime != nil {
			sf.Last = f.LastTime
		}
		for _, e := range f.Evidence {
			for _, t := range []*time.Time{e.Time, e.LastTime} {
				if t != nil && (sf.Last == nil || t.After(*sf.Last)) {
					sf.Last = t
				}
			}
		}
		if sf.Node != "" {
			nodeNames[sf.Node] = true
		}
		a.Findings = append(a.Findings, sf)
	}

	gpuHours(a, jobProgress)

	nodeSpecs := map[string]*corev1.Node{}
	for i := range d.Model.Nodes {
		nodeSpecs[d.Model.Nodes[i].Name] = &d.Model.Nodes[i]
	}
	for _, name := range sortedKeys(nodeNames) {
		n := Node{Name: name}
		if spec := nodeSpecs[name]; spec != nil {
			n.Labels = gpuLabels(spec.Labels)
			n.GPUProduct = firstLabel(spec.Labels, "nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "amd.com/gpu.product-name")
			n.DriverVersion = driverVersion(spec.Labels)
			n.GPUCount = gpuCapacity(spec)
		}
		if ne := d.Result.NodeEvidence; ne != nil {
			for _, c := range ne.Nodes {
				if c.Node == name {
					n.Agents = c.Agents
				}
			}
			n.Attributed = ne.Attribution != nil && ne.Attribution.Attributed && ne.Attribution.Node == name
		}
		a.Nodes = append(a.Nodes, n)
	}
	return a, nil
}

// failedAt is when the job failed: its root cause's time, else when its last pod ended, else
// when it was collected.
func failedAt(rep *report.Report, pods []Pod) *time.Time {
	if rc := rep.RootCause; rc != nil && rc.Time != nil {
		return rc.Time
	}
	var last *time.Time
	for _, p := range pods {
		if p.Finished != nil && (last == nil || p.Finished.After(*last)) {
			last = p.Finished
		}
	}
	if last != nil {
		return last
	}
	return rep.Bundle.CollectedAt
}

// gpuHours fills the pods' and the analysis's GPU-hours (see Pod).
func gpuHours(a *Analysis, jobProgress time.Time) {
	end := func(p Pod) (time.Time, bool) {
		switch {
		case p.Finished != nil:
			return *p.Finished, true
		case a.CollectedAt != nil:
			return *a.CollectedAt, true
		case a.FailedAt != nil:
			return *a.FailedAt, true
		}
		return time.Time{}, false
	}
	for i := range a.Pods {
		p := &a.Pods[i]
		if p.GPUs == 0 {
			continue
		}
		stop, ok := end(*p)
		if !ok {
			continue
		}
		if p.Started == nil {
			// It never ran: its GPUs were held for it (in the gang, in the quota) while it waited.
			if a.FailedAt != nil && p.Created != nil {
				p.GPUHoursLost = hours(*p.Created, *a.FailedAt, p.GPUs)
			}
			continue
		}
		p.GPUHoursUsed = hours(*p.Started, stop, p.GPUs)
		if a.FailedAt == nil {
			continue
		}
		from := *p.Started
		switch {
		case p.LastProgress != nil:
			from = *p.LastProgress
		case !jobProgress.IsZero():
			from = jobProgress
		}
		if from.Before(*p.Started) {
			from = *p.Started
		}
		p.GPUHoursLost = hours(from, stop, p.GPUs)
	}
	for _, p := range a.Pods {
		a.GPUHoursUsed += p.GPUHoursUsed
		a.GPUHoursLost += p.GPUHoursLost
	}
}

// hours is the GPU-hours of gpus held from a to b (0 when b is not after a).
func hours(a, b time.Time, gpus int) float64 {
	if !b.After(a) {
		return 0
	}
	return b.Sub(a).Hours() * float64(gpus)
}

// isGPU says whether a resource name is a GPU's: nvidia.com/gpu, amd.com/gpu, gpu.intel.com/...
func isGPU(name corev1.ResourceName) bool {
	n := string(name)
	return strings.HasSuffix(n, "/gpu") || strings.HasPrefix(n, "gpu.intel.com/") || strings.HasPrefix(n, "nvidia.com/mig-")
}

// gpusOf is the GPUs a pod holds: the most of the sum of its containers' and any one init
// container's (as the scheduler counts), limits first (GPUs cannot be overcommitted).
func gpusOf(p *corev1.Pod) int {
	count := func(c corev1.Container) int {
		n := 0
		for name, q := range c.Resources.Limits {
			if isGPU(name) {
				n += int(q.Value())
			}
		}
		if n == 0 {
			for name, q := range c.Resources.Requests {
				if isGPU(name) {
					n += int(q.Value())
				}
			}
		}
		return n
	}
	total := 0
	for _, c := range p.Spec.Containers {
		total += count(c)
	}
	for _, c := range p.Spec.InitContainers {
		total = max(total, count(c))
	}
	return total
}

func gpuCapacity(n *corev1.Node) int {
	total := 0
	for name, q := range n.Status.Capacity {
		if isGPU(name) {
			total += int(q.Value())
		}
	}
	return total
}

// gpuLabels keeps a node's labels that describe its GPUs, driver and machine.
func gpuLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if strings.HasPrefix(k, "nvidia.com/") || strings.HasPrefix(k, "amd.com/") || strings.Contains(k, "accelerator") ||
			k == "node.kubernetes.io/instance-type" || k == "topology.kubernetes.io/zone" {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func firstLabel(labels map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := labels[k]; v != "" {
			return v
		}
	}
	return ""
}

// driverVersion is the GPU driver's version as GPU feature discovery labels it.
func driverVersion(l map[string]string) string {
	if v := firstLabel(l, "nvidia.com/cuda.driver-version.full", "nvidia.com/gpu.driver-version"); v != "" {
		return v
	}
	if l["nvidia.com/cuda.driver.major"] != "" {
		return strings.TrimSuffix(l["nvidia.com/cuda.driver.major"]+"."+l["nvidia.com/cuda.driver.minor"]+"."+l["nvidia.com/cuda.driver.rev"], ".")
	}
	return ""
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
