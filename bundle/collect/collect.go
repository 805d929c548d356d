// Package collect snapshots a training job from a live cluster into a bundle: the job object
// and everything it stands on, its pods, their events, nodes and container logs. It is the only
// package of coroner that talks to a cluster (client-go).
package collect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/coroner-dev/coroner/bundle"
)

// Redactor masks secrets in objects and logs before anything is written (bundle/redact).
type Redactor interface {
	// Copy redacts a log as it streams; where is its path in the bundle.
	Copy(ctx context.Context, dst io.Writer, src io.Reader, where string) (int64, error)
	// ObjectAt redacts a decoded object in place; where is its path in the bundle.
	ObjectAt(where string, obj map[string]any)
	Summary() []bundle.RedactionRule
}

// Clients are the connections to one cluster.
type Clients struct {
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// Logs streams the containers' logs. It has no rate limit of its own: a collect bounds its
	// log streams by the number in flight (Options.Concurrency), which is what protects the
	// API server and the kubelets it proxies them to (the API server counts log streams as
	// long-running requests, outside its own in-flight limits). Counted against cfg's QPS,
	// 1,024 short logs took a minute at 32 requests a second; the objects keep that limit.
	// Nil means Kube.
	Logs kubernetes.Interface
}

// NewClients builds the clients from a rest config.
func NewClients(cfg *rest.Config) (*Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lc := rest.CopyConfig(cfg)
	lc.QPS, lc.Burst, lc.RateLimiter = -1, 0, nil // client-go: a negative QPS has no limiter
	logs, err := kubernetes.NewForConfig(lc)
	if err != nil {
		return nil, err
	}
	return &Clients{Kube: kube, Dynamic: dyn, Discovery: kube.Discovery(), Logs: logs}, nil
}

// logs is the client that streams logs.
func (c *Clients) logs() kubernetes.Interface {
	if c.Logs != nil {
		return c.Logs
	}
	return c.Kube
}

// Options say what to collect and how.
type Options struct {
	Kind      string // as typed: kind, plural or short name, optionally with ".group"
	Name      string
	Namespace string

	Since            time.Duration // logs newer than this; 0 means all
	MaxLogBytes      int64         // per log; the head and the tail are kept
	MaxTotalLogBytes int64         // all logs together
	LogIdleTimeout   time.Duration // a log stream that sends nothing for this long is given up
	Concurrency      int           // requests in flight
	Strict           bool          // any gap (but truncation and bundle.GapNodeAgents) is an error

	// Catalog, when set, is what the cluster serves, discovered earlier: a long-running
	// process (coroner watch) discovers once instead of at every collect.
	Catalog *Catalog
	// Last, when set, is the target as a watcher last saw it. When the target is gone by the
	// time it is collected (a TTL deleted it), Last is written in its place, with a gap saying
	// so, and what it owned is collected by its uid.
	Last *unstructured.Unstructured

	// Exec, when set, reads the NCCL Flight Recorder dumps of the running containers that
	// name a dump prefix (FlightRecorderEnv) through pods/exec: an explicit opt-in, with its
	// own RBAC. nil: no exec, no dumps.
	Exec Execer
	// MaxFlightRecordBytes bounds one dump; 0 means DefaultMaxFlightRecordBytes.
	MaxFlightRecordBytes int64
	// ReaderImage, when set, reads the dumps of a container that is not running from the
	// PersistentVolumeClaim it mounts at its dump prefix, with a short-lived reader pod of
	// this image (coroner's own: it runs ReaderArgs), deleted afterwards. ReaderTimeout bounds
	// each (0 means DefaultReaderTimeout).
	ReaderImage   string
	ReaderTimeout time.Duration

	Redactor Redactor // nil: no redaction (--no-redact)
	Version  string   // coroner's version, for the manifest
	Now      func() time.Time
	Progress func(Progress) // called from several goroutines, serialised
}

// Defaults for the options.
const (
	DefaultMaxLogBytes      = 10 << 20
	DefaultMaxTotalLogBytes = 2 << 30
	DefaultConcurrency      = 8
	DefaultLogIdleTimeout   = time.Minute
)

// Progress is how far a collect is.
type Progress struct {
	Objects   int
	LogsDone  int
	LogsTotal int
	LogBytes  int64
}

// Result describes the written bundle.
type Result struct {
	Path    string
	Bytes   int64
	Objects int
	Pods    int
	Events  int
	Nodes   int
	// NodeAgents counts the GPU agents' pods (device plugin, DCGM exporter) found on the nodes.
	NodeAgents int
	Logs       int
	Truncated  int
	Gaps       []bundle.Gap
	Manifest   *bundle.Manifest
}

