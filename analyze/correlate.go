package analyze

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/parse"
)

// propagating are categories whose findings on other pods, after a failure, are usually the
// consequence of that failure: peers time out, lose their connection, are killed.
var propagating = map[Category]bool{
	CategoryCollectiveTimeout: true, CategoryCollectiveError: true, CategoryRendezvous: true, CategoryCrashSignal: true, CategoryUnknown: true,
}

// correlate merges, orders and links findings, picks the root cause and the verdict.
func (a *analyzer) correlate() {
	a.launcherMasksFailure()
	a.merge()
	a.resolvedLater()
	sortFindings(a.findings)
	for i, f := range a.findings {
		f.ID = fmt.Sprintf("f%d", i+1)
	}
	a.linkWeak()
	root := a.rootCause()
	if root != nil {
		for _, f := range a.findings {
			if f == root || f.SecondaryOf != "" || f.Severity < SeverityWarning {
				continue
			}
			after := f.Time == nil || root.Time == nil || !f.Time.Before(*root.Time)
			samePod := f.Pod == root.Pod || f.Pod == ""
			switch {
			case (f.symptom || f.weak) && (after || samePod):
				// A symptom of the root's own pod may be dated before the root's evidence: a
				// crash loop's first back-off predates the last restart's log.
				f.SecondaryOf = root.ID
			case after && !samePod && (propagating[f.Category] || f.generic):
				f.SecondaryOf = root.ID
			case after && f.Pod == root.Pod && f.Container == root.Container:
				// Later errors of the failing process itself restate or follow from the root:
				// chained exceptions, the traceback's last line, a re-raise; for the job itself,
				// the controller repeating the same complaint.
				f.SecondaryOf = root.ID
			}
		}
	}
	a.res.RootCause = root
	a.res.Findings = a.findings
	a.verdict()
}

// merge folds findings of one rule on one pod and container (a log and its previous log, a
// pod condition and the event with the same message) into one, keeping the earliest.
func (a *analyzer) merge() {
	sortFindings(a.findings)
	byKey := map[string]*Finding{}
	out := a.findings[:0]
	for _, f := range a.findings {
		key := f.Pod + "\x00" + f.Container + "\x00" + f.RuleID
		first, ok := byKey[key]
		if !ok {
			byKey[key] = f
			out = append(out, f)
			continue
		}
		first.Count += f.Count
		for _, ev := range f.Evidence {
			if len(first.Evidence) < maxEvidence && !sameEvidence(first.Evidence, ev) {
				first.Evidence = append(first.Evidence, ev)
			}
		}
	}
	a.findings = out
}

func sameEvidence(evs []Evidence, ev Evidence) bool {
	for _, e := range evs {
		if e.Text == ev.Text && e.File == ev.File {
			return true
		}
	}
	return false
}

// resolvedLater lowers scheduling and image-pull findings of pods that were later scheduled
// and whose images were pulled: a job that waited for GPUs for a while did not fail of it.
func (a *analyzer) resolvedLater() {
	for _, f := range a.findings {
		if f.Pod == "" || f.Severity < SeverityError {
			continue
		}
		p := a.m.Pod("", f.Pod)
		if p == nil {
			continue
		}
		var resolved bool
		switch f.Category {
		case CategoryScheduling:
			resolved = podConditionTrue(p, corev1.PodScheduled)
		case CategoryImagePull:
			resolved = imagesPulled(p)
		}
		if resolved {
			f.Severity = SeverityWarning
			f.Title += " (resolved later)"
		}
	}
}

func podConditionTrue(p *corev1.Pod, typ corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func imagesPulled(p *corev1.Pod) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.ImageID == "" {
			return false
		}
	}
	return true
}

// linkWeak points each generic fact and each symptom at the specific finding of the same
// pod (and container) that explains it.
func (a *analyzer) linkWeak() {
	for _, f := range a.findings {
		if !(f.weak || f.symptom) || f.Pod == "" {
			continue
		}
		var best *Finding
		for _, g := range a.findings {
			if g == f || g.weak || g.Pod != f.Pod || g.Severity < SeverityError || (f.symptom && g.symptom) {
				continue
			}
			// A log symptom follows only what came before it (a watchdog timeout is not
			// explained by the abort it causes); a container's state may be dated later or
			// earlier than the log that explains it.
			if f.Layer == LayerExecution && f.Time != nil && g.Time != nil && g.Time.After(*f.Time) {
				continue
			}
			if f.Container != "" && g.Container != "" && g.Container != f.Container {
				continue
			}
			if best == nil || (best.symptom && !g.symptom) {
				best = g
			}
		}
		if best != nil {
			f.SecondaryOf = best.ID
		}
	}
}

// rootCause is the earliest primary failure: not a symptom, not a generic fact, at least an
// error. Failing that, the earliest symptom, then the earliest generic fact: a job whose
// only evidence is a watchdog timeout still has that as its best explanation.
func (a *analyzer) rootCause() *Finding {
	pick := func(ok func(f *Finding) bool) *Finding {
		for _, f := range a.findings { // sorted by time: the first is the earliest
			if f.Severity >= SeverityError && f.SecondaryOf == "" && ok(f) {
				return f
			}
		}
		return nil
	}
	if f := pick(func(f *Finding) bool { return !f.weak && !f.symptom }); f != nil {
		return f
	}
	if f := pick(func(f *Finding) bool { return !f.weak }); f != nil {
		return f
	}
	return pick(func(f *Finding) bool { return true })
}

func (a *analyzer) verdict() {
	r := a.res
	j := a.m.Job
	errors := 0
	for _, f := range a.findings {
		if f.Severity >= SeverityError {
			errors++
		}
	}
	succeeded := j != nil && j.Phase == parse.PhaseSucceeded
	switch {
	case succeeded && errors > 0 && j.Family.LogDecides == "":
		// The job's own controller says it succeeded; errors on the way were recovered
		// (an elastic restart, a retried pod). They stay in the report as warnings.
		for _, f := range a.findings {
			if f.Severity >= SeverityError {
				f.Severity = SeverityWarning
			}
		}
		r.RootCause = nil
		r.Verdict = VerdictHealthy
		r.VerdictReason = fmt.Sprintf("the job succeeded; %d error(s) seen on the way were recovered from", errors)
	case r.RootCause != nil:
		r.Verdict = VerdictUnhealthy
		f := r.RootCause
		where := f.Pod
		if f.Container != "" {
			where += "/" + f.Container
		}
		if where == "" && j != nil {
			where = j.Ref()
		}
		r.VerdictReason = strings.TrimSpace(fmt.Sprintf("%s: %s in %s", f.Category, f.Title, where))
	case succeeded:
		r.Verdict = VerdictHealthy
		r.VerdictReason = "the job succeeded and no failure was found"
	case j != nil && (j.Phase == parse.PhaseRunning || j.Phase == parse.PhaseCreated && len(j.Pods()) > 0 && allRunning(j)):
		r.Verdict = VerdictHealthy
		r.VerdictReason = "the job is running and no failure was found so far"
	default:
		r.Verdict = VerdictUnknown
		if j == nil || j.Object == nil {
			r.VerdictReason = "no failure pattern matched, and without a job status success cannot be confirmed"
		} else {
			r.VerdictReason = fmt.Sprintf("the job is %s and no failure was found", j.Phase)
		}
	}
}

func allRunning(j *parse.Job) bool {
	for _, p := range j.Pods() {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
			return false
		}
	}
	return true
}
