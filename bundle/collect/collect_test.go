package collect

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

func TestTruncatorKeepsHeadAndTail(t *testing.T) {
	tr := newTruncator(400) // head 100 bytes, tail 300
	var all strings.Builder
	for i := range 100 {
		l := fmt.Sprintf("line %03d of the log\n", i) // 20 bytes
		all.WriteString(l)
		tr.add([]byte(l))
	}
	out, cut := tr.bytes()
	s := string(out)
	require.True(t, strings.HasPrefix(s, "line 000 of the log\nline 001"), "the head is kept from the start")
	require.True(t, strings.HasSuffix(s, "line 099 of the log\n"), "the tail is kept to the end")
	require.Contains(t, s, fmt.Sprintf("[coroner] ... %d bytes cut here", cut))
	require.Equal(t, int64(all.Len()), int64(len(s))-int64(strings.Count(s, "[coroner]")*len(markerLine(s)))+cut, "kept + cut = all")
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		require.True(t, strings.HasPrefix(l, "line ") || strings.HasPrefix(l, "[coroner]"), "whole lines only: %q", l)
	}
}

func markerLine(s string) string {
	i := strings.Index(s, "[coroner]")
	j := strings.IndexByte(s[i:], '\n')
	return s[i : i+j+1]
}

func TestTruncatorUnderTheLimitIsUntouched(t *testing.T) {
	tr := newTruncator(1 << 10)
	tr.add([]byte("a\n"))
	tr.add([]byte("b\n"))
	out, cut := tr.bytes()
	require.Equal(t, "a\nb\n", string(out))
	require.Zero(t, cut)
}

func TestLineSinkBoundsLongLines(t *testing.T) {
	var lines []string
	sink := &lineSink{add: func(l []byte) { lines = append(lines, string(l)) }}
	long := strings.Repeat("x", 3*maxLineBytes+10)
	for _, piece := range []string{long[:5], long[5:], "\nshort\n", "no newline at the end"} {
		_, _ = sink.Write([]byte(piece))
	}
	sink.flush()
	var sizes []int
	for _, l := range lines {
		sizes = append(sizes, len(l))
	}
	require.Equal(t, []int{maxLineBytes, maxLineBytes, maxLineBytes, 11, 6, 21}, sizes)
	require.Equal(t, long+"\nshort\nno newline at the end", strings.Join(lines, ""), "nothing lost or added")
}

func fakeCatalog(t *testing.T) *Catalog {
	kube := kubefake.NewClientset()
	d := kube.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true, ShortNames: []string{"po"}, Verbs: []string{"get", "list"}},
			{Name: "pods/log", Kind: "Pod", Namespaced: true, Verbs: []string{"get"}},
		}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{
			{Name: "jobs", SingularName: "job", Kind: "Job", Namespaced: true, Verbs: []string{"get", "list"}},
			{Name: "cronjobs", SingularName: "cronjob", Kind: "CronJob", Namespaced: true, ShortNames: []string{"cj"}, Verbs: []string{"get", "list"}},
		}},
		{GroupVersion: "kubeflow.org/v1", APIResources: []metav1.APIResource{
			{Name: "pytorchjobs", SingularName: "pytorchjob", Kind: "PyTorchJob", Namespaced: true, Verbs: []string{"get", "list"}},
		}},
		{GroupVersion: "batch.tensorstack.dev/v1beta1", APIResources: []metav1.APIResource{
			{Name: "colossalaijobs", SingularName: "colossalaijob", Kind: "ColossalAIJob", Namespaced: true, ShortNames: []string{"cj"}, Verbs: []string{"get", "list"}},
		}},
		{GroupVersion: "trainer.kubeflow.org/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "trainjobs", SingularName: "trainjob", Kind: "TrainJob", Namespaced: true, Verbs: []string{"get", "list"}},
			{Name: "clustertrainingruntimes", SingularName: "clustertrainingruntime", Kind: "ClusterTrainingRuntime", Verbs: []string{"get", "list"}},
		}},
		{GroupVersion: "other.example.com/v1", APIResources: []metav1.APIResource{
			{Name: "pytorchjobs", SingularName: "pytorchjob", Kind: "PyTorchJob", Namespaced: true, Verbs: []string{"get", "list"}},
		}},
	}
	cat, partial, err := Discover(d)
	require.NoError(t, err)
	require.Empty(t, partial)
	return cat
}

