package analyze

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/parse"
)

// DefaultStuckAfter is how long a job may wait for what it needs to start (an image pull, a
// node, a runtime, a container that keeps crashing) before the wait counts as a failure: pulls
// are retried and pods scheduled within a few minutes when they can be at all.
const DefaultStuckAfter = 5 * time.Minute

// stuckAfter is the threshold the options set: 0 means DefaultStuckAfter, a negative value
// no wait at all.
func (o Options) stuckAfter() time.Duration {
	switch {
	case o.StuckAfter == 0:
		return DefaultStuckAfter
	case o.StuckAfter < 0:
		return 0
	}
	return o.StuckAfter
}

// stuckPhase says whether the job is in a state where it may still be waiting to start:
// neither finished nor failed. Without a job status (plain logs, pods only) nothing says it
// finished.
func (a *analyzer) stuckPhase() bool {
	j := a.m.Job
	if j == nil || j.Object == nil {
		return true
	}
	return j.Phase != parse.PhaseSucceeded && j.Phase != parse.PhaseFailed
}

// waiting says whether a finding is about a job or pod waiting for what it needs to start,
// rather than about something that failed: a pull, scheduling, a container that cannot be
// created or keeps crashing, a runtime or configuration the job refers to and cannot get, a
// volume that does not mount (any rule that is a root cause only until its pod gets
// somewhere: rootOnlyIf).
func waiting(f *Finding) bool {
	if f.rule != nil && len(f.rule.rootOnlyIf) > 0 {
		return true
	}
	switch f.Category {
	case CategoryScheduling, CategoryImagePull:
		return true
	case CategoryConfigError:
		return f.Layer != LayerExecution
	}
	return f.Layer == LayerControl && f.rule != nil && f.rule.Match.Object != nil && f.rule.Match.Object.Kind == "container-waiting"
}

// stuckVerdict sets the verdict of a job that has not failed but waits, when the root cause
// is such a wait: unhealthy once it has lasted the threshold, with how long in the reason;
// unknown before, with the finding named as what it is so far. It says whether it did.
func (a *analyzer) stuckVerdict(where string) bool {
	r, root := a.res, a.res.RootCause
	if root == nil || !a.stuckPhase() || !waiting(root) {
		return false
	}
	d, how, collected, ok := a.waited(root)
	what := strings.TrimSpace(fmt.Sprintf("%s: %s in %s", root.Category, root.Title, where))
	switch {
	case !ok:
		// Nothing measures the wait: the finding stands, as a pasted describe without ages.
		return false
	case !collected && d < a.stuckAfter && onlyWaits(root):
		// A pasted text that says only that pods wait for a node, not why, and ages below the
		// threshold: a queued job looks the same.
		r.Verdict = VerdictUnknown
		r.RootCause = nil
		r.VerdictReason = fmt.Sprintf("%s for at least %s when the text was taken, below the %s threshold; so far: %s", how, roundDuration(d), roundDuration(a.stuckAfter), what)
	case !collected && d < a.stuckAfter:
		// A pasted text has no "now": its ages are when it was taken, a lower bound of a wait
		// that someone found worth pasting. The finding stands, with what the text shows.
		r.Verdict = VerdictUnhealthy
		r.VerdictReason = fmt.Sprintf("%s; %s for at least %s when the text was taken", what, how, roundDuration(d))
	case d < a.stuckAfter:
		r.Verdict = VerdictUnknown
		r.RootCause = nil
		r.VerdictReason = fmt.Sprintf("%s for %s, below the %s threshold; so far: %s", how, roundDuration(d), roundDuration(a.stuckAfter), what)
	default:
		r.Verdict = VerdictUnhealthy
		r.VerdictReason = fmt.Sprintf("%s; %s for %s", what, how, roundDuration(d))
	}
	return true
}

// onlyWaits says whether a finding says only that a pod waits for a node, not why (a pod
// listed Pending, PodScheduled False): a generic scheduling finding.
func onlyWaits(f *Finding) bool {
	return f.Category == CategoryScheduling && f.rule != nil && f.rule.Role.Generic()
}

// waited measures how long the job has been waiting in the root's condition, and says how
// ("pending", or "waiting" for a pod that runs but whose container does not). With the
// bundle's collection time (collected) it is from the creation of the root's pod (or of the
// job) to then; without it, the longest duration the waiting findings' evidence prints: an
// event's "(x208 over 25m)" or age, a listing's Age column, or the span between a repeated
// line's first and last time. ok is false when nothing measures it.
func (a *analyzer) waited(root *Finding) (wait time.Duration, how string, collected, ok bool) {
	how = "pending"
	var pod *corev1.Pod
	if root.Pod != "" {
		pod = a.m.Pod("", root.Pod)
	}
	if pod != nil && pod.Status.Phase != "" && pod.Status.Phase != corev1.PodPending {
		how = "waiting"
	}
	if mf := a.m.Bundle.Manifest; mf != nil && mf.CollectedAt != nil {
		var since time.Time
		switch {
		case pod != nil && !pod.CreationTimestamp.IsZero():
			since = pod.CreationTimestamp.Time
		case a.m.Job != nil && !a.m.Job.Created.IsZero():
			since = a.m.Job.Created
		case root.at != nil:
			since = *root.at
		}
		if !since.IsZero() && !mf.CollectedAt.Before(since) {
			return mf.CollectedAt.Sub(since), how, true, true
		}
	}
	var longest time.Duration
	found := false
	for _, f := range a.findings {
		if f.Category != root.Category || !waiting(f) {
			continue
		}
		if f.waitPrinted > 0 && f.waitPrinted >= longest {
			longest, found = f.waitPrinted, true
		}
		for _, ev := range f.Evidence {
			if rejectedRow([]byte(ev.Text)) {
				continue
			}
			if d, ok := printedWait(ev.Text); ok && d >= longest {
				longest, found = d, true
			}
			if ev.Time != nil && ev.LastTime != nil && ev.LastTime.After(*ev.Time) && ev.LastTime.Sub(*ev.Time) >= longest {
				longest, found = ev.LastTime.Sub(*ev.Time), true
			}
		}
	}
	return longest, how, false, found
}

