// Package spotbundle wraps one labelled real log excerpt (a row of the corpus or of a spot
// set) into the bundle `coroner collect` would have written for a job that printed it: the
// job's object, four pods with the container statuses Kubernetes would show, their events,
// their nodes and each pod's log with the kubelet's timestamps. It measures whether an
// excerpt gets the same answer inside a bundle, where the job's conditions, the exit codes and
// the other pods' logs take part, as it gets as a plain log.
//
// The statuses follow the kind of row, never its category: a failed row's excerpt pod ended
// with exit code 1 (Error), or with the code the excerpt itself shows ("Killed" is 137), the
// other pods were stopped by the operator (143) and the job is Failed; a hang row's pods all
// run and the bundle is collected 40 minutes after the excerpt's last line; a healthy row's
// job Succeeded with exit code 0 when the excerpt ends as a finished run, else it runs. The
// same row and excerpt give the same bytes.
package spotbundle

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/logscan"
	"sigs.k8s.io/yaml"
)

// Row is what the generator reads of an INDEX.tsv row.
type Row struct {
	ID        string
	Label     string // a category, "hang" or "healthy"
	RootRank  string // a rank, a pod's replica ("master-0") or "-"
	Framework string
}

// Kind is the job kind a row's framework suggests.
type Kind string

const (
	PyTorchJob Kind = "PyTorchJob"
	MPIJob     Kind = "MPIJob"
	Job        Kind = "Job"
)

// KindOf picks the job kind: an MPIJob for mpirun and Horovod, a PyTorchJob for the PyTorch
// family (DeepSpeed, Megatron, HF and the launchers built on torchrun), a plain Job otherwise.
func KindOf(framework string) Kind {
	f := strings.ToLower(framework)
	switch {
	case f == "mpi" || strings.Contains(f, "horovod"):
		return MPIJob
	case f == "tensorflow" || f == "jax" || f == "keras" || f == "kubernetes" || f == "slurm" ||
		f == "ray" || f == "xgboost" || f == "caffe" || f == "torch7" || f == "marian" ||
		f == "rl-coach" || f == "kernel" || f == "framework":
		return Job
	}
	return PyTorchJob
}

// Workers is how many pods the job has.
const Workers = 4

// Bundle is a wrapped excerpt: where it was put and what the bundle says of its pods.
type Bundle struct {
	Kind Kind
	// Pod is the pod whose log is the excerpt.
	Pod string
	// State is the kind of row: "failed", "hang", "running" or "succeeded".
	State string
	// ExitCode is the excerpt pod's exit code when it ended.
	ExitCode int
}

const (
	ns      = "ml"
	jobName = "train-job"
	image   = "registry.local/ml/trainer:v1"
)

// defaultStart is when a log without a timestamp of its own begins.
var defaultStart = time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)

// Options choose what the other pods of a failed row show; the zero value is the operator
// stopping them (exit code 143) with logs that end after their startup lines.
type Options struct {
	// OthersRunning leaves the other pods running when the excerpt's pod failed, as a job
	// whose cleanPodPolicy is None does before the other ranks notice.
	OthersRunning bool
	// OthersSIGTERM ends a stopped PyTorchJob pod's log with torchrun's report of the SIGTERM.
	OthersSIGTERM bool
}

// Write wraps excerpt into a bundle tarball at path.
func Write(path string, row Row, excerpt []byte, opt Options) (*Bundle, error) {
	files, m, b := Build(row, excerpt, opt)
	w, err := bundle.NewWriter(path)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := w.WriteFile(f.Path, f.Data); err != nil {
			w.Abort()
			return nil, err
		}
	}
	return b, w.Close(m)
}

// File is one file of a bundle.
type File struct {
	Path string
	Data []byte
}

// replica is one pod of the job.
type replica struct {
	name, container, rtype, index string
	rank                          int
	node                          string
	log                           []byte
	created, started              time.Time
	// end is when its container ended; zero while it runs.
	end      time.Time
	exitCode int
	reason   string
}

