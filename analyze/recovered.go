package analyze

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/coroner-dev/coroner/internal/literal"
)

// A library that fails an attempt and goes on says so: c10d's "..., will retry" while the
// rendezvous store is not yet listening, the Hugging Face Hub client's "Retrying in 1s [Retry
// 1/5]", wandb's "entering retry loop", NCCL's "falling back to simple order" and, after a
// network plugin that would not initialise, "Using network Socket". Error lines printed
// before such a line were survived: they are not how the log ended, whatever follows.

// recoveryWords are the phrases, ASCII case folded, matched at word boundaries (tailWordsOf).
var recoveryWords = []string{"will retry", "retrying", "retry loop", "falling back", "using network"}

// A batch-size finder runs a few steps at growing sizes and catches the out-of-memory error
// of the first size that does not fit, then goes on with a smaller one: Lightning's
// BatchSizeFinder prints "Batch size 16 failed, trying batch size 8" and "Finished batch size
// finder, will continue with full run using batch size 8" (Lightning-AI/pytorch-lightning#18426,
// and its tuner's batch_size_scaling.py), other probes "* Trying batch size 256... Failed (CUDA
// out of memory...)". Such a line is a recovery, and its own failure was caught by design: a
// finder that runs out of sizes raises, and that exception, after it, is the end.
// probeWords are such lines' phrases, as recoveryWords are matched.
var probeWords = []string{"trying batch size", "batch size finder"}

// c10d's TCPStore client tries each address of the store's host in turn until its timeout,
// and logs each failed attempt as a warning: "[W socket.cpp:558] [c10d] The client socket has
// failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address)."
// (pytorch/PiPPy#158, printed while its CI runs went on), "... cannot be initialized to connect
// to ... (errno: 97 - Address family not supported by protocol)" (sgl-project/sglang#2561). It
// gives up at error level: "[E socket.cpp:610] [c10d] The client socket has failed to connect
// to any network address of ..." (ofsoundof/GRL-Image-Restoration#27), or a TimeoutError. A
// warning-level attempt is a retry; the error-level end is not.
// socketAttemptWords are such lines' phrases, as recoveryWords are matched.
var socketAttemptWords = []string{"client socket has failed to connect to", "client socket cannot be initialized to connect to"}

// The kubelet records creating and starting a container as events: "Created container
// nginx", "Started container" (kubectl describe, Azure/kubernetes-keyvault-flexvol#68, and
// kubectl get events), "Created container with id b45ed5fe..." (kubernetes/kubernetes#53062)
// and, in its first format, "Created with docker id 5eb2da3af876". A container is created
// only once its pod was scheduled, its volumes mounted and its image pulled: a complaint about
// one of those printed before such a line was a wait the pod got past ("the mount did
// succeed, but the user still sees this failure msg in the events", kubernetes/kubernetes#42867).
// startWords are such lines' phrases, as recoveryWords are matched.
var startWords = []string{"created container", "started container", "created with docker id", "started with docker id"}

// startupWords name what a pod waits for before its container is created: its node, its
// volumes, its image, its sandbox ("Error syncing pod" is the old kubelet's wrapper of these).
var startupWords = literal.NewMatcher([]string{"schedul", "mount", "attach", "volume", "pull", "image", "sandbox", "syncing pod"})

// pullWords name a wait that is one container's, not its pod's: its image. The kubelet pulls
// a pod's images container by container and, when one fails, goes on to create the others
// (a sidecar): only its own container's creation, or its image pulled after it, ends it.
var pullWords = literal.NewMatcher([]string{"pull", "image"})

// ranWords name what happens to a container that ran: a crash loop's back-off, a kill, an
// eviction, a failing probe. A complaint about them is about the container itself, and a
// later start is its restart, not the end of a wait.
var ranWords = literal.NewMatcher([]string{"restarting failed container", "crashloop", "oomkill", "evict", "unhealthy", "killing"})

// isStartupWait says whether failure line t is a complaint about what its pod waits for
// before its container is created (see startWords), and about the pod of the creation line
// c: kubectl get events lists every pod of a namespace as "pod/<name>"; a line that names
// none is about the one pod of a log that holds one pod's text (many: it holds more).
func isStartupWait(t, c []byte, many bool) bool {
	if !literal.Any(startupWords, t) || literal.Any(ranWords, t) {
		return false
	}
	return samePod(podNamed(t), podNamed(c), many)
}

// samePod says whether two lines that name pods a and b (nil: none) may be about one pod:
// when both name theirs, the same; when one does not, only in a log of one pod's text
// (many: kubectl describe of two pods pasted together, or lines that name two pods).
func samePod(a, b []byte, many bool) bool {
	if a == nil || b == nil {
		return !many
	}
	return bytes.Equal(a, b)
}

// podNamed is the "pod/<name>" a line names, nil when it names none.
func podNamed(t []byte) []byte {
	i := podSlash(t)
	if i < 0 || i > 0 && t[i-1] != ' ' && t[i-1] != '\t' {
		return nil
	}
	ref := t[i:]
	if j := bytes.IndexAny(ref, " \t"); j >= 0 {
		ref = ref[:j]
	}
	return ref
}

