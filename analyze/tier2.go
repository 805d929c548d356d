package analyze

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coroner-dev/coroner/parse"
	corev1 "k8s.io/api/core/v1"
)

// Confidence says how sure a root cause is: high when a specific rule matched unambiguous
// evidence, medium when the second tier named it from the failure's words, low when all
// that is known is that a process failed (an exit code, a generic exception, a signal).
type Confidence string

// Confidences.
const (
	ConfidenceHigh   Confidence = "high"
	ConfidenceMedium Confidence = "medium"
	ConfidenceLow    Confidence = "low"
)

// SecondTierRuleID prefixes the rule id of a second-tier finding: "vocabulary/host-oom".
const SecondTierRuleID = "vocabulary/"

var defaultVocabulary = sync.OnceValues(DefaultVocabulary)

// weak says whether a root cause only says that a process failed, not why: its category is
// unknown, it is a catch-all (any exception), or a generic sign of failure (an exit code, a
// signal, a crash loop) whose category is not a cause.
func weak(f *Finding) bool {
	return f.Category == CategoryUnknown || f.fallback ||
		f.generic && (f.Category == CategoryUserCodeError || f.Category == CategoryCrashSignal)
}

// WithoutSpecific keeps of rules those that name no specific cause: progress and fact
// entries, generic and catch-all rules, and the streak rules that know when a failure was
// recovered from, for that alone (recoveryOnly). Analysing with them measures the second
// tier alone (coroner analyze --tiers fallback).
func WithoutSpecific(rules []*Rule) []*Rule {
	var out []*Rule
	for _, r := range rules {
		switch k := r.Kind(); {
		case k == "progress" || k == "fact" || r.Role.Generic() || r.Role.Fallback() || r.Category == CategoryUnknown:
			out = append(out, r)
		case k == "streak" && len(r.Match.Streak.Recover) > 0:
			out = append(out, recoveryOnly(r))
		}
	}
	return out
}

