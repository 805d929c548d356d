package analyze

import (
	"bytes"
	"cmp"
	"regexp"
	"slices"
	"strconv"
)

// A scheduling wait is how a job starts on a busy cluster, not how it fails: a pod stays
// unschedulable until the cluster autoscaler adds a node or a gang's other members get
// theirs. The second tier names scheduling from the words of such a wait; when the same
// text shows that the wait ended, those words are the story of a start, and the log names
// no failure by them.
//
// The endings read here, each worded as the component that prints it words it:
//   - the cluster autoscaler's "Scale up in group <group> finished successfully in <d>"
//     (kubernetes/autoscaler cluster-autoscaler/clusterstate/clusterstate.go, and as a user
//     saw it after "Pod udacity/bloaty-... is unschedulable" in
//     bridgecrew-perf6/deployment-roulette starter/apps/bloatware/explanation.md);
//   - the scheduler's Scheduled event "Successfully assigned <ns>/<pod> to <node>"
//     (kubernetes-retired/kube-batch#829, after the same run's Unschedulable events;
//     kubernetes/kubernetes#81773 on that event following a FailedScheduling wait);
//   - Volcano's gang message with at least minAvailable members running ("pod group is
//     ready, 1 minAvailable, 8 Running, 83 Pending", volcano-sh/volcano#4978; the podgroup
//     Running with minMember met while its extra pods wait, volcano-sh/volcano#520): the
//     gang was admitted, only pods beyond its minimum wait. A gang below its minimum
//     ("job is not ready, 2 Running, 3 minAvailable", volcano-sh/volcano#457) still waits.
//
// A finished scale-up ends only the wait of a pod that could use it: when the text says which
// groups the pod triggered ("pod triggered scale-up: [{eks-gpu 2->3 (max: 5)}]", the
// TriggeredScaleUp event; another pod's, where the event and the wait name their pods, do not
// count), the group that finished must be one of them (a pod that triggered
// none, "pod didn't trigger scale-up", is a failure of its own: scheduling/autoscaler-no-scale-up).
// And an ending counts only after the wait's last report: a
// FailedScheduling after a finished scale-up (the new node did not fit the pod either, as a
// user saw after "TriggeredScaleUp ... 2->3" on EKS) is a wait that went on.
var (
	scaledUpRe   = regexp.MustCompile(`(?i)\bscale up in group (\S+) finished successfully\b`)
	triggeredRe  = regexp.MustCompile(`(?i)\bpod triggered scale-up: \[(.*)\]`)
	triggerGrpRe = regexp.MustCompile(`\{(\S+) \d+->\d+`)
	// triggerPodRe names the pod of a TriggeredScaleUp event where the line does: the
	// autoscaler's own log (`Name:"trainer-0"`) or an events listing (`pod/trainer-0`); a
	// describe block's event names none, being of the pod described.
	triggerPodRe = regexp.MustCompile(`\bName:"([^"]+)"|\bpod/([a-z0-9][-a-z0-9.]*)`)
	waitingPodRe = regexp.MustCompile(`(?i)\bpod (\S+/\S+) is unschedulable`)
	assignedRe   = regexp.MustCompile(`(?i)\bsuccessfully assigned (\S+) to \S`)
	gangRe       = regexp.MustCompile(`(?i)\bpod group is (?:not )?ready\b|\bjob is not ready\b`)
	gangMinRe    = regexp.MustCompile(`(?i)\b(\d+) minavailable\b`)
	gangRunRe    = regexp.MustCompile(`(?i)\b(\d+) running\b`)
)

// waitEndedAfter says whether a line after the failure lines picked (indexes into lines, the
// first the earliest; after the last of them) shows a scheduling wait ended: a scale-up finished, or a pod assigned.
// When a failure line names its pod ("Pod default/trainer-1 is unschedulable"), only that
// pod's assignment ends it: another pod's says nothing of this one's wait. Lines that name
// none are a describe block's events, of the pod the block describes.
func waitEndedAfter(lines []tailLine, picked []int) bool {
	for _, l := range lines[picked[len(picked)-1]+1:] {
		if m := scaledUpRe.FindSubmatch(l.text); m != nil {
			triggered := triggeredGroups(lines, picked)
			if len(triggered) == 0 || slices.ContainsFunc(triggered, func(g []byte) bool { return sameGroup(g, m[1]) }) {
				return true
			}
			continue
		}
		m := assignedRe.FindSubmatch(l.text)
		if m == nil {
			continue
		}
		named := false
		for _, i := range picked {
			if p := waitingPodRe.FindSubmatch(lines[i].text); p != nil {
				named = true
				if bytes.Equal(p[1], m[1]) {
					return true
				}
			}
		}
		if !named {
			return true
		}
	}
	return false
}

// triggeredGroups are the node groups the text says the waiting pod triggered a scale-up of:
// every TriggeredScaleUp event's groups, but for an event that names another pod than the
// ones the wait's lines name. Read only when a scale-up finished: most logs have none.
func triggeredGroups(lines []tailLine, picked []int) [][]byte {
	// The pods the wait's lines name ("Pod default/trainer-0 is unschedulable"), by name.
	var waiting [][]byte
	for _, i := range picked {
		if p := waitingPodRe.FindSubmatch(lines[i].text); p != nil {
			waiting = append(waiting, p[1][bytes.IndexByte(p[1], '/')+1:])
		}
	}
	var triggered [][]byte
	for _, l := range lines {
		m := triggeredRe.FindSubmatch(l.text)
		if m == nil {
			continue
		}
		if p := triggerPodRe.FindSubmatch(l.text); p != nil && len(waiting) > 0 {
			if name := cmp.Or(string(p[1]), string(p[2])); !slices.ContainsFunc(waiting, func(w []byte) bool { return string(w) == name }) {
				continue // another pod's scale-up
			}
		}
		for _, g := range triggerGrpRe.FindAllSubmatch(m[1], -1) {
			triggered = append(triggered, g[1])
		}
	}
	return triggered
}

// sameGroup says whether two names of a node group are one: the same, or the same last path
// element (GKE names an instance group by its URL in one message and may not in another).
func sameGroup(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	base := func(s []byte) []byte { return s[bytes.LastIndexByte(s, '/')+1:] }
	return len(base(a)) > 0 && bytes.Equal(base(a), base(b))
}

// gangMet says whether t is a gang scheduler's message whose running members reach its
// minimum: only pods beyond the gang's minimum are waiting.
func gangMet(t []byte) bool {
	if !gangRe.Match(t) {
		return false
	}
	mm, rm := gangMinRe.FindSubmatch(t), gangRunRe.FindSubmatch(t)
	if mm == nil || rm == nil {
		return false
	}
	minAvail, err1 := strconv.Atoi(string(mm[1]))
	running, err2 := strconv.Atoi(string(rm[1]))
	return err1 == nil && err2 == nil && minAvail > 0 && running >= minAvail
}

// schedulingWaitEnded says whether tf, a failure the vocabulary names scheduling, is a wait
// its own text shows ended: a line after its last failure line says the scale-up finished
// or the pod was assigned, or each of its failure lines is a gang message with the gang's
// minimum running.
func (tf *terminalFailure) schedulingWaitEnded() bool {
	return tf.waitEnded || tf.gangAdmitted()
}

// gangAdmitted says whether each of tf's failure lines is a gang message with the gang's
// minimum running: whatever else the log says, they report pods beyond a started gang.
func (tf *terminalFailure) gangAdmitted() bool {
	for _, l := range tf.lines {
		if !gangMet(l.text) {
			return false
		}
	}
	return len(tf.lines) > 0
}
