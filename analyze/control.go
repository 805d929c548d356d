package analyze

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/parse"
)

// jobPods lists the pods the analysis covers: the job's, or every pod when the bundle has
// no job object.
func (a *analyzer) jobPods() []*corev1.Pod {
	if a.m.Job != nil && a.m.Job.Object != nil {
		return a.m.Job.Pods()
	}
	return a.m.Pods
}

func podRef(p *corev1.Pod) *ObjectRef { return &ObjectRef{"Pod", p.Namespace, p.Name} }

// control reads the Kubernetes side: pods, containers, events, job conditions, nodes. It
// observes facts (see factKinds); the object rules say which are failures.
func (a *analyzer) control() {
	// A finding a container at most, mostly (its exit): the list is grown once, not by
	// doubling (8 MB of garbage at 200,000 containers).
	pods, n := a.jobPods(), 0
	for _, p := range pods {
		n += len(p.Status.InitContainerStatuses) + len(p.Status.ContainerStatuses)
	}
	a.findings = slices.Grow(a.findings, n)
	for _, p := range pods {
		a.pod(p)
	}
	a.events()
	a.job()
	a.nodes()
}

// seen says where and when a fact was observed, for the findings it gives.
type seen struct {
	pod, container, node string
	t                    time.Time
	ev                   Evidence
	// message, when set, is matched by the pattern rules first; object rules marked
	// fallback then report the fact only when no pattern rule did.
	message string
	// at orders the finding when it has no time of its own (a spec check is as old as its pod).
	at time.Time
	// log and line place a fact read from a log line in its log.
	log  string
	line int
}

// observe reports a fact: the pattern rules on its message, then the object rules that
// match it. It returns how many findings it added.
func (a *analyzer) observe(f fact, w seen) int {
	n := 0
	if w.message != "" {
		n = a.matchMessage(w.message, w.ev, w.pod, w.container, w.t)
	}
	for _, r := range a.rs.matchFact(f) {
		if r.Role.Fallback() && n > 0 {
			continue
		}
		g := newTitled(r, a.titleOf(r, f.fields))
		g.Pod, g.Container, g.Node, g.Time = w.pod, w.container, w.node, a.sharedTime(w.t)
		g.nodeEvidence = w.node != ""
		g.Evidence = []Evidence{w.ev}
		g.Evidence[0].Time = g.Time
		g.log, g.order = w.log, w.line
		if g.Time == nil && g.Severity >= SeverityError {
			// A spec error is as old as its pod: it comes before the events it causes. Notes
			// and warnings keep their place after the dated findings.
			g.at = timePtr(w.at)
		}
		a.add(g)
		n++
	}
	return n
}

// sharedTime is timePtr(t), the same pointer as the fact before's when the time is the
// same: nothing writes a finding's time through its pointer, and the containers of a pod
// that ended at once are as many findings of one time.
func (a *analyzer) sharedTime(t time.Time) *time.Time {
	if a.lastTime == nil || !a.lastTime.Equal(t) || t.IsZero() {
		a.lastTime = timePtr(t)
	}
	return a.lastTime
}

// titleOf is r.TitleFor(g), the one copy of it the analysis keeps (intern), made in scratch
// space: the facts of 200,000 containers made as many titles to keep a few (17 MB).
func (a *analyzer) titleOf(r *Rule, g map[string]string) string {
	if strings.IndexByte(r.Title, '{') < 0 {
		return a.intern(r.TitleFor(g))
	}
	a.titleBuf = r.appendTitle(a.titleBuf[:0], g)
	b := bytes.TrimSpace(a.titleBuf)
	if t, ok := a.titles[string(b)]; ok {
		return t
	}
	return a.intern(string(b))
}

// intern returns the one copy of s the analysis keeps: the facts of every container or pod
// (an exit code, a condition) make findings of a few titles, 200,000 of them at 200,000
// containers.
func (a *analyzer) intern(s string) string {
	if t, ok := a.titles[s]; ok {
		return t
	}
	if a.titles == nil {
		a.titles = map[string]string{}
	}
	a.titles[s] = s
	return s
}

// maxTexts bounds how many texts internText keeps: beyond it, a text is its own copy.
const maxTexts = 4096

