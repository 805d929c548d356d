package analyze

import (
	"fmt"
	"slices"
	"strconv"
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
	a.dropUnrecovered()
	a.launcherMasksFailure()
	for _, f := range a.findings {
		if f.at == nil {
			f.at = f.Time
		}
	}
	a.recoveredByRestart()
	a.merge()
	a.resolvedLater()
	a.recoveredFrom()
	sortFindings(a.findings)
	for i, f := range a.findings {
		f.ID = fmt.Sprintf("f%d", i+1)
	}
	carried := a.linkWeak()
	a.nodeContext()
	root := a.secondTier(a.hardwareBehind(a.rootCause(carried)))
	if root != nil {
		// The same failure on other pods (the same rule): what follows on such a pod follows
		// from that pod's own finding, as on the root's pod from the root.
		peers := map[string]*Finding{}
		for _, f := range a.findings {
			if f != root && f.rule != nil && f.rule == root.rule && f.Pod != "" && f.Pod != root.Pod && peers[f.Pod] == nil {
				peers[f.Pod] = f
			}
		}
		for _, f := range a.findings {
			if f == root || f.SecondaryOf != "" || f.Severity < SeverityWarning {
				continue
			}
			root := root
			if p := peers[f.Pod]; p != nil && p != f {
				root = p
			}
			after := !after(root, f)
			samePod := f.Pod == root.Pod || f.Pod == "" && f.Node == "" || f.Node != "" && f.Node == root.Node
			switch {
			case waitsForOtherPod(f, root):
				// Another pod's wait for a node: the root does not say why it waits.
			case (f.symptom || f.generic) && (after || samePod):
				// A symptom of the root's own pod may be dated before the root's evidence: a
				// crash loop's first back-off predates the last restart's log.
				f.SecondaryOf = root.ID
			case after && !samePod && (propagating[f.Category] || f.fallback):
				f.SecondaryOf = root.ID
			case f.Node != "" && f.Node == root.Node && f.Category == root.Category:
				// The same fault of the same node, as another witness reports it (a node
				// condition, the device plugin's allocatable count).
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
	if ne := a.nodeCoverage(); ne != nil {
		ne.Attribution = a.attribution(root, a.nodeFailure)
		ne.RootCouldBeHardware = root != nil && a.couldBeHardware(root.Category)
		a.res.NodeEvidence = ne
	}
	a.verdict()
}

// merge folds findings of one rule on one pod and container (a log and its previous log, a
// pod condition and the event with the same message) into one, keeping the earliest.
func (a *analyzer) merge() {
	sortFindings(a.findings)
	// An error recovered from and the same error that was not are two failures. The key's
	// names are numbered (a few containers and rules, a pod each): at 200,000 containers a map
	// of every finding keyed by three strings and the severity was 18 MB.
	type mergeKey struct{ pod, container, rule, severity int32 }
	names := map[string]int32{}
	number := func(s string) int32 {
		n, ok := names[s]
		if !ok {
			n = int32(len(names))
			names[s] = n
		}
		return n
	}
	byKey := make(map[mergeKey]*Finding, len(a.findings))
	out := a.findings[:0]
	for _, f := range a.findings {
		key := mergeKey{number(f.Pod), number(f.Container), number(f.RuleID), int32(f.Severity)}
		first, ok := byKey[key]
		if !ok {
			byKey[key] = f
			out = append(out, f)
			continue
		}
		if f.recovered == nil || first.recovered != nil && f.recovered.time > first.recovered.time {
			first.recovered = f.recovered // recovered only if every one of them was
		}
		first.Count += f.Count
		first.waitPrinted = max(first.waitPrinted, f.waitPrinted)
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
// a volume that failed to mount at first did not stop a container that then ran (its
// object says so, or, pasted, an event of its container's creation after the wait); and an
// out-of-memory error its trainer caught, skipping the batch, with nothing failing after;
// and a pasted listing's evicted pods beside other workloads that run (recovered.go). A finding
// of the job's own objects (a queue's Workload, a PodGroup: no pod) is resolved when every
// pod of the job shows otherwise: the queue admitted the job and its pods were scheduled.
func (a *analyzer) resolvedLater() {
	for _, f := range a.findings {
		if f.skipped && f.Severity >= SeverityError {
			f.Severity = SeverityWarning
			f.Title += " (caught: the batch was skipped)"
			continue
		}
		if f.leftover && f.Severity >= SeverityError {
			f.Severity = SeverityWarning
			f.Title += " (a leftover: other workloads listed with it run)"
			continue
		}
		if f.runsLater && f.Severity >= SeverityError {
			f.Severity = SeverityWarning
			f.Title += " (restarted: a later row lists the pod Running and ready)"
			continue
		}
		if f.trainedPast && f.Severity >= SeverityError {
			f.Severity = SeverityWarning
			f.Title += " (the job trained after it)"
			continue
		}
		if f.scheduledPast && f.Severity >= SeverityError {
			f.Severity = SeverityWarning
			f.Title += " (it runs after it)"
			continue
		}
		if f.Severity < SeverityError || f.rule == nil || len(f.rule.rootOnlyIf) == 0 {
			continue
		}
		resolved := false
		switch {
		case f.Pod != "":
			p := a.m.Pod("", f.Pod)
			// Without the pod's object, its pasted events say it: a container created after
			// the wait (recovered.go).
			resolved = p != nil && !f.rule.rootOnlyIf.holds(a.podFields(p)) || p == nil && f.startedLater
		case f.Node == "":
			pods := a.jobPods()
			resolved = len(pods) > 0
			for _, p := range pods {
				resolved = resolved && !f.rule.rootOnlyIf.holds(a.podFields(p))
			}
		}
		if resolved {
			f.Severity = SeverityWarning
			f.Title += " (resolved later)"
		}
	}
}

// linkWeak points each generic finding, catch-all and symptom at the specific finding of
// the same process that explains it (see explains and failureUnit.explains). It returns the
// catch-all exceptions that a specific line of their own failure explains, with that line:
// the line names the failure where the exception stood (rootCause).
func (a *analyzer) linkWeak() (carried map[*Finding]*Finding) {
	// Only findings of the same pod can explain each other: one list per pod, in order, keeps
	// this linear in pods (a 4,096-rank job has thousands of findings).
	byPod := map[string][]*Finding{}
	for _, g := range a.findings {
		byPod[g.Pod] = append(byPod[g.Pod], g)
	}
	u := a.failureUnits()
	for _, f := range a.findings {
		if !(f.generic || f.fallback || f.symptom || f.derived) || f.Pod == "" {
			continue
		}
		var best *Finding
		for _, g := range byPod[f.Pod] {
			if g != f && u.explains(g, f) && !(g.symptom && u.explains(f, g)) && !followsFrom(g, f, a.findings) && (best == nil || betterExplanation(f, g, best)) {
				best = g
			}
		}
		if best != nil {
			f.SecondaryOf = best.ID
			if u.catchAll(f) && u.same(f, best) {
				if carried == nil {
					carried = map[*Finding]*Finding{}
				}
				carried[f] = best
			}
		}
	}
	return carried
}

// unitLines bounds a failure's unit: a traceback with the exceptions chained to it and the
// lines a framework prints right around it. Deep frames of two chained tracebacks fit.
const unitLines = 120

// failureUnit tells whether two lines of one log belong to one failure of its process: a
// traceback from its header to its last exception, across "During handling of the above
// exception" and "The above exception was the direct cause", and the lines printed right
// around it. Within a unit, a specific line says what the catch-all exception means (a
// generic RuntimeError above the device's own error, the KeyError a hub error was raised
// from); outside it, an earlier line is another moment of the process (a retry, a warning,
// an error training went on past) and says nothing of how it ended.
type failureUnit struct {
	// progress are the processes that showed training progress, by log.
	progress map[string][]*procState
}

func (a *analyzer) failureUnits() failureUnit {
	u := failureUnit{progress: map[string][]*procState{}}
	for _, p := range a.procs {
		if p.progress > 0 {
			u.progress[p.log] = append(u.progress[p.log], p)
		}
	}
	return u
}

// catchAll says whether f is a catch-all exception line: the findings a unit's specific
// line explains.
func (failureUnit) catchAll(f *Finding) bool {
	return f.fallback && !f.generic && !f.symptom && !f.derived && f.log != ""
}

// same says whether f and g are lines of one failure of one process: the same log and
// stream, a few lines apart, printed in the same minute, with no training progress between
// them.
func (u failureUnit) same(f, g *Finding) bool {
	if f.log == "" || f.log != g.log || !shareStream(f, g) || abs64(int64(f.order-g.order)) > unitLines {
		return false
	}
	if f.at != nil && g.at != nil && abs64(int64(f.at.Sub(*g.at))) > int64(nearTime) {
		return false
	}
	lo, hi := min(f.order, g.order), max(f.order, g.order)
	for _, p := range u.progress[f.log] {
		if (p.stream == f.stream || p.stream == "") && progressBetween(p, lo, hi) {
			return false
		}
	}
	return true
}

// progressBetween says whether p showed progress between lines lo and hi (both excluded),
// or may have: only its first and last maxPeriods progress lines are kept.
func progressBetween(p *procState, lo, hi int) bool {
	n := min(p.progress, maxPeriods)
	oldest := mark{line: hi}
	for k := range n {
		m, _ := p.progressBack(k)
		if m.line > lo && m.line < hi {
			return true
		}
		if m.line <= lo {
			return false // newest first: the rest are before lo too
		}
		oldest = m
	}
	if p.first.line > lo && p.first.line < hi {
		return true
	}
	// Progress lines not kept lie between the first and the oldest kept.
	return p.progress > n && p.first.line < hi && oldest.line > lo
}

// anyException says whether catch-all f says only that some exception was raised: a
// symptom of its unit says more. A catch-all that names a class (a CUDA error, a failed
// image pull) is what the symptoms after it follow from.
func (u failureUnit) anyException(f *Finding) bool {
	return u.catchAll(f) && (f.Category == CategoryUserCodeError || f.Category == CategoryUnknown)
}

// explains is explains (the function) with the unit of a catch-all exception: a specific
// symptom of its own unit (a collective's timeout the device reports below a generic
// RuntimeError) explains it, and the exception does not explain that symptom; a symptom
// printed before its unit, with progress or many lines between, explains nothing of it.
func (u failureUnit) explains(g, f *Finding) bool {
	switch {
	case u.anyException(f) && g.symptom && !g.generic && !g.fallback && !g.derived && g.log == f.log && !(namesNoCause(g) && after(g, f)):
		if u.same(f, g) {
			return (g.Severity >= SeverityError || explainsUntilRecovered(g, f)) && sameProcess(f, g)
		}
		if !after(g, f) {
			return false
		}
	case u.anyException(g) && f.symptom && !f.generic && !f.fallback && !f.derived && u.same(g, f):
		return false
	}
	return explains(g, f)
}

// followsFrom says whether g already follows from f, directly or through others: then g
// cannot explain f, or the two would point at each other with no root left. (A symptom that
// f explains never explains f either: a pull's back-off follows from the failed pull, not the
// other way round.)
// fs are the findings, numbered (see byID).
func followsFrom(g, f *Finding, fs []*Finding) bool {
	for n := 0; g != nil && g.SecondaryOf != "" && n < len(fs); n++ {
		if g.SecondaryOf == f.ID {
			return true
		}
		g = byID(fs, g.SecondaryOf)
	}
	return false
}

// byID is the finding of fs whose id is id, nil when none: fs are numbered, the finding "fN"
// is fs[N-1] (a map of their ids was 6.6 MB at 200,000 containers).
func byID(fs []*Finding, id string) *Finding {
	if len(id) < 2 || id[0] != 'f' {
		return nil
	}
	n, err := strconv.Atoi(id[1:])
	if err != nil || n < 1 || n > len(fs) || fs[n-1].ID != id {
		return nil
	}
	return fs[n-1]
}

// specificity ranks what a finding says about why: that a pod waits for a node (a listing's
// Pending, which a pull that fails also shows), that a process failed (generic), that it
// raised some exception (fallback), or what failed (specific).
func specificity(f *Finding) int {
	switch {
	case onlyWaits(f):
		return -1
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
	if g.Severity < SeverityError && !explainsUntilRecovered(g, f) || !sameProcess(f, g) || waitsForOtherPod(f, g) {
		return false
	}
	if f.derived {
		return !g.symptom && !g.generic && (!g.derived || g.fromDumps && !f.fromDumps)
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
		if namesNoCause(g) && f.fallback && !f.generic && after(g, f) {
			// A symptom that names no cause (a launcher's summary that a rank failed, a peer
			// gone) follows from the exception the process raised before it; it does not
			// say why that exception was raised.
			return false
		}
		if f.generic && (!weak(f) || f.Category == CategoryCrashSignal && f.rankNamed && namesNoCause(g)) && f.Category != g.Category && after(f, g) {
			// A line that names how the process died (mpirun's "exited on signal 9", or
			// a rank named on signal 11) says more than a summary printed before it that
			// the process failed (Open MPI's "Primary job terminated normally, but 1
			// process returned"). An abort without a rank is still the peer's symptom.
			return false
		}
		return !after(g, f) || near(f, g)
	}
	return true
}

// namesNoCause says whether f is a symptom whose words name no cause of their own (a peer
// gone, a launcher's abort summary).
func namesNoCause(f *Finding) bool { return f.rule != nil && f.rule.NamesNoCause }

// waitsForOtherPod says whether f says only that pods a pasted listing names wait for a
// node (onlyWaits) and g names none of them: the rows of every pod of a listing share one
// stream, and another pod's failure does not say why these wait.
func waitsForOtherPod(f, g *Finding) bool {
	if !onlyWaits(f) {
		return false
	}
	rows := rowsOf(f.Evidence)
	if rows == nil {
		return false
	}
	for _, e := range g.Evidence {
		for _, r := range rows {
			if namesPod(e.Text, r) {
				return false
			}
		}
	}
	return true
}

// namesPod says whether line t is about row r's pod: a row of the same pod, or a line that
// names it as a word of its own ("pod \"upload\"", "pod/upload", "ml/upload").
func namesPod(t string, r listedPod) bool {
	if o, ok := listedRow([]byte(t)); ok {
		return r.samePodRow(o)
	}
	name := string(r.name)
	for i := 0; i <= len(t)-len(name); {
		j := strings.Index(t[i:], name)
		if j < 0 {
			return false
		}
		j += i
		if (j == 0 || !podNameByte(t[j-1])) && (j+len(name) == len(t) || !podNameByte(t[j+len(name)])) {
			return true
		}
		i = j + 1
	}
	return false
}

// podNameByte says whether c may be part of a pod's name (a DNS label, with dots).
func podNameByte(c byte) bool {
	return c == '-' || c == '.' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// explainsUntilRecovered says whether g, an error training went on past, may still explain
// f: what its process showed before it resumed (the container's exit that the restart
// followed), never what came after.
func explainsUntilRecovered(g, f *Finding) bool {
	return g.recovered != nil && g.recovered.time != 0 && f.at != nil && f.at.UnixNano() <= g.recovered.time
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

// nodeWindow is how long after a pod's failure its node's fault may be first seen and still
// explain it: the driver logs an Xid and the device plugin reacts within seconds to minutes.
const nodeWindow = 10 * time.Minute

// hardwareBehind returns what the root's node shows that explains it, when it does: a GPU
// fault of the node the failing pod ran on (a condition, an Xid event, GPUs no longer
// allocatable) explains the CUDA or NCCL error of the pod. That node finding becomes the root
// cause, named with the failing pod and rank, and the pod's error follows from it.
func (a *analyzer) hardwareBehind(root *Finding) *Finding {
	if root == nil {
		return nil
	}
	nodeOf := map[string]string{}
	for _, p := range a.jobPods() {
		nodeOf[p.Name] = p.Spec.NodeName
	}
	if root.Node != "" && (root.Pod == "" || root.gpuNodeEvidence()) {
		// A node's own failure is the root: name the pod that failed on it first.
		a.nameFailingPod(root, nodeOf)
		return root
	}
	node := nodeOf[root.Pod]
	if node == "" {
		return root
	}
	var best *Finding
	for _, h := range a.findings {
		if h == root || h.rule == nil || !slices.Contains(h.rule.ExplainsOnNode, root.Category) || h.Severity < SeverityWarning {
			continue
		}
		if h.Node != node && (h.Pod == "" || nodeOf[h.Pod] != node) {
			continue
		}
		if h.context || h.at != nil && root.at != nil && (h.at.After(root.at.Add(nodeWindow)) || h.gpuNodeEvidence() && !linedUp(*h.at, *root.at)) {
			continue // a node's fault long before the failure is context (nodeContext)
		}
		if best == nil || h.Severity > best.Severity {
			best = h // findings are sorted: among the most severe, the earliest
		}
	}
	if best == nil {
		return root
	}
	best.SecondaryOf = ""
	if best.Severity < SeverityError {
		best.Severity = SeverityError
	}
	if best.Node == "" {
		best.Node = node
	}
	if best.Pod == "" {
		best.Pod, best.Container, best.Rank = root.Pod, root.Container, root.Rank
	}
	root.SecondaryOf = best.ID
	a.nodeFailure = root
	return best
}

// nameFailingPod gives a node finding that is the root cause the pod that failed first on
// that node (its error follows from the node's), when one did.
func (a *analyzer) nameFailingPod(root *Finding, nodeOf map[string]string) {
	for _, f := range a.findings { // sorted: the first is the earliest
		if f == root || f.Pod == "" || nodeOf[f.Pod] != root.Node || f.Severity < SeverityError || f.symptom || f.generic || f.derived {
			continue
		}
		if f.at != nil && root.at != nil && (f.at.Before(root.at.Add(-nodeWindow)) || root.gpuNodeEvidence() && !linedUp(*root.at, *f.at)) {
			continue // it failed long before the node did, or long after
		}
		if root.rule != nil && !slices.Contains(root.rule.ExplainsOnNode, f.Category) {
			continue
		}
		root.Pod, root.Container, root.Rank = f.Pod, f.Container, f.Rank
		f.SecondaryOf = root.ID
		a.nodeFailure = f
		return
	}
}

// rootCause is the earliest primary failure: at least an error, not a symptom, not generic,
// not explained by another finding. Failing that, the earliest symptom or generic finding: a
// job whose only evidence is a watchdog timeout still has that as its best explanation, and
// a generic line that names a cause comes before a symptom. A catch-all exception that a
// specific line of its own failure explains (carried, from linkWeak) is named by that line,
// in the exception's place: which process failed first does not change.
func (a *analyzer) rootCause(carried map[*Finding]*Finding) *Finding {
	pick := func(ok func(f *Finding) bool) *Finding {
		for _, f := range a.findings { // sorted by time: the first is the earliest
			if f.Severity >= SeverityError && f.SecondaryOf == "" && ok(f) {
				return f
			}
		}
		return nil
	}
	for _, f := range a.findings {
		if f.Severity < SeverityError {
			continue
		}
		if s := carriedBy(carried, f); s != nil {
			return a.collectiveBefore(s)
		}
		if f.SecondaryOf == "" && !f.generic && !f.symptom {
			return a.collectiveBefore(f)
		}
	}
	// A generic line that still names a cause (a rank killed by signal 9: likely out of
	// memory) says more than a symptom that something failed, and more than a pod's wait for
	// a node that it does not explain (another pod's).
	if f := pick(func(f *Finding) bool { return !f.symptom && !weak(f) && !onlyWaits(f) }); f != nil {
		return f
	}
	if f := pick(func(f *Finding) bool { return !f.symptom && !weak(f) }); f != nil {
		return f
	}
	first := pick(func(f *Finding) bool { return true })
	if first != nil && first.symptom && namesNoCause(first) {
		// A launcher's summary that a rank failed names no cause; the line that names the
		// rank and the signal it died of, which Open MPI prints right after it, says more.
		if f := pick(func(f *Finding) bool { return f.generic && f.Category == CategoryCrashSignal && f.rankNamed }); f != nil {
			return f
		}
	}
	return first
}

// carriedBy is the line that explains catch-all f within its failure, when that line is
// itself unexplained and an error.
func carriedBy(carried map[*Finding]*Finding, f *Finding) *Finding {
	s := carried[f]
	if s == nil || s.SecondaryOf != "" || s.Severity < SeverityError {
		return nil
	}
	return s
}

// collectiveBefore returns, for a CUDA error chosen as the root, the NCCL error or collective
// timeout its process printed before it in the same log, when there is one; else the root
// itself. A CUDA error explains the NCCL errors it causes, which its log prints after it; an
// NCCL error printed before it (an InfiniBand completion error, then NCCL's "Cuda failure" as
// the communicator is torn down) came first, and so did a timeout (DeepEP's kernels trap
// after printing theirs, and the trap is the "unspecified launch failure" that follows); line
// order within one log is time order also where lines carry no time. Symptoms count: with
// nothing before them in the log, they are what failed first. A generic NCCL line (a CUDA
// call NCCL saw fail) is that CUDA error itself.
func (a *analyzer) collectiveBefore(root *Finding) *Finding {
	if root.Category != CategoryCUDAError && root.Category != CategoryCrashSignal || root.log == "" {
		return root
	}
	for _, f := range a.findings { // sorted: lines of one log in order
		if f.log != root.log || f.order >= root.order {
			continue
		}
		if (f.Category == CategoryCollectiveError || f.Category == CategoryCollectiveTimeout) && f.Severity >= SeverityError && !f.generic && f.SecondaryOf == "" && sameProcess(f, root) {
			return f
		}
	}
	return root
}

// succeeded says whether the job's own controller says it succeeded and its status can be
// trusted (not a kind whose launcher succeeds whatever training did, parse.Family.LogDecides).
func (a *analyzer) succeeded() bool {
	j := a.m.Job
	return j != nil && j.Phase == parse.PhaseSucceeded && j.Family.LogDecides == ""
}

// recoveredFrom lowers, in a job that succeeded, the errors it recovered from (an elastic
// restart, a retried pod) to warnings. Training output that shows the run is broken is not
// recovered from, and stays an error: a streak that lasts to the end of the log (the loss
// NaN to the end), or a failure of a training process after which its log shows no more
// progress (a CUDA OOM under a launcher that exited 0).
func (a *analyzer) recoveredFrom() {
	if !a.succeeded() {
		return
	}
	for _, f := range a.findings {
		if f.Severity >= SeverityError && !a.brokenOutput(f) {
			f.Severity = SeverityWarning
			a.recovered++
		}
	}
}

// brokenOutput says whether a finding shows the training output broken for good.
func (a *analyzer) brokenOutput(f *Finding) bool {
	if f.rule != nil && f.rule.Match.Streak != nil {
		// Nothing after the streak's last bad line was good again: the run ended broken.
		return f.recovered == nil
	}
	if f.Layer != LayerExecution || f.generic || f.symptom || f.fallback || f.derived || f.log == "" {
		return false
	}
	for _, p := range a.procs {
		if p.log != f.log || !(p.stream == f.stream || p.stream == "") || p.progress == 0 {
			continue
		}
		if p.first.line < f.order && p.lastProgress().line < f.order {
			f.noProgressAfter = true
			return true
		}
	}
	return false
}

func (a *analyzer) verdict() {
	r := a.res
	j := a.m.Job
	if r.RootCause != nil {
		pl := a.place(r.RootCause)
		r.VerdictAt = &pl
		if a.stuckVerdict(pl.String()) {
			return
		}
	}
	switch {
	case r.RootCause != nil:
		r.Verdict = VerdictUnhealthy
		f := r.RootCause
		where := r.VerdictAt.String()
		r.VerdictReason = strings.TrimSpace(fmt.Sprintf("%s: %s in %s", f.Category, f.Title, where))
		if a.succeeded() {
			// The controller says it succeeded; the training output says otherwise.
			what := lowerFirst(f.Title)
			if f.noProgressAfter {
				what += ", and training made no progress after it"
			}
			if f.rule != nil && f.rule.Match.Streak != nil && f.recovered == nil && !f.rule.Match.Streak.ToEnd {
				from := mark{line: f.order, step: f.step}
				if f.Time != nil {
					from.time = f.Time.UnixNano()
				}
				what += ", from " + from.place() + " to the end of its log"
			}
			r.VerdictReason = fmt.Sprintf("the job succeeded but %s; %s in %s", what, f.Category, where)
		}
		if s := a.recoveredSummary(); s != "" {
			r.VerdictReason += "; recovered from " + s
		}
	case a.succeeded() && len(a.recoveredErrors) > 0:
		r.Verdict = VerdictHealthy
		r.VerdictReason = "the job succeeded; recovered from " + a.recoveredSummary()
	case a.succeeded() && a.recovered > 0:
		r.Verdict = VerdictHealthy
		r.VerdictReason = fmt.Sprintf("the job succeeded; %d error(s) seen on the way were recovered from", a.recovered)
	case j != nil && j.Phase == parse.PhaseSucceeded:
		r.Verdict = VerdictHealthy
		r.VerdictReason = "the job succeeded and no failure was found"
	case j != nil && (j.Phase == parse.PhaseRunning || j.Phase == parse.PhaseCreated && len(j.Pods()) > 0 && allRunning(j)) && !a.podsPending():
		r.Verdict = VerdictHealthy
		r.VerdictReason = "the job is running and no failure was found so far"
		if s := a.recoveredSummary(); s != "" {
			r.VerdictReason += "; recovered from " + s
		}
	case j != nil && j.Object != nil && a.podsPending():
		r.Verdict = VerdictUnknown
		r.VerdictReason = a.pendingReason()
	default:
		r.Verdict = VerdictUnknown
		if j == nil || j.Object == nil {
			// Failures the log shows recovered from (a restarted worker group that trained on)
			// are said, not "no failure": the reader sees them among the findings.
			lead := "no failure pattern matched"
			if s := a.recoveredSummary(); s != "" {
				lead = "every failure seen was recovered from (" + s + ")"
			}
			r.VerdictReason = lead + ", and without a job status success cannot be confirmed"
			if p := a.lastProgress(); p != nil {
				// A log that ends mid-run with no error may be a hang; only the job's status and
				// when the log was collected can tell.
				m := p.lastProgress()
				at := fmt.Sprintf("line %d", m.line)
				if m.step >= 0 {
					at = fmt.Sprintf("step %d (line %d)", m.step, m.line)
				}
				r.VerdictReason = fmt.Sprintf("%s; the log's last training progress is at %s of %s and nothing after it says why it ends: if the job is still running it may be hung (a bundle, with the job's status and its collection time, can tell)", lead, at, p.log)
			}
		} else {
			r.VerdictReason = fmt.Sprintf("the job is %s and no failure was found", j.Phase)
		}
	}
}

// place is where finding f happened: its pod and container (the file's own name for a
// plain log), else the job; its rank and node.
func (a *analyzer) place(f *Finding) Place {
	pl := Place{Pod: f.Pod, Container: f.Container, Rank: f.Rank, Node: f.Node}
	if a.m.Bundle != nil && a.m.Bundle.Plain && f.Pod != "" {
		for _, l := range a.m.Logs {
			if l.Pod == f.Pod && (f.Container == "" || l.Container == f.Container) {
				pl.File = a.m.Bundle.PlainName(l.Path)
				break
			}
		}
	}
	if f.Pod == "" && a.m.Job != nil {
		pl.Job = a.m.Job.Ref()
	}
	return pl
}

// lastProgress is the process whose progress was seen last, or nil when no log showed any.
func (a *analyzer) lastProgress() *procState {
	var last *procState
	for _, p := range a.procs {
		if p.progress > 0 && (last == nil || before(last, p, last.lastProgress(), p.lastProgress())) {
			last = p
		}
	}
	return last
}

// lowerFirst lower-cases the first letter of a title used inside a sentence, unless it
// starts a name ("NCCL", "CUDA").
func lowerFirst(s string) string {
	if len(s) < 2 || s[0] < 'A' || s[0] > 'Z' || s[1] >= 'A' && s[1] <= 'Z' {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

func allRunning(j *parse.Job) bool {
	for _, p := range j.Pods() {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
			return false
		}
	}
	return true
}
