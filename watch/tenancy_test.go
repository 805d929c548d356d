package watch

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestAnotherNamespacesPodIsNeverAJobsPod: a tenant cannot point the watcher at a pod of its
// own from another namespace's job, nor at another tenant's pods from its own job. A pod in
// team-b that names team-a's job "train" in every label and owner reference the watcher reads
// is found, through the index the watcher's pod informer carries, for team-b's "train" only;
// team-a's job finds its own pod and no other.
func TestAnotherNamespacesPodIsNeverAJobsPod(t *testing.T) {
	labels := map[string]string{}
	for _, l := range podLabels {
		labels[l.label] = "train"
	}
	owner := []metav1.OwnerReference{{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "train", UID: "uid-a"}}
	own := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-worker-0",
		Labels: map[string]string{"training.kubeflow.org/job-name": "train"}, OwnerReferences: owner}}
	stranger := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "train-worker-0",
		Labels: labels, OwnerReferences: owner}}

	ix := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{podIndex: podJobNames})
	require.NoError(t, ix.Add(own))
	require.NoError(t, ix.Add(stranger))

	names := func(key string) []string {
		items, err := ix.ByIndex(podIndex, key)
		require.NoError(t, err)
		var out []string
		for _, it := range items {
			p := it.(*corev1.Pod)
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return out
	}
	require.Equal(t, []string{"team-a/train-worker-0"}, names("team-a/train"))
	require.Equal(t, []string{"team-b/train-worker-0"}, names("team-b/train"))
}
