package analyze

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coroner-dev/coroner/parse"
)

// builtin makes a finding from a builtin rule; placeholders in its title come from vars.
func (a *analyzer) builtin(id string, vars map[string]string) *Finding {
	r := a.rs.Rule(id)
	if r == nil {
		// The embedded rule set always has them; a user set that drops one loses the check.
		return nil
	}
	return newFinding(r, vars)
}

// jobPods lists the pods the analysis covers: the job's, or every pod when the bundle has
// no job object.
func (a *analyzer) jobPods() []*corev1.Pod {
	if a.m.Job != nil && a.m.Job.Object != nil {
		return a.m.Job.Pods()
	}
	return a.m.Pods
}

func podRef(p *corev1.Pod) string { return "Pod " + p.Namespace + "/" + p.Name }

// control reads the Kubernetes side: pods, containers, events, job conditions, nodes.
func (a *analyzer) control() {
	for _, p := range a.jobPods() {
		a.pod(p)
	}
	a.events()
	a.job()
	a.nodes()
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

func (a *analyzer) pod(p *corev1.Pod) {
	file := a.m.PathOf("Pod", p.Namespace, p.Name)
	ev := func(text string) Evidence {
		return Evidence{Source: "pod", File: file, Object: podRef(p), Text: truncateText(text)}
	}
	for _, c := range p.Status.Conditions {
		if c.Status == corev1.ConditionTrue || c.Message == "" {
			continue
		}
		text := fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
		a.matchMessage(c.Message, ev(text), p.Name, "", c.LastTransitionTime.Time)
	}
	a.podStatus(p, ev)
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		a.containerStatus(p, cs, ev)
	}
}

// podStatus covers pod-level ends: eviction and the DisruptionTarget condition.
func (a *analyzer) podStatus(p *corev1.Pod, ev func(string) Evidence) {
	when := p.Status.StartTime
	t := time.Time{}
	if when != nil {
		t = when.Time
	}
	for _, c := range p.Status.Conditions {
		if c.Type == "DisruptionTarget" && c.Status == corev1.ConditionTrue {
			t = c.LastTransitionTime.Time
			text := fmt.Sprintf("DisruptionTarget=True %s: %s", c.Reason, c.Message)
			if a.matchMessage(c.Message, ev(text), p.Name, "", t) == 0 {
				if f := a.builtin("preempted-evicted/preempted", map[string]string{"reason": c.Reason}); f != nil {
					f.Pod, f.Time, f.Evidence = p.Name, timePtr(t), []Evidence{ev(text)}
					f.Evidence[0].Time = f.Time
					a.add(f)
				}
			}
		}
	}
	if p.Status.Reason == "" && p.Status.Message == "" {
		return
	}
	// The pod's own status has no time; the latest container end is the best estimate.
	for _, cs := range p.Status.ContainerStatuses {
		if te := cs.State.Terminated; te != nil && te.FinishedAt.After(t) {
			t = te.FinishedAt.Time
		}
	}
	text := strings.TrimSpace(p.Status.Reason + ": " + p.Status.Message)
	if a.matchMessage(p.Status.Message, ev(text), p.Name, "", t) == 0 && p.Status.Reason == "Evicted" {
		if f := a.builtin("preempted-evicted/evicted", nil); f != nil {
			f.Pod, f.Time, f.Evidence = p.Name, timePtr(t), []Evidence{ev(text)}
			f.Evidence[0].Time = f.Time
			a.add(f)
		}
	}
}

var waitingRules = map[string]string{
	"ErrImagePull": "image-pull/waiting", "ImagePullBackOff": "image-pull/waiting", "InvalidImageName": "image-pull/waiting",
	"ErrImageNeverPull": "image-pull/waiting", "CreateContainerConfigError": "config-error/container-create",
	"CreateContainerError": "config-error/container-create", "RunContainerError": "config-error/container-create",
	"CrashLoopBackOff": "unknown/crash-loop",
}

