//go:build e2e

package main

// The rights of coroner watch's service account, as deploy/watch/ grants them, tried request by
// request against a real kube-apiserver with impersonation: what RBAC allows, what it forbids,
// and what the ValidatingAdmissionPolicies of deploy/watch/25-admission.yaml refuse of what RBAC
// allows. They run under `make e2e`; `go test` alone skips them.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/testcluster"
	"github.com/coroner-dev/coroner/watch"
)

// watchUser is the user the API server sees for the watcher's service account.
const watchUser = "system:serviceaccount:coroner:coroner-watch"

var (
	colossalAIJobs = schema.GroupVersionResource{Group: "batch.tensorstack.dev", Version: "v1beta1", Resource: "colossalaijobs"}
	batchJobs      = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

// asUser returns clients that act as user (impersonation by the admin), with the groups the
// API server gives a service account.
func asUser(c *testcluster.Cluster, user string) (kubernetes.Interface, dynamic.Interface) {
	cfg := rest.CopyConfig(c.Admin)
	groups := []string{"system:authenticated"}
	if rest, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		ns, _, _ := strings.Cut(rest, ":")
		groups = append(groups, "system:serviceaccounts", "system:serviceaccounts:"+ns)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
}

// The outcome of a request: allowed, forbidden by the authorizer (RBAC), or refused by a
// named admission policy after RBAC allowed it.
const allowed = "allowed"

func forbiddenByRBAC(verb string) string { return "rbac: cannot " + verb }
func deniedBy(policy string) string      { return "policy: " + policy }

// outcome says which of the three an error is.
func outcome(err error) string {
	if err == nil {
		return allowed
	}
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, "ValidatingAdmissionPolicy '"); ok && strings.Contains(msg, "denied request") {
		name, _, _ := strings.Cut(after, "'")
		return deniedBy(name)
	}
	if apierrors.IsForbidden(err) {
		if _, after, ok := strings.Cut(msg, " cannot "); ok {
			verb, _, _ := strings.Cut(after, " ")
			return forbiddenByRBAC(verb)
		}
	}
	return "error: " + msg
}

// rbacCase is one request and what must come of it.
type rbacCase struct {
	name string
	do   func(ctx context.Context) error
	want string
}

func runRBACTable(t *testing.T, cases []rbacCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do(t.Context())
			require.Equal(t, tc.want, outcome(err), "%v", err)
		})
	}
}

// waitPolicies waits until both admission policies of deploy/watch/ are enforced (a policy
// takes effect a moment after it is created): until probe, sending a patch each must refuse
// (a label with a new value each time, so that it is never a no-op), is refused by it. (Their
// type check is reported by kube-controller-manager, which the test cluster does not run; an
// expression that does not compile refuses every request, which the allowed rows of the
// tables would show.)
func waitPolicies(t *testing.T, probe func(ctx context.Context, policy string, patch []byte) error) {
	t.Helper()
	n := 0
	for _, name := range []string{"coroner-watch-hold-pods", "coroner-watch-annotate"} {
		waitFor(t, 30*time.Second, "the policy "+name+" to be enforced", func() bool {
			n++
			patch := fmt.Appendf(nil, `{"metadata":{"labels":{"coroner-test-probe":"%d"}}}`, n)
			return outcome(probe(t.Context(), name, patch)) == deniedBy(name)
		})
	}
}