// secondTier names the cause from a log's terminal failure when no specific rule did, and
// sets the root cause's confidence. A root cause that only says a process failed is
// replaced by the second tier's finding of its process when the vocabulary can tell (and
// kept, with medium confidence, when the vocabulary agrees with it). Without a root cause,
// a log that ends in a failure after its last training progress is named, unless the job's
// own status says it succeeded or is still running: a healthy job never becomes unhealthy
// here.
func (a *analyzer) secondTier(root *Finding) *Finding {
	switch {
	case root == nil:
		if !a.mayHaveFailed() {
			return nil
		}
	case !weak(root):
		a.res.Confidence = ConfidenceHigh
		if root.rule != nil && root.rule.NamesNoCause && !a.causeShownAbsent(root) {
			// A symptom whose words name no cause (a peer gone, a launcher's abort) is the
			// root only because nothing before it was seen: a log that may not hold the
			// cause does not make that sure.
			a.res.Confidence = ConfidenceMedium
			a.res.ConfidenceBasis = BasisSymptom
		}
		if root.generic && root.Category == CategoryHostOOM {
			// A launcher's report of a SIGKILL (torchelastic's, DeepSpeed's, mpirun's) names
			// the usual cause, the OOM killer, not one the log shows: a scheduler, an agent
			// or a user kills with it too.
			a.res.Confidence, a.res.ConfidenceBasis = ConfidenceMedium, BasisUsualCause
			if a.timedOutBefore(root) {
				// Its own log shows a collective that had already timed out: the launcher
				// notices a dead worker within seconds, so a kill it reports after a
				// half-hour wait did not start that wait here; a rank stuck swapping may
				// have been killed at last, or the OOM killer took it for another reason:
				// could not tell.
				a.res.Confidence, a.res.ConfidenceBasis = ConfidenceLow, BasisKillAfterTimeout
			} else if a.termedBefore(root) {
				// Its own log shows the process was told to stop (SIGTERM) before: a runner
				// or an agent sends SIGKILL to what did not exit within the grace period,
				// and that escalation, not the OOM killer, is the usual kill then.
				a.res.Confidence, a.res.ConfidenceBasis = ConfidenceLow, BasisKillAfterTerm
			}
		}
		if root.Category == CategoryHang && root.rule != nil && root.rule.Match.Silence == nil && a.stallYoung(root) {
			// A stall a line reported (Horovod's inspector after 60 s, a dump) in a job still
			// running, collected within the stuck threshold of it: the ranks it waits for may
			// still come (a slow checkpoint), so it is not sure yet.
			a.res.Confidence, a.res.ConfidenceBasis = ConfidenceMedium, BasisRecentStall
		}
		if root.Category == CategoryHang && root.rule != nil && root.rule.Match.Silence == nil && a.loneStall(root) {
			// Horovod's stall inspector repeats its report every check (60 s) for as long as
			// the ranks do not come: one report with nothing known of the job after it is a
			// wait of a minute or more (a slow first batch or checkpoint, an evaluation on one
			// rank), not a hang shown (horovod/horovod#2315, #100).
			a.res.Confidence, a.res.ConfidenceBasis = ConfidenceLow, BasisLoneStall
		}
		if root.rule != nil && root.rule.Match.Streak != nil && root.rule.Match.Streak.ToEnd && root.Count < 2 && a.stillRunning() {
			// One bad row at the end of a job still running is the step it was at when
			// collected: the next may be finite again.
			a.res.Confidence, a.res.ConfidenceBasis = ConfidenceMedium, BasisOneRow
		}
		return root
	default:
		a.res.Confidence = ConfidenceLow
	}
	tf, c := a.classifyTerminal(root, "")
	dump := root != nil && root.Category == CategoryHang
	if tf != nil && dump && !tf.strongest.strong() {
		// A stack dump of a live process (hang/stack-dump) names its cause only by a line
		// that shows the process failed (a signal, an exception): the source lines gdb lists
		// are code, not a failure's words ("wait(...): timed out").
		tf = nil
	}
	if tf == nil && dump {
		// A dump shows where one process waited, not why: another process that failed at the
		// end of its log (a rank out of memory while rank 0 was interrupted in a collective
		// waiting for it) is why it waited.
		tf, c = a.classifyTerminal(nil, root.log)
	}
	if tf == nil {
		if root == nil || dump {
			skip := ""
			if dump {
				skip = root.log
			}
			if tf = a.unexplainedEnd(skip); tf != nil {
				f := a.tierFinding(tf, Classification{Category: CategoryUnknown})
				a.findings = append(a.findings, f)
				a.renumber()
				a.demote(root, f)
				a.res.Confidence = ConfidenceLow
				return f
			}
		}
		return root
	}
	if root != nil && root.Category == c.Category && (!dump || tf.log == root.log) {
		a.res.Confidence, a.res.ConfidenceBasis = c.confidence()
		if a.namedByPossibleCauses(tf, c) {
			a.res.Confidence, a.res.ConfidenceBasis = ConfidenceLow, BasisPossibleCauses
		}
		if ownWordsOnly(root, c) {
			// An abort's words agreeing with the abort rule are one piece of evidence, not
			// two: the cause is the message it aborted on, which nothing named (a CANN
			// "EH9999 ... init env failed" above "Aborted (core dumped)").
			a.res.Confidence, a.res.ConfidenceBasis = ConfidenceLow, ""
		}
		// The generic rule did match: the words confirm its category, no rule names the message.
		words := strings.Replace(a.vocab.Explain(c), noSpecificRule, " The rule that matched says that the process failed, not why, and no specific rule matched the message it failed on, so check the evidence before acting on it.", 1)
		root.Explanation = strings.TrimSpace(root.Explanation + " " + words)
		return root
	}
	if root != nil && root.fallback && root.Category == CategoryUserCodeError && abortWordsOnly(c) {
		// The log ends in an abort whose words say only that the process aborted, below a
		// line that says on what (a C assertion, an exception): that line is the cause and
		// its own evidence, at the low confidence of any failure no specific rule names.
		return root
	}
	f := a.tierFinding(tf, c)
	a.findings = append(a.findings, f)
	a.renumber()
	a.demote(root, f)
	a.res.Confidence, a.res.ConfidenceBasis = c.confidence()
	if a.namedByPossibleCauses(tf, c) {
		// A list of the causes a failure might have is no cause: "likely" would say more
		// than the message does.
		a.res.Confidence, a.res.ConfidenceBasis = ConfidenceLow, BasisPossibleCauses
	}
	if root == nil && !tf.endsLog(true) && c.Score < 2*a.vocab.minScore {
		// Error lines alone, named by the vocabulary only because they end the log
		// (errorEndsLog): they say what the runtime stopped on, not that the process died.
		a.res.Confidence, a.res.ConfidenceBasis = ConfidenceLow, ""
	}
	if abortWordsOnly(c) {
		// The abort's own words name no cause (the message it aborted on, which nothing
		// named, is the cause): the same as an exit code.
		a.res.Confidence, a.res.ConfidenceBasis = ConfidenceLow, ""
	}
	if a.readAsUserFault(f) {
		// A specific rule already read the line the words were found in, and called it the
		// application's own fault at warning severity (an Xid 31 MMU fault or 13 SM exception
		// of the process named in it: gpu-hardware/xid-app-fault): the words of that message
		// ("Xid", "NVRM") are no second reading of it, and the rule that knows it found no
		// hardware fault in it (tinygrad/tinygrad#6947, a driver module, not the GPU).
		a.res.Confidence, a.res.ConfidenceBasis = ConfidenceLow, ""
	}
	if last := tf.lines[len(tf.lines)-1]; tf.strongest <= kindRetried && retryLine(last.text) && !lastTry(last.text) ||
		tf.strongest == kindError && isRecovery(last.text, tailWordsOf(last.text)&hasSocketWord) {
		// Retries printed again and again to the end of the log show the attempt never
		// succeeded, not that the process gave up (the last try of a count does): a log cut
		// while it still retries is a hang as much as a failure. c10d's client logs each
		// failed connect at warning level and gives up at error level (recovered.go): a log
		// that ends in a warning-level attempt, with nothing stronger, was still trying.
		// However few the retries, and whatever stopped the pod after them: NCCL retries a
		// refused connect silently for its budget and says that it gave up in a WARN line of
		// its own (NVIDIA/nccl#1515, #1311), so an INFO "retrying" that ends a failed pod's log
		// says only that the process still tried when its output stopped.
		a.res.Confidence = ConfidenceLow
	}
	if a.res.Confidence == ConfidenceLow {
		hedgeLow(f)
	}
	return f
}

