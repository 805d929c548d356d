// Package samplegen writes a large, deterministic PyTorchJob bundle for benchmarks and tests:
// N ranks (a master and N-1 workers), each with a realistic, repetitive training log, one rank
// failing of CUDA OOM and the others timing out in NCCL. The same arguments give the same bytes.
// samples/internal/genbundle is its command.
package samplegen

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// Generate writes the bundle into dir, which must not exist: ranks pods (a master and
// ranks-1 workers) and about total bytes of logs. The same arguments give the same bytes.
func Generate(dir string, ranks int, total int64, seed uint64) error {
	if ranks < 2 {
		return fmt.Errorf("a bundle needs at least 2 ranks, not %d", ranks)
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists", dir)
	}
	t0, _ := time.Parse(time.RFC3339, start)
	perRank := total / int64(ranks)
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
	for i := 0; i < ranks; i++ {
		if err := write("resources/core/Pod/"+ns+"/"+podName(i)+".yaml", podYAML(i, t0, failAt)); err != nil {
			return err
		}
		if err := writeLog(filepath.Join(dir, "logs", ns, podName(i), "pytorch.log"), i, ranks, perRank, t0, failAt, seed); err != nil {
			return err
		}
	}
	return nil
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

func podYAML(i int, t0, failAt time.Time) string {
	role, idx := "worker", i-1
	if i == 0 {
		role, idx = "master", 0
	}
	end := failAt.Add(10*time.Minute + 5*time.Second)
	if i == failRank%64 {
		end = failAt.Add(2 * time.Second)
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
  - name: pytorch
    image: registry.local/ml/llm:2.4.1
    resources: {limits: {nvidia.com/gpu: "8", memory: 800Gi}, requests: {nvidia.com/gpu: "8", memory: 800Gi}}
    volumeMounts: [{name: dshm, mountPath: /dev/shm}]
  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 64Gi}}]
status:
  phase: Failed
  conditions:
  - {type: PodScheduled, status: "True", lastTransitionTime: "%s"}
  containerStatuses:
  - name: pytorch
    image: registry.local/ml/llm:2.4.1
    imageID: registry.local/ml/llm@sha256:4f1b
    ready: false
    restartCount: 0
    state: {terminated: {reason: Error, exitCode: 1, startedAt: "%s", finishedAt: "%s"}}
`, podName(i), ns, i, t0.Format(time.RFC3339), job, role, idx, job, jobUID, i/8, t0.Format(time.RFC3339),
		t0.Add(20*time.Second).Format(time.RFC3339), end.Format(time.RFC3339))
}

// writeLog writes one rank's log: startup, NCCL init, a config dump, then step lines with
// periodic evaluation, checkpoint and warning lines until the byte budget is used, then the
// failure (OOM on failIdx, a watchdog timeout elsewhere).
func writeLog(path string, rank, ranks int, budget int64, t0, failAt time.Time, seed uint64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(seed, uint64(rank)))
	host := podName(rank)
	var written int64
	now := t0.Add(20 * time.Second)
	line := func(format string, args ...any) {
		s := now.UTC().Format("2006-01-02T15:04:05.000000000Z") + " " + fmt.Sprintf(format, args...) + "\n"
		written += int64(len(s))
		w.WriteString(s)
	}
	line("[%s] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.", now.Format("2006-01-02 15:04:05,000"))
	line("%s:%d:%d [0] NCCL INFO Bootstrap : Using eth0:10.244.%d.%d<0>", host, 57, 57, rank/8, 10+rank%200)
	line("%s:%d:%d [0] NCCL INFO NCCL version 2.21.5+cuda12.4", host, 57, 57)
	for c := 0; c < 8; c++ {
		line("%s:%d:%d [%d] NCCL INFO Channel %02d/32 :    0   1   2   3   4   5   6   7", host, 57, 60+c, c, c)
	}
	line("%s:%d:%d [0] NCCL INFO comm 0x55d5c1a0 rank %d nranks %d cudaDev 0 busId 41000 - Init COMPLETE", host, 57, 57, rank, ranks)
	line("[rank%d]: config: {'max_grad_norm_error_if_nonfinite': False, 'timeout': 1800, 'nan_to_num': False, 'errors': 'ignore', 'lr': 0.0003}", rank)
	// Reserve room for the failure and its traceback.
	budget -= 4096
	span := failAt.Sub(now)
	steps := int(budget / 150)
	if steps < 1 {
		steps = 1
	}
	dt := span / time.Duration(steps)
	loss := 3.2 + rng.Float64()*0.2
	for step := 1; written < budget; step++ {
		now = now.Add(dt)
		loss = loss*0.99995 + (rng.Float64()-0.5)*0.01
		line("[rank%d]: step %d | loss %.4f | lr %.2e | grad_norm %.3f | tokens/s %d | mem %.1fGiB", rank, step, loss, 3e-4*(1-float64(step)/1e7), 0.5+rng.Float64(), 40000+rng.IntN(2000), 60+rng.Float64()*10)
		switch {
		case step%500 == 0:
			line("[rank%d]: eval step %d | val_loss %.4f | ppl %.2f | took %.1fs", rank, step, loss+0.05, 2.718*loss, 10+rng.Float64()*5)
		case step%2000 == 0:
			line("[rank%d]: saving checkpoint to /mnt/ckpt/%s/step_%07d (sharded, %d files)", rank, job, step, 8)
		case step%777 == 0:
			line("/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py:617: UserWarning: This DataLoader will create 8 worker processes in total. Our suggested max number of worker in current system is 6, which is smaller than what this DataLoader is going to create.")
		case step%1013 == 0:
			line("%s:%d:%d [0] NCCL INFO [Service thread] Connection closed by localRank %d", host, 57, 80, rng.IntN(8))
		}
	}
	if rank == failRank%ranks {
		now = failAt
		line("[rank%d]: Traceback (most recent call last):", rank)
		line("[rank%d]:   File \"/workspace/train.py\", line 211, in <module>", rank)
		line("[rank%d]:     loss = model(**batch).loss", rank)
		line("[rank%d]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.21 GiB is free. Process 5521 has 77.93 GiB memory in use.", rank)
	} else {
		now = failAt.Add(10 * time.Minute)
		line("[rank%d]:[E314 14:10:00.182731 ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.", rank, rank)
		line("[rank%d]:[E314 14:10:00.183000 ProcessGroupNCCL.cpp:1575] [PG 0 Rank %d] Exception (either an error or timeout) detected by watchdog at work: 48120, last enqueued NCCL work: 48121, last completed NCCL work: 48119.", rank, rank)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
