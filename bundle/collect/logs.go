package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coroner-dev/coroner/bundle"
)

// maxLineBytes bounds one log line as read; a longer line is cut into pieces of this size.
const maxLineBytes = 1 << 20

// logJob is one container log to fetch.
type logJob struct {
	pod       *corev1.Pod
	container string
	previous  bool
	// tail and limit, when set, keep only the log's last tail lines and at most limit bytes
	// (a node agent's log).
	tail, limit int64
}

func (j logJob) path() string {
	name := j.container + ".log"
	if j.previous {
		name = j.container + ".previous.log"
	}
	return path.Join("logs", j.pod.Namespace, j.pod.Name, name)
}

func (j logJob) object() string {
	s := "pod/" + j.pod.Name + " container " + j.container
	if j.previous {
		s += " (previous)"
	}
	return s
}

// logJobs lists the logs to fetch, and records a gap for each log that cannot exist.
func (col *collector) logJobs(pods []*podInfo, nodes *nodeSet) []logJob {
	var jobs []logJob
	for _, pi := range pods {
		p := pi.pod
		statuses := map[string]corev1.ContainerStatus{}
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
			for _, s := range list {
				statuses[s.Name] = s
			}
		}
		var names []string
		for _, c := range p.Spec.InitContainers {
			names = append(names, c.Name)
		}
		for _, c := range p.Spec.Containers {
			names = append(names, c.Name)
		}
		for _, c := range p.Spec.EphemeralContainers {
			names = append(names, c.Name)
		}
		for _, c := range names {
			j := logJob{pod: p, container: c}
			switch st, ok := statuses[c]; {
			case p.Spec.NodeName == "":
				col.gap("logs", j.object(), "the pod was never scheduled; there are no logs")
				continue
			case nodes.gone[p.Spec.NodeName]:
				col.gap("logs", j.object(), "logs unavailable: node %s is gone", p.Spec.NodeName)
				continue
			case !ok || (st.State.Running == nil && st.State.Terminated == nil && st.LastTerminationState.Terminated == nil && st.ContainerID == ""):
				reason := "no status"
				if ok && st.State.Waiting != nil {
					reason = "waiting: " + st.State.Waiting.Reason
				}
				col.gap("logs", j.object(), "the container never started (%s); there are no logs", reason)
				continue
			default:
				if st.State.Running != nil || st.State.Terminated != nil {
					jobs = append(jobs, j)
				}
				if st.RestartCount > 0 || (st.State.Running == nil && st.State.Terminated == nil && st.LastTerminationState.Terminated != nil) {
					jobs = append(jobs, logJob{pod: p, container: c, previous: true})
				}
			}
		}
	}
	return jobs
}

// logs fetches every log in parallel. One log's failure is a gap, never the end of the collect.
func (col *collector) logs(ctx context.Context, pods, agents []*podInfo, nodes *nodeSet) error {
	jobs := append(col.logJobs(pods, nodes), agentLogJobs(agents)...)
	col.mu.Lock()
	col.logsTotal = len(jobs)
	col.mu.Unlock()
	col.progress()
	fns := make([]func(context.Context) error, len(jobs))
	for i, j := range jobs {
		fns[i] = func(ctx context.Context) error {
			err := col.fetchLog(ctx, j)
			col.mu.Lock()
			col.logsDone++
			col.mu.Unlock()
			col.progress()
			var we *writeError
			if errors.As(err, &we) {
				return we.err // the bundle itself cannot be written: stop
			}
			if err != nil && ctx.Err() == nil {
				col.gap("logs", j.object(), "%s", describeLogError(err))
				return nil
			}
			return ctx.Err()
		}
	}
	return parallel(ctx, col.opts.Concurrency, fns)
}

func describeLogError(err error) string {
	if apierrors.IsNotFound(err) {
		return "logs unavailable: the pod or container is gone: " + err.Error()
	}
	if errors.Is(err, errIdle) {
		return err.Error()
	}
	return "logs unavailable: " + describe(err)
}

var errIdle = errors.New("the log stream sent nothing for too long")

// writeError is a failure to write the bundle (a full disk...), which ends the collect,
// unlike a log that cannot be read.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