// podSlash is bytes.Index(t, "pod/") by way of the slashes: the first "pod/" is the first
// '/' after "pod", and a tail line holds few slashes where a search for "pod/" stops at every
// 'p' ("step 81"); forgetScheduled asks it of every tail line of every log.
func podSlash(t []byte) int {
	for j := 0; ; {
		k := bytes.IndexByte(t[j:], '/')
		if k < 0 {
			return -1
		}
		j += k
		if j >= 3 && t[j-3] == 'p' && t[j-2] == 'o' && t[j-1] == 'd' {
			return j - 3
		}
		j++
	}
}

// describeName is how kubectl describe starts an object's block: "Name:         trainer-0".
var describeName = []byte("Name:")

// described follows the "Name:" lines of kubectl describe (at the line's start; the fields
// of a volume or a container are indented): a second, other name is a second object's text.
func (t *tailBuf) described(line []byte) {
	name := bytes.TrimSpace(line[len(describeName):])
	switch {
	case len(name) == 0 || t.describedPods:
	case t.describedPod == nil:
		t.describedPod = bytes.Clone(name)
	case !bytes.Equal(name, t.describedPod):
		t.describedPods = true
	}
}

// containerCreated is the container a creation line names ("Created container pytorch"),
// nil when it names none ("Created container", "Created container with id ...").
func containerCreated(t []byte) []byte {
	lower := bytes.ToLower(t)
	for _, w := range []string{"created container ", "started container "} {
		i := bytes.Index(lower, []byte(w))
		if i < 0 {
			continue
		}
		name := t[i+len(w):]
		if j := bytes.IndexAny(name, " \t\"'"); j >= 0 {
			name = name[:j]
		}
		if len(name) == 0 || bytes.Equal(name, []byte("with")) {
			return nil
		}
		return name
	}
	return nil
}

// imageNamed is the image a kubelet line names in quotes ("Failed to pull image \"x:1\"",
// "Container image \"x:1\" already present on machine"), nil when it names none.
func imageNamed(t []byte) []byte {
	i := bytes.Index(bytes.ToLower(t), []byte("image \""))
	if i < 0 {
		return nil
	}
	name := t[i+len("image \""):]
	j := bytes.IndexByte(name, '"')
	if j <= 0 {
		return nil
	}
	return name[:j]
}

// isPulled says whether kubelet line t says that its image is on the node: pulled, or
// there already.
func isPulled(t []byte) bool {
	lower := bytes.ToLower(t)
	return bytes.Contains(lower, []byte("successfully pulled image")) || bytes.Contains(lower, []byte("already present on machine"))
}

// pullEnded says whether the image complaint lines[j] was ended by the creation lines[c]:
// the complaint names the created container ("for \"pytorch\"", "spec.containers{pytorch}"),
// or a line between them says that its image (the one it names, or, for "Error:
// ErrImagePull", the last one named above it) is on the node.
func pullEnded(lines []tailLine, j, c int, container []byte) bool {
	t := lines[j].text
	if container != nil && (bytes.Contains(t, append(append([]byte{'"'}, container...), '"')) ||
		bytes.Contains(t, append(append([]byte{'{'}, container...), '}'))) {
		return true
	}
	img := imageNamed(t)
	for k := j - 1; img == nil && k >= 0; k-- {
		img = imageNamed(lines[k].text)
	}
	if img == nil {
		return false
	}
	for k := j + 1; k < c; k++ {
		if isPulled(lines[k].text) && bytes.Equal(imageNamed(lines[k].text), img) {
			return true
		}
	}
	return false
}