// Build makes the files and manifest of the bundle (Write writes them).
func Build(row Row, excerpt []byte, opt Options) ([]File, *bundle.Manifest, *Bundle) {
	kind := KindOf(row.Framework)
	stamped, first, last := stamp(excerpt)
	state, code, reason := outcome(row.Label, excerpt)
	b := &Bundle{Kind: kind, State: state, ExitCode: code}

	start := first.Add(-20 * time.Second)
	reps := replicas(kind, row.RootRank)
	target := 0
	for i := range reps {
		if reps[i].log == nil && reps[i].rank == -2 {
			target = i
		}
	}
	for i := range reps {
		r := &reps[i]
		r.created = start.Add(-40 * time.Second)
		r.started = start.Add(time.Duration(i) * time.Second)
		r.node = fmt.Sprintf("gpu-node-%d", i)
		if i == target {
			r.log = stamped
		} else {
			r.log = neutral(kind, r, first)
		}
	}
	b.Pod = reps[target].name
	var collected, finished time.Time
	switch state {
	case "failed":
		finished = last.Add(2 * time.Second)
		for i := range reps {
			r := &reps[i]
			switch {
			case i == target:
				r.end, r.exitCode, r.reason = last.Add(time.Second), code, reason
			case !opt.OthersRunning:
				r.end, r.exitCode, r.reason = finished, 143, "Error"
				if opt.OthersSIGTERM && kind == PyTorchJob {
					r.log = append(r.log, fmt.Sprintf("%s WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGTERM death signal, shutting down workers\n",
						finished.Add(-time.Second).Format("2006-01-02T15:04:05.000000000Z"))...)
				}
			}
		}
		collected = last.Add(2 * time.Minute)
	case "succeeded":
		finished = last.Add(2 * time.Second)
		for i := range reps {
			reps[i].end, reps[i].exitCode, reps[i].reason = last.Add(time.Second), 0, "Completed"
		}
		collected = last.Add(2 * time.Minute)
	case "hang":
		collected = last.Add(40 * time.Minute)
	default:
		collected = last.Add(time.Minute)
	}

	var files []File
	add := func(p string, obj any) {
		data, err := yaml.Marshal(obj)
		if err != nil {
			panic(err) // maps of strings and numbers always marshal
		}
		files = append(files, File{p, data})
	}
	jobAPI, jobGroup := "kubeflow.org/v1", "kubeflow.org"
	if kind == Job {
		jobAPI, jobGroup = "batch/v1", "batch"
	}
	jobUID := uid("job", row.ID)
	add(fmt.Sprintf("resources/%s/%s/%s/%s.yaml", jobGroup, kind, ns, jobName), jobObject(kind, jobUID, state, start, finished, reps, target))
	for i, r := range reps {
		add(fmt.Sprintf("resources/core/Pod/%s/%s.yaml", ns, r.name), podObject(kind, jobUID, r))
		files = append(files, File{fmt.Sprintf("logs/%s/%s/%s.log", ns, r.name, r.container), r.log})
		for j, e := range podEvents(r) {
			add(fmt.Sprintf("resources/core/Event/%s/%s.%x.yaml", ns, r.name, 0x189cab0000000000+uint64(i*16+j)), e)
		}
		add(fmt.Sprintf("resources/core/Node/_cluster/%s.yaml", r.node), nodeObject(r.node, r.created))
	}
	m := &bundle.Manifest{
		CoronerVersion: "0.1.0",
		CollectedAt:    &collected,
		ServerVersion:  "v1.30.4",
		Target:         bundle.Target{APIVersion: jobAPI, Kind: string(kind), Namespace: ns, Name: jobName, UID: jobUID},
		Options:        bundle.Options{MaxLogBytes: 8 << 20, Redact: true},
	}
	for _, f := range files {
		sum := sha256.Sum256(f.Data)
		m.Files = append(m.Files, bundle.FileEntry{Path: f.Path, Bytes: int64(len(f.Data)), SHA256: fmt.Sprintf("%x", sum)})
	}
	return files, m, b
}

