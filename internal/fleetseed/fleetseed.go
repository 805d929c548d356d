// Package fleetseed makes synthetic diagnoses for the fleet store: a deterministic stream,
// from a seed, of job runs over many days across clusters, namespaces, kinds and images,
// with the failures a large training fleet sees (GPUs that fall off the bus on a few bad
// nodes, collective timeouts, a week when a switch flapped, users' out-of-memory errors),
// resubmissions that succeed or fail again, and re-analyses by newer rules. It fills a store
// for the fleet report's picture and for timing the report's queries on a year of history
// (docs/fleet.md). Nothing here is a real diagnosis.
package fleetseed

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/coroner-dev/coroner/store"
)

// Options say how much to make.
type Options struct {
	Seed uint64
	// Start is the first day (UTC midnight); Days how many; PerDay the job runs a day on
	// average (weekends see fewer).
	Start  time.Time
	Days   int
	PerDay int
	// Clusters and NodesPerCluster size the fleet (defaults 4 and 64).
	Clusters, NodesPerCluster int
}

// cause is a root cause the generator draws, with its weight among failures.
type cause struct {
	category, fault, retry, rule string
	weight                       float64
	// node: the failure names its node (GPU, CUDA and collective failures do).
	node bool
	// titles are drawn for the root cause; %s takes an Xid code when xids is set.
	title string
	xids  []string
}

// causes are weighted after the Llama 3 paper's table of interruptions (GPU and HBM faults
// first, then software, network, host memory...), mapped onto coroner's categories.
var causes = []cause{
	{category: "gpu-hardware", fault: "hardware", retry: "transient", rule: "gpu-xid", weight: 30, node: true,
		title: "GPU error on the node (Xid %s)", xids: []string{"79", "79", "79", "48", "94", "63", "74", "13", "31"}},
	{category: "collective-timeout", fault: "platform", retry: "transient", rule: "nccl-watchdog-timeout", weight: 12, node: true,
		title: "NCCL collective timed out in the watchdog"},
	{category: "user-code-error", fault: "user", retry: "permanent", rule: "python-traceback", weight: 11, title: "the training script raised an exception"},
	{category: "cuda-oom", fault: "user", retry: "permanent", rule: "cuda-oom", weight: 9, title: "CUDA out of memory"},
	{category: "cuda-error", fault: "hardware", retry: "transient", rule: "cuda-error", weight: 6, node: true, title: "CUDA error: an illegal memory access was encountered"},
	{category: "collective-error", fault: "platform", retry: "transient", rule: "nccl-error", weight: 5, node: true, title: "NCCL error: remote process exited or there was a network error"},
	{category: "preempted-evicted", fault: "platform", retry: "transient", rule: "pod-evicted", weight: 6, title: "a pod was preempted"},
	{category: "host-oom", fault: "user", retry: "permanent", rule: "oom-killed", weight: 4, title: "a container was OOMKilled"},
	{category: "hang", fault: "platform", retry: "transient", rule: "progress-stalled", weight: 4, title: "training made no progress before the job ended"},
	{category: "nan-loss", fault: "user", retry: "permanent", rule: "nan-loss", weight: 3, title: "the loss became NaN"},
	{category: "image-pull", fault: "user", retry: "permanent", rule: "image-pull", weight: 3, title: "the image could not be pulled"},
	{category: "storage-error", fault: "platform", retry: "transient", rule: "storage-io", weight: 2, title: "an I/O error on the checkpoint volume"},
	{category: "scheduling", fault: "platform", retry: "transient", rule: "unschedulable", weight: 2, title: "pods stayed pending: insufficient nvidia.com/gpu"},
	{category: "", weight: 3}, // failed, no root cause found
}

var (
	kinds      = []weighted{{"PyTorchJob", 50}, {"JobSet", 25}, {"Job", 15}, {"RayJob", 10}}
	namespaces = []string{"llm-pretrain", "llm-finetune", "vision", "speech", "recsys", "research-a", "research-b", "eval", "rl", "platform-ci"}
	images     = []string{
		"registry.example/train/llm:2026.01", "registry.example/train/llm:2026.04", "registry.example/train/llm:2026.08",
		"nvcr.io/nvidia/pytorch:25.01-py3", "nvcr.io/nvidia/pytorch:25.06-py3", "registry.example/vision/train:7",
		"registry.example/speech/asr:3.2", "registry.example/recsys/dlrm:12",
	}
)