func (a *analyzer) containerStatus(p *corev1.Pod, cs corev1.ContainerStatus, ev func(string) Evidence) {
	if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
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
		matched := w.Message != "" && a.matchMessage(w.Message, ev(text), p.Name, cs.Name, t) > 0
		if id, ok := waitingRules[w.Reason]; ok && !matched {
			if f := a.builtin(id, map[string]string{"reason": w.Reason}); f != nil {
				f.Pod, f.Container, f.Time, f.Evidence = p.Name, cs.Name, timePtr(t), []Evidence{ev(text)}
				f.Evidence[0].Time = f.Time
				f.weak = id == "image-pull/waiting" // the pull events carry the registry's answer
				a.add(f)
			}
		}
	}
	for _, te := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
		if te != nil {
			a.terminated(p, cs.Name, te, ev)
		}
	}
	if cs.RestartCount >= 3 {
		if f := a.builtin("unknown/many-restarts", map[string]string{"count": strconv.Itoa(int(cs.RestartCount))}); f != nil {
			f.Pod, f.Container, f.weak = p.Name, cs.Name, true
			text := fmt.Sprintf("container %s restartCount: %d", cs.Name, cs.RestartCount)
			if lt := cs.LastTerminationState.Terminated; lt != nil {
				f.Time = timePtr(lt.FinishedAt.Time)
			}
			f.Evidence = []Evidence{ev(text)}
			f.Evidence[0].Time = f.Time
			a.add(f)
		}
	}
}