// replicas names the job's pods; the one that gets the excerpt has rank -2 until Build
// places it: the row's root rank's pod (rank modulo the pods), worker-0 when it names none,
// and the launcher of an MPIJob, whose log is where mpirun prints every rank's output.
func replicas(kind Kind, rootRank string) []replica {
	var reps []replica
	pick := 0
	if n, err := strconv.Atoi(rootRank); err == nil && n >= 0 {
		pick = n % Workers
	}
	switch kind {
	case MPIJob:
		reps = append(reps, replica{name: jobName + "-launcher", container: "mpi-launcher", rtype: "launcher", index: "0", rank: -2})
		for i := 0; i < Workers-1; i++ {
			reps = append(reps, replica{name: fmt.Sprintf("%s-worker-%d", jobName, i), container: "mpi-worker", rtype: "worker", index: strconv.Itoa(i), rank: i})
		}
		return reps
	case Job:
		for i := 0; i < Workers; i++ {
			reps = append(reps, replica{name: fmt.Sprintf("%s-%d-%s", jobName, i, suffix(i)), container: "trainer", rtype: "", index: strconv.Itoa(i), rank: i})
		}
	default:
		for i := 0; i < Workers; i++ {
			reps = append(reps, replica{name: fmt.Sprintf("%s-worker-%d", jobName, i), container: "pytorch", rtype: "worker", index: strconv.Itoa(i), rank: i})
		}
	}
	reps[pick].rank = -2
	return reps
}

// suffix is a plain Job pod's random-looking name suffix, fixed per index.
func suffix(i int) string {
	return []string{"x7k2q", "m4n8p", "r2w9t", "b6c3z"}[i%4]
}

// finishedRun is the end of a run that finished on its own: a trainer's summary or a
// "done"/"completed"/"finished" line among the last lines.
var finishedRun = regexp.MustCompile(`(?i)\b(training (is )?(complete|completed|finished|done)|finished training|train_runtime|completed successfully|run finished|finished successfully|all done|job (finished|completed|succeeded)|done\.?$|exiting with code 0|exit code:? 0\b)`)

// outcome is the row's state and, for a failed row, the excerpt pod's exit code and reason.
func outcome(label string, excerpt []byte) (state string, code int, reason string) {
	switch label {
	case "hang":
		return "hang", 0, ""
	case "healthy":
		lines := bytes.Split(bytes.TrimRight(excerpt, "\n"), []byte("\n"))
		from := max(0, len(lines)-5)
		for _, l := range lines[from:] {
			if finishedRun.Match(bytes.TrimSpace(l)) {
				return "succeeded", 0, "Completed"
			}
		}
		return "running", 0, ""
	}
	code, reason = exitOf(excerpt)
	return "failed", code, reason
}

// How a process's end is written in a log, the last one counting: a shell's report of a
// signal, an exit code or status, the kubelet's OOMKilled.
var (
	shellSignal = regexp.MustCompile(`(?m)^(?:.*: )?(?:line \d+: +\d+ )?(Killed|Segmentation fault|Bus error|Aborted)(?: +\(core dumped\))?(?: +.*)?$`)
	exitNumber  = regexp.MustCompile(`(?i)\b(?:exit(?:ed)? (?:with )?(?:code|status)|exit code|exitcode|returned non-zero exit status)[ :=]+(-?\d+)\b`)
	oomKilled   = regexp.MustCompile(`\bOOMKilled\b`)
)

// exitOf is the exit code and reason the excerpt pod's container would show: what the
// excerpt says of the process's end, else 1 (Error).
func exitOf(excerpt []byte) (int, string) {
	if oomKilled.Match(excerpt) {
		return 137, "OOMKilled"
	}
	best, code := -1, 1
	for _, m := range shellSignal.FindAllSubmatchIndex(excerpt, -1) {
		if m[0] > best {
			best = m[0]
			code = map[string]int{"Killed": 137, "Segmentation fault": 139, "Bus error": 135, "Aborted": 134}[string(excerpt[m[2]:m[3]])]
		}
	}
	for _, m := range exitNumber.FindAllSubmatchIndex(excerpt, -1) {
		if m[0] > best {
			n, err := strconv.Atoi(string(excerpt[m[2]:m[3]]))
			if err != nil || n == 0 {
				continue
			}
			best = m[0]
			switch {
			case n < 0 && n >= -64: // a child killed by a signal: its launcher exits 1
				code = 1
			case n > 0 && n < 256:
				code = n
			default:
				code = 1
			}
		}
	}
	return code, "Error"
}