type weighted struct {
	name   string
	weight float64
}

// gen is the generator's state: the random source and the fleet it draws from.
type gen struct {
	r     *rand.Rand
	o     Options
	nodes [][]string // per cluster
	// bad nodes fail far more often (the "drain these" the report should find).
	bad  map[string]bool
	jobs int
}

// Generate calls emit with each analysis, day by day: about Days x PerDay job runs, their
// retries, and for some a second analysis by newer rules. The same options give the same stream.
func Generate(o Options, emit func(*store.Analysis) error) error {
	if o.Clusters <= 0 {
		o.Clusters = 4
	}
	if o.NodesPerCluster <= 0 {
		o.NodesPerCluster = 64
	}
	g := &gen{r: rand.New(rand.NewPCG(o.Seed, 0x636f726f6e6572)), o: o, bad: map[string]bool{}}
	for c := range o.Clusters {
		var ns []string
		for n := range o.NodesPerCluster {
			ns = append(ns, fmt.Sprintf("gpu-%c%03d", 'a'+rune(c), n))
		}
		g.nodes = append(g.nodes, ns)
		for range 3 {
			g.bad[ns[g.r.IntN(len(ns))]] = true
		}
	}
	// A switch that flapped for a week in the middle of the period: collective failures.
	flap := o.Start.AddDate(0, 0, o.Days/2)
	var pending []*store.Analysis // retries and re-analyses, by time
	start := o.Start.UTC()
	for day := range o.Days {
		d := start.AddDate(0, 0, day)
		n := o.PerDay
		if wd := d.Weekday(); wd == time.Saturday || wd == time.Sunday {
			n = n * 6 / 10
		}
		n = max(0, n+g.r.IntN(n/5+1)-n/10)
		var today []*store.Analysis
		for range n {
			at := d.Add(time.Duration(g.r.Int64N(int64(24 * time.Hour))))
			flapping := !at.Before(flap) && at.Before(flap.AddDate(0, 0, 7))
			today = append(today, g.run(at, flapping, nil, nil)...)
		}
		// What was scheduled for today (retries, re-analyses) joins it.
		var later []*store.Analysis
		for _, a := range pending {
			if a.AnalyzedAt.Before(d.AddDate(0, 0, 1)) {
				today = append(today, a)
			} else {
				later = append(later, a)
			}
		}
		pending = later
		sortByTime(today)
		for _, a := range today {
			// A failure resubmitted: its retry runs a few hours later, as the next of its
			// lineage; some analyses are made again by newer rules days later.
			if a.Verdict == "unhealthy" && a.RulesVersion == rulesV1 {
				pending = append(pending, g.followUps(a)...)
			}
			if err := emit(a); err != nil {
				return err
			}
		}
	}
	return nil
}

const (
	rulesV1 = "sha256:seed-rules-1"
	rulesV2 = "sha256:seed-rules-2"
)