func TestResolveKind(t *testing.T) {
	cat := fakeCatalog(t)
	for _, tc := range []struct{ in, want string }{
		{"PyTorchJob.kubeflow.org", "pytorchjobs.kubeflow.org"},
		{"pytorchjobs.kubeflow.org", "pytorchjobs.kubeflow.org"},
		{"pytorchjob.v1.kubeflow.org", "pytorchjobs.kubeflow.org"},
		{"trainjob", "trainjobs.trainer.kubeflow.org"},
		{"TrainJobs", "trainjobs.trainer.kubeflow.org"},
		{"colossalaijob", "colossalaijobs.batch.tensorstack.dev"},
		{"job", "jobs.batch"},
		{"po", "pods"},
		{"cj", "cronjobs.batch"}, // a short name in the batch group wins, as with kubectl
		{"cj.batch.tensorstack.dev", "colossalaijobs.batch.tensorstack.dev"},
	} {
		r, err := cat.Resolve(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, r.String(), tc.in)
	}

	_, err := cat.Resolve("pytorchjob")
	require.EqualError(t, err, `kind "pytorchjob" is ambiguous; name one of: pytorchjobs.kubeflow.org, pytorchjobs.other.example.com`)

	_, err = cat.Resolve("rayjob")
	require.EqualError(t, err, `the cluster serves no kind "rayjob"; training kinds it serves: `+
		`colossalaijobs.batch.tensorstack.dev (ColossalAIJob), jobs.batch (Job), pytorchjobs.kubeflow.org (PyTorchJob), trainjobs.trainer.kubeflow.org (TrainJob)`)

	_, err = cat.Resolve("pods/log")
	require.Error(t, err, "subresources are not kinds")

	var kinds []string
	for _, r := range cat.TrainingKinds() {
		kinds = append(kinds, r.String())
	}
	require.Equal(t, []string{"jobs.batch", "colossalaijobs.batch.tensorstack.dev", "pytorchjobs.kubeflow.org", "trainjobs.trainer.kubeflow.org"}, kinds,
		"by group, then kind; CronJobs, runtimes and other groups' kinds are not training kinds")
}

func TestRetryOn429And5xxOnly(t *testing.T) {
	backoff.Duration = time.Millisecond
	calls := 0
	err := withRetry(t.Context(), func() error {
		calls++
		if calls < 3 {
			return apierrors.NewTooManyRequests("slow down", 0)
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls, "retried until it worked")

	calls = 0
	err = withRetry(t.Context(), func() error {
		calls++
		return apierrors.NewInternalError(errors.New("etcd leader changed"))
	})
	require.Error(t, err)
	require.Equal(t, backoff.Steps, calls, "gave up after the backoff's steps")

	calls = 0
	err = withRetry(t.Context(), func() error {
		calls++
		return apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("no"))
	})
	require.True(t, apierrors.IsForbidden(err))
	require.Equal(t, 1, calls, "a forbidden request is not retried")
}

// TestResolveEveryServedVersion: the mpi-operator's MPIJob (kubeflow.org/v2beta1) beside the
// training operator's kubeflow.org/v1 kinds was dropped with every kind outside the group's
// preferred version ("the cluster serves no kind mpijob"). Each resource now has a default
// version (the preferred one if it serves it, else its highest), and every served version can
// be named.
func TestResolveEveryServedVersion(t *testing.T) {
	kube := kubefake.NewClientset()
	d := kube.Discovery().(*fakediscovery.FakeDiscovery)
	res := func(name, kind string) metav1.APIResource {
		return metav1.APIResource{Name: name, SingularName: strings.ToLower(kind), Kind: kind, Namespaced: true, Verbs: []string{"get", "list"}}
	}
	d.Resources = []*metav1.APIResourceList{
		{GroupVersion: "kubeflow.org/v1", APIResources: []metav1.APIResource{res("pytorchjobs", "PyTorchJob"), res("tfjobs", "TFJob")}},
		{GroupVersion: "kubeflow.org/v2beta1", APIResources: []metav1.APIResource{res("mpijobs", "MPIJob")}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{res("gadgets", "Gadget")}},
		{GroupVersion: "example.com/v1alpha1", APIResources: []metav1.APIResource{res("widgets", "Widget"), res("gadgets", "Gadget")}},
		{GroupVersion: "example.com/v1beta1", APIResources: []metav1.APIResource{res("widgets", "Widget")}},
	}
	cat, _, err := Discover(d)
	require.NoError(t, err)
	for _, tc := range []struct{ in, want string }{
		{"mpijob", "kubeflow.org/v2beta1, Resource=mpijobs"},
		{"mpijobs.kubeflow.org", "kubeflow.org/v2beta1, Resource=mpijobs"},
		{"mpijobs.v2beta1.kubeflow.org", "kubeflow.org/v2beta1, Resource=mpijobs"},
		{"pytorchjob", "kubeflow.org/v1, Resource=pytorchjobs"},
		{"widget", "example.com/v1beta1, Resource=widgets"}, // not in the preferred v1: the highest that serves it
		{"widgets.v1alpha1.example.com", "example.com/v1alpha1, Resource=widgets"},
		{"gadget", "example.com/v1, Resource=gadgets"}, // the preferred version wins
		{"gadgets.v1alpha1.example.com", "example.com/v1alpha1, Resource=gadgets"},
	} {
		r, err := cat.Resolve(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, r.GVR.String(), tc.in)
	}
	_, err = cat.Resolve("mpijobs.v1.kubeflow.org")
	require.ErrorContains(t, err, `the cluster serves no kind "mpijobs.v1.kubeflow.org"`)
	require.ErrorContains(t, err, "mpijobs.kubeflow.org (MPIJob)", "the training kinds listed include it")
	n := 0
	for _, r := range cat.Resources {
		if r.Kind == "Widget" {
			n++
		}
	}
	require.Equal(t, 1, n, "Resources holds each resource once")
}