// markSurvived marks the findings of a log that its later lines show were survived, as its
// terminal failure found them: a start-up wait (a rule's rootOnlyIf: its node, its volumes,
// its image) that a container creation printed after it ended, when no pod object says
// otherwise (forgetRecovered; an image complaint only when forgetRecovered found it ended);
// an out-of-memory error whose batch was skipped, on its stream, just after it, with nothing
// failing after the skip (caught); a pasted listing's Pending row of a pod the listing or
// the log shows got past it (pendingStarted), and its Evicted rows beside other workloads'
// running pods (leftoverEvicted), as its rows of pods rejected at admission, which the
// training progress after them also shows were replaced; a pasted listing's rows of nodes
// or of a batch queue with training progress after them (clusterRows); a scheduling
// refusal training progress followed; a stall a line reported (a hang that is no silence rule)
// with training progress after it.
// analyzer.resolvedLater lowers them.
func (s *logScanner) markSurvived() {
	var lines []tailLine // the kept lines, read once a listing row needs them
	// A pasted listing's row of a pod whose container ended in an error, which a later row
	// lists Running and ready, is the pod's past (a watch, a second listing): its end is no
	// fact of the pod as it is.
	kept := s.facts[:0]
	for _, tf := range s.facts {
		if r, ok := listedRow([]byte(tf.text)); ok && (string(r.status) == "Error" || string(r.status) == "CrashLoopBackOff") {
			if lines == nil {
				lines = s.tail.ordered()
			}
			if runsLater([]listedPod{r}, lines, tf.line) {
				continue
			}
		}
		kept = append(kept, tf)
	}
	s.facts = kept
	for _, f := range s.findings {
		if f.rule == nil || len(f.Evidence) == 0 {
			continue
		}
		last := 0
		pull := false
		for _, e := range f.Evidence {
			last = max(last, e.Line, e.LastLine)
			pull = pull || literal.Any(pullWords, e.Text)
		}
		if len(f.rule.rootOnlyIf) > 0 && s.tail.started > 0 {
			f.startedLater = last < s.tail.started && samePod(podNamed([]byte(f.Evidence[0].Text)), s.tail.startedPod, s.tail.manyPods) &&
				(!pull || evidenceIn(f.Evidence, s.tail.endedPulls))
		}
		if rows := rowsOf(f.Evidence); rows != nil {
			if lines == nil {
				lines = s.tail.ordered()
			}
			switch listedAs(rows) {
			case "Pending":
				f.startedLater = f.startedLater || len(f.rule.rootOnlyIf) > 0 && pendingStarted(rows, lines, last, s.tail.lastProgress)
			case "Evicted":
				f.leftover = leftoverEvicted(rows, lines)
			case "Error", "CrashLoopBackOff":
				f.runsLater = runsLater(rows, lines, last)
			case rejectedStatus:
				// A pod the kubelet rejected at admission stays listed, Failed, as an evicted
				// one does; training progress after the row shows its replacement got devices.
				f.leftover = leftoverEvicted(rows, lines)
				f.startedLater = f.startedLater || last < s.tail.lastProgress
			}
		}
		// A refusal of the job's machines (a platform's quota, a scheduler's) that training
		// progress in the same log followed was waited out: a retry or a later attempt got them.
		// So was a stall a line reported (Horovod's stall inspector, a stack dump of a live
		// process) when training progress followed it: the ranks it waited for came (a slow
		// checkpoint on rank 0, an evaluation on one rank). A silence rule's stall is read
		// from the progress itself and is not lowered so.
		// Ranks are not in lockstep to the line: one progress line of another rank after a
		// stack dump of a stuck process is no sign it moved again; three are. A collective's
		// own stall report (Horovod's "waiting for remainder of ranks") is another matter: no
		// rank passes that collective until every rank joined it, so any progress after it
		// says it completed.
		stall := f.Category == CategoryHang && f.rule.Match.Silence == nil &&
			(last < s.tail.earlierProgress[0] || evidenceSays(f.Evidence, collectiveWaitWords))
		f.trainedPast = last < s.tail.lastProgress && (clusterRows(f.Evidence) || f.Category == CategoryScheduling || stall)
		f.scheduledPast = f.Category == CategoryScheduling && !f.trainedPast && last < s.tail.running && evidenceIn(f.Evidence, s.tail.ranPast)
		if f.Category == CategoryCUDAOOM || f.Category == CategoryHostOOM {
			f.skipped = last < s.tail.skipped && evidenceIn(f.Evidence, s.tail.caughtLines)
		}
	}
}

// A scheduler's refusal (FailedScheduling, Volcano's "tasks in gang unschedulable") that a
// later line of the same paste shows was got past: the status field of kubectl describe, or
// of the object's YAML, says the pod or its pod group runs. Volcano lists a pod's gang
// complaints, then its PodGroup "Status: / Phase: Running / Running: 12"
// (volcano-sh/volcano#519); a PodGroup's YAML keeps the condition "1/0 tasks in gang
// unschedulable" above "phase: Running / running: 2" once its pods run (volcano-sh/volcano#153).
// A pod that runs, or a group whose members run, was scheduled: the refusal was a wait.
// runningStatuses are such fields' values; runningKeys their keys.
var runningStatuses, runningKeys = []string{"Running", "Succeeded"}, []string{"Status", "Phase", "status", "phase"}

// collectiveWaitWords say that a stall report is a collective's, which every rank must join
// (Horovod's stall inspector), ASCII case folded.
var collectiveWaitWords = literal.NewMatcher([]string{"waiting for remainder of ranks", "missing ranks"})

// evidenceSays whether any of evidence's lines says one of m's words.
func evidenceSays(evidence []Evidence, m *literal.Matcher) bool {
	return slices.ContainsFunc(evidence, func(e Evidence) bool { return literal.Any(m, e.Text) })
}

// statusField reads t as an object's phase ("Status:  Running", "  phase: Pending"): ok when
// it is one, running when it says its object runs or ran to the end. A phase is one
// capitalised word; a condition's `status: "True"` (or True in a describe) is no phase.
func statusField(t []byte) (ok, running bool) {
	k, v, ok := bytes.Cut(bytes.TrimSpace(t), []byte(":"))
	v = bytes.TrimSpace(v)
	if !ok || !slices.Contains(runningKeys, string(k)) || len(v) == 0 || v[0] < 'A' || v[0] > 'Z' ||
		bytes.ContainsFunc(v, func(r rune) bool { return !unicode.IsLetter(r) }) || string(v) == "True" || string(v) == "False" {
		return false, false
	}
	return true, slices.Contains(runningStatuses, string(v))
}