func TestWatchRBACE2E(t *testing.T) {
	env := startWatchE2E(t)
	c, k := env.c, env.kubelet
	const ns = "rbac-tenant"
	j := testcluster.Job{Namespace: ns, Name: "tj", Workers: 1, Running: true}
	c.CreateJob(t, k, j)
	probe := testcluster.Job{Namespace: ns, Name: "probe", Workers: 0, Running: true}
	c.CreateJob(t, k, probe)
	c.ApplyYAML(t, k, `
apiVersion: batch.tensorstack.dev/v1beta1
kind: ColossalAIJob
metadata: {name: cai, namespace: rbac-tenant}
spec: {launcher: {image: train:1}}
status: {phase: Running}
---
apiVersion: batch/v1
kind: Job
metadata: {name: export, namespace: rbac-tenant, labels: {coroner.dev/watch: "true"}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: export, image: export:1}]
---
apiVersion: v1
kind: Secret
metadata: {name: hf-token, namespace: rbac-tenant}
stringData: {token: hf_0123456789abcdef}
`)
	pod := j.PodName(1)
	kube, dyn := asUser(c, watchUser)
	patchPod := func(typ types.PatchType, body string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods(ns).Patch(ctx, pod, typ, []byte(body), metav1.PatchOptions{})
			return err
		}
	}
	patchObj := func(gvr schema.GroupVersionResource, name string, typ types.PatchType, body string, sub ...string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, typ, []byte(body), metav1.PatchOptions{}, sub...)
			return err
		}
	}
	const (
		hold       = `{"metadata":{"finalizers":["` + watch.Finalizer + `"]}}`
		release    = `{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + watch.Finalizer + `"]}}`
		annotation = `{"metadata":{"annotations":{"` + watch.AnnotationSummary + `":"coroner: cuda-oom at tj-worker-0"}}}`
	)
	waitPolicies(t, func(ctx context.Context, policy string, patch []byte) error {
		if policy == "coroner-watch-hold-pods" {
			_, err := kube.CoreV1().Pods(ns).Patch(ctx, probe.PodName(0), types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			return err
		}
		_, err := dyn.Resource(testcluster.PyTorchJobs).Namespace(ns).Patch(ctx, probe.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})

	runRBACTable(t, []rbacCase{
		// Pods: the finalizer, and nothing else.
		{"patch a pod: add the finalizer coroner.dev/hold", patchPod(types.StrategicMergePatchType, hold), allowed},
		{"patch a pod: add the finalizer and a label", patchPod(types.StrategicMergePatchType, `{"metadata":{"finalizers":["`+watch.Finalizer+`"],"labels":{"x":"y"}}}`), deniedBy("coroner-watch-hold-pods")},
		{"patch a pod: remove the finalizer coroner.dev/hold", patchPod(types.StrategicMergePatchType, release), allowed},
		{"patch a pod: add another finalizer", patchPod(types.StrategicMergePatchType, `{"metadata":{"finalizers":["example.com/keep"]}}`), deniedBy("coroner-watch-hold-pods")},
		{"patch a pod: a label", patchPod(types.MergePatchType, `{"metadata":{"labels":{"training.kubeflow.org/replica-type":"master"}}}`), deniedBy("coroner-watch-hold-pods")},
		{"patch a pod: an annotation", patchPod(types.MergePatchType, `{"metadata":{"annotations":{"coroner.dev/summary":"x"}}}`), deniedBy("coroner-watch-hold-pods")},
		{"patch a pod: drop its owner", patchPod(types.MergePatchType, `{"metadata":{"ownerReferences":null}}`), deniedBy("coroner-watch-hold-pods")},
		{"patch a pod: its image", patchPod(types.JSONPatchType, `[{"op":"replace","path":"/spec/containers/0/image","value":"evil:1"}]`), deniedBy("coroner-watch-hold-pods")},
		{"patch a pod: its active deadline", patchPod(types.MergePatchType, `{"spec":{"activeDeadlineSeconds":1}}`), deniedBy("coroner-watch-hold-pods")},
		{"update a pod (PUT), even only to add the finalizer", func(ctx context.Context) error {
			p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			require.NoError(t, err)
			p.Finalizers = append(p.Finalizers, watch.Finalizer)
			_, err = kube.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
			return err
		}, forbiddenByRBAC("update")},
		{"patch pods/status", func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, []byte(`{"status":{"phase":"Succeeded"}}`), metav1.PatchOptions{}, "status")
			return err
		}, forbiddenByRBAC("patch")},
		{"patch pods/ephemeralcontainers", func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods(ns).Patch(ctx, pod, types.StrategicMergePatchType,
				[]byte(`{"spec":{"ephemeralContainers":[{"name":"debug","image":"busybox","command":["sh"]}]}}`), metav1.PatchOptions{}, "ephemeralcontainers")
			return err
		}, forbiddenByRBAC("patch")},
		{"exec in a pod", func(ctx context.Context) error {
			return kube.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod).SubResource("exec").
				Param("container", "pytorch").Param("command", "sh").Param("stdout", "true").Do(ctx).Error()
		}, forbiddenByRBAC("create")},
		{"delete a pod", func(ctx context.Context) error {
			return kube.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{})
		}, forbiddenByRBAC("delete")},
		{"create a pod", func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "miner"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "m", Image: "miner:1"}}}}, metav1.CreateOptions{})
			return err
		}, forbiddenByRBAC("create")},
		{"list pods in every namespace", func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return err
		}, allowed},

		// Jobs: the annotations coroner.dev/*, and nothing else.
		{"patch a PyTorchJob: a coroner.dev annotation", patchObj(testcluster.PyTorchJobs, j.Name, types.MergePatchType, annotation), allowed},
		{"patch a PyTorchJob: remove a coroner.dev annotation", patchObj(testcluster.PyTorchJobs, j.Name, types.MergePatchType, `{"metadata":{"annotations":{"coroner.dev/summary":null}}}`), allowed},
		{"patch a PyTorchJob: another annotation", patchObj(testcluster.PyTorchJobs, j.Name, types.MergePatchType, `{"metadata":{"annotations":{"example.com/owner":"x"}}}`), deniedBy("coroner-watch-annotate")},
		{"patch a PyTorchJob: a coroner.dev annotation and its spec", patchObj(testcluster.PyTorchJobs, j.Name, types.MergePatchType,
			`{"metadata":{"annotations":{"coroner.dev/trigger":"failed"}},"spec":{"runPolicy":{"suspend":true}}}`), deniedBy("coroner-watch-annotate")},
		{"patch a PyTorchJob: its spec", patchObj(testcluster.PyTorchJobs, j.Name, types.JSONPatchType,
			`[{"op":"replace","path":"/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0/image","value":"evil:1"}]`), deniedBy("coroner-watch-annotate")},
		{"patch a PyTorchJob: a label", patchObj(testcluster.PyTorchJobs, j.Name, types.MergePatchType, `{"metadata":{"labels":{"queue":"high"}}}`), deniedBy("coroner-watch-annotate")},
		{"patch a PyTorchJob: a finalizer", patchObj(testcluster.PyTorchJobs, j.Name, types.MergePatchType, `{"metadata":{"finalizers":["example.com/keep"]}}`), deniedBy("coroner-watch-annotate")},
		{"patch pytorchjobs/status", patchObj(testcluster.PyTorchJobs, j.Name, types.MergePatchType, `{"status":{"conditions":[]}}`, "status"), forbiddenByRBAC("patch")},
		{"update pytorchjobs/status", func(ctx context.Context) error {
			u, err := c.Dyn.Resource(testcluster.PyTorchJobs).Namespace(ns).Get(ctx, j.Name, metav1.GetOptions{})
			require.NoError(t, err)
			_, err = dyn.Resource(testcluster.PyTorchJobs).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
			return err
		}, forbiddenByRBAC("update")},
		{"delete a PyTorchJob", func(ctx context.Context) error {
			return dyn.Resource(testcluster.PyTorchJobs).Namespace(ns).Delete(ctx, j.Name, metav1.DeleteOptions{})
		}, forbiddenByRBAC("delete")},
		{"patch a ColossalAIJob: a coroner.dev annotation", patchObj(colossalAIJobs, "cai", types.MergePatchType, annotation), allowed},
		{"patch a ColossalAIJob: its spec", patchObj(colossalAIJobs, "cai", types.MergePatchType, `{"spec":{"launcher":{"image":"evil:1"}}}`), deniedBy("coroner-watch-annotate")},
		{"patch colossalaijobs/status", patchObj(colossalAIJobs, "cai", types.MergePatchType, `{"status":{"phase":"Succeeded"}}`, "status"), forbiddenByRBAC("patch")},
		{"patch a batch Job: a coroner.dev annotation", patchObj(batchJobs, "export", types.MergePatchType, annotation), allowed},
		{"patch a batch Job: suspend it", patchObj(batchJobs, "export", types.MergePatchType, `{"spec":{"suspend":true}}`), deniedBy("coroner-watch-annotate")},

		// Everything else: read what a collect reads, write Events, nothing more.
		{"create an Event on a job", func(ctx context.Context) error {
			_, err := kube.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "tj."},
				InvolvedObject: corev1.ObjectReference{Kind: "PyTorchJob", Namespace: ns, Name: j.Name}, Reason: watch.ReasonRootCause, Message: "m", Type: corev1.EventTypeWarning}, metav1.CreateOptions{})
			return err
		}, allowed},
		{"get a secret", func(ctx context.Context) error {
			_, err := kube.CoreV1().Secrets(ns).Get(ctx, "hf-token", metav1.GetOptions{})
			return err
		}, forbiddenByRBAC("get")},
		{"list secrets", func(ctx context.Context) error {
			_, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return err
		}, forbiddenByRBAC("list")},
		{"get a configmap", func(ctx context.Context) error {
			_, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err
		}, forbiddenByRBAC("get")},
		{"patch a node", func(ctx context.Context) error {
			_, err := kube.CoreV1().Nodes().Patch(ctx, j.NodeName(0), types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
			return err
		}, forbiddenByRBAC("patch")},
		{"get a node", func(ctx context.Context) error {
			_, err := kube.CoreV1().Nodes().Get(ctx, j.NodeName(0), metav1.GetOptions{})
			return err
		}, allowed},
		{"read another Lease than its own", func(ctx context.Context) error {
			_, err := kube.CoordinationV1().Leases("coroner").Get(ctx, "kube-scheduler", metav1.GetOptions{})
			return err
		}, forbiddenByRBAC("get")},
		{"create a service account token", func(ctx context.Context) error {
			_, err := kube.CoreV1().ServiceAccounts("coroner").CreateToken(ctx, "coroner-watch", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		}, forbiddenByRBAC("create")},
	})

	// The policies bind the watcher only: the tenant (here the admin) changes its own objects.
	t.Run("another user's patches are not the watcher's business", func(t *testing.T) {
		_, err := c.Kube.CoreV1().Pods(ns).Patch(t.Context(), pod, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		_, err = c.Dyn.Resource(testcluster.PyTorchJobs).Namespace(ns).Patch(t.Context(), j.Name, types.MergePatchType, []byte(`{"spec":{"runPolicy":{"suspend":true}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	})
	// What the allowed requests did, and what the denied ones did not.
	t.Run("the objects after the table", func(t *testing.T) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
		require.NoError(t, err)
		require.Empty(t, p.Finalizers)
		require.Equal(t, "train:1", p.Spec.Containers[0].Image)
		require.Empty(t, p.Annotations)
		require.Len(t, p.OwnerReferences, 1)
		u := pytorchJob(t, c, ns, j.Name)
		require.Empty(t, u.GetAnnotations())
		require.Empty(t, u.GetLabels())
		cai, err := c.Dyn.Resource(colossalAIJobs).Namespace(ns).Get(t.Context(), "cai", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, map[string]string{watch.AnnotationSummary: "coroner: cuda-oom at tj-worker-0"}, cai.GetAnnotations())
	})
}

// TestWatchNamespacedE2E applies deploy/watch-namespaced/ (the watcher's rights bound in two
// namespaces only) and runs the watcher with them: it collects in its namespaces and may do
// nothing elsewhere.
func TestWatchNamespacedE2E(t *testing.T) {
	env := startE2E(t)
	// make e2e builds kubectl from the same module as kube-apiserver (scripts/kube-apiserver.sh);
	// without it, one on the PATH.
	kubectl := os.Getenv("CORONER_KUBECTL")
	if kubectl == "" {
		var err error
		if kubectl, err = exec.LookPath("kubectl"); err != nil {
			t.Fatal("kubectl renders the Kustomization: set CORONER_KUBECTL (make e2e does) or put kubectl on the PATH")
		}
	}
	c, k := env.c, env.kubelet
	for _, ns := range []string{"ml", "team-a", "other"} {
		c.ApplyYAML(t, k, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n")
	}
	out, err := exec.Command(kubectl, "--kubeconfig", env.admin, "apply", "-k", "../../deploy/watch-namespaced").CombinedOutput()
	require.NoError(t, err, "kubectl apply -k deploy/watch-namespaced/:\n%s", out)
	require.NotContains(t, string(out), "clusterrolebinding.rbac.authorization.k8s.io/coroner-watch-hold-pods", "no cluster-wide patch of pods")
	require.NotContains(t, string(out), "clusterrolebinding.rbac.authorization.k8s.io/coroner-watch-annotate ", "no cluster-wide patch of jobs")
	rendered, err := exec.Command(kubectl, "kustomize", "../../deploy/watch-namespaced").CombinedOutput()
	require.NoError(t, err)
	require.Contains(t, string(rendered), "- --namespace=ml\n", "the Deployment watches the namespaces it is bound in")

	mine := testcluster.Job{Namespace: "ml", Name: "mine", Workers: 2, Running: true}
	c.CreateJob(t, k, mine)
	theirs := testcluster.Job{Namespace: "other", Name: "theirs", Workers: 1, Running: true}
	c.CreateJob(t, k, theirs)
	kube, dyn := asUser(c, watchUser)
	waitFor(t, 10*time.Second, "the RBAC bindings", func() bool {
		_, err := dyn.Resource(testcluster.PyTorchJobs).Namespace("ml").List(t.Context(), metav1.ListOptions{Limit: 1})
		return err == nil
	})
	hold := []byte(`{"metadata":{"finalizers":["` + watch.Finalizer + `"]}}`)
	waitPolicies(t, func(ctx context.Context, policy string, patch []byte) error {
		if policy == "coroner-watch-hold-pods" {
			_, err := kube.CoreV1().Pods("ml").Patch(ctx, mine.PodName(0), types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}
		_, err := dyn.Resource(testcluster.PyTorchJobs).Namespace("ml").Patch(ctx, mine.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	runRBACTable(t, []rbacCase{
		{"hold a pod in a watched namespace", func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods("ml").Patch(ctx, mine.PodName(1), types.StrategicMergePatchType, hold, metav1.PatchOptions{})
			return err
		}, allowed},
		{"relabel a pod in a watched namespace", func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods("ml").Patch(ctx, mine.PodName(1), types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
			return err
		}, deniedBy("coroner-watch-hold-pods")},
		{"hold a pod in another namespace", func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods("other").Patch(ctx, theirs.PodName(1), types.StrategicMergePatchType, hold, metav1.PatchOptions{})
			return err
		}, forbiddenByRBAC("patch")},
		{"read a pod in another namespace", func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods("other").Get(ctx, theirs.PodName(1), metav1.GetOptions{})
			return err
		}, forbiddenByRBAC("get")},
		{"list pods in every namespace", func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return err
		}, forbiddenByRBAC("list")},
		{"annotate a job in another namespace", func(ctx context.Context) error {
			_, err := dyn.Resource(testcluster.PyTorchJobs).Namespace("other").Patch(ctx, theirs.Name, types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"coroner.dev/summary":"x"}}}`), metav1.PatchOptions{})
			return err
		}, forbiddenByRBAC("patch")},
		{"read a node its pods ran on", func(ctx context.Context) error {
			_, err := kube.CoreV1().Nodes().Get(ctx, mine.NodeName(0), metav1.GetOptions{})
			return err
		}, allowed},
		{"list node events", func(ctx context.Context) error {
			_, err := kube.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
			return err
		}, allowed},
		{"list pods in team-a", func(ctx context.Context) error {
			_, err := kube.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{})
			return err
		}, allowed},
	})
	_, err = kube.CoreV1().Pods("ml").Patch(t.Context(), mine.PodName(1), types.StrategicMergePatchType,
		[]byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["`+watch.Finalizer+`"]}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	// The watcher, with these rights and the Deployment's namespaces, collects its job with no
	// gap, holds its pods, and leaves the other namespace's job alone.
	token := c.ServiceAccountToken(t, "coroner", "coroner-watch")
	dir := t.TempDir()
	w := startWatcher(t, c.Kubeconfig(t, token, "coroner-watch", "coroner"), dir, "-n", "ml,team-a", "--hold-pods")
	waitFor(t, 20*time.Second, "the finalizer", func() bool {
		p, err := c.Kube.CoreV1().Pods("ml").Get(t.Context(), mine.PodName(1), metav1.GetOptions{})
		return err == nil && slices.Contains(p.Finalizers, watch.Finalizer)
	})
	c.FailJob(t, mine)
	c.FailJob(t, theirs)
	ev := waitEvent(t, c, "ml", "mine", 30*time.Second)
	require.Contains(t, ev.Message, "coroner: cuda-oom at mine-worker-1: CUDA out of memory")
	m := readManifest(t, pytorchJob(t, c, "ml", "mine").GetAnnotations()[watch.AnnotationBundle])
	// The namespaced rights are enough for a collect of the job; the GPU agents' namespace is
	// another (deploy/node-agents-rbac.yaml), so it says it could not look there.
	require.Len(t, m.Errors, 1, "%+v", m.Errors)
	require.Equal(t, bundle.GapNodeAgents, m.Errors[0].Step)
	got := bundles(t, dir)
	require.Len(t, got, 1)
	require.True(t, strings.HasPrefix(got[0], filepath.Join("ml", "mine")+"/"), got[0])
	require.Empty(t, coronerEvents(t, c, "other", "theirs"))
	require.Equal(t, 0.0, w.metric(`coroner_watch_errors_total{step="annotate"}`))
	require.Equal(t, 0.0, w.metric(`coroner_watch_errors_total{step="hold"}`))
	require.NoError(t, w.Stop())
	p, err := c.Kube.CoreV1().Pods("ml").Get(t.Context(), mine.PodName(1), metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, p.Finalizers, watch.Finalizer, "let go on shutdown")
}