// stamp prefixes every line with the kubelet's timestamp: the time the line itself shows
// when it has one that does not go back, else a millisecond after the line before. It
// returns the stamped log and its first and last times.
func stamp(excerpt []byte) ([]byte, time.Time, time.Time) {
	text := strings.TrimRight(strings.ReplaceAll(string(excerpt), "\r\n", "\n"), "\n")
	lines := strings.Split(text, "\n")
	times := make([]time.Time, len(lines))
	firstKnown := -1
	for i, l := range lines {
		if t, ok := logscan.LeadingTime([]byte(l)); ok && t.Year() > 2000 && t.Year() < 2100 {
			times[i] = t.UTC()
			if firstKnown < 0 {
				firstKnown = i
			}
		}
	}
	cur := defaultStart
	if firstKnown >= 0 {
		cur = times[firstKnown].Add(-time.Duration(firstKnown) * time.Millisecond)
	}
	first := cur
	var out strings.Builder
	for i, l := range lines {
		if !times[i].IsZero() && times[i].After(cur) {
			cur = times[i]
		} else if i > 0 {
			cur = cur.Add(time.Millisecond)
		}
		out.WriteString(cur.Format("2006-01-02T15:04:05.000000000Z"))
		out.WriteByte(' ')
		out.WriteString(l)
		out.WriteByte('\n')
	}
	return []byte(out.String()), first, cur
}