// gangWords say that a scheduler's refusal is Volcano's complaint about its pod group ("10/16
// tasks in gang unschedulable: pod group is not ready"), which its group's Running status
// ends. A default scheduler's "0/4 nodes are available: ... Insufficient nvidia.com/gpu" is
// about one pod, and a Running status below it may be another object's (a workflow's, a
// Volcano Job's, another pod's): such a refusal is never forgotten so. ASCII case folded.
var gangWords = literal.NewMatcher([]string{"tasks in gang unschedulable", "pod group is not ready", "podgroup is not ready"})

// schedulingWords say that a line is a scheduler's refusal ("FailedScheduling", "is
// unschedulable", a condition's "type: Unschedulable"), ASCII case folded.
var schedulingWords = literal.NewMatcher([]string{"schedul"})

// forgetScheduled drops the scheduler's refusals of a log (lines of any kind that say
// "schedul", none about a container that ran: ranWords) between two phases (statusField)
// when the phase below them says its object runs and one of them is a gang's complaint
// (gangWords), and the log's text is of one pod or the refusal names the pod. A phase that
// says Pending (the refused object's own) keeps them; so does a Running phase below a
// default scheduler's refusal alone.
func forgetScheduled(t *tailBuf, lines []tailLine, kinds []lineKind) {
	many := t.manyPods || t.describedPods
	var seen []byte
	for _, l := range lines {
		if p := podNamed(l.text); p != nil {
			many = many || seen != nil && !bytes.Equal(p, seen)
			seen = p
		}
	}
	next, running, gang := -1, false, false // the phase below the lines looked at
	var refusals []int
	forget := func() {
		if running && gang {
			for _, j := range refusals {
				kinds[j] = kindNone
				t.ranPast = append(t.ranPast, lines[j].line)
			}
			t.running = max(t.running, lines[next].line)
		}
		refusals, gang = refusals[:0], false
	}
	for j := len(lines) - 1; j >= 0; j-- {
		if ok, run := statusField(lines[j].text); ok {
			forget()
			next, running = j, run
			continue
		}
		if !running || kinds[j] == kindNone || !literal.Any(schedulingWords, lines[j].text) || literal.Any(ranWords, lines[j].text) ||
			!samePod(podNamed(lines[j].text), nil, many) {
			continue
		}
		refusals = append(refusals, j)
		gang = gang || literal.Any(gangWords, lines[j].text)
	}
	forget()
	slices.Reverse(t.ranPast)
}

// evidenceIn says whether every line of evidence es (its first and, repeated, its last) is
// one of lines.
func evidenceIn(es []Evidence, lines []int) bool {
	for _, e := range es {
		if !slices.Contains(lines, e.Line) || e.LastLine > e.Line && !slices.Contains(lines, e.LastLine) {
			return false
		}
	}
	return true
}

// A trainer that runs out of memory on one batch can catch the error, drop the batch and go
// on: fairseq logs "| WARNING: ran out of memory with exception: CUDA out of memory. ..." and
// " Skipping batch", other trainers "Skipping training batch with index 43 due to OOM error..."
// (BioinfoMachineLearning/bio-diffusion#7; OpenNMT-py discards such batches, its #1385). The
// out-of-memory error was caught and is not how the process ended, as long as nothing failed
// after the last skip: a handler that cannot recover fails after it, and that failure, with
// the error it could not handle, is the end (TestFailureAfterRecovery).
// skipWords are such lines' phrases, as recoveryWords are matched.
var skipWords = []string{"skipping batch", "skipping training batch", "skipping this batch", "skip this batch"}

// oomWords say that a line is about memory running out: the errors a skipped batch survives
// ("oom" only as a word: not in "room", "Bloom"; see isOOMLine).
var oomWordList = []string{"out of memory", "oom"}

var oomWords = literal.NewMatcher(oomWordList)

// isOOMLine says whether t is about memory running out (oomWords).
func isOOMLine(t []byte) bool {
	var buf [4]literal.Hit
	for _, h := range literal.Append(oomWords, t, buf[:0]) {
		w := oomWordList[h.ID]
		if w != "oom" || wordEdge(t, h.End-len(w)) && wordEdge(t, h.End) {
			return true
		}
	}
	return false
}

// skipNear is how many of its stream's lines above a skip (see skipWords) the out-of-memory
// error it skips the batch of may be: fairseq prints the skip on the line after the warning.
const skipNear = 3

// skippedOOM returns the out-of-memory lines that the skip line lines[s] follows: itself
// when it says so ("Skipping training batch ... due to OOM error"), and those of the skip's
// stream and rank among its skipNear lines above it. Another rank's error is not this one's
// to skip.
func skippedOOM(lines []tailLine, s int, oom []int) []int {
	if isOOMLine(lines[s].text) {
		oom = append(oom, s)
	}
	seen := 0
	for k := s - 1; k >= 0 && k >= s-8*skipNear && seen < skipNear; k-- {
		if lines[k].stream != lines[s].stream || lines[k].rank != lines[s].rank {
			continue
		}
		seen++
		if isOOMLine(lines[k].text) {
			oom = append(oom, k)
		}
	}
	return oom
}