// internText returns b as a string, the one copy of it the analysis keeps while it keeps at
// most maxTexts: a container's termination text names no pod, and the containers of a job
// that ended at once say the same (200,000 findings' evidence at 200,000 containers, 20 MB of
// texts live until the report is built, were 16 of them).
func (a *analyzer) internText(b []byte) string {
	if t, ok := a.texts[string(b)]; ok {
		return t
	}
	t := string(b)
	if len(a.texts) < maxTexts {
		if a.texts == nil {
			a.texts = map[string]string{}
		}
		a.texts[t] = t
	}
	return t
}

// matchMessage runs the rule set on a Kubernetes message and adds what matched.
func (a *analyzer) matchMessage(text string, ev Evidence, pod, container string, t time.Time) int {
	n := 0
	for _, h := range a.rs.MatchString(text) {
		f := newFinding(h.Rule, h.Groups)
		f.Pod, f.Container, f.Time = pod, container, timePtr(t)
		ev.Time = timePtr(t)
		f.Evidence = []Evidence{ev}
		a.add(f)
		n++
	}
	return n
}

func boolString(b bool) string { return strconv.FormatBool(b) }

func (a *analyzer) pod(p *corev1.Pod) {
	file, ref := a.m.PathOf("Pod", p.Namespace, p.Name), podRef(p)
	ev := func(text string) Evidence {
		return Evidence{Source: SourcePod, File: file, Object: ref, Text: truncateText(text)}
	}
	for _, c := range p.Status.Conditions {
		text := fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
		w := seen{pod: p.Name, t: c.LastTransitionTime.Time, ev: ev(strings.TrimSuffix(text, ": "))}
		if c.Message != "" && (c.Status != corev1.ConditionTrue || c.Type == corev1.DisruptionTarget) {
			w.message = c.Message
		}
		a.observe(fact{"pod-condition", map[string]string{"type": string(c.Type), "status": string(c.Status),
			"reason": c.Reason, "message": c.Message}}, w)
	}
	a.podStatus(p, ev)
	for _, statuses := range [2][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range statuses {
			a.containerStatus(p, cs, ev)
		}
	}
}

// podFields are the facts of a pod that rules read: its phase, status reason, and what it
// got to do (rules' rootOnlyIf reads these too). They are written into one map the analyzer
// reuses (a pod's facts are read and never kept; a job has thousands of pods): valid until
// the next call.
func (a *analyzer) podFields(p *corev1.Pod) map[string]string {
	started := a.podLogs[p.Name]
	for _, cs := range p.Status.ContainerStatuses {
		started = started || cs.State.Running != nil || cs.State.Terminated != nil && !cs.State.Terminated.StartedAt.IsZero() ||
			cs.LastTerminationState.Terminated != nil || cs.RestartCount > 0
	}
	if a.podScratch == nil {
		a.podScratch = make(map[string]string, 6)
	}
	m := a.podScratch
	clear(m)
	m["phase"], m["reason"], m["message"] = string(p.Status.Phase), p.Status.Reason, p.Status.Message
	m["scheduled"] = boolString(p.Spec.NodeName != "" || podConditionTrue(p, corev1.PodScheduled))
	m["imagesPulled"], m["started"] = boolString(imagesPulled(p)), boolString(started)
	return m
}

// podStatus covers the pod's own status: its phase, reason (Evicted) and message. Every pod
// is a fact, so that a rule on its phase alone sees them all.
func (a *analyzer) podStatus(p *corev1.Pod, ev func(string) Evidence) {
	// The pod's own status has no time; the latest container end is the best estimate.
	t := time.Time{}
	if p.Status.StartTime != nil {
		t = p.Status.StartTime.Time
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			t = c.LastTransitionTime.Time
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if te := cs.State.Terminated; te != nil && te.FinishedAt.After(t) {
			t = te.FinishedAt.Time
		}
	}
	text := "phase " + string(p.Status.Phase)
	if p.Status.Reason != "" || p.Status.Message != "" {
		text = strings.TrimSpace(p.Status.Reason + ": " + p.Status.Message)
	}
	a.observe(fact{"pod", a.podFields(p)}, seen{pod: p.Name, t: t, ev: ev(text), message: p.Status.Message})
}

