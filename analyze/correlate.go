package analyze

import (
	"fmt"
	"strings"
	"time"

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
	for _, f := range a.findings {
		if f.at == nil {
			f.at = f.Time
		}
	}
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
			after := !after(root, f)
			samePod := f.Pod == root.Pod || f.Pod == ""
			switch {
			case (f.symptom || f.generic) && (after || samePod):
				// A symptom of the root's own pod may be dated before the root's evidence: a
				// crash loop's first back-off predates the last restart's log.
				f.SecondaryOf = root.ID
			case after && !samePod && (propagating[f.Category] || f.fallback):
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
		for _, st := range f.streams {
			first.addStream(st)
		}
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

// resolvedLater lowers findings whose rule says when they are a root cause (rootOnlyIf) and
// whose pod shows otherwise: a job that waited for GPUs for a while did not fail of it, and
// a volume that failed to mount at first did not stop a container that then ran.
func (a *analyzer) resolvedLater() {
	for _, f := range a.findings {
		if f.Pod == "" || f.Severity < SeverityError || f.rule == nil || len(f.rule.rootOnlyIf) == 0 {
			continue
		}
		p := a.m.Pod("", f.Pod)
		if p == nil {
			continue
		}
		if !f.rule.rootOnlyIf.holds(a.podFields(p)) {
			f.Severity = SeverityWarning
			f.Title += " (resolved later)"
		}
	}
}

// linkWeak points each generic finding, catch-all and symptom at the specific finding of
// the same process that explains it (see explains).
func (a *analyzer) linkWeak() {
	for _, f := range a.findings {
		if !(f.generic || f.fallback || f.symptom || f.derived) || f.Pod == "" {
			continue
		}
		var best *Finding
		for _, g := range a.findings {
			if g != f && explains(g, f) && (best == nil || betterExplanation(f, g, best)) {
				best = g
			}
		}
		if best != nil {
			f.SecondaryOf = best.ID
		}
	}
}

// specificity ranks what a finding says about why: that a process failed (generic), that it
// raised some exception (fallback), or what failed (specific).
func specificity(f *Finding) int {
	switch {
	case f.generic:
		return 0
	case f.fallback:
		return 1
	}
	return 2
}

// sameProcess says whether two findings may be about the same failure of the same process:
// the same pod, container and rank where both say, and for two log lines the same log (a
// restarted container's previous log is another failure).
func sameProcess(f, g *Finding) bool {
	if f.Pod != g.Pod {
		return false
	}
	if f.Container != "" && g.Container != "" && f.Container != g.Container {
		return false
	}
	if f.log != "" && f.log == g.log {
		return shareStream(f, g)
	}
	if f.Rank >= 0 && g.Rank >= 0 && f.Rank != g.Rank {
		return false
	}
	return f.log == "" || g.log == ""
}

// nearLines and nearTime bound "the same failure" for a symptom that explains a generic line
// printed before it: the abort's own what() text, the watchdog line that follows
// "terminate called".
const (
	nearLines = 30
	nearTime  = time.Minute
)

// explains says whether g explains f: g is an error of the same process that says more
// about why. A finding derived from other processes' reports (the rank a collective waited
// for) is explained by a failure of that rank itself. A symptom is explained only by what came before it (a watchdog timeout is not
// explained by the abort it causes); a generic line or a catch-all by a specific finding
// printed anywhere in the same failure, or by a symptom before it or right after it (an
// abort carries its cause on the next lines).
func explains(g, f *Finding) bool {
	if g.Severity < SeverityError || !sameProcess(f, g) {
		return false
	}
	if f.derived {
		return !g.symptom && !g.generic && !g.derived
	}
	if f.symptom {
		if g.symptom || g.generic {
			return false
		}
		// A container's state may be dated later or earlier than the log that explains it.
		return f.Layer != LayerExecution || !after(g, f)
	}
	if specificity(g) <= specificity(f) {
		return false
	}
	if g.symptom {
		return !after(g, f) || near(f, g)
	}
	return true
}

// after says whether g came after f.
func after(g, f *Finding) bool {
	if g.log != "" && g.log == f.log {
		return g.order > f.order
	}
	return g.at != nil && f.at != nil && g.at.After(*f.at)
}

// near says whether g, printed after f, is close enough to be part of the same message.
func near(f, g *Finding) bool {
	if g.log != "" && g.log == f.log {
		return g.order-f.order <= nearLines
	}
	return g.at != nil && f.at != nil && g.at.Sub(*f.at) <= nearTime
}

// distance is how far apart two findings of one process are, for choosing the nearest
// explanation: lines in one log, else time.
func distance(f, g *Finding) int64 {
	if g.log != "" && g.log == f.log {
		return abs64(int64(g.order - f.order))
	}
	if g.at != nil && f.at != nil {
		return abs64(int64(g.at.Sub(*f.at)))
	}
	return 1 << 62
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// betterExplanation prefers, for f, a primary failure to a symptom, the more specific, then
// the nearer, then the earlier.
func betterExplanation(f, g, best *Finding) bool {
	if g.symptom != best.symptom {
		return !g.symptom
	}
	if sg, sb := specificity(g), specificity(best); sg != sb {
		return sg > sb
	}
	if dg, db := distance(f, g), distance(f, best); dg != db {
		return dg < db
	}
	return false // findings are sorted: the first is the earliest
}

// rootCause is the earliest primary failure: at least an error, not a symptom, not generic,
// not explained by another finding. Failing that, the earliest symptom or generic finding: a
// job whose only evidence is a watchdog timeout still has that as its best explanation.
func (a *analyzer) rootCause() *Finding {
	pick := func(ok func(f *Finding) bool) *Finding {
		for _, f := range a.findings { // sorted by time: the first is the earliest
			if f.Severity >= SeverityError && f.SecondaryOf == "" && ok(f) {
				return f
			}
		}
		return nil
	}
	if f := pick(func(f *Finding) bool { return !f.generic && !f.symptom }); f != nil {
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