// StrictError is returned with Options.Strict when the collect met gaps; no bundle is written.
type StrictError struct{ Gaps []bundle.Gap }

func (e *StrictError) Error() string {
	g := e.Gaps[0]
	return fmt.Sprintf("%d gap(s) while collecting, the first: %s %s: %s", len(e.Gaps), g.Step, g.Object, g.Message)
}

// Collect snapshots the job named by opts into a bundle at out (a .tar.gz path). The bundle is
// written to a temporary file beside out and renamed when complete: an error or a cancelled
// context leaves nothing under the final name.
func Collect(ctx context.Context, c *Clients, opts Options, out string) (*Result, error) {
	opts.defaults()
	col := &collector{c: c, opts: opts, written: map[string]bool{}}
	w, err := bundle.NewWriter(out)
	if err != nil {
		return nil, err
	}
	col.w = w
	res, err := col.run(ctx)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		w.Abort()
		return nil, err
	}
	if err := w.Close(res.Manifest); err != nil {
		return nil, err
	}
	res.Path = out
	if st, err := os.Stat(out); err == nil {
		res.Bytes = st.Size()
	}
	return res, nil
}

func (o *Options) defaults() {
	if o.ReaderTimeout <= 0 {
		o.ReaderTimeout = DefaultReaderTimeout
	}
	if o.MaxFlightRecordBytes <= 0 {
		o.MaxFlightRecordBytes = DefaultMaxFlightRecordBytes
	}
	if o.MaxLogBytes <= 0 {
		o.MaxLogBytes = DefaultMaxLogBytes
	}
	if o.MaxTotalLogBytes <= 0 {
		o.MaxTotalLogBytes = DefaultMaxTotalLogBytes
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.LogIdleTimeout <= 0 {
		o.LogIdleTimeout = DefaultLogIdleTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

type collector struct {
	c    *Clients
	opts Options
	w    *bundle.Writer
	cat  *Catalog

	mu        sync.Mutex
	gaps      []bundle.Gap
	written   map[string]bool
	files     []bundle.FileEntry // log entries carrying truncation
	objects   int
	logsDone  int
	logsTotal int
	logsKept  int
	truncated int
	logBytes  atomic.Int64
	budget    atomic.Int64 // log bytes still allowed
}

func (col *collector) gap(step, object, format string, args ...any) {
	col.mu.Lock()
	col.gaps = append(col.gaps, bundle.Gap{Step: step, Object: object, Message: fmt.Sprintf(format, args...)})
	col.mu.Unlock()
}

// limitGap records a gap that a limit made, naming it so that the caller can say how to raise it.
func (col *collector) limitGap(step, object string, limit bundle.LimitKind, format string, args ...any) {
	col.mu.Lock()
	col.gaps = append(col.gaps, bundle.Gap{Step: step, Object: object, Message: fmt.Sprintf(format, args...), Limit: limit})
	col.mu.Unlock()
}

func (col *collector) progress() {
	if col.opts.Progress == nil {
		return
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	col.opts.Progress(Progress{Objects: col.objects, LogsDone: col.logsDone, LogsTotal: col.logsTotal, LogBytes: col.logBytes.Load()})
}

func (col *collector) run(ctx context.Context) (*Result, error) {
	o := col.opts
	col.budget.Store(o.MaxTotalLogBytes)
	now := o.Now().UTC().Truncate(time.Second)
	m := &bundle.Manifest{
		FormatVersion: bundle.FormatVersion, CoronerVersion: o.Version, CollectedAt: &now,
		Options: bundle.Options{MaxLogBytes: o.MaxLogBytes, Redact: o.Redactor != nil},
		Files:   []bundle.FileEntry{}, Errors: []bundle.Gap{},
	}
	if o.Since > 0 {
		m.Options.Since = o.Since.String()
	}
	if v, err := col.c.Discovery.ServerVersion(); err != nil {
		col.gap("version", "server", "%v", err)
	} else {
		m.ServerVersion = v.GitVersion
	}
	cat := o.Catalog
	if cat == nil {
		var partial string
		var err error
		if cat, partial, err = Discover(col.c.Discovery); err != nil {
			return nil, err
		}
		if partial != "" {
			col.gap("discovery", "apiservices", "%s", partial)
		}
	}
	col.cat = cat
	res, err := cat.Resolve(o.Kind)
	if err != nil {
		return nil, err
	}
	ns := o.Namespace
	if !res.Namespaced {
		ns = ""
	}
	target, err := col.get(ctx, res, ns, o.Name)
	if apierrors.IsNotFound(err) && o.Last != nil && o.Last.GetName() == o.Name && o.Last.GetNamespace() == ns {
		target, err = o.Last, nil
		col.gap("get", strings.ToLower(o.Last.GetKind())+"/"+o.Name, "gone: deleted before it was collected; the job as last watched is written instead")
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			where := ""
			if ns != "" {
				where = " in namespace " + ns
			}
			return nil, fmt.Errorf("%s %q not found%s", res, o.Name, where)
		}
		return nil, fmt.Errorf("get %s %s: %w", res, o.Name, err)
	}
	m.Target = bundle.Target{APIVersion: target.GetAPIVersion(), Kind: target.GetKind(), Namespace: target.GetNamespace(), Name: target.GetName(), UID: string(target.GetUID())}

	tree, err := col.ownedTree(ctx, target)
	if err != nil {
		return nil, err
	}
	objs := append([]*unstructured.Unstructured{target}, tree.objects...)
	objs = append(objs, col.runtimeOf(ctx, target)...)
	pods := tree.pods
	nodes := col.nodes(ctx, pods)
	agents := col.nodeAgents(ctx, nodes)
	events := col.events(ctx, ns, objs, pods, nodes)
	objs = append(objs, col.namespaced(ctx, ns, "", "ResourceQuota")...)
	objs = append(objs, col.namespaced(ctx, ns, "", "LimitRange")...)

	for _, group := range [][]*unstructured.Unstructured{objs, podObjects(pods), nodes.objects, podObjects(agents), events} {
		for _, u := range group {
			if err := col.writeObject(u); err != nil {
				return nil, err
			}
		}
	}
	if err := col.logs(ctx, pods, agents, nodes); err != nil {
		return nil, err
	}
	col.flightRecords(ctx, pods)
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	sort.SliceStable(col.gaps, func(a, b int) bool {
		ga, gb := col.gaps[a], col.gaps[b]
		if ga.Step != gb.Step {
			return ga.Step < gb.Step
		}
		return ga.Object < gb.Object
	})
	m.Errors = append(m.Errors, col.gaps...)
	m.Files = col.files
	if o.Redactor != nil {
		m.Redaction = bundle.RedactionInfo{Enabled: true, Rules: o.Redactor.Summary()}
	}
	if o.Strict {
		var hard []bundle.Gap
		for _, g := range col.gaps {
			if g.Step != "truncate" && g.Step != bundle.GapNodeAgents {
				hard = append(hard, g)
			}
		}
		if len(hard) > 0 {
			return nil, &StrictError{Gaps: hard}
		}
	}
	return &Result{
		Objects: len(objs), Pods: len(pods), Events: len(events), Nodes: len(nodes.objects), NodeAgents: len(agents),
		Logs: col.logsKept, Truncated: col.truncated, Gaps: col.gaps, Manifest: m,
	}, nil
}

// writeObject writes one object under resources/, redacted and without managedFields.
func (col *collector) writeObject(u *unstructured.Unstructured) error {
	p := ResourcePath(u)
	col.mu.Lock()
	dup := col.written[p]
	col.written[p] = true
	col.mu.Unlock()
	if dup {
		return nil
	}
	obj := runtime.DeepCopyJSON(u.Object)
	unstructured.RemoveNestedField(obj, "metadata", "managedFields")
	if col.opts.Redactor != nil {
		col.opts.Redactor.ObjectAt(p, obj)
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode %s: %w", p, err)
	}
	if err := col.w.WriteFile(p, data); err != nil {
		return err
	}
	col.mu.Lock()
	col.objects++
	col.mu.Unlock()
	col.progress()
	return nil
}

// ResourcePath is where an object lives in a bundle:
// resources/<group|core>/<Kind>/<namespace|_cluster>/<name>.yaml.
func ResourcePath(u *unstructured.Unstructured) string {
	group, _, ok := strings.Cut(u.GetAPIVersion(), "/")
	if !ok {
		group = "core"
	}
	ns := u.GetNamespace()
	if ns == "" {
		ns = "_cluster"
	}
	return path.Join("resources", group, u.GetKind(), ns, u.GetName()+".yaml")
}

func podObjects(pods []*podInfo) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(pods))
	for i, p := range pods {
		out[i] = p.u
	}
	return out
}

// describe names an API error the way a gap should: short and with its reason.
func describe(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden by RBAC: " + err.Error()
	case apierrors.IsNotFound(err):
		return "gone: " + err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out: " + err.Error()
	}
	return err.Error()
}

// parallel runs fns with at most n in flight; it stops early only when ctx is done.
func parallel(ctx context.Context, n int, fns []func(context.Context) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	for _, fn := range fns {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// toPod converts an unstructured pod.
func toPod(u *unstructured.Unstructured) (*corev1.Pod, error) {
	var p corev1.Pod
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p)
	return &p, err
}