func (a *analyzer) containerStatus(p *corev1.Pod, cs corev1.ContainerStatus, ev func(string) Evidence) {
	lastExit, lastReason := "", ""
	if lt := cs.LastTerminationState.Terminated; lt != nil {
		lastExit, lastReason = strconv.Itoa(int(lt.ExitCode)), lt.Reason
	}
	waiting := ""
	if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
		waiting = w.Reason
		t := time.Time{}
		if lt := cs.LastTerminationState.Terminated; lt != nil {
			t = lt.FinishedAt.Time
		}
		if t.IsZero() {
			t = podConditionTime(p, corev1.ContainersReady)
		}
		text := fmt.Sprintf("container %s waiting: %s", cs.Name, w.Reason)
		if w.Message != "" {
			text += ": " + w.Message
		}
		a.observe(fact{"container-waiting", map[string]string{"container": cs.Name, "reason": w.Reason, "message": w.Message,
			"lastExitCode": lastExit, "lastReason": lastReason, "restarts": strconv.Itoa(int(cs.RestartCount))}},
			seen{pod: p.Name, container: cs.Name, t: t, ev: ev(text), message: w.Message})
	}
	for i, te := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
		if te != nil {
			a.terminated(p, cs, te, i == 1, waiting, ev)
		}
	}
	if !a.rs.observes("container-restarts") {
		return // no rule reads it: its text and fields would be made 200,000 times for nothing
	}
	// Like a termination (terminated), made in the analyzer's scratch space: the text names no
	// pod, and the fields are kept by no finding.
	b := append(append(append(a.buf[:0], "container "...), cs.Name...), " restartCount: "...)
	a.buf = strconv.AppendInt(b, int64(cs.RestartCount), 10)
	t := time.Time{}
	if lt := cs.LastTerminationState.Terminated; lt != nil {
		t = lt.FinishedAt.Time
	}
	fields := a.scratchFields()
	fields["container"], fields["count"] = cs.Name, strconv.Itoa(int(cs.RestartCount))
	a.observe(fact{"container-restarts", fields}, seen{pod: p.Name, container: cs.Name, t: t, ev: ev(a.internText(a.buf))})
}

// loggedFact is an object fact a log line rendered.
type loggedFact struct {
	textFact
	ls bundle.LogStream
}

// loggedFacts observes the facts log lines rendered (an operator's "Pod: ns.worker-0 exited
// with code 1", the kubelet's "back-off 40s restarting failed container=..."), as the pod's
// own status would be: the facts of one pod and container are read together, so that its
// last exit code and its waiting reason meet.
func (a *analyzer) loggedFacts() {
	a.textFacts = joinTerminated(a.textFacts)
	type key struct{ pod, container string }
	waiting := map[key]string{}
	lastExit := map[key]string{}
	keyOf := func(f loggedFact) key { return key{f.fields["pod"], f.fields["container"]} }
	for _, f := range a.textFacts {
		k := keyOf(f)
		switch f.rule.factKind {
		case "container-waiting":
			waiting[k], waiting[key{k.pod, ""}] = f.fields["reason"], f.fields["reason"]
		case "container-terminated":
			lastExit[k], lastExit[key{k.pod, ""}] = f.fields["exitCode"], f.fields["exitCode"]
		}
	}
	for _, f := range a.textFacts {
		k := keyOf(f)
		fields := map[string]string{}
		for name, v := range f.fields {
			if name != "pod" {
				fields[name] = v
			}
		}
		switch f.rule.factKind {
		case "container-waiting":
			if fields["lastExitCode"] == "" {
				fields["lastExitCode"] = lastExit[k]
			}
		case "container-terminated":
			if fields["waiting"] == "" {
				fields["waiting"] = waiting[k]
			}
			if fields["signal"] == "" {
				code, _ := strconv.Atoi(fields["exitCode"])
				for n, v := range terminatedFields("", "", code, 0, false, "", 0, "") {
					if n == "signal" || n == "signalName" {
						fields[n] = v
					}
				}
			}
		}
		ev := Evidence{Source: SourceLog, File: f.ls.Path, Line: f.line, Time: nsPtr(f.time), Text: f.text}
		a.observe(fact{f.rule.factKind, fields}, seen{pod: k.pod, container: k.container, t: timeOrZero(f.time), ev: ev, log: f.ls.Path, line: f.line})
	}
}

