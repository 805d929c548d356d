// Package samplegen writes large, deterministic PyTorchJob bundles for benchmarks and tests:
// N ranks (a master and N-1 workers), one rank failing of CUDA OOM and the others timing out in
// NCCL. What the logs hold between start-up and failure is the Kind: repetitive training steps
// (the common case), lines that rarely repeat, a number on every line, one huge line, or many
// tiny logs. The same options give the same bytes. samples/internal/genbundle is its command.
package samplegen

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ParseSize reads a byte size with an optional KiB, MiB or GiB suffix.
func ParseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

const (
	ns       = "ml"
	job      = "big-train"
	jobUID   = "5b1f2c9e-0000-4000-8000-00000000b16"
	start    = "2026-03-14T08:00:00Z"
	failRank = 37 // the rank that runs out of GPU memory (modulo the number of ranks)
)

func podName(i int) string {
	if i == 0 {
		return job + "-master-0"
	}
	return fmt.Sprintf("%s-worker-%d", job, i-1)
}

// Kind is what a generated bundle's logs hold between start-up and failure.
type Kind string

// The kinds of generated logs: each is a case where an index could cost more than a scan.
const (
	// Repetitive logs are training steps with periodic evaluation, checkpoint and warning
	// lines: a few shapes of line, repeated.
	Repetitive Kind = "repetitive"
	// Distinct logs hold lines that rarely repeat, as real ones do: printed samples and
	// generations, JSON events with ids, dataset paths, tokenizer dumps.
	Distinct Kind = "distinct"
	// Numbers logs are training steps that each carry a small number (0-199): any number
	// query ("step 100") could match almost every block of step lines.
	Numbers Kind = "numbers"
	// HugeLine logs hold one line with almost all of the log's bytes (a tensor printed whole).
	HugeLine Kind = "hugeline"
	// TinyFiles bundles hold many logs of a line or two: Containers logs per pod.
	TinyFiles Kind = "files"
)

// Kinds lists every Kind.
var Kinds = []Kind{Repetitive, Distinct, Numbers, HugeLine, TinyFiles}

// Options say what to generate.
type Options struct {
	Kind Kind
	// Ranks is how many pods (a master and Ranks-1 workers).
	Ranks int
	// Containers is how many logs each pod has (default 1; TinyFiles: 8).
	Containers int
	// Size is about how many bytes of logs, in total.
	Size int64
	Seed uint64
}

// Generate writes a bundle of repetitive training logs into dir, which must not exist: ranks
// pods (a master and ranks-1 workers) and about total bytes of logs. The same arguments give
// the same bytes.
func Generate(dir string, ranks int, total int64, seed uint64) error {
	return GenerateKind(dir, Options{Kind: Repetitive, Ranks: ranks, Size: total, Seed: seed})
}

// GenerateKind writes the bundle o describes into dir, which must not exist.
func GenerateKind(dir string, o Options) error {
	if o.Kind == "" {
		o.Kind = Repetitive
	}
	if !slices.Contains(Kinds, o.Kind) {
		return fmt.Errorf("unknown kind %q", o.Kind)
	}
	if o.Ranks < 1 {
		return fmt.Errorf("a bundle needs at least 1 rank, not %d", o.Ranks)
	}
	if o.Containers <= 0 {
		o.Containers = 1
		if o.Kind == TinyFiles {
			o.Containers = 8
		}
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists", dir)
	}
	ranks := o.Ranks
	t0, _ := time.Parse(time.RFC3339, start)
	perLog := o.Size / int64(ranks*o.Containers)
	// Steps are spaced so that every log covers the same wall-clock span.
	failAt := t0.Add(6 * time.Hour)
	write := func(rel, data string) error {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(data), 0o644)
	}
	if err := write("manifest.json", fmt.Sprintf(`{"formatVersion":1,"coronerVersion":"genbundle","collectedAt":"%s","serverVersion":"v1.30.4",`+
		`"target":{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","namespace":"%s","name":"%s","uid":"%s"},`+
		`"options":{"redact":true},"files":[],"errors":[],"redaction":{"enabled":true,"rules":[]}}`+"\n",
		failAt.Add(30*time.Minute).Format(time.RFC3339), ns, job, jobUID)); err != nil {
		return err
	}
	if err := write("resources/kubeflow.org/PyTorchJob/"+ns+"/"+job+".yaml", jobYAML(ranks, t0, failAt)); err != nil {
		return err
	}
	var vocab *vocabulary
	if o.Kind == Distinct {
		vocab = newVocabulary(o.Seed)
	}
	for i := 0; i < ranks; i++ {
		if err := write("resources/core/Pod/"+ns+"/"+podName(i)+".yaml", podYAML(i, o.Containers, t0, failAt)); err != nil {
			return err
		}
		for c := 0; c < o.Containers; c++ {
			lw := &logWriter{rank: i, ranks: ranks, container: c, budget: perLog, now: t0.Add(20 * time.Second), failAt: failAt,
				rng: rand.New(rand.NewPCG(o.Seed, uint64(i)|uint64(c)<<32)), host: podName(i), vocab: vocab}
			if err := lw.writeFile(filepath.Join(dir, "logs", ns, podName(i), containerName(c)+".log"), o.Kind); err != nil {
				return err
			}
		}
	}
	return nil
}