// readAsUserFault says whether the evidence line of f, the second tier's finding, is one a
// specific rule matched at warning severity as a fault of the user's own process in the same
// category: the rule named that line for what it is, and it is not a failure by itself.
func (a *analyzer) readAsUserFault(f *Finding) bool {
	if len(f.Evidence) == 0 {
		return false
	}
	ev := f.Evidence[0]
	for _, g := range a.findings {
		if g == f || g.rule == nil || g.fallback || g.generic || g.Severity != SeverityWarning || g.Fault != FaultUser || g.Category != f.Category {
			continue
		}
		for _, e := range g.Evidence {
			if e.File == ev.File && ev.Line >= e.Line && ev.Line <= max(e.Line, e.LastLine) {
				return true
			}
		}
	}
	return false
}

// stallYoung says whether f, a stall some line reported, was collected within the stuck
// threshold of when it was first reported while the job still ran: a stall repeated for half
// an hour (Horovod warns every 60 s) is not young because its last warning is.
func (a *analyzer) stallYoung(f *Finding) bool {
	mf := a.m.Bundle.Manifest
	if mf == nil || mf.CollectedAt == nil || f.Time == nil || !a.stillRunning() {
		return false
	}
	return mf.CollectedAt.Sub(*f.Time) < a.stuckAfter
}

// loneStall says whether f is a collective's stall report (collectiveWaitWords) seen once, in
// a log nothing else tells the job's end of (no collection time, no pod's status), or in a job
// still running that was collected within the stuck threshold of it (stallYoung). A stall
// that lasted repeats its report; a bundle collected long after one report says whether the
// job went on or stopped, one collected soon after it does not (a review of session 25: a
// healthy Horovod run whose first checkpoint drew one report, collected a minute later, was a
// hang at medium).
func (a *analyzer) loneStall(f *Finding) bool {
	mf := a.m.Bundle.Manifest
	return f.Count < 2 && evidenceSays(f.Evidence, collectiveWaitWords) &&
		((mf == nil || mf.CollectedAt == nil) && len(a.m.Pods) == 0 && (a.m.Job == nil || a.m.Job.Object == nil) || a.stallYoung(f))
}

// hedgeLow words a second-tier finding named at low confidence as a possibility: "likely"
// is the medium tier's word, and a title that says it would claim more than low does.
func hedgeLow(f *Finding) {
	if rest, ok := strings.CutPrefix(f.Title, likely); ok {
		f.Title = possibly + rest
	}
	f.Explanation = strings.Replace(f.Explanation, " (likely). ", " (possibly). ", 1)
}