// joinWithin is how many lines apart a container's pasted reason and exit code may be: a
// kubectl describe puts its Message (a line or a few) between them, YAML its finishedAt.
const joinWithin = 8

// joinTerminated reads a container's end pasted as text in several lines as one fact: a
// reason and an exit code a few lines apart in one log, on lines that name no pod (a kubectl
// describe block, the pod's YAML or JSON), are the same container's. A field seen twice
// begins the next container.
func joinTerminated(facts []loggedFact) []loggedFact {
	out := facts[:0]
	open := -1 // the fact in out that the next part may complete
	for _, f := range facts {
		partial := f.rule.factKind == "container-terminated" && f.part
		if partial && open >= 0 {
			o := &out[open]
			if o.ls.Path == f.ls.Path && f.line-o.line <= joinWithin && o.fields["pod"] == f.fields["pod"] &&
				disjoint(o.fields, f.fields, "pod") {
				fields := maps.Clone(o.fields)
				maps.Copy(fields, f.fields)
				o.fields = fields
				o.text = strings.TrimRight(strings.TrimSpace(o.text), ",") + "; " + strings.TrimRight(strings.TrimSpace(f.text), ",")
				open = -1
				continue
			}
		}
		out = append(out, f)
		open = -1
		if partial {
			open = len(out) - 1
		}
	}
	return out
}

// disjoint says whether two facts set no field in common but except.
func disjoint(a, b map[string]string, except string) bool {
	for k := range b {
		if _, ok := a[k]; ok && k != except {
			return false
		}
	}
	return true
}