// notePrintedWait keeps the longest wait a line of a finding about waiting to start prints
// (see waited): a pasted describe names the wait in a condition without an age, then in
// its events with one.
func (f *Finding) notePrintedWait(line []byte) {
	if f.rule == nil || !waitingCategory(f.rule.Category) && len(f.rule.rootOnlyIf) == 0 || rejectedRow(line) {
		return
	}
	if d, ok := printedWait(string(line)); ok && d > f.waitPrinted {
		f.waitPrinted = d
	}
}

// rejectedStatus is the STATUS a kubectl listing shows for a pod the kubelet rejected at
// admission (its reason): the pod is Failed, its age no wait.
const rejectedStatus = "UnexpectedAdmissionError"

// rejectedRow says whether line is a listing row of a pod rejected at admission.
func rejectedRow(line []byte) bool {
	r, ok := listedRow(line)
	return ok && string(r.status) == rejectedStatus
}

// waitingCategory says whether findings of a category are about waiting to start whatever
// their layer (see waiting).
func waitingCategory(c Category) bool {
	return c == CategoryScheduling || c == CategoryImagePull || c == CategoryConfigError
}

// printedWait is the longest Kubernetes-style duration a line prints as a word of its own:
// kubectl's ages ("25m", "3m12s", "2d3h", "(x208 over 25m)").
func printedWait(text string) (time.Duration, bool) {
	var longest time.Duration
	found := false
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' || r == '(' || r == ')' || r == ',' }) {
		if d, ok := kubeAge(w); ok && d >= longest {
			longest, found = d, true
		}
	}
	return longest, found
}

// kubeAge reads an age as kubectl prints it: numbers each followed by a unit, y, d, h, m or s,
// in that order ("5d3h", "25m", "40s").
func kubeAge(w string) (time.Duration, bool) {
	units := []struct {
		c byte
		d time.Duration
	}{{'y', 365 * 24 * time.Hour}, {'d', 24 * time.Hour}, {'h', time.Hour}, {'m', time.Minute}, {'s', time.Second}}
	var total time.Duration
	next := 0
	for i := 0; i < len(w); {
		j := i
		for j < len(w) && w[j] >= '0' && w[j] <= '9' {
			j++
		}
		if j == i || j == len(w) || j-i > 6 {
			return 0, false
		}
		n := 0
		for _, c := range w[i:j] {
			n = n*10 + int(c-'0')
		}
		k := next
		for k < len(units) && units[k].c != w[j] {
			k++
		}
		if k == len(units) {
			return 0, false
		}
		total += time.Duration(n) * units[k].d
		next, i = k+1, j+1
	}
	return total, next > 0
}

// podsPending says whether a pod of the job has not started yet.
func (a *analyzer) podsPending() bool {
	for _, p := range a.jobPods() {
		if p.Status.Phase == corev1.PodPending || p.Status.Phase == "" {
			return true
		}
	}
	return false
}

// pendingReason says, for a job with pods pending and no finding that says why, how long
// they have waited: never healthy, and past the threshold worth a look.
func (a *analyzer) pendingReason() string {
	j := a.m.Job
	n, since := 0, time.Time{}
	for _, p := range a.jobPods() {
		if p.Status.Phase == corev1.PodPending || p.Status.Phase == "" {
			n++
			if t := p.CreationTimestamp.Time; !t.IsZero() && (since.IsZero() || t.Before(since)) {
				since = t
			}
		}
	}
	what := fmt.Sprintf("the job is %s with %d pod(s) pending", j.Phase, n)
	mf := a.m.Bundle.Manifest
	if mf == nil || mf.CollectedAt == nil || since.IsZero() || mf.CollectedAt.Before(since) {
		return what + " and nothing in the bundle says why"
	}
	d := mf.CollectedAt.Sub(since)
	if d < a.stuckAfter {
		return fmt.Sprintf("%s for %s, below the %s threshold", what, roundDuration(d), roundDuration(a.stuckAfter))
	}
	return fmt.Sprintf("%s for %s, past the %s threshold, and nothing in the bundle says why (its events may have expired)", what, roundDuration(d), roundDuration(a.stuckAfter))
}