// fetchLog streams one log through redaction and the head+tail limit, and writes it.
func (col *collector) fetchLog(ctx context.Context, j logJob) error {
	if col.budget.Load() <= 0 {
		col.limitGap("logs", j.object(), bundle.LimitLogBudget, "skipped: the %s of %d bytes is spent", bundle.LimitLogBudget, col.opts.MaxTotalLogBytes)
		return nil
	}
	opts := &corev1.PodLogOptions{Container: j.container, Previous: j.previous, Timestamps: true}
	if j.tail > 0 {
		opts.TailLines = &j.tail
	}
	if col.opts.Since > 0 {
		t := metav1.NewTime(col.opts.Now().Add(-col.opts.Since))
		opts.SinceTime = &t
	}
	// One context per log: the idle watchdog cancels it when the stream (or the request before
	// its first byte, e.g. a kubelet that accepts and never answers) sends nothing for too long.
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(col.opts.LogIdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()
	var rc io.ReadCloser
	err := withRetry(ctx, func() (err error) {
		idle.Reset(col.opts.LogIdleTimeout)
		rc, err = col.c.logs().CoreV1().Pods(j.pod.Namespace).GetLogs(j.pod.Name, opts).Stream(ctx)
		return err
	})
	if err == nil && rc == nil {
		err = errors.New("the log request returned no stream")
	}
	if err != nil {
		if parent.Err() != nil {
			return parent.Err()
		}
		if context.Cause(ctx) == errIdle {
			return fmt.Errorf("%w (%s)", errIdle, col.opts.LogIdleTimeout)
		}
		return err
	}
	defer rc.Close()
	limit := min(col.opts.MaxLogBytes, col.budget.Load())
	if j.limit > 0 {
		limit = min(limit, j.limit)
	}
	t := newTruncator(limit)
	src := &watchdog{r: rc, t: idle, d: col.opts.LogIdleTimeout}
	sink := &lineSink{add: t.add}
	var readErr error
	if col.opts.Redactor != nil {
		_, readErr = col.opts.Redactor.Copy(ctx, sink, src, j.path())
	} else {
		_, readErr = io.Copy(sink, src)
	}
	sink.flush()
	if readErr != nil {
		if parent.Err() != nil {
			return parent.Err()
		}
		// Keep what arrived: a cut stream still holds the start of the story.
		why := readErr.Error()
		if context.Cause(ctx) == errIdle {
			why = fmt.Sprintf("%v (%s)", errIdle, col.opts.LogIdleTimeout)
		}
		if t.empty() {
			return fmt.Errorf("the log stream ended before any line arrived (%s)", why)
		}
		col.gap("logs", j.object(), "the log stream ended early (%s); kept what arrived", why)
	}
	data, cut := t.bytes()
	col.budget.Add(-int64(len(data)))
	col.logBytes.Add(int64(len(data)))
	if err := col.w.WriteFile(j.path(), data); err != nil {
		return &writeError{err}
	}
	col.mu.Lock()
	col.logsKept++
	col.mu.Unlock()
	if cut > 0 {
		col.mu.Lock()
		col.truncated++
		col.files = append(col.files, bundle.FileEntry{Path: j.path(), Truncated: true, TruncatedBytes: cut})
		col.mu.Unlock()
		col.gap("truncate", j.object(), "%d bytes cut from the middle (limit %d bytes: head and tail kept)", cut, limit)
	}
	return nil
}

// lineSink cuts what is written to it into lines (pieces of maxLineBytes for longer ones) for
// the truncator.
type lineSink struct {
	add func(line []byte)
	buf []byte
}

func (s *lineSink) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			take := min(len(p), maxLineBytes-len(s.buf))
			s.buf = append(s.buf, p[:take]...)
			p = p[take:]
			if len(s.buf) == maxLineBytes {
				s.flush()
			}
			continue
		}
		if len(s.buf) == 0 && i < maxLineBytes {
			s.add(bytes.Clone(p[:i+1]))
		} else {
			s.buf = append(s.buf, p[:i+1]...)
			s.flush()
		}
		p = p[i+1:]
	}
	return n, nil
}

func (s *lineSink) flush() {
	if len(s.buf) > 0 {
		s.add(bytes.Clone(s.buf))
		s.buf = s.buf[:0]
	}
}

// watchdog pushes the idle timer back on every read that brings bytes.
type watchdog struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (w *watchdog) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.t.Reset(w.d)
	}
	return n, err
}

// truncator keeps the first quarter of the limit as head and the rest as a tail of whole lines,
// so a log of any length is held in at most limit bytes.
type truncator struct {
	headMax, tailMax int64
	head             bytes.Buffer
	tail             [][]byte
	tailBytes        int64
	dropped          int64
	full             bool // the head is complete
}

func newTruncator(limit int64) *truncator {
	head := limit / 4
	return &truncator{headMax: head, tailMax: limit - head}
}

func (t *truncator) add(line []byte) {
	if !t.full && int64(t.head.Len()+len(line)) <= t.headMax {
		t.head.Write(line)
		return
	}
	t.full = true
	t.tail = append(t.tail, line)
	t.tailBytes += int64(len(line))
	for t.tailBytes > t.tailMax && len(t.tail) > 0 {
		t.tailBytes -= int64(len(t.tail[0]))
		t.dropped += int64(len(t.tail[0]))
		t.tail[0] = nil
		t.tail = t.tail[1:]
	}
}

func (t *truncator) empty() bool { return t.head.Len() == 0 && len(t.tail) == 0 }

// bytes returns the kept log and how many bytes were cut.
func (t *truncator) bytes() ([]byte, int64) {
	var b bytes.Buffer
	b.Grow(t.head.Len() + int(t.tailBytes) + 128)
	b.Write(t.head.Bytes())
	if t.dropped > 0 {
		if n := b.Len(); n > 0 && b.Bytes()[n-1] != '\n' {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[coroner] ... %d bytes cut here: the log was longer than the limit; head and tail kept ...\n", t.dropped)
	}
	for _, l := range t.tail {
		b.Write(l)
	}
	return b.Bytes(), t.dropped
}