func timeOrZero(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// signalNames are the signals training processes die of, by number.
var signalNames = map[int]string{1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM"}

// terminatedFields are the fields of a container-terminated fact.
func terminatedFields(container, reason string, code int, signal int, last bool, waiting string, restarts int, message string) map[string]string {
	return terminatedFieldsIn(map[string]string{}, container, reason, code, signal, last, waiting, restarts, message)
}

// terminatedFieldsIn is terminatedFields written into fields, which it clears first.
// scratchFields is the analyzer's map for the fields of a container's facts, empty: the
// rules and the title read them, no finding keeps them.
func (a *analyzer) scratchFields() map[string]string {
	if a.termFields == nil {
		a.termFields = map[string]string{}
	}
	clear(a.termFields)
	return a.termFields
}

func terminatedFieldsIn(fields map[string]string, container, reason string, code int, signal int, last bool, waiting string, restarts int, message string) map[string]string {
	if signal == 0 && code > 128 && code < 160 {
		signal = code - 128
	}
	clear(fields)
	fields["container"], fields["reason"], fields["exitCode"] = container, reason, strconv.Itoa(code)
	fields["last"], fields["waiting"], fields["restarts"], fields["message"] = boolString(last), waiting, strconv.Itoa(restarts), message
	if signal > 0 {
		fields["signal"] = strconv.Itoa(signal)
		fields["signalName"] = signalNames[signal]
		if fields["signalName"] == "" {
			fields["signalName"] = "signal " + strconv.Itoa(signal)
		}
	}
	return fields
}

func (a *analyzer) terminated(p *corev1.Pod, cs corev1.ContainerStatus, te *corev1.ContainerStateTerminated, last bool, waiting string, ev func(string) Evidence) {
	// One of these a container (200,000 at 200,000 files, where the analysis's heap is at
	// its largest): the text is appended into one buffer and the fields written into one
	// map, read by the rules and the title and kept by neither.
	b := append(a.buf[:0], "container "...)
	b = append(append(append(b, cs.Name...), " terminated: reason "...), te.Reason...)
	b = strconv.AppendInt(append(b, ", exit code "...), int64(te.ExitCode), 10)
	b = te.FinishedAt.UTC().AppendFormat(append(b, ", finished "...), time.RFC3339)
	if te.Signal != 0 {
		b = strconv.AppendInt(append(b, ", signal "...), int64(te.Signal), 10)
	}
	a.buf = b
	text := a.internText(b)
	fields := terminatedFieldsIn(a.scratchFields(), cs.Name, te.Reason, int(te.ExitCode), int(te.Signal), last, waiting, int(cs.RestartCount), te.Message)
	a.observe(fact{"container-terminated", fields}, seen{pod: p.Name, container: cs.Name, t: te.FinishedAt.Time, ev: ev(text)})
	// The termination message (terminationMessagePolicy FallbackToLogsOnError puts the log's
	// tail there) can carry the real error when the logs are gone.
	if te.Message != "" && !a.hasLogs(p.Name, cs.Name) {
		for _, line := range strings.Split(te.Message, "\n") {
			a.matchMessage(line, ev("termination message: "+line), p.Name, cs.Name, te.FinishedAt.Time)
		}
	}
}

func podConditionTime(p *corev1.Pod, typ corev1.PodConditionType) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
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

// events matches every event's message; an event of a pod is that pod's evidence, an
// event of a node that node's.
func (a *analyzer) events() {
	for i := range a.m.Events {
		e := &a.m.Events[i]
		io := e.InvolvedObject
		if !a.eventOfJob(e) {
			continue
		}
		hits := a.rs.MatchEvent(e.Reason, e.Message)
		if len(hits) == 0 {
			continue
		}
		t := parse.EventFirstTime(e)
		text := fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message)
		if e.Count > 1 {
			text += fmt.Sprintf(" (x%d)", e.Count)
		}
		ev := Evidence{Source: SourceEvent, File: a.m.PathOf("Event", e.Namespace, e.Name), Object: &ObjectRef{io.Kind, io.Namespace, io.Name},
			Time: timePtr(t), Text: truncateText(text)}
		pod, node := "", ""
		switch io.Kind {
		case "Pod":
			pod = io.Name
		case "Node":
			node = io.Name
		}
		for _, h := range hits {
			f := newFinding(h.Rule, h.Groups)
			f.Pod, f.Node, f.Time, f.Evidence = pod, node, timePtr(t), []Evidence{ev}
			f.nodeEvidence = node != ""
			if e.Count > 1 {
				f.Count = int(e.Count)
			}
			a.add(f)
		}
	}
}

// job covers the job's own status and what its kind makes special.
func (a *analyzer) job() {
	j := a.m.Job
	if j == nil || j.Object == nil {
		return
	}
	file := a.m.PathOf(j.Kind, j.Namespace, j.Name)
	ev := func(text string, t time.Time) Evidence {
		return Evidence{Source: SourceJob, File: file, Object: &ObjectRef{j.Kind, j.Namespace, j.Name}, Text: truncateText(text), Time: timePtr(t)}
	}
	for _, c := range j.Conditions {
		text := fmt.Sprintf("condition %s=%s reason %s: %s", c.Type, c.Status, c.Reason, c.Message)
		w := seen{t: c.Time, ev: ev(text, c.Time)}
		if c.Status == "True" && strings.EqualFold(c.Type, "Failed") {
			w.message = c.Message
		}
		a.observe(fact{"job-condition", map[string]string{"type": c.Type, "status": c.Status, "reason": c.Reason, "message": c.Message}}, w)
	}
	if len(a.jobPods()) > 0 {
		for _, r := range j.Replicas {
			if r.Expected <= 0 || r.FromStatus {
				continue
			}
			fields := map[string]string{"role": r.Role, "expected": strconv.Itoa(r.Expected), "created": strconv.Itoa(r.Created),
				"missing": strconv.Itoa(max(0, r.Expected-r.Created)), "jobPhase": string(j.Phase), "cleanUpWorkers": boolString(j.CleanUpWorkers)}
			a.observe(fact{"replicas", fields}, seen{ev: ev(fmt.Sprintf("%s: expected %d, created %d", r.Role, r.Expected, r.Created), time.Time{})})
		}
	}
	a.trainJob(ev)
	a.missingRoles()
}

func (a *analyzer) trainJob(ev func(string, time.Time) Evidence) {
	j := a.m.Job
	if j.Runtime == nil {
		return
	}
	rt := j.Runtime
	fields := map[string]string{"kind": rt.Kind, "name": rt.Name, "state": "present", "deprecatedBy": rt.DeprecatedBy}
	if rt.Object == nil {
		msg, notFound := a.collectorSaid(rt.Kind + "/" + rt.Name)
		if !notFound {
			// Kubeflow Trainer's webhook refuses a TrainJob whose runtime does not exist and a
			// finalizer keeps a runtime in use from being deleted: a runtime absent from the
			// bundle was more likely not collected than gone, unless the API server said so.
			if msg == "" {
				msg = "nothing in the bundle says it does not exist"
			}
			a.warnf("runtime %s %s was not collected (%s); its checks were skipped", rt.Kind, rt.Name, msg)
			return
		}
		fields["state"] = "missing"
		text := fmt.Sprintf("spec.runtimeRef: %s %q; the bundle holds no such runtime", rt.Kind, rt.Name)
		before := len(a.findings)
		a.observe(fact{"runtime", fields}, seen{t: j.Created, ev: ev(text, j.Created)})
		// The controller's own complaint, when it left one, is the best second witness.
		for _, f := range a.findings[before:] {
			for i := range a.m.Events {
				e := &a.m.Events[i]
				if e.InvolvedObject.Name == j.Name && strings.Contains(e.Message, rt.Name) && len(f.Evidence) < maxEvidence {
					t := parse.EventFirstTime(e)
					f.Evidence = append(f.Evidence, Evidence{Source: SourceEvent, File: a.m.PathOf("Event", e.Namespace, e.Name),
						Object: &ObjectRef{e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name}, Time: timePtr(t),
						Text: truncateText(fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))})
					break
				}
			}
		}
		return
	}
	if rt.DeprecatedBy != "" {
		fields["state"] = "deprecated"
	}
	a.observe(fact{"runtime", fields}, seen{ev: Evidence{Source: SourceSpec, File: a.m.PathOf(rt.Kind, rt.Object.GetNamespace(), rt.Name),
		Object: &ObjectRef{rt.Kind, rt.Object.GetNamespace(), rt.Name}, Text: rt.DeprecatedBy}})
}