// caught drops the out-of-memory error lines of a log that a skipped batch (see skipWords)
// follows, on their stream, within skipNear lines, when no line that shows a process ended
// comes after the last such skip (a failure word is no such line: fairseq's progress counts
// the batches it skipped, "oom=0.0017", and such error lines of the skip's stream after it
// are dropped too). It returns that skip's line number (0 when none,
// or when something failed after it) and the dropped lines' numbers.
func caught(lines []tailLine, kinds []lineKind, words []wordSet) (int, []int) {
	last := -1
	var oom []int
	for i := len(words) - 1; i >= 0; i-- {
		if words[i]&hasSkipWord != 0 {
			if oom = skippedOOM(lines, i, oom[:0]); len(oom) > 0 {
				last = i
				break
			}
		}
		if kinds[i].strong() {
			return 0, nil
		}
	}
	if last < 0 {
		return 0, nil
	}
	var dropped []int
	for i := last + 1; i < len(kinds); i++ {
		// After the skip, its stream's error lines about memory: fairseq's progress counts
		// the batches it skipped ("oom=0.0017").
		if kinds[i] == kindError && lines[i].stream == lines[last].stream && lines[i].rank == lines[last].rank && isOOMLine(lines[i].text) {
			kinds[i] = kindNone
		}
	}
	for i := last; i >= 0; i-- {
		if words[i]&hasSkipWord == 0 {
			continue
		}
		for _, j := range skippedOOM(lines, i, oom[:0]) {
			kinds[j] = kindNone
			dropped = append(dropped, lines[j].line)
		}
	}
	return lines[last].line, dropped
}

// isRecovery says whether a tail line (t, with words its tailWordsOf) says that something
// that failed is retried or replaced.
func isRecovery(t []byte, words wordSet) bool {
	return words&(hasRecoveryWord|hasProbeWord) != 0 ||
		words&hasSocketWord != 0 && c10Head(bytes.TrimSpace(t), 'W')
}

// forgetRecovered drops the failure lines of every kind printed before an elastic agent's
// last restart of its worker group when the log shows training after it, and the error
// lines (kindError: an ERROR or a failure word, nothing that shows on its own that a
// process ended) printed before the log's last recovery line. The
// recovery line itself keeps its kind when it is how the log ends (nothing but failures
// after it), so a log that ends retrying still ends in its error; it is dropped too when the
// log went on after it without another failure, and when it is a batch-size finder's step,
// whose failure the finder caught. It drops the complaints about a pod's start-up waits of
// any kind (an event row is a strong line) printed before a container was created, of that
// container's pod (isStartupWait) and, for an image, of that container (pullEnded), and
// records in t the last such creation (its line number, pod and container), the image
// complaints it ended and whether the log names more than one pod. words are the lines'
// tailWordsOf.
func forgetRecovered(t *tailBuf, lines []tailLine, kinds []lineKind, words []wordSet) {
	// An elastic agent restarted its worker group and the new group trained: whatever failed
	// before the new group started was the old group's end, which the job got past
	// (recovery.go).
	end, restarted := -1, false
	for i := len(lines) - 1; i >= 0 && !restarted; i-- {
		if words[i]&hasGroupWord == 0 {
			continue // most tail lines: no bytes.Index of each group word
		}
		g, ok := groupLineOf(lines[i].text)
		switch {
		case !ok:
		case g.restart:
			restarted = true
			if end < 0 {
				end = i
			}
		default:
			end = i // a start after the last restart
		}
	}
	if restarted && t.lastProgress > lines[end].line {
		for j := 0; j <= end; j++ {
			kinds[j] = kindNone
		}
	}
	for i := len(words) - 1; i >= 0; i-- {
		if words[i]&hasStartWord == 0 {
			continue
		}
		t.started, t.startedPod = lines[i].line, bytes.Clone(podNamed(lines[i].text))
		t.startedContainer = bytes.Clone(containerCreated(lines[i].text))
		t.manyPods = t.describedPods
		var pod []byte
		for _, l := range lines {
			if p := podNamed(l.text); p != nil && !t.manyPods {
				t.manyPods = pod != nil && !bytes.Equal(p, pod)
				pod = p
			}
		}
		for j := range i {
			if !isStartupWait(lines[j].text, lines[i].text, t.manyPods) {
				continue
			}
			if literal.Any(pullWords, lines[j].text) {
				if !pullEnded(lines, j, i, t.startedContainer) {
					continue
				}
				t.endedPulls = append(t.endedPulls, lines[j].line)
			}
			kinds[j] = kindNone
		}
		break
	}
	forgetScheduled(t, lines, kinds)
	last := -1
	for i := len(words) - 1; i >= 0; i-- {
		if isRecovery(lines[i].text, words[i]) {
			last = i
			break
		}
	}
	if last < 0 {
		return
	}
	// The log went on: something was printed after the recovery line (a blank line is not
	// something), and none of it was a failure.
	wentOn := false
	for i, k := range kinds[last+1:] {
		if k != kindNone {
			wentOn = false
			break
		}
		wentOn = wentOn || len(bytes.TrimSpace(lines[last+1+i].text)) > 0
	}
	for i := 0; i <= last; i++ {
		if kinds[i] == kindError && (i < last || wentOn || words[i]&hasProbeWord != 0) {
			kinds[i] = kindNone
		}
	}
}