// neutral is the log of a pod that is not the excerpt's: a few startup lines, then nothing.
func neutral(kind Kind, r *replica, at time.Time) []byte {
	var lines []string
	switch kind {
	case MPIJob:
		lines = []string{"Server listening on 0.0.0.0 port 22.", "Server listening on :: port 22."}
	default:
		lines = []string{
			fmt.Sprintf("Starting trainer on %s (replica %s)", r.name, r.index),
			"Loading configuration from /workspace/config.yaml",
			"Reading dataset index from /data/train",
		}
	}
	var out strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&out, "%s %s\n", at.Add(-15*time.Second+time.Duration(i)*40*time.Millisecond).Format("2006-01-02T15:04:05.000000000Z"), l)
	}
	return []byte(out.String())
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// uid is a fixed UUID-shaped id for a name.
func uid(parts ...string) string {
	s := sha256.Sum256([]byte(strings.Join(parts, "/")))
	h := fmt.Sprintf("%x", s[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func jobObject(kind Kind, jobUID, state string, start, finished time.Time, reps []replica, target int) map[string]any {
	meta := map[string]any{"name": jobName, "namespace": ns, "uid": jobUID, "creationTimestamp": ts(start.Add(-41 * time.Second)), "generation": 1}
	container := map[string]any{"name": reps[0].container, "image": image, "command": []string{"python", "/workspace/train.py"},
		"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}}}
	tmpl := map[string]any{"spec": map[string]any{"containers": []any{container}, "restartPolicy": "Never"}}
	created := ts(start.Add(-40 * time.Second))
	switch kind {
	case Job:
		status := map[string]any{"startTime": created, "active": len(reps)}
		spec := map[string]any{"completions": Workers, "parallelism": Workers, "completionMode": "Indexed", "backoffLimit": 0, "template": tmpl}
		switch state {
		case "failed":
			status = map[string]any{"startTime": created, "failed": 1, "conditions": []any{map[string]any{
				"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit",
				"lastProbeTime": ts(finished), "lastTransitionTime": ts(finished)}}}
		case "succeeded":
			status = map[string]any{"startTime": created, "succeeded": Workers, "completionTime": ts(finished), "conditions": []any{map[string]any{
				"type": "Complete", "status": "True", "lastProbeTime": ts(finished), "lastTransitionTime": ts(finished)}}}
		}
		return map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec, "status": status}
	}
	cond := func(typ, status, reason, msg string, at time.Time) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg, "lastTransitionTime": ts(at), "lastUpdateTime": ts(at)}
	}
	conds := []any{cond("Created", "True", string(kind)+"Created", fmt.Sprintf("%s %s is created.", kind, jobName), start.Add(-40*time.Second))}
	running := cond("Running", "True", string(kind)+"Running", fmt.Sprintf("%s %s/%s is running.", kind, ns, jobName), start)
	replicaStatuses := map[string]any{}
	status := map[string]any{"startTime": created}
	switch state {
	case "failed":
		running["status"] = "False"
		failedType := "Worker"
		if reps[target].rtype == "launcher" {
			failedType = "Launcher"
		}
		msg := fmt.Sprintf("%s %s is failed because 1 %s replica(s) failed.", kind, jobName, failedType)
		if kind == MPIJob {
			msg = fmt.Sprintf("%s %s/%s has failed", kind, ns, jobName)
		}
		conds = append(conds, running, cond("Failed", "True", string(kind)+"Failed", msg, finished))
		status["completionTime"] = ts(finished)
	case "succeeded":
		running["status"] = "False"
		conds = append(conds, running, cond("Succeeded", "True", string(kind)+"Succeeded", fmt.Sprintf("%s %s is successfully completed.", kind, jobName), finished))
		status["completionTime"] = ts(finished)
	default:
		conds = append(conds, running)
	}
	for _, r := range reps {
		key := strings.ToUpper(r.rtype[:1]) + r.rtype[1:]
		s, _ := replicaStatuses[key].(map[string]any)
		if s == nil {
			s = map[string]any{}
			replicaStatuses[key] = s
		}
		field := "active"
		switch {
		case !r.end.IsZero() && r.exitCode == 0:
			field = "succeeded"
		case !r.end.IsZero():
			field = "failed"
		}
		n, _ := s[field].(int)
		s[field] = n + 1
	}
	status["conditions"] = conds
	status["replicaStatuses"] = replicaStatuses
	specs := map[string]any{}
	for _, r := range reps {
		key := strings.ToUpper(r.rtype[:1]) + r.rtype[1:]
		s, _ := specs[key].(map[string]any)
		if s == nil {
			c := map[string]any{"name": r.container, "image": image, "command": []string{"python", "/workspace/train.py"}}
			s = map[string]any{"replicas": 0, "restartPolicy": "Never", "template": map[string]any{"spec": map[string]any{"containers": []any{c}}}}
			specs[key] = s
		}
		s["replicas"] = s["replicas"].(int) + 1
	}
	spec := map[string]any{"runPolicy": map[string]any{"cleanPodPolicy": "None"}}
	if kind == MPIJob {
		spec["mpiReplicaSpecs"] = specs
		spec["slotsPerWorker"] = 1
	} else {
		spec["pytorchReplicaSpecs"] = specs
		spec["nprocPerNode"] = "1"
	}
	return map[string]any{"apiVersion": "kubeflow.org/v1", "kind": string(kind), "metadata": meta, "spec": spec, "status": status}
}

func podObject(kind Kind, jobUID string, r replica) map[string]any {
	labels := map[string]any{}
	owner := map[string]any{"apiVersion": "kubeflow.org/v1", "kind": string(kind), "name": jobName, "uid": jobUID, "controller": true, "blockOwnerDeletion": true}
	env := []any{}
	switch kind {
	case Job:
		labels = map[string]any{"batch.kubernetes.io/job-name": jobName, "job-name": jobName, "batch.kubernetes.io/controller-uid": jobUID,
			"batch.kubernetes.io/job-completion-index": r.index}
		owner["apiVersion"] = "batch/v1"
	default:
		op := map[Kind]string{PyTorchJob: "pytorchjob-controller", MPIJob: "mpijob-controller"}[kind]
		labels = map[string]any{"training.kubeflow.org/job-name": jobName, "training.kubeflow.org/operator-name": op,
			"training.kubeflow.org/replica-index": r.index, "training.kubeflow.org/replica-type": r.rtype}
		if kind == PyTorchJob {
			env = append(env, map[string]any{"name": "WORLD_SIZE", "value": strconv.Itoa(Workers)},
				map[string]any{"name": "RANK", "value": r.index},
				map[string]any{"name": "MASTER_ADDR", "value": jobName + "-worker-0"})
		}
	}
	container := map[string]any{"name": r.container, "image": image, "command": []string{"python", "/workspace/train.py"},
		"resources":    map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}, "requests": map[string]any{"nvidia.com/gpu": "1"}},
		"volumeMounts": []any{map[string]any{"name": "dshm", "mountPath": "/dev/shm"}}}
	if len(env) > 0 {
		container["env"] = env
	}
	cs := map[string]any{"name": r.container, "image": image, "imageID": image + "@sha256:" + strings.Repeat("ab", 32),
		"containerID": "containerd://" + strings.ReplaceAll(uid("c", r.name), "-", ""), "restartCount": 0, "lastState": map[string]any{}}
	phase := "Running"
	ready := "True"
	if r.end.IsZero() {
		cs["ready"], cs["started"] = true, true
		cs["state"] = map[string]any{"running": map[string]any{"startedAt": ts(r.started)}}
	} else {
		cs["ready"], cs["started"] = false, false
		cs["state"] = map[string]any{"terminated": map[string]any{"exitCode": r.exitCode, "reason": r.reason,
			"startedAt": ts(r.started), "finishedAt": ts(r.end), "containerID": cs["containerID"]}}
		phase, ready = "Failed", "False"
		if r.exitCode == 0 {
			phase = "Succeeded"
		}
	}
	condAt := r.started
	if !r.end.IsZero() {
		condAt = r.end
	}
	conds := []any{
		map[string]any{"type": "Initialized", "status": "True", "lastTransitionTime": ts(r.created.Add(2 * time.Second)), "lastProbeTime": nil},
		map[string]any{"type": "Ready", "status": ready, "lastTransitionTime": ts(condAt), "lastProbeTime": nil},
		map[string]any{"type": "ContainersReady", "status": ready, "lastTransitionTime": ts(condAt), "lastProbeTime": nil},
		map[string]any{"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(r.created.Add(time.Second)), "lastProbeTime": nil},
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": r.name, "namespace": ns, "uid": uid("pod", r.name), "creationTimestamp": ts(r.created),
			"labels": labels, "ownerReferences": []any{owner}},
		"spec": map[string]any{"containers": []any{container}, "nodeName": r.node, "restartPolicy": "Never",
			"volumes":                       []any{map[string]any{"name": "dshm", "emptyDir": map[string]any{"medium": "Memory", "sizeLimit": "64Gi"}}},
			"terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler"},
		"status": map[string]any{"phase": phase, "conditions": conds, "containerStatuses": []any{cs},
			"startTime": ts(r.created.Add(time.Second)), "hostIP": "10.0.1.1", "podIP": "10.244.0.1", "qosClass": "BestEffort"},
	}
}