// collectorSaid returns what the manifest recorded when the collector tried to get object
// (kind/name, as the collector names it), and whether that was the API server's "not found":
// an answer (the object does not exist), where any other record (forbidden, timed out) or none
// leaves its existence open.
func (a *analyzer) collectorSaid(object string) (msg string, notFound bool) {
	mf := a.m.Bundle.Manifest
	if mf == nil {
		return "", false
	}
	for _, g := range mf.Errors {
		if g.Object == object {
			return g.Message, strings.Contains(strings.ToLower(g.Message), "not found")
		}
	}
	return "", false
}

// missingRoles observes the roles with pods expected and none in the bundle, for the kinds
// whose controller may delete them (parse.Family.ReportMissingRoles); the role whose log
// decides is left to launcherMasksFailure.
func (a *analyzer) missingRoles() {
	j := a.m.Job
	if !j.Family.ReportMissingRoles {
		return
	}
	for _, r := range j.Replicas {
		if r.Role == j.Family.LogDecides || len(r.Pods) > 0 || r.Expected == 0 {
			continue
		}
		why := "pods not collected"
		if j.CleanUpWorkers {
			why = "deleted by spec.runPolicy.cleanUpWorkers"
		}
		a.observe(fact{"role-logs", map[string]string{"role": r.Role, "expected": strconv.Itoa(r.Expected), "why": why}},
			seen{ev: Evidence{Source: SourceJob, File: a.m.PathOf(j.Kind, j.Namespace, j.Name), Object: &ObjectRef{j.Kind, j.Namespace, j.Name},
				Text: fmt.Sprintf("%s: %d pods expected, none in the bundle; runPolicy.cleanUpWorkers: %v", r.Role, r.Expected, j.CleanUpWorkers)}})
	}
}