// isIgnoredHeader says whether trimmed line t is how Python reports an exception it caught
// and ignored (sys.unraisablehook: in a __del__, a finaliser, an atexit callback, a DataLoader
// iterator torn down): "Exception ignored in: <bound method _DataLoaderIter.__del__ ...>",
// then the traceback and the exception. The process went on; that exception is not its end.
//
// An exception an atexit callback raises is reported the same way and ignored the same way,
// under "Error in atexit._run_exitfuncs:" (Python 2: "Error in sys.exitfunc:"): the program
// had ended, and its exit status is not changed (a matplotlib window torn down after the last
// epoch, wandb flushing its history after its backend died: wandb/wandb#4155, and
// IraKorshunova/kaggle-seizure-prediction#2 quoting both headers).
func isIgnoredHeader(t []byte) bool {
	return bytes.HasPrefix(t, []byte("Exception ignored ")) ||
		bytes.HasPrefix(t, []byte("Error in atexit._run_exitfuncs:")) ||
		bytes.HasPrefix(t, []byte("Error in sys.exitfunc:"))
}

// isThreadHeader says whether trimmed line t is how Python's threading reports the exception
// that ended a thread other than the main one: "Exception in thread Thread-5:", then the
// traceback (wandb/wandb#1526: wandb's file-stream thread died while training ran on). The
// thread ended, not its process: a traceback it opens that is cut before its exception line
// says nothing of how the process ended. Its exception, when printed, is read as any other
// (a helper thread's gloo timeout or unreadable file is often what stops the run).
func isThreadHeader(t []byte) bool {
	return bytes.HasPrefix(t, []byte("Exception in thread "))
}

// ignoredTrace follows, in a log's scan, a traceback Python printed as ignored: from its
// "Exception ignored in:" header through its frames to the exception line that closes it.
// No rule's finding is made of those lines: the process went on, so the exception (an
// AssertionError from a DataLoader iterator's __del__, an AttributeError at interpreter
// shutdown) is not a failure, whichever rule would name it. A traceback cut before its
// exception ends at the first line that is neither a frame nor an exception: that line is
// matched as any other.
type ignoredTrace struct {
	on     bool
	stream string // the launcher prefix of the header's process: other processes' lines interleave
	// header: the ignored traceback's own "Traceback (most recent call last):" was seen. Python
	// prints one per unraisable exception, so a second is a new traceback, which may be how
	// the process ended (the ignored one was cut before its exception line).
	header bool
}

// survived says whether a line (text, after its launcher prefix, of process stream) is part
// of an ignored traceback, and so says nothing about how its process ended.
func (g *ignoredTrace) survived(text []byte, stream string) bool {
	t := bytes.TrimSpace(text)
	if isIgnoredHeader(t) {
		g.on, g.stream, g.header = true, stream, false
		return true
	}
	if !g.on || stream != g.stream {
		return false
	}
	if isTracebackHeader(t) {
		if g.header {
			g.on = false
			return false
		}
		g.header = true
		return true
	}
	if bytes.HasPrefix(t, []byte("File \"")) || len(text) > 0 && (text[0] == ' ' || text[0] == '\t') {
		return true // the traceback's header, a frame or a frame's source line
	}
	g.on = false
	return kindOf(t) == kindException
}

// kubectl get pods lists a pod as a row: [NAMESPACE] NAME READY STATUS RESTARTS AGE, READY
// a count of ready containers over all ("0/1"). A pasted listing says more than one row:
// a watch (-w) prints the same pod again when its status changes, and a listing of many pods
// shows which of them run.

// listedPod is a row of a kubectl get pods listing: its namespace (nil without the column),
// name, status and age (nil when the row ends before it).
type listedPod struct{ ns, name, ready, status, restarts, age []byte }

// listedRow reads line t as a row of a kubectl get pods listing; ok is false when it is none.
func listedRow(t []byte) (row listedPod, ok bool) {
	var f [8][]byte
	n := 0
	for rest := t; n < len(f); n++ {
		rest = bytes.TrimLeft(rest, " \t")
		j := bytes.IndexAny(rest, " \t")
		if j < 0 {
			j = len(rest)
		}
		if j == 0 {
			break
		}
		f[n], rest = rest[:j], rest[j:]
	}
	for i := 1; i <= 2 && i+2 < n; i++ {
		if isReadyCount(f[i]) && len(f[i+2]) > 0 && isDigits(f[i+2]) {
			row = listedPod{name: f[i-1], ready: f[i], status: f[i+1], restarts: f[i+2]}
			if i == 2 {
				row.ns = f[0]
			}
			// AGE follows RESTARTS, after its "(5m ago)" when the pod restarted.
			age := i + 3
			if age+2 < n && bytes.HasPrefix(f[age], []byte("(")) && bytes.Equal(f[age+1], []byte("ago)")) {
				age += 2
			}
			if age < n {
				row.age = f[age]
			}
			return row, true
		}
	}
	return listedPod{}, false
}