// signalNames are the signals training processes die of, by number.
var signalNames = map[int]string{1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM"}

// exitRule maps a container's end onto a builtin rule, and says whether that rule is weak
// (explained by a more specific finding when there is one).
func exitRule(te *corev1.ContainerStateTerminated) (id string, weak bool) {
	if te.Reason == "OOMKilled" {
		return "host-oom/oomkilled", false
	}
	switch te.ExitCode {
	case 0:
		return "", false
	case 127:
		return "config-error/command-not-found", false
	case 126:
		return "config-error/command-not-executable", false
	case 137:
		return "crash-signal/sigkill", true
	case 139:
		return "crash-signal/sigsegv", true
	case 134:
		return "crash-signal/sigabrt", true
	case 135:
		return "crash-signal/sigbus", true
	case 143:
		return "crash-signal/sigterm", true
	}
	if te.ExitCode > 128 && te.ExitCode < 160 {
		return "crash-signal/signal", true
	}
	return "unknown/exit-code", true
}

func (a *analyzer) terminated(p *corev1.Pod, container string, te *corev1.ContainerStateTerminated, ev func(string) Evidence) {
	id, weak := exitRule(te)
	if id == "" {
		return
	}
	text := fmt.Sprintf("container %s terminated: reason %s, exit code %d, finished %s", container, te.Reason, te.ExitCode, te.FinishedAt.UTC().Format(time.RFC3339))
	if te.Signal != 0 {
		text += fmt.Sprintf(", signal %d", te.Signal)
	}
	vars := map[string]string{"code": strconv.Itoa(int(te.ExitCode))}
	if te.ExitCode > 128 {
		sig := int(te.ExitCode - 128)
		vars["signal"] = signalNames[sig]
		if vars["signal"] == "" {
			vars["signal"] = strconv.Itoa(sig)
		}
	}
	if f := a.builtin(id, vars); f != nil {
		f.Pod, f.Container, f.weak, f.Time = p.Name, container, weak, timePtr(te.FinishedAt.Time)
		f.Evidence = []Evidence{ev(text)}
		f.Evidence[0].Time = f.Time
		a.add(f)
	}
	// The termination message (terminationMessagePolicy FallbackToLogsOnError puts the log's
	// tail there) can carry the real error when the logs are gone.
	if te.Message != "" && !a.logsFor[p.Name+"/"+container] {
		for _, line := range strings.Split(te.Message, "\n") {
			a.matchMessage(line, ev("termination message: "+line), p.Name, container, te.FinishedAt.Time)
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

// events matches every event's message; an event of a pod is that pod's evidence.
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
		ev := Evidence{Source: "event", File: a.m.PathOf("Event", e.Namespace, e.Name), Object: io.Kind + " " + io.Namespace + "/" + io.Name,
			Time: timePtr(t), Text: truncateText(text)}
		pod := ""
		if io.Kind == "Pod" {
			pod = io.Name
		}
		for _, h := range hits {
			f := newFinding(h.Rule, h.Groups)
			f.Pod, f.Time, f.Evidence = pod, timePtr(t), []Evidence{ev}
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
		return Evidence{Source: "job", File: file, Object: j.Kind + " " + j.Namespace + "/" + j.Name, Text: truncateText(text), Time: timePtr(t)}
	}
	for _, c := range j.Conditions {
		if c.Status != "True" || !strings.EqualFold(c.Type, "Failed") {
			continue
		}
		text := fmt.Sprintf("condition %s=True reason %s: %s", c.Type, c.Reason, c.Message)
		if c.Reason == "TrainingRuntimeNotSupported" {
			if f := a.builtin("config-error/runtime-not-supported", nil); f != nil {
				f.Time, f.Evidence = timePtr(c.Time), []Evidence{ev(text, c.Time)}
				a.add(f)
			}
			continue
		}
		if a.matchMessage(c.Message, ev(text, c.Time), "", "", c.Time) == 0 {
			if f := a.builtin("unknown/job-failed", map[string]string{"reason": c.Reason}); f != nil {
				f.Time, f.Evidence, f.weak = timePtr(c.Time), []Evidence{ev(text, c.Time)}, true
				a.add(f)
			}
		}
	}
	if j.Phase != parse.PhaseSucceeded && !j.CleanUpWorkers {
		for _, r := range j.Replicas {
			if r.Expected > 0 && r.Created < r.Expected && !r.FromStatus && len(a.jobPods()) > 0 {
				vars := map[string]string{"role": r.Role, "created": strconv.Itoa(r.Created), "expected": strconv.Itoa(r.Expected)}
				if f := a.builtin("unknown/replicas-missing", vars); f != nil {
					f.weak = true
					f.Evidence = []Evidence{ev(fmt.Sprintf("%s: expected %d, created %d", r.Role, r.Expected, r.Created), time.Time{})}
					a.add(f)
				}
			}
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
	if rt.Object == nil {
		gap := a.gapFor(rt.Name)
		if gap != "" {
			a.warnf("runtime %s %s was not collected (%s); its checks were skipped", rt.Kind, rt.Name, gap)
			return
		}
		vars := map[string]string{"kind": rt.Kind, "name": rt.Name}
		if f := a.builtin("config-error/runtime-missing", vars); f != nil {
			text := fmt.Sprintf("spec.runtimeRef: %s %q; the bundle holds no such runtime", rt.Kind, rt.Name)
			f.Time, f.Evidence = timePtr(j.Created), []Evidence{ev(text, j.Created)}
			// The controller's own complaint, when it left one, is the best second witness.
			for i := range a.m.Events {
				e := &a.m.Events[i]
				if e.InvolvedObject.Name == j.Name && strings.Contains(e.Message, rt.Name) && len(f.Evidence) < maxEvidence {
					t := parse.EventFirstTime(e)
					f.Evidence = append(f.Evidence, Evidence{Source: "event", File: a.m.PathOf("Event", e.Namespace, e.Name),
						Object: e.InvolvedObject.Kind + " " + e.Namespace + "/" + e.InvolvedObject.Name, Time: timePtr(t),
						Text: truncateText(fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))})
					break
				}
			}
			a.add(f)
		}
		return
	}
	if rt.DeprecatedBy != "" {
		if f := a.builtin("config-error/runtime-deprecated", map[string]string{"name": rt.Name}); f != nil {
			f.Evidence = []Evidence{{Source: "spec", File: a.m.PathOf(rt.Kind, rt.Object.GetNamespace(), rt.Name),
				Object: rt.Kind + " " + rt.Name, Text: rt.DeprecatedBy}}
			a.add(f)
		}
	}
}

// gapFor returns the manifest's reason for not collecting an object named name when that
// reason leaves its existence open (forbidden, timed out), or "". A "not found" gap is an
// answer, not a gap: the object does not exist.
func (a *analyzer) gapFor(name string) string {
	mf := a.m.Bundle.Manifest
	if mf == nil {
		return ""
	}
	for _, g := range mf.Errors {
		if strings.Contains(g.Object, name) && !strings.Contains(strings.ToLower(g.Message), "not found") {
			return g.Message
		}
	}
	return ""
}

// missingRoles reports the roles with pods expected and none in the bundle, for the kinds
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
		if f := a.builtin("unknown/logs-missing", map[string]string{"role": r.Role, "why": why}); f != nil {
			f.Evidence = []Evidence{{Source: "job", File: a.m.PathOf(j.Kind, j.Namespace, j.Name), Object: j.Kind + " " + j.Namespace + "/" + j.Name,
				Text: fmt.Sprintf("%s: %d pods expected, none in the bundle; runPolicy.cleanUpWorkers: %v", r.Role, r.Expected, j.CleanUpWorkers)}}
			a.add(f)
		}
	}
}

// launcherMasksFailure adds, once the log findings are known, that the role whose log decides
// (parse.Family.LogDecides: ColossalAIJob's launcher) succeeded while its log shows training
// failed.
func (a *analyzer) launcherMasksFailure() {
	j := a.m.Job
	if j == nil || j.Family.LogDecides == "" {
		return
	}
	l := j.Replica(j.Family.LogDecides)
	if l == nil || len(l.Pods) == 0 || l.Succeeded == 0 {
		return
	}
	p := l.Pods[0]
	for _, f := range a.findings {
		if f.Pod == p.Name && f.Layer == LayerExecution && f.Severity >= SeverityError && !f.weak {
			n := a.builtin("unknown/launcher-succeeded-training-failed", nil)
			if n == nil {
				return
			}
			n.Pod = p.Name
			n.Time = f.Time
			n.Evidence = []Evidence{{Source: "pod", File: a.m.PathOf("Pod", p.Namespace, p.Name), Object: podRef(p),
				Text: fmt.Sprintf("launcher pod phase %s; job phase %s; launcher log: %s", p.Status.Phase, j.Phase, f.Evidence[0].Text), Time: f.Time}}
			a.add(n)
			return
		}
	}
}

// nodes reports nodes of the job's pods that were not ready. The finding names the pods that
// were on the node: its Pod is the first of them by name, its evidence lists them all, so a
// root cause on a node says which ranks it took down.
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
		for _, c := range n.Status.Conditions {
			if c.Type != corev1.NodeReady || c.Status == corev1.ConditionTrue {
				continue
			}
			if f := a.builtin("preempted-evicted/node-not-ready", map[string]string{"node": n.Name}); f != nil {
				f.Pod = pods[0]
				f.Time = timePtr(c.LastTransitionTime.Time)
				f.Evidence = []Evidence{{Source: "node", File: a.m.PathOf("Node", "", n.Name), Object: "Node " + n.Name, Time: f.Time,
					Text: truncateText(fmt.Sprintf("Ready=%s %s: %s; pods on the node: %s", c.Status, c.Reason, c.Message, podNames(pods)))}}
				a.add(f)
			}
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
// (the bundle may hold the namespace's) are left out.
func (a *analyzer) eventOfJob(e *corev1.Event) bool {
	if a.inJob == nil {
		a.inJob = map[string]bool{}
		for _, p := range a.jobPods() {
			a.inJob[p.Name] = true
		}
	}
	return e.InvolvedObject.Kind != "Pod" || len(a.inJob) == 0 || a.inJob[e.InvolvedObject.Name]
}