// launcherMasksFailure observes, once the log findings are known, the role whose log
// decides (parse.Family.LogDecides: ColossalAIJob's launcher): its phase, and whether its
// log shows training failed.
func (a *analyzer) launcherMasksFailure() {
	j := a.m.Job
	if j == nil || j.Family.LogDecides == "" {
		return
	}
	l := j.Replica(j.Family.LogDecides)
	if l == nil || len(l.Pods) == 0 {
		return
	}
	p := l.Pods[0]
	var failed *Finding
	for _, f := range a.findings {
		if f.Pod == p.Name && f.Layer == LayerExecution && f.Severity >= SeverityError && !f.generic {
			failed = f
			break
		}
	}
	fields := map[string]string{"role": l.Role, "phase": string(p.Status.Phase), "trainingFailed": boolString(failed != nil)}
	w := seen{pod: p.Name, ev: Evidence{Source: SourcePod, File: a.m.PathOf("Pod", p.Namespace, p.Name), Object: podRef(p),
		Text: fmt.Sprintf("launcher pod phase %s; job phase %s", p.Status.Phase, j.Phase)}}
	if failed != nil {
		w.t = timeOr(failed.Time)
		w.ev.Text += "; launcher log: " + failed.Evidence[0].Text
	}
	a.observe(fact{"log-decides", fields}, w)
}

func timeOr(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// nodes observes the conditions and GPUs of the nodes that ran the job's pods. A fact of a
// node names the pods that were on it: its pod is the first of them by name and its evidence
// lists them all, so a root cause on a node says which ranks it took down.
func (a *analyzer) nodes() {
	onNode := map[string][]string{}
	for _, p := range a.jobPods() {
		if p.Spec.NodeName != "" {
			onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p.Name)
		}
	}
	for _, n := range a.m.Nodes {
		pods := onNode[n.Name]
		if len(pods) == 0 {
			continue
		}
		sort.Strings(pods)
		ev := func(text string, t time.Time) Evidence {
			return Evidence{Source: SourceNode, File: a.m.PathOf("Node", "", n.Name), Object: &ObjectRef{"Node", "", n.Name}, Time: timePtr(t),
				Text: truncateText(text + "; pods on the node: " + podNames(pods))}
		}
		for _, c := range n.Status.Conditions {
			t := c.LastTransitionTime.Time
			text := fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
			a.observe(fact{"node-condition", map[string]string{"node": n.Name, "type": string(c.Type), "status": string(c.Status),
				"reason": c.Reason, "message": c.Message}}, seen{node: n.Name, pod: pods[0], t: t, ev: ev(text, t)})
		}
		capacity, okc := n.Status.Capacity[gpuResource]
		alloc, oka := n.Status.Allocatable[gpuResource]
		if okc && oka {
			c, al := capacity.Value(), alloc.Value()
			text := fmt.Sprintf("%s capacity %d, allocatable %d", gpuResource, c, al)
			a.observe(fact{"node-gpus", map[string]string{"node": n.Name, "capacity": strconv.FormatInt(c, 10),
				"allocatable": strconv.FormatInt(al, 10), "lost": strconv.FormatInt(max(0, c-al), 10)}},
				seen{node: n.Name, pod: pods[0], ev: ev(text, time.Time{})})
		}
	}
}

// podNames lists pod names for an evidence line: all of a few, the first five of many.
func podNames(pods []string) string {
	if len(pods) <= 6 {
		return strings.Join(pods, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(pods[:5], ", "), len(pods)-5)
}

// eventOfJob says whether an event belongs in the analysis: events of pods outside the job
// (the bundle may hold the namespace's) and of nodes that ran none of its pods are left out.
func (a *analyzer) eventOfJob(e *corev1.Event) bool {
	if a.inJob == nil {
		a.inJob = map[string]bool{}
		a.onNode = map[string]bool{}
		for _, p := range a.jobPods() {
			a.inJob[p.Name] = true
			if p.Spec.NodeName != "" {
				a.onNode[p.Spec.NodeName] = true
			}
		}
	}
	switch e.InvolvedObject.Kind {
	case "Pod":
		return len(a.inJob) == 0 || a.inJob[e.InvolvedObject.Name]
	case "Node":
		return len(a.onNode) == 0 || a.onNode[e.InvolvedObject.Name]
	}
	return true
}