// isReadyCount says whether w is a READY column's value: "0/1", "2/2".
func isReadyCount(w []byte) bool {
	i := bytes.IndexByte(w, '/')
	return i > 0 && i < len(w)-1 && isDigits(w[:i]) && isDigits(w[i+1:])
}

// samePodRow says whether two rows are of the same pod: the same name and, when both list
// it, namespace.
func (r listedPod) samePodRow(o listedPod) bool {
	return bytes.Equal(r.name, o.name) && r.sameNamespace(o)
}

// sameNamespace says whether two rows may be of one namespace: the same, or one of them
// does not list it.
func (r listedPod) sameNamespace(o listedPod) bool {
	return r.ns == nil || o.ns == nil || bytes.Equal(r.ns, o.ns)
}

// runs says whether the row's pod runs or ran to completion.
func (r listedPod) runs() bool {
	s := string(r.status)
	return s == "Running" || s == "Completed" || s == "Succeeded"
}

// workload is the row's pod name without its last dash-separated part: what names the
// controller's pods (a ReplicaSet's "serve-84fb7dbbd7", a job's "train-worker") and not one
// of them (its generated suffix, its index).
func (r listedPod) workload() []byte {
	if i := bytes.LastIndexByte(r.name, '-'); i > 0 {
		return r.name[:i]
	}
	return r.name
}

// job is the row's workload without a role or an index, nil when it ends in neither: the
// Kubeflow training operator names a job's pods "<job>-master-0" and "<job>-worker-1", the
// MPI operator "<job>-launcher-8mx7k" and "<job>-worker-0", an indexed Job
// "<job>-<index>-<suffix>". A role or a number may as well be part of a name (CronJob runs
// "backup-28712345-abcde", "sweep-3-x7k2p"), so only rows of equal age, created together, are
// taken for one job by it (sameWorkload).
func (r listedPod) job() []byte {
	w := r.workload()
	i := bytes.LastIndexByte(w, '-')
	if i <= 0 || i == len(w)-1 || !slices.Contains(podRoles, string(w[i+1:])) && !isDigits(w[i+1:]) {
		return nil
	}
	return w[:i]
}

// sameWorkload says whether two rows are pods of one workload: the same workload of one
// namespace, or the same job's pods of another role or index, listed at the same age.
func (r listedPod) sameWorkload(o listedPod) bool {
	if !r.sameNamespace(o) {
		return false
	}
	if bytes.Equal(r.workload(), o.workload()) {
		return true
	}
	j := r.job()
	return j != nil && len(r.age) > 0 && bytes.Equal(r.age, o.age) && bytes.Equal(j, o.job())
}

// podRoles are the roles training operators name their pods by (Kubeflow's PyTorchJob,
// TFJob, MPIJob replica types, lower-cased as in the pods' names).
var podRoles = []string{"master", "worker", "launcher", "chief", "ps", "evaluator"}

// assignedWords is how the scheduler's Scheduled event says it bound a pod to a node:
// "Successfully assigned ml/train-worker-0 to gpu-1" (older releases name no namespace).
var assignedWords = []byte("Successfully assigned ")

// assigned is the pod a Scheduled event's line names as bound to a node, nil when it is
// no such line: its namespace (nil when not named) and name.
func assigned(t []byte) (listedPod, bool) {
	i := bytes.Index(t, assignedWords)
	if i < 0 {
		return listedPod{}, false
	}
	ref := t[i+len(assignedWords):]
	if j := bytes.IndexAny(ref, " \t"); j >= 0 {
		ref = ref[:j]
	}
	p := listedPod{name: ref}
	if j := bytes.IndexByte(ref, '/'); j >= 0 {
		p.ns, p.name = ref[:j], ref[j+1:]
	}
	return p, len(p.name) > 0
}

// listedAs is the status every row of rows lists, "" when they list more than one.
func listedAs(rows []listedPod) string {
	for _, r := range rows[1:] {
		if !bytes.Equal(r.status, rows[0].status) {
			return ""
		}
	}
	return string(rows[0].status)
}

// clusterRows says whether every line of evidence es is a row of a pasted listing of the
// cluster rather than of the job: a node of kubectl get nodes (NAME STATUS [ROLES] AGE
// VERSION: a NotReady node among others) or a pending job of squeue (another user's job
// waiting for drained nodes). Such a listing is the cluster's state when it was pasted,
// and training progress after it shows the job was not held by it.
func clusterRows(es []Evidence) bool {
	for _, e := range es {
		f := strings.Fields(e.Text)
		if !nodeRow(f) && !pendingQueueRow(f) {
			return false
		}
	}
	return len(es) > 0
}