func containerName(c int) string {
	if c == 0 {
		return "pytorch"
	}
	return fmt.Sprintf("sidecar-%d", c)
}

func jobYAML(ranks int, t0, failAt time.Time) string {
	return fmt.Sprintf(`apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: %s
  namespace: %s
  uid: %s
  creationTimestamp: "%s"
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: registry.local/ml/llm:2.4.1}]}}
    Worker:
      replicas: %d
      template: {spec: {containers: [{name: pytorch, image: registry.local/ml/llm:2.4.1}]}}
status:
  conditions:
  - {type: Created, status: "True", reason: PyTorchJobCreated, lastTransitionTime: "%s"}
  - {type: Running, status: "False", reason: PyTorchJobRunning, lastTransitionTime: "%s"}
  - {type: Failed, status: "True", reason: PyTorchJobFailed, message: "PyTorchJob %s is failed because 1 Worker replica(s) failed.", lastTransitionTime: "%s"}
  replicaStatuses:
    Master: {failed: 1}
    Worker: {failed: %d}
`, job, ns, jobUID, t0.Format(time.RFC3339), ranks-1, t0.Format(time.RFC3339), failAt.Add(11*time.Minute).Format(time.RFC3339),
		job, failAt.Add(11*time.Minute).Format(time.RFC3339), ranks-1)
}

func podYAML(i, containers int, t0, failAt time.Time) string {
	role, idx := "worker", i-1
	if i == 0 {
		role, idx = "master", 0
	}
	end := failAt.Add(10*time.Minute + 5*time.Second)
	if i == failRank%64 {
		end = failAt.Add(2 * time.Second)
	}
	var specs, statuses strings.Builder
	for c := 0; c < containers; c++ {
		name := containerName(c)
		fmt.Fprintf(&specs, `  - name: %s
    image: registry.local/ml/llm:2.4.1
`, name)
		if c == 0 {
			specs.WriteString(`    resources: {limits: {nvidia.com/gpu: "8", memory: 800Gi}, requests: {nvidia.com/gpu: "8", memory: 800Gi}}
    volumeMounts: [{name: dshm, mountPath: /dev/shm}]
`)
		}
		fmt.Fprintf(&statuses, `  - name: %s
    image: registry.local/ml/llm:2.4.1
    imageID: registry.local/ml/llm@sha256:4f1b
    ready: false
    restartCount: 0
    state: {terminated: {reason: Error, exitCode: 1, startedAt: "%s", finishedAt: "%s"}}
`, name, t0.Add(20*time.Second).Format(time.RFC3339), end.Format(time.RFC3339))
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  uid: 7c0d0000-0000-4000-8000-%012d
  creationTimestamp: "%s"
  labels:
    training.kubeflow.org/job-name: %s
    training.kubeflow.org/replica-type: %s
    training.kubeflow.org/replica-index: "%d"
  ownerReferences:
  - {apiVersion: kubeflow.org/v1, kind: PyTorchJob, name: %s, uid: %s, controller: true}
spec:
  nodeName: gpu-node-%02d
  containers:
%s  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 64Gi}}]
status:
  phase: Failed
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "%s"}
  containerStatuses:
%s`, podName(i), ns, i, t0.Format(time.RFC3339), job, role, idx, job, jobUID, i/8, specs.String(), t0.Format(time.RFC3339),
		statuses.String())
}

// logWriter writes one log: start-up, NCCL init, a config dump, then the lines of its kind
// until the byte budget is used, then the failure (OOM on failRank, a watchdog timeout
// elsewhere).
type logWriter struct {
	w                      *bufio.Writer
	rank, ranks, container int
	budget, written        int64
	now, failAt            time.Time
	rng                    *rand.Rand
	host                   string
	vocab                  *vocabulary
	buf                    []byte
}

// line writes one timestamped line.
func (l *logWriter) line(format string, args ...any) {
	b := l.now.UTC().AppendFormat(l.buf[:0], "2006-01-02T15:04:05.000000000Z")
	b = append(b, ' ')
	b = fmt.Appendf(b, format, args...)
	b = append(b, '\n')
	l.written += int64(len(b))
	l.w.Write(b)
	l.buf = b
}

func (l *logWriter) writeFile(path string, kind Kind) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	l.w = bufio.NewWriterSize(f, 1<<20)
	switch {
	case kind == TinyFiles:
		l.tiny()
	case l.container > 0:
		l.sidecar()
	default:
		l.startup()
		// Reserve room for the failure and its traceback.
		l.budget -= 4096
		switch kind {
		case Repetitive, Numbers:
			l.steps(kind == Numbers)
		case Distinct:
			l.distinct()
		case HugeLine:
			l.hugeLine()
		}
		l.failure()
	}
	if err := l.w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (l *logWriter) startup() {
	rank, host := l.rank, l.host
	l.line("[%s] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.", l.now.Format("2006-01-02 15:04:05,000"))
	l.line("%s:%d:%d [0] NCCL INFO Bootstrap : Using eth0:10.244.%d.%d<0>", host, 57, 57, rank/8, 10+rank%200)
	l.line("%s:%d:%d [0] NCCL INFO NCCL version 2.21.5+cuda12.4", host, 57, 57)
	for c := 0; c < 8; c++ {
		l.line("%s:%d:%d [%d] NCCL INFO Channel %02d/32 :    0   1   2   3   4   5   6   7", host, 57, 60+c, c, c)
	}
	l.line("%s:%d:%d [0] NCCL INFO comm 0x55d5c1a0 rank %d nranks %d cudaDev 0 busId 41000 - Init COMPLETE", host, 57, 57, rank, l.ranks)
	l.line("[rank%d]: config: {'max_grad_norm_error_if_nonfinite': False, 'timeout': 1800, 'nan_to_num': False, 'errors': 'ignore', 'lr': 0.0003}", rank)
}

// tick moves the clock so that lines of about size bytes spread over the time to failAt.
func (l *logWriter) tick(size int) {
	left := l.budget - l.written
	if left < int64(size) {
		left = int64(size)
	}
	l.now = l.now.Add(l.failAt.Sub(l.now) / time.Duration(left/int64(size)+1))
}

// steps writes training steps with periodic evaluation, checkpoint, warning and NCCL lines;
// with samples, each step line also carries a number from 0 to 199.
func (l *logWriter) steps(samples bool) {
	rank, host, rng := l.rank, l.host, l.rng
	loss := 3.2 + rng.Float64()*0.2
	for step := 1; l.written < l.budget; step++ {
		l.tick(150)
		loss = loss*0.99995 + (rng.Float64()-0.5)*0.01
		if samples {
			l.line("[rank%d]: step %d | samples %d | loss %.4f | lr %.2e | grad_norm %.3f | tokens/s %d | mem %.1fGiB", rank, step, rng.IntN(200), loss, 3e-4*(1-float64(step)/1e7), 0.5+rng.Float64(), 40000+rng.IntN(2000), 60+rng.Float64()*10)
		} else {
			l.line("[rank%d]: step %d | loss %.4f | lr %.2e | grad_norm %.3f | tokens/s %d | mem %.1fGiB", rank, step, loss, 3e-4*(1-float64(step)/1e7), 0.5+rng.Float64(), 40000+rng.IntN(2000), 60+rng.Float64()*10)
		}
		switch {
		case step%500 == 0:
			l.line("[rank%d]: eval step %d | val_loss %.4f | ppl %.2f | took %.1fs", rank, step, loss+0.05, 2.718*loss, 10+rng.Float64()*5)
		case step%2000 == 0:
			l.line("[rank%d]: saving checkpoint to /mnt/ckpt/%s/step_%07d (sharded, %d files)", rank, job, step, 8)
		case step%777 == 0:
			l.line("/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py:617: UserWarning: This DataLoader will create 8 worker processes in total. Our suggested max number of worker in current system is 6, which is smaller than what this DataLoader is going to create.")
		case step%1013 == 0:
			l.line("%s:%d:%d [0] NCCL INFO [Service thread] Connection closed by localRank %d", host, 57, 80, rng.IntN(8))
		}
	}
}

// distinct writes lines that rarely repeat: printed samples and generations of words, JSON
// events with ids, dataset paths, tokenizer dumps, with a step line now and then.
func (l *logWriter) distinct() {
	rank, rng, v := l.rank, l.rng, l.vocab
	var sb strings.Builder
	words := func(n int) string {
		sb.Reset()
		for k := 0; k < n; k++ {
			if k > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(v.word(rng))
		}
		return sb.String()
	}
	for n := 1; l.written < l.budget; n++ {
		l.tick(160)
		switch r := rng.IntN(100); {
		case r < 40:
			l.line("[rank%d]: generation: %s", rank, words(8+rng.IntN(24)))
		case r < 65:
			l.line(`{"time": "%s", "level": "info", "event": "request", "request_id": "%016x", "user": "%s", "latency_ms": %d, "prompt": "%s"}`,
				l.now.Format(time.RFC3339Nano), rng.Uint64(), v.word(rng), rng.IntN(5000), words(4+rng.IntN(8)))
		case r < 78:
			l.line("[rank%d]: loading /datasets/%s/%s-%s/%s_%05d.parquet (%d rows)", rank, v.word(rng), v.word(rng), v.word(rng), v.word(rng), rng.IntN(100000), rng.IntN(1<<20))
		case r < 92:
			sb.Reset()
			for k, m := 0, 4+rng.IntN(16); k < m; k++ {
				if k > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString("'\u2581")
				sb.WriteString(v.word(rng))
				sb.WriteByte('\'')
			}
			l.line("[rank%d]: tokens: [%s]", rank, sb.String())
		default:
			l.line("[rank%d]: step %d | loss %.4f | grad_norm %.3f", rank, n, 2+rng.Float64(), 0.5+rng.Float64())
		}
	}
}

// hugeLine writes the budget as one line: a tensor of token ids printed whole.
func (l *logWriter) hugeLine() {
	l.tick(int(max(l.budget, 1)))
	b := l.now.UTC().AppendFormat(nil, "2006-01-02T15:04:05.000000000Z")
	b = fmt.Appendf(b, " [rank%d]: input_ids: tensor([[", l.rank)
	for l.written+int64(len(b)) < l.budget {
		b = fmt.Appendf(b, "%6d, ", l.rng.IntN(50000))
		if len(b) >= 64<<10 {
			l.w.Write(b)
			l.written += int64(len(b))
			b = b[:0]
		}
	}
	b = append(b, "]])\n"...)
	l.w.Write(b)
	l.written += int64(len(b))
}

// sidecar writes a second container's log: a few lines a minute until the budget is used.
func (l *logWriter) sidecar() {
	for n := 1; l.written < l.budget; n++ {
		l.tick(90)
		l.line("%s sidecar %d: uploaded metrics batch %d (%d bytes) to http://metrics.ml.svc:9090", l.host, l.container, n, 1000+l.rng.IntN(9000))
	}
}

// tiny writes a log of a line or two (a container that started and stopped), or more lines
// when the budget allows.
func (l *logWriter) tiny() {
	l.line("%s: starting %s (rank %d)", l.host, containerName(l.container), l.rank)
	for l.written < l.budget {
		l.tick(40)
		l.line("%s: exit status %d", containerName(l.container), l.rng.IntN(3))
	}
}

func (l *logWriter) failure() {
	rank := l.rank
	if rank == failRank%l.ranks {
		l.now = l.failAt
		l.line("[rank%d]: Traceback (most recent call last):", rank)
		l.line("[rank%d]:   File \"/workspace/train.py\", line 211, in <module>", rank)
		l.line("[rank%d]:     loss = model(**batch).loss", rank)
		l.line("[rank%d]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.21 GiB is free. Process 5521 has 77.93 GiB memory in use.", rank)
		return
	}
	l.now = l.failAt.Add(10 * time.Minute)
	l.line("[rank%d]:[E314 14:10:00.182731 ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.", rank, rank)
	l.line("[rank%d]:[E314 14:10:00.183000 ProcessGroupNCCL.cpp:1575] [PG 0 Rank %d] Exception (either an error or timeout) detected by watchdog at work: 48120, last enqueued NCCL work: 48121, last completed NCCL work: 48119.", rank, rank)
}

// vocabulary is a fixed set of made-up words, drawn with a Zipf law: a few are common, most
// are rare, as in text.
type vocabulary struct {
	words []string
}

func newVocabulary(seed uint64) *vocabulary {
	rng := rand.New(rand.NewPCG(seed, 1<<40))
	syllables := strings.Fields("ka to ri mu se na lo pe vi da ge zu ha mo ti re ba cu fi lu no sa we xi yo")
	seen := map[string]bool{}
	v := &vocabulary{}
	for len(v.words) < 30000 {
		var sb strings.Builder
		for k, n := 0, 1+rng.IntN(4); k < n; k++ {
			sb.WriteString(syllables[rng.IntN(len(syllables))])
		}
		if w := sb.String(); !seen[w] {
			seen[w] = true
			v.words = append(v.words, w)
		}
	}
	return v
}

func (v *vocabulary) word(rng *rand.Rand) string {
	return v.words[zipfIndex(rng, len(v.words))]
}

// zipfIndex draws an index below n with probability about proportional to 1/(i+1).
func zipfIndex(rng *rand.Rand, n int) int {
	// The inverse of the harmonic law's cumulative distribution, ln(i+1)/ln(n+1).
	return int(math.Exp(rng.Float64()*math.Log(float64(n+1)))) - 1
}