// Basis is why a root cause's confidence is lower than its kind of finding usually gives.
type Basis string

const (
	// BasisSymptom: a specific rule matched, but its words name no cause of their own (a
	// peer gone, a launcher's abort) and the bundle does not show that nothing failed before.
	BasisSymptom Basis = "symptom"
	// BasisFrame: the second tier named the cause from the innermost frame of a traceback
	// cut before its exception line.
	BasisFrame Basis = "frame"
	// BasisLoneStall: a stall report that repeats while the stall lasts was seen once, in a
	// log that does not show whether the job went on or stopped.
	BasisLoneStall Basis = "lone-stall"
	// BasisOneRow: a specific rule matched a streak that lasts to the log's end, but it is one
	// row long and the job was still running when it was collected.
	BasisOneRow Basis = "one-row"
	// BasisUsualCause: a launcher's report of a signal (a SIGKILL) matched, and its category is
	// the signal's usual cause (the OOM killer), which the log does not show.
	BasisUsualCause Basis = "usual-cause"
	// BasisKillAfterTimeout: a launcher's report of a SIGKILL matched, but its log shows a
	// collective operation that had timed out before it.
	BasisKillAfterTimeout Basis = "kill-after-timeout"
	// BasisKillAfterTerm: a launcher's report of a SIGKILL matched, but its log shows the
	// process was sent SIGTERM before it (the SIGKILL is the escalation after a grace period).
	BasisKillAfterTerm Basis = "kill-after-sigterm"

	// BasisRecentStall: a specific rule matched a stall a line reported, in a job still
	// running and collected within the stuck threshold of it.
	BasisRecentStall Basis = "recent-stall"

	// BasisPossibleCauses: the second tier named the cause only from a message's numbered
	// list of the causes it might have (Ray's "There are some potential root causes. (1)...").
	BasisPossibleCauses Basis = "possible-causes"

	// BasisLibraryCall: the second tier named the cause from where a class was constructed
	// with an argument it does not take: inside an installed package (libcall.go).
	BasisLibraryCall Basis = "library-call"
)

// confidence is how sure a cause the second tier named is, and why when that is not the
// failure's words: medium by a failure's words, low by the innermost frame of a traceback cut
// before its exception line, which is no error's words.
func (c Classification) confidence() (Confidence, Basis) {
	if c.Call != nil {
		return ConfidenceLow, BasisLibraryCall
	}
	if c.Frame != "" {
		return ConfidenceLow, BasisFrame
	}
	return ConfidenceMedium, ""
}

// ownWordsOnly says whether c, the second tier's agreement with a generic crash-signal
// root, rests only on an abort's words (in the root's evidence lines or in others of the same
// abort): the vocabulary then read the abort again, not the failure it aborted on. A segmentation fault's
// words name a crash of their own and keep their confidence.
func ownWordsOnly(root *Finding, c Classification) bool {
	return root.generic && root.Category == CategoryCrashSignal && abortWordsOnly(c)
}

// abortWordsOnly says whether c is crash-signal named by nothing but words that say a
// process aborted, wherever they were printed: an abort spreads over lines the abort rule
// need not cite (absl's "*** SIGABRT received at time=...", "Fatal Python error: Aborted",
// vllm-project/vllm#5458; torchelastic's "Signal 6 (SIGABRT) received by PID" row,
// open-compass/VLMEvalKit#1131), and each says only what an exit code of 134 says.
func abortWordsOnly(c Classification) bool {
	if c.Category != CategoryCrashSignal || len(c.Terms) == 0 {
		return false
	}
	aborted := false
	for _, t := range c.Terms {
		w := lowerASCII(t.Text)
		aborted = aborted || w == "aborted"
		if !abortWords[w] && w != "fatal python error" {
			return false
		}
	}
	// Python's "Fatal Python error" is an abort's only beside "Aborted" (faulthandler's
	// "Fatal Python error: Aborted"); its other messages name their own failure.
	return aborted || !slices.ContainsFunc(c.Terms, func(t MatchedTerm) bool { return lowerASCII(t.Text) == "fatal python error" })
}