// nodeRow says whether the fields f are a row of kubectl get nodes: a name, a status with
// Ready in it, and a kubelet version ("v1.28.3") last.
func nodeRow(f []string) bool {
	n := len(f)
	return n >= 4 && n <= 5 && strings.Contains(f[1], "Ready") && len(f[n-1]) > 1 && f[n-1][0] == 'v' && f[n-1][1] >= '0' && f[n-1][1] <= '9'
}

// pendingQueueRow says whether the fields f are a row of squeue for a pending job: its
// state (PD, PENDING) followed by its time ("0:00").
func pendingQueueRow(f []string) bool {
	for i := 1; i+1 < len(f); i++ {
		if (f[i] == "PD" || f[i] == "PENDING") && strings.Contains(f[i+1], ":") {
			return true
		}
	}
	return false
}

// rowsOf is the listing rows of evidence es, nil when one of its lines is no row.
func rowsOf(es []Evidence) []listedPod {
	var rows []listedPod
	for _, e := range es {
		if strings.IndexByte(e.Text, '/') < 0 {
			return nil // no READY count
		}
		r, ok := listedRow([]byte(e.Text))
		if !ok {
			return nil
		}
		rows = append(rows, r)
	}
	return rows
}

// pendingStarted says whether every listed Pending row of rows (the evidence of a finding
// whose last line is last) got past its wait for a node, as the log's kept lines show: a
// later row of the same pod with another status (a watch: ContainerCreating, Running),
// the scheduler's event that bound it to a node (before or after the row), or training
// progress after it.
func pendingStarted(rows []listedPod, lines []tailLine, last, lastProgress int) bool {
	if last < lastProgress {
		return true
	}
	started := make([]bool, len(rows))
	for _, l := range lines {
		o, ok := listedRow(l.text)
		if ok && (l.line <= last || string(o.status) == "Pending") {
			ok = false
		}
		a, bound := assigned(l.text)
		for i, r := range rows {
			started[i] = started[i] || ok && r.samePodRow(o) || bound && r.samePodRow(a)
		}
	}
	return !slices.Contains(started, false)
}

// runsLater says whether every row of rows (the evidence of a finding whose last line is
// last: pods whose container ended in an error or waits to be restarted) is followed, among
// the log's kept lines, by a row of the same pod that lists it Running with every container
// ready: a watch (-w) or a second listing pasted after the first shows the restart ran.
// Training progress is not asked for: a listing says nothing of it, and a pod that
// restarted and runs is not failing as far as the listing shows. A crash loop is Running
// between its crashes, so a pod listed Running and then failed again anywhere in the log, or
// a failed row that had restarted more than maxWaitRestarts times already, is a loop whose
// Running row is only the next try (kubeflow/mpi-operator#90 lists "1/1 CrashLoopBackOff").
func runsLater(rows []listedPod, lines []tailLine, last int) bool {
	for _, r := range rows {
		if n, err := strconv.Atoi(string(r.restarts)); err == nil && n > maxWaitRestarts {
			return false
		}
	}
	ran, wasRunning := make([]bool, len(rows)), make([]bool, len(rows))
	for _, l := range lines {
		o, ok := listedRow(l.text)
		if !ok {
			continue
		}
		running, failed := string(o.status) == "Running" && o.allReady(), string(o.status) == "Error" || string(o.status) == "CrashLoopBackOff"
		for i, r := range rows {
			if !r.samePodRow(o) {
				continue
			}
			if failed && wasRunning[i] {
				return false
			}
			wasRunning[i] = wasRunning[i] || running
			ran[i] = ran[i] || running && l.line > last
		}
	}
	return !slices.Contains(ran, false)
}

// maxWaitRestarts is how many restarts a pod waiting for its peers makes before it runs (an
// MPI launcher that starts before its workers' sshd: 0 and 1 in kubeflow/mpi-operator#470);
// more is a crash loop.
const maxWaitRestarts = 2

// allReady says whether the row's READY count has every container ready ("2/2", not "1/2"
// or "0/1").
func (r listedPod) allReady() bool {
	i := bytes.IndexByte(r.ready, '/')
	return i > 0 && !bytes.Equal(r.ready[:i], []byte("0")) && bytes.Equal(r.ready[:i], r.ready[i+1:])
}

// leftoverEvicted says whether the Evicted rows of rows are leftovers beside other pods
// that run (lines: the log's kept lines): a pod the kubelet evicted stays listed, Failed,
// until it is garbage-collected, days later, so a listing of all namespaces shows old
// evictions of other workloads next to a job that runs. An evicted row beside running pods
// of its own workload (its replacement, its job's other ranks) is the workload's failure,
// and one beside nothing that runs is the listing's only news: neither is a leftover.
func leftoverEvicted(rows []listedPod, lines []tailLine) bool {
	running := false
	for _, l := range lines {
		o, ok := listedRow(l.text)
		if !ok || !o.runs() {
			continue
		}
		running = true
		for _, r := range rows {
			if r.sameWorkload(o) {
				return false
			}
		}
	}
	return running
}
