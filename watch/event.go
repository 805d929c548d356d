package watch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/report"
)

// maxEventMessage bounds an Event's message: the API refuses notes over 1 KiB.
const maxEventMessage = 1024

// Event reasons.
const (
	ReasonRootCause     = "RootCause"     // unhealthy: the root cause and the report
	ReasonDiagnosed     = "Diagnosed"     // healthy or unknown, with the report
	ReasonCollectFailed = "CollectFailed" // no bundle could be written
)

// summary is the one line watch says about an analysed job, in the Event and the job's
// annotation: "coroner: cuda-oom at train-job-worker-4 (rank 5): CUDA out of memory; report
// /var/lib/coroner/ml/train-job/20260314T100211Z.html". It is cut to max bytes (whole UTF-8
// characters), shortening the title first so that the report's path stays whole.
func summary(rep *report.Report, rank int, reportPath string, max int) (reason, msg string) {
	tail := "; report " + reportPath
	var head, title string
	switch {
	case rep.RootCause != nil:
		reason = ReasonRootCause
		rc := rep.RootCause
		head = "coroner: " + string(rc.Category)
		if rc.Pod != "" {
			head += " at " + rc.Pod
			if rank >= 0 {
				head += " (rank " + strconv.Itoa(rank) + ")"
			}
		}
		head += ": "
		title = rc.Title
	case rep.Verdict == "healthy":
		reason, head, title = ReasonDiagnosed, "coroner: healthy: ", rep.VerdictReason
	default:
		reason, head, title = ReasonDiagnosed, "coroner: no root cause found: ", rep.VerdictReason
	}
	return reason, fit(head, oneLine(title), tail, max)
}

// fit joins head, middle and tail within max bytes, cutting the middle first (with "…"),
// then the tail, then the head.
func fit(head, middle, tail string, max int) string {
	if len(head)+len(middle)+len(tail) <= max {
		return head + middle + tail
	}
	const ellipsis = "…"
	room := max - len(head) - len(tail) - len(ellipsis)
	if room >= 0 {
		return head + cut(middle, room) + ellipsis + tail
	}
	return cut(head+tail, max-len(ellipsis)) + ellipsis
}

// cut returns the longest prefix of s within n bytes that ends on a character boundary.
func cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// oneLine folds a text onto one line: an Event's message is shown in a table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// rankOf reads a torchrun rank prefix ("[rank5]: ...") from the root cause's first log
// evidence line; -1 when there is none.
func rankOf(rep *report.Report) int {
	if rep.RootCause == nil {
		return -1
	}
	for _, ev := range rep.RootCause.Evidence {
		if ev.Source != analyze.SourceLog {
			continue
		}
		text := strings.TrimLeft(ev.Text, " ")
		rest, ok := strings.CutPrefix(text, "[rank")
		if !ok {
			return -1
		}
		end := strings.IndexByte(rest, ']')
		if end <= 0 || end > 6 {
			return -1
		}
		n, err := strconv.Atoi(rest[:end])
		if err != nil || n < 0 {
			return -1
		}
		return n
	}
	return -1
}

// recordEvent creates an Event on the job. It is written directly (not through client-go's
// asynchronous recorder) so that a refusal is known and recorded as a gap.
func (c *controller) recordEvent(ctx context.Context, job *unstructured.Unstructured, typ, reason, msg string) error {
	now := c.now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", job.GetName(), now.UnixNano()),
			Namespace: job.GetNamespace(),
		},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: job.GetAPIVersion(), Kind: job.GetKind(), Namespace: job.GetNamespace(),
			Name: job.GetName(), UID: job.GetUID(),
		},
		Reason: reason, Message: cut(msg, maxEventMessage), Type: typ,
		Source:         corev1.EventSource{Component: "coroner-watch"},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
		ReportingController: "coroner.dev/watch", ReportingInstance: cut(c.opts.Identity, 128),
	}
	_, err := c.kube.CoreV1().Events(job.GetNamespace()).Create(ctx, ev, metav1.CreateOptions{})
	return err
}