// abortWords are the crash-signal vocabulary's terms that say only that a process aborted
// (SIGABRT, exit code 134), whose cause is the message printed before the abort.
var abortWords = map[string]bool{"aborted": true, "core dumped": true, "sigabrt": true, "signal 6": true,
	"exitcode: -6": true, "exit code 134": true}

// demote makes root, when there is one, and what followed from it follow from f instead.
func (a *analyzer) demote(root, f *Finding) {
	if root == nil {
		return
	}
	old := root.ID
	root.SecondaryOf = f.ID
	for _, g := range a.findings {
		if g.SecondaryOf == old {
			g.SecondaryOf = f.ID
		}
	}
}

// causeShownAbsent says whether the bundle shows that root, a symptom whose words name no
// cause, had none before it: the job's pods are known, each has its current log whole (not
// empty, not only a previous run's, not cut by the collector), no other pod has a failure
// dated at or before root's, and no other pod's container ended with an error or a signal
// that its own log does not explain (a SIGKILLed process leaves an empty log and a stop time
// the runtime sets when it notices, later than the symptom it caused). Plain logs never do
// (the rank that failed first may be in a log that was not pasted), nor a root without a time.
func (a *analyzer) causeShownAbsent(root *Finding) bool {
	if a.m.Job == nil || a.m.Job.Object == nil || root.at == nil {
		return false
	}
	pods := a.jobPods()
	if len(pods) == 0 {
		return false
	}
	whole := map[string]bool{}
	for _, ls := range a.m.Logs {
		if !ls.Previous && ls.Size > 0 && !ls.Truncated {
			whole[ls.Pod] = true
		}
	}
	explained := map[[2]string]bool{}
	for _, f := range a.findings {
		if f.log != "" {
			explained[[2]string{f.Pod, f.Container}] = true
		}
		if f != root && f.Pod != root.Pod && f.Severity >= SeverityError && (f.at == nil || !f.at.After(*root.at)) {
			return false
		}
	}
	for _, p := range pods {
		if !whole[p.Name] {
			return false
		}
		if p.Name == root.Pod {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if endedBadly(cs) && !explained[[2]string{p.Name, cs.Name}] {
				return false
			}
		}
	}
	return true
}

// endedBadly says whether a container's run, its current or its last, ended with an error
// exit code or a signal.
func endedBadly(cs corev1.ContainerStatus) bool {
	for _, te := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
		if te != nil && (te.ExitCode != 0 || te.Signal != 0) {
			return true
		}
	}
	return false
}

// mayHaveFailed says whether the job may have failed: plain logs, or a job that failed.
func (a *analyzer) mayHaveFailed() bool {
	j := a.m.Job
	return j == nil || j.Object == nil || j.Phase == parse.PhaseFailed
}

// classifyTerminal picks the terminal failure to classify, the first in bundle order that
// the vocabulary can tell: of the root's own log or pod when there is a root, else of any
// log whose failure comes after its last progress. Without a root, error lines alone (no
// exception, signal, fatal line or exit code) must score twice the minimum, and never name
// nan-loss (a NaN line alone is not the end of training: the streak rules judge that). A
// traceback's innermost frame names a cause only when no candidate's words do. The failures
// of log skip are passed over.
func (a *analyzer) classifyTerminal(root *Finding, skip string) (*terminalFailure, Classification) {
	var cands []*terminalFailure
	for _, tf := range a.terminals {
		switch {
		case skip != "" && tf.log == skip:
		case root == nil && !tf.endsLog(false):
		case root != nil && root.log != "" && tf.log != root.log:
		case root != nil && root.log == "" && root.Pod != "" && tf.pod != root.Pod:
		default:
			cands = append(cands, tf)
		}
	}
	var guess *terminalFailure
	var guessed Classification
	for _, tf := range cands {
		if a.streakRecovered(tf) {
			continue
		}
		failure, context := tf.failureText()
		raised := tf.raised()
		c := a.vocab.classify(failure, context, raised)
		if tf.above != nil {
			// A warning or error line right above the failure that names a cause by itself, more
			// strongly than the failure's own lines, says why the failure came. It is no failure
			// line itself, so the terms that name a cause only when raised do not count in it
			// ("xformers is not available", a clip the decoder skips: the run went on after
			// them, until a kill or an exception of its own).
			if ca := a.vocab.classify(string(tf.above.text), "", false); ca.Classified() && ca.Score > c.Score {
				c = ca
			}
		}
		if c.Category == CategoryUserCodeError {
			if call := libraryInit(tf); call != nil {
				c = Classification{Category: CategoryModuleNotFound, Best: CategoryModuleNotFound, RunnerUp: CategoryUnknown, Call: call}
			}
		}
		if c.Category == CategoryScheduling && tf.schedulingWaitEnded() {
			// A wait for resources that its own text shows ended (the scale-up finished, the
			// pod assigned, the gang's minimum running) is how the job started (schedwait.go).
			continue
		}
		if root == nil && !tf.endsLog(true) && (c.Score < 2*a.vocab.minScore && !tf.errorEnd || c.Category == CategoryNaNLoss) {
			continue
		}
		if c.Classified() {
			return tf, c
		}
		if guess == nil && tf.endsLog(true) {
			// Cut inside a traceback: its innermost frame may say where (cutframe.go), a guess
			// taken only when no candidate's words name a failure.
			if cat, words, ok := classifyFrame(tf.frame); ok {
				guess, guessed = tf, Classification{Category: cat, Best: cat, RunnerUp: CategoryUnknown, Frame: words}
			}
		}
	}
	return guess, guessed
}

