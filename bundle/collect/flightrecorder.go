package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/frtrace"
)

// Execer runs a fixed argv (never a shell) in a running container and writes its standard
// output to stdout: pods/exec, as `kubectl exec` and `kubectl cp` use it.
type Execer func(ctx context.Context, namespace, pod, container string, argv []string, stdout io.Writer) error

// NewExecer returns the Execer of a cluster: pods/exec over WebSocket, falling back to SPDY
// for API servers that do not speak it.
func NewExecer(cfg *rest.Config, kube kubernetes.Interface) Execer {
	return func(ctx context.Context, namespace, pod, container string, argv []string, stdout io.Writer) error {
		req := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
		ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
		if err != nil {
			return err
		}
		spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
		if err != nil {
			return err
		}
		exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
			return !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err)
		})
		if err != nil {
			return err
		}
		var stderr bytes.Buffer
		err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: &limited{w: &stderr, n: 4096}})
		if err != nil && stderr.Len() > 0 {
			return fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
		}
		return err
	}
}

// FlightRecorderEnv are the variables that name the dumps' path prefix, newest first:
// torch writes <prefix><global rank> (TORCH_FR_DUMP_TEMP_FILE since 2.7, and
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE before).
var FlightRecorderEnv = []string{"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"}

// DefaultMaxFlightRecordBytes bounds one dump read from a pod (a 2,000-entry buffer with stacks
// is a few MiB).
const DefaultMaxFlightRecordBytes = 64 << 20

// maxListing bounds the directory listing read to find the dumps.
const maxListing = 1 << 20

// dumpPrefix is the prefix a container's spec sets for its dumps ("" when none).
func dumpPrefix(c corev1.Container) string {
	for _, name := range FlightRecorderEnv {
		for _, e := range c.Env {
			if e.Name == name && e.Value != "" && path.IsAbs(e.Value) {
				return e.Value
			}
		}
	}
	return ""
}

// flightRecords reads the flight recorder dumps of the pods whose containers name a dump
// prefix, through pods/exec into the running container: `ls -1 -- DIR` (bounded), then
// `cat -- DIR/NAME` for each file named <prefix><rank>, each bounded by MaxFlightRecordBytes.
// A pickle is rewritten as its JSON form (frtrace.EncodeJSON), so that it is redacted as text
// like every other file. What cannot be read is a gap, never an error of the collect.
func (col *collector) flightRecords(ctx context.Context, pods []*podInfo) {
	o := col.opts
	if o.Exec == nil && o.ReaderImage == "" {
		return
	}
	read := map[string]bool{} // claim, mount and prefix a reader pod read
	for _, pi := range pods {
		p := pi.pod
		running := map[string]bool{}
		for _, s := range p.Status.ContainerStatuses {
			running[s.Name] = s.State.Running != nil
		}
		for _, c := range p.Spec.Containers {
			prefix := dumpPrefix(c)
			if prefix == "" {
				continue
			}
			object := "pod/" + p.Name + " container " + c.Name
			if !running[c.Name] && o.ReaderImage != "" {
				claim, m, _ := dumpClaim(p, c, prefix)
				if key := claim + "\x00" + m.SubPath + "\x00" + prefix; claim == "" || !read[key] {
					read[key] = true
					if err := col.readByPod(ctx, p, c, prefix, object); err != nil {
						if ctx.Err() != nil {
							return
						}
						col.gap("exec", object, "flight recorder dumps %s*: %s", prefix, describe(err))
					}
				}
				continue
			}
			if !running[c.Name] {
				col.gap("exec", object, "not running: its flight recorder dumps (%s*) can only be read from the volume that holds them", prefix)
				continue
			}
			if o.Exec == nil {
				continue
			}
			if err := col.readDumps(ctx, p, c.Name, prefix, object); err != nil {
				if ctx.Err() != nil {
					return
				}
				col.gap("exec", object, "flight recorder dumps %s*: %s", prefix, describe(err))
			}
		}
	}
}

// execTimeout bounds one exec: a listing or one dump.
const execTimeout = 2 * time.Minute

func (col *collector) readDumps(ctx context.Context, p *corev1.Pod, container, prefix, object string) error {
	exec := func(argv []string, w io.Writer) error {
		ctx, cancel := context.WithTimeout(ctx, execTimeout)
		defer cancel()
		return col.opts.Exec(ctx, p.Namespace, p.Name, container, argv, w)
	}
	dir, base := path.Dir(prefix), path.Base(prefix)
	if strings.HasSuffix(prefix, "/") {
		dir, base = path.Clean(prefix), ""
	}
	var listing bytes.Buffer
	if err := exec([]string{"ls", "-1", "--", dir}, &limited{w: &listing, n: maxListing}); err != nil {
		return err
	}
	var names []string
	for _, name := range strings.Split(listing.String(), "\n") {
		if strings.HasPrefix(name, base) && name != base && !strings.ContainsAny(name, "/\x00") {
			if _, ok := frtrace.RankFromName(name); ok {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		col.gap("exec", object, "no flight recorder dump at %s* (none written yet, or the volume is not mounted there)", prefix)
		return nil
	}
	max := col.opts.MaxFlightRecordBytes
	for _, name := range names {
		var buf bytes.Buffer
		lw := &limited{w: &buf, n: max}
		err := exec([]string{"cat", "--", path.Join(dir, name)}, lw)
		switch {
		case lw.over:
			col.limitGap("exec", object, bundle.LimitFileBytes, "flight recorder dump %s is over %d bytes: not kept", name, max)
			continue
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			col.gap("exec", object, "flight recorder dump %s: %s", name, describe(err))
			continue
		}
		if err := col.writeDump(ctx, p, name, buf.Bytes()); err != nil {
			col.gap("exec", object, "flight recorder dump %s: %v", name, err)
		}
	}
	return nil
}

// writeDump writes a dump under flightrecorder/<namespace>/<pod>/<name>: a pickle as its JSON
// form, and the JSON redacted as a text.
func (col *collector) writeDump(ctx context.Context, p *corev1.Pod, name string, data []byte) error {
	if !bundle.IsFlightRecord(data) {
		return errors.New("not a flight recorder dump (neither a pickle nor its JSON twin)")
	}
	d, err := frtrace.Decode(data, frtrace.DefaultLimits())
	if err != nil {
		return fmt.Errorf("not readable: %w", err)
	}
	if data, err = frtrace.EncodeJSON(d); err != nil {
		return err
	}
	where := path.Join(bundle.FlightRecorderDir, p.Namespace, p.Name, name)
	if col.opts.Redactor != nil {
		var out bytes.Buffer
		if _, err := col.opts.Redactor.Copy(ctx, &out, bytes.NewReader(data), where); err != nil {
			return err
		}
		data = out.Bytes()
	}
	return col.w.WriteFile(where, data)
}

// limited writes at most n bytes to w and then fails, remembering that it was over.
type limited struct {
	w    io.Writer
	n    int64
	over bool
}

var errOverLimit = errors.New("over the size limit")

func (l *limited) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		l.over = true
		return 0, errOverLimit
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}
