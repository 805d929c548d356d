package testcluster

import (
	"fmt"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// PyTorchJobs is the resource of the synthetic jobs.
var PyTorchJobs = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}

// FailJob makes a job created with Running fail as the training operator reports it: its
// pods fail first (worker 1, out of GPU memory, then the others), then the job.
func (c *Cluster) FailJob(t testing.TB, j Job) {
	t.Helper()
	order := []int{}
	if j.Workers >= 2 {
		order = append(order, 2)
	}
	for i := 0; i <= j.Workers; i++ {
		if i != 2 {
			order = append(order, i)
		}
	}
	for _, i := range order {
		c.setStatus(t, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, j.Namespace, j.PodName(i), j.podStatus(i, true))
	}
	c.FailJobStatus(t, j)
}

// FailJobStatus marks the job Failed, and nothing else (its pods may be gone already).
func (c *Cluster) FailJobStatus(t testing.TB, j Job) {
	t.Helper()
	c.setStatus(t, PyTorchJobs, j.Namespace, j.Name, j.jobStatus(true))
}

// setStatus replaces an object's status with a YAML one.
func (c *Cluster) setStatus(t testing.TB, gvr schema.GroupVersionResource, ns, name, status string) {
	t.Helper()
	var st map[string]any
	if err := yaml.Unmarshal([]byte(status), &st); err != nil {
		t.Fatalf("status of %s: %v", name, err)
	}
	ri := c.Dyn.Resource(gvr).Namespace(ns)
	for attempt := 0; ; attempt++ {
		u, err := ri.Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s %s: %v", gvr.Resource, name, err)
		}
		u.Object["status"] = st
		if _, err = ri.UpdateStatus(ctx(t), u, metav1.UpdateOptions{}); err == nil {
			return
		} else if attempt == 5 {
			t.Fatalf("update status of %s %s: %v", gvr.Resource, name, err)
		}
	}
}

// ServiceAccountToken creates a service account and returns a token of it, as the
// kubelet would mount it in a pod.
func (c *Cluster) ServiceAccountToken(t testing.TB, ns, name string) string {
	t.Helper()
	c.ensureNamespace(t, ns)
	sa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": name, "namespace": ns}}}
	if _, err := c.Dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}).Namespace(ns).Create(ctx(t), sa, metav1.CreateOptions{}); err != nil && !isAlreadyExists(err) {
		t.Fatalf("create service account %s/%s: %v", ns, name, err)
	}
	expiry := int64(3600)
	tr, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx(t), name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// Parallel runs fns, n at a time, each with a testing.TB of its own whose Fatal ends only
// that function (testing's FailNow may only be called from the test's goroutine); once all
// have returned, the first failure fails t.
func Parallel(t testing.TB, n int, fns ...func(tb testing.TB)) {
	t.Helper()
	var (
		mu    sync.Mutex
		first string
		wg    sync.WaitGroup
		sem   = make(chan struct{}, n)
	)
	for _, fn := range fns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			tb := &goTB{TB: t}
			defer func() {
				if r := recover(); r != nil && r != (goExit{}) {
					panic(r)
				}
				mu.Lock()
				defer mu.Unlock()
				if tb.msg != "" && first == "" {
					first = tb.msg
				}
			}()
			fn(tb)
		}()
	}
	wg.Wait()
	if first != "" {
		t.Fatal(first)
	}
}

type goExit struct{}

// goTB is a testing.TB for a goroutine: Fatal records the message and ends the goroutine's
// function (Parallel recovers it).
type goTB struct {
	testing.TB
	msg string
}

func (g *goTB) Fatalf(format string, args ...any) {
	g.msg = fmt.Sprintf(format, args...)
	panic(goExit{})
}
func (g *goTB) Fatal(args ...any) { g.msg = fmt.Sprint(args...); panic(goExit{}) }
func (g *goTB) FailNow()          { g.msg = "FailNow"; panic(goExit{}) }