// streakRecovered says whether tf's failure lines all come before the line where a
// specific rule's streak in the same log recovered (ssh could not resolve a host, then
// connected to it on the launcher's next try): that rule read what followed and found the
// process got past it, as training progress after an error says (errorNearEnd), so the
// lines of that attempt are no terminal failure.
func (a *analyzer) streakRecovered(tf *terminalFailure) bool {
	if len(tf.lines) == 0 {
		return false
	}
	last := tf.lines[len(tf.lines)-1].line
	for _, f := range a.findings {
		if f.recovered != nil && f.log == tf.log && f.rule != nil && f.rule.Match.Streak != nil && last < f.recovered.line {
			return true
		}
	}
	return false
}

// unexplainedEnd is the first log, in bundle order, that ends in a line showing on its own
// that its process failed (an exception, a fatal line, a signal, a non-zero exit code, a
// launcher's summary) after its last training progress, when the vocabulary could not tell
// why: the process failed, and the report says so with low confidence rather than leaving
// the verdict unknown. Log skip is passed over.
func (a *analyzer) unexplainedEnd(skip string) *terminalFailure {
	for _, tf := range a.terminals {
		if tf.endsLog(true) && (skip == "" || tf.log != skip) && !tf.gangAdmitted() {
			return tf
		}
	}
	return nil
}

// likely and possibly begin the title of a second-tier finding named at medium and at low
// confidence.
const (
	likely   = "likely "
	possibly = "possibly "
)

