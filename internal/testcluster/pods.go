package testcluster

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Claim is the content of a PersistentVolumeClaim, as the fake kubelet mounts it into the pods
// it runs: its files, at paths from the claim's root ("/comm_lib_trace_rank_0").
func (k *Kubelet) Claim(ns, name string) *Container {
	return k.Container(ns, "claim:"+name, "")
}

// Program runs a pod's only container: args are its args (after the image's entrypoint), root
// a directory holding its mounts (the container's path P is root+P), out its log. It returns
// the exit code.
type Program func(ctx context.Context, args []string, root string, out io.Writer) int

// RunPods makes the kubelet run, as a node's kubelet does, the pods bound to a node (created
// with a nodeName, there is no scheduler) that carry the label app.kubernetes.io/name=name:
// their PersistentVolumeClaims are mounted (copied into root, read-only), the pod is Running
// while run runs, then Succeeded or Failed with its exit code, and its output is its log. Each
// pod runs once; it stops with the test.
func (k *Kubelet) RunPods(t testing.TB, name string, run Program) {
	k.mu.Lock()
	kube := k.kube
	k.mu.Unlock()
	if kube == nil {
		t.Fatal("RunPods: the kubelet has no cluster yet (apply a job first)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	seen := map[string]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			l, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
			if err == nil {
				for i := range l.Items {
					p := &l.Items[i]
					if seen[string(p.UID)] || p.Spec.NodeName == "" || p.Status.Phase != "" && p.Status.Phase != corev1.PodPending {
						continue
					}
					seen[string(p.UID)] = true
					wg.Add(1)
					go func() {
						defer wg.Done()
						k.runPod(ctx, p, run)
					}()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

func (k *Kubelet) runPod(ctx context.Context, p *corev1.Pod, run Program) {
	if len(p.Spec.Containers) != 1 {
		return
	}
	c := p.Spec.Containers[0]
	root, err := os.MkdirTemp("", "coroner-pod-")
	if err != nil {
		return
	}
	defer os.RemoveAll(root)
	for _, m := range c.VolumeMounts {
		for _, v := range p.Spec.Volumes {
			if v.Name != m.Name || v.PersistentVolumeClaim == nil {
				continue
			}
			claim := k.Claim(p.Namespace, v.PersistentVolumeClaim.ClaimName)
			claim.mu.Lock()
			for name, data := range claim.files {
				rel, ok := strings.CutPrefix(name, filepath.Join("/", m.SubPath)+"/")
				if m.SubPath == "" {
					rel, ok = strings.TrimPrefix(name, "/"), true
				}
				if !ok {
					continue
				}
				dst := filepath.Join(root, m.MountPath, rel)
				if os.MkdirAll(filepath.Dir(dst), 0o755) == nil {
					_ = os.WriteFile(dst, data, 0o444)
				}
			}
			claim.mu.Unlock()
		}
	}
	now := func() metav1.Time { return metav1.NewTime(time.Now().UTC().Truncate(time.Second)) }
	started := now()
	k.setPodStatus(ctx, p, corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started, ContainerStatuses: []corev1.ContainerStatus{
		{Name: c.Name, Image: c.Image, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}})
	var out bytes.Buffer
	code := run(ctx, c.Args, root, &out)
	var log bytes.Buffer
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		if line != "" {
			log.WriteString(ts + " " + strings.TrimSuffix(line, "\n") + "\n")
		}
	}
	k.SetLog(p.Namespace, p.Name, c.Name, false, log.Bytes())
	phase, reason := corev1.PodSucceeded, "Completed"
	if code != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	k.setPodStatus(ctx, p, corev1.PodStatus{Phase: phase, StartTime: &started, ContainerStatuses: []corev1.ContainerStatus{
		{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(code), Reason: reason, StartedAt: started, FinishedAt: now()}}}}})
}

// setPodStatus writes a pod's status, as the kubelet reports it (gone: nothing to do).
func (k *Kubelet) setPodStatus(ctx context.Context, p *corev1.Pod, st corev1.PodStatus) {
	k.mu.Lock()
	pods := k.kube.CoreV1().Pods(p.Namespace)
	k.mu.Unlock()
	for range 5 {
		cur, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return
		}
		cur.Status = st
		if _, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err == nil {
			return
		}
	}
}