// podEvents are the kubelet's and the scheduler's events of a pod's life; a container the
// operator stopped gets the kubelet's Killing.
func podEvents(r replica) []map[string]any {
	ev := func(reason, msg, component string, at time.Time, n int) map[string]any {
		return map[string]any{
			"apiVersion": "v1", "kind": "Event", "type": "Normal", "reason": reason, "message": msg, "count": 1,
			"metadata":       map[string]any{"name": fmt.Sprintf("%s.%x", r.name, 0x189cab0000000000+uint64(n)), "namespace": ns, "creationTimestamp": ts(at)},
			"involvedObject": map[string]any{"apiVersion": "v1", "kind": "Pod", "name": r.name, "namespace": ns, "uid": uid("pod", r.name)},
			"source":         map[string]any{"component": component, "host": r.node},
			"firstTimestamp": ts(at), "lastTimestamp": ts(at), "eventTime": nil, "reportingComponent": component,
		}
	}
	evs := []map[string]any{
		ev("Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", ns, r.name, r.node), "default-scheduler", r.created.Add(time.Second), 0),
		ev("Pulled", fmt.Sprintf("Container image %q already present on machine", image), "kubelet", r.started.Add(-2*time.Second), 1),
		ev("Created", "Created container "+r.container, "kubelet", r.started.Add(-time.Second), 2),
		ev("Started", "Started container "+r.container, "kubelet", r.started, 3),
	}
	if !r.end.IsZero() && r.exitCode == 143 {
		evs = append(evs, ev("Killing", "Stopping container "+r.container, "kubelet", r.end.Add(-time.Second), 4))
	}
	return evs
}

func nodeObject(name string, created time.Time) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": name, "uid": uid("node", name), "creationTimestamp": ts(created.Add(-30 * 24 * time.Hour)),
			"labels": map[string]any{"kubernetes.io/hostname": name, "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
		"status": map[string]any{
			"capacity":    map[string]any{"cpu": "96", "memory": "1056Gi", "nvidia.com/gpu": "8"},
			"allocatable": map[string]any{"cpu": "95", "memory": "1050Gi", "nvidia.com/gpu": "8"},
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
				"lastHeartbeatTime": ts(created), "lastTransitionTime": ts(created.Add(-30 * 24 * time.Hour))}},
		},
	}
}