// tierFinding makes the second tier's finding: its evidence is the failure line that holds
// the strongest of the deciding terms, its title names them.
func (a *analyzer) tierFinding(tf *terminalFailure, c Classification) *Finding {
	title, explanation, remediation := likely+string(c.Category), "", ""
	var fault Fault
	var retry Retry
	if vc := a.vocab.category(c.Category); vc != nil {
		explanation = vc.title + " (likely). " + a.vocab.Explain(c)
		remediation, fault, retry = vc.remediation, vc.fault, vc.retry
	} else {
		// Nothing in the failure's words names a cause: say that a process failed, and how.
		title = "a process failed and its log does not say why"
		explanation = "The log ends in a failure (the evidence line) after its last training progress, " +
			"but no rule and no term of the vocabulary names its cause: the cause was printed elsewhere " +
			"(another rank's log, stderr not captured) or not at all."
		remediation = "Read the lines above the failure and the other ranks' logs; a bundle (coroner collect) " +
			"adds the pods' states and events."
	}
	ev := tf.lines[len(tf.lines)-1]
	if c.Category == CategoryUnknown {
		// The line that shows the failure best: the first of the strongest kind (a launcher's
		// summary names the exit code before its error file and traceback).
		best := kindNone
		for i, l := range tf.lines {
			if tf.kinds[i] > best {
				best, ev = tf.kinds[i], l
			}
		}
	}
	var shown []string
	found := false
	for _, t := range c.Terms {
		if t.Weight <= 0 {
			continue
		}
		if len(shown) < 3 {
			shown = append(shown, "'"+t.Text+"'")
		}
		if !found {
			lines := tf.lines
			if t.Context {
				lines = tf.context
			} else if tf.above != nil {
				lines = append([]tailLine{*tf.above}, lines...)
			}
			for _, l := range lines {
				if strings.Contains(string(l.text), t.Text) {
					ev, found = l, true
					break
				}
			}
		}
	}
	if len(shown) > 0 {
		title += ": " + strings.Join(shown, ", ")
	}
	if c.Call != nil {
		title += fmt.Sprintf(": %s constructs %s with an argument it does not take ('%s')", c.Call.pkg, c.Call.class, c.Call.arg)
	}
	if c.Frame != "" {
		// Named by where the traceback was cut: its innermost frame is the evidence.
		title += ": the traceback ends in '" + c.Frame + "'"
		for _, l := range tf.frame {
			if strings.Contains(strings.ReplaceAll(string(l.text), `\`, "/"), strings.Fields(c.Frame)[0]) {
				ev = l
				break
			}
		}
	}
	f := &Finding{
		RuleID: SecondTierRuleID + string(c.Category), Category: c.Category, Severity: SeverityError, Layer: LayerExecution,
		Title: title, Fault: fault, Retry: retry, Pod: tf.pod, Container: tf.container, Rank: ev.rank, Count: 1,
		Explanation: explanation, Remediation: remediation,
		log: tf.log, stream: ev.stream, order: ev.line, step: -1,
	}
	if ev.time != 0 {
		f.Time = timePtr(time.Unix(0, ev.time))
		f.at = f.Time
	}
	if f.at == nil {
		// Like a log line without a time: no earlier than the log's first time.
		for _, l := range a.res.Logs {
			if l.Path == tf.log {
				f.at = l.First
			}
		}
	}
	f.Evidence = []Evidence{{Source: SourceLog, File: tf.log, Line: ev.line, Time: f.Time, Text: excerpt(ev.text)}}
	if a.lines != nil {
		if err := addContext(a.lines, f); err != nil {
			a.warnf("%s: context lines: %v", tf.log, err)
		}
	}
	return f
}

// renumber sorts the findings again after one was added and gives them their ids anew,
// keeping every secondaryOf link.
func (a *analyzer) renumber() {
	sortFindings(a.findings)
	ids := map[string]string{}
	for i, f := range a.findings {
		id := fmt.Sprintf("f%d", i+1)
		if f.ID != "" {
			ids[f.ID] = id
		}
		f.ID = id
	}
	for _, f := range a.findings {
		if f.SecondaryOf != "" {
			f.SecondaryOf = ids[f.SecondaryOf]
		}
	}
}

// termedBefore says whether root's log shows, before root's line and in the same attempt,
// that the process was told to stop with SIGTERM (a launcher's or a task runner's notice: torchelastic's "Received 15
// death signal", Airflow's "Received SIGTERM. Terminating subprocesses").
func (a *analyzer) termedBefore(root *Finding) bool {
	return a.beforeInAttempt(root, func(f *Finding) bool {
		return f.Category == CategoryCrashSignal && f.symptom && f.Severity == SeverityWarning
	})
}

// beforeInAttempt says whether a finding ok accepts was printed in root's log before root's
// line, with no restart of the worker group between them.
func (a *analyzer) beforeInAttempt(root *Finding, ok func(*Finding) bool) bool {
	for _, f := range a.findings {
		if f != root && f.log != "" && f.log == root.log && f.order < root.order && ok(f) && !a.restartBetween(f, root) {
			return true
		}
	}
	return false
}

// restartBetween says whether an elastic agent restarted its worker group in f's log after
// f's last line and before g's line: f was the end of an earlier attempt, g is the new group's.
func (a *analyzer) restartBetween(f, g *Finding) bool {
	last := f.lastLine()
	for _, gl := range a.groups[f.log] {
		if gl.restart && gl.line > last && gl.line < g.order {
			return true
		}
	}
	return false
}

// timedOutBefore says whether root's log shows a collective operation that timed out (an NCCL
// watchdog's report) before root's line, in the same attempt (no restart of the worker group
// between them). PyTorch's generic abort lines ("Some NCCL operations
// have failed or timed out") do not count: a peer's NCCL error, with no wait at all, prints them.
func (a *analyzer) timedOutBefore(root *Finding) bool {
	return a.beforeInAttempt(root, func(f *Finding) bool {
		return f.Category == CategoryCollectiveTimeout && !f.generic && f.Severity >= SeverityError
	})
}