// run makes one job run that ends at `at`, a new job (retryOf nil) or the retry of one.
func (g *gen) run(at time.Time, flapping bool, retryOf *store.Analysis, retryCause *cause) []*store.Analysis {
	g.jobs++
	uid := fmt.Sprintf("%08x-seed-%d", g.r.Uint32(), g.jobs)
	cl := g.r.IntN(g.o.Clusters)
	job := store.Job{
		Cluster: fmt.Sprintf("prod-%c", 'a'+rune(cl)), UID: uid, Kind: pick(g.r, kinds), Namespace: namespaces[g.r.IntN(len(namespaces))],
		Name: fmt.Sprintf("run-%d", g.jobs), Images: []string{images[g.r.IntN(len(images))]},
	}
	if job.Kind == "JobSet" && g.r.IntN(2) == 0 {
		job.Images = append(job.Images, images[g.r.IntN(len(images))])
	}
	// World size: mostly small jobs, a few large ones; 8 GPUs a pod.
	pods := 1 << min(6, int(math.Floor(g.r.ExpFloat64()*1.6)))
	if retryOf != nil {
		job.Cluster, job.Namespace, job.Kind, job.Name, job.Images = retryOf.Job.Cluster, retryOf.Job.Namespace, retryOf.Job.Kind, retryOf.Job.Name, retryOf.Job.Images
		job.OwnerKind, job.OwnerName = retryOf.Job.OwnerKind, retryOf.Job.OwnerName
		pods = max(1, retryOf.Job.WorldSize)
		cl = int(job.Cluster[len(job.Cluster)-1] - 'a')
	} else if job.Kind == "JobSet" {
		job.OwnerKind, job.OwnerName = "TrainJob", job.Name
	}
	job.WorldSize, job.GPUs = pods, pods*8
	runHours := math.Min(96, 0.25+g.r.ExpFloat64()*10)
	started := at.Add(-time.Duration(runHours * float64(time.Hour)))
	created := started.Add(-time.Duration(g.r.IntN(600)) * time.Second)
	job.Created = &created

	// Whether it failed, and of what: some images and namespaces fail more.
	pFail := 0.32
	if job.Images[0] == images[1] {
		pFail += 0.2 // a bad release
	}
	if job.Namespace == "research-b" {
		pFail += 0.1
	}
	var c *cause
	switch {
	case retryCause != nil:
		c = retryCause
	case flapping && g.r.Float64() < 0.25:
		c = &causes[1]
	case g.r.Float64() < pFail:
		c = g.cause()
	}
	a := &store.Analysis{
		Job: job, BundleDigest: "sha256:seed-" + uid, CoronerVersion: "seed", RulesVersion: rulesV1,
		BundleURI: fmt.Sprintf("s3://bundles/%s/%s/%s/%s.tar.gz", job.Cluster, job.Namespace, job.Name, at.Format("20060102T150405Z")),
		Status:    "Succeeded", Verdict: "healthy", VerdictReason: "the job succeeded", Findings: []store.Finding{},
	}
	collected := at.Add(time.Duration(5+g.r.IntN(40)) * time.Second)
	a.CollectedAt = &collected
	// Diagnosed a minute or two after the failure, now and then much later (a watcher
	// restarting, a queue waiting for the store).
	delay := time.Duration((20 + g.r.ExpFloat64()*90) * float64(time.Second))
	if g.r.IntN(50) == 0 {
		delay += time.Duration(g.r.IntN(6*3600)) * time.Second
	}
	a.AnalyzedAt = at.Add(delay)
	// The pods and their nodes.
	var used float64
	nodes := map[string]bool{}
	for i := range pods {
		node := g.nodes[cl][g.r.IntN(len(g.nodes[cl]))]
		rank := i
		s, e := started, at
		a.Pods = append(a.Pods, store.Pod{Name: fmt.Sprintf("%s-worker-%d", job.Name, i), Role: "worker", Node: node, Rank: &rank, GPUs: 8,
			Phase: "Succeeded", Created: &created, Started: &s, Finished: &e, GPUHoursUsed: 8 * runHours})
		used += 8 * runHours
		if !nodes[node] {
			nodes[node] = true
			a.Nodes = append(a.Nodes, store.Node{Name: node, GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUCount: 8, DriverVersion: "550.90.07",
				Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", cl%2)}})
		}
	}
	a.GPUHoursUsed = used
	if c == nil {
		return []*store.Analysis{a}
	}
	failed := at
	a.FailedAt = &failed
	a.Status, a.Verdict, a.VerdictReason = "Failed", "unhealthy", "the job failed"
	// Lost: from the last progress (minutes to a few hours before) to the failure, on every
	// pod's GPUs.
	lostHours := math.Min(runHours, 0.05+g.r.ExpFloat64()*0.6)
	if c.category == "hang" {
		lostHours = math.Min(runHours, 0.5+g.r.Float64()*2)
	}
	for i := range a.Pods {
		p := &a.Pods[i]
		p.Phase = "Failed"
		lp := at.Add(-time.Duration(lostHours * float64(time.Hour)))
		p.LastProgress = &lp
		p.GPUHoursLost = 8 * lostHours
		a.GPUHoursLost += p.GPUHoursLost
	}
	if c.category == "" {
		a.VerdictReason = "the job failed; no rule names why"
		return []*store.Analysis{a}
	}
	// The failing pod: on a bad node, for most hardware failures.
	fp := g.r.IntN(len(a.Pods))
	if c.node && c.fault == "hardware" && g.r.IntN(3) > 0 {
		bad := g.badNode(cl)
		a.Pods[fp].Node = bad
		if !nodes[bad] {
			a.Nodes = append(a.Nodes, store.Node{Name: bad, GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUCount: 8, DriverVersion: "550.90.07"})
		}
	}
	pod := a.Pods[fp]
	title := c.title
	if len(c.xids) > 0 {
		// A bad node fails with its own Xid; others with any.
		xid := c.xids[g.r.IntN(len(c.xids))]
		if g.bad[pod.Node] && g.r.IntN(5) > 0 {
			xid = c.xids[len(pod.Node)*int(pod.Node[len(pod.Node)-1])%len(c.xids)]
		}
		title = fmt.Sprintf(c.title, xid)
	}
	exit := 1
	a.Pods[fp].ExitCode = &exit
	root := store.Root{Category: c.category, RuleID: c.rule, Title: title, Confidence: "high", Fault: c.fault, Retry: c.retry,
		Pod: pod.Name, Container: "pytorch", Rank: pod.Rank, ExitCode: &exit}
	f := store.Finding{ID: "f-" + c.rule, RuleID: c.rule, Category: c.category, Severity: "critical", Layer: "execution",
		Fault: c.fault, Retry: c.retry, Root: true, Title: title, Pod: pod.Name, Container: "pytorch", Rank: pod.Rank,
		First: &failed, Last: &failed, Count: 1 + g.r.IntN(4)}
	if c.node {
		root.Node, f.Node = pod.Node, pod.Node
	}
	a.Root = &root
	a.Findings = append(a.Findings, f)
	// The other ranks see the collective stall that follows a rank's failure.
	if c.category != "collective-timeout" && pods > 1 && g.r.IntN(2) == 0 {
		other := a.Pods[(fp+1)%len(a.Pods)]
		a.Findings = append(a.Findings, store.Finding{ID: "f-nccl-watchdog-timeout", RuleID: "nccl-watchdog-timeout", Category: "collective-timeout",
			Severity: "error", Layer: "execution", Fault: "platform", Retry: "transient", SecondaryOf: f.ID,
			Title: "NCCL collective timed out in the watchdog", Pod: other.Name, Container: "pytorch", Node: other.Node, Rank: other.Rank,
			First: &failed, Last: &failed, Count: pods - 1})
	}
	return []*store.Analysis{a}
}

// followUps are what comes after a failure: its retry (most transient failures are
// resubmitted, a few permanent ones too) and, for some, a second analysis by newer rules.
func (g *gen) followUps(a *store.Analysis) []*store.Analysis {
	var out []*store.Analysis
	var c *cause
	for i := range causes {
		if a.Root != nil && causes[i].category == a.Root.Category {
			c = &causes[i]
		}
	}
	pRetry := 0.2
	if c != nil && c.retry == "transient" {
		pRetry = 0.7
	}
	if g.r.Float64() < pRetry {
		at := a.FailedAt.Add(time.Duration(1+g.r.IntN(8)) * time.Hour)
		var again *cause
		if c != nil && g.r.Float64() < map[bool]float64{true: 0.25, false: 0.6}[c.retry == "transient"] {
			again = c // the same cause again: a bad node, a bug the retry did not fix
		}
		out = append(out, g.run(at, false, a, again)...)
	}
	if g.r.IntN(20) == 0 {
		b := *a
		b.RulesVersion = rulesV2
		b.AnalyzedAt = a.AnalyzedAt.Add(time.Duration(1+g.r.IntN(10)) * 24 * time.Hour)
		out = append(out, &b)
	}
	return out
}

func (g *gen) cause() *cause {
	total := 0.0
	for _, c := range causes {
		total += c.weight
	}
	x := g.r.Float64() * total
	for i := range causes {
		if x -= causes[i].weight; x < 0 {
			return &causes[i]
		}
	}
	return &causes[len(causes)-1]
}

// badNode is one of the cluster's bad nodes.
func (g *gen) badNode(cl int) string {
	var bad []string
	for _, n := range g.nodes[cl] {
		if g.bad[n] {
			bad = append(bad, n)
		}
	}
	if len(bad) == 0 {
		return g.nodes[cl][0]
	}
	return bad[g.r.IntN(len(bad))]
}

func pick(r *rand.Rand, ws []weighted) string {
	total := 0.0
	for _, w := range ws {
		total += w.weight
	}
	x := r.Float64() * total
	for _, w := range ws {
		if x -= w.weight; x < 0 {
			return w.name
		}
	}
	return ws[len(ws)-1].name
}

// sortByTime orders a day's analyses by analysis time; the order they were made in breaks
// ties, so the stream stays the same.
func sortByTime(as []*store.Analysis) {
	sort.SliceStable(as, func(i, j int) bool { return as[i].AnalyzedAt.Before(as[j].AnalyzedAt) })
}
