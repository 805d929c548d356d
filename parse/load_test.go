package parse

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
)

func load(t *testing.T, files fstest.MapFS) *Model {
	t.Helper()
	b := &bundle.Bundle{Source: "test", FS: files, Limits: bundle.DefaultLimits()}
	for name, f := range files {
		b.Files = append(b.Files, bundle.File{Path: name, Size: int64(len(f.Data))})
	}
	m, err := Load(b)
	require.NoError(t, err)
	return m
}

// TestGenericCustomResource: an unknown kind still works through status.conditions and the
// pods it owns through an intermediate object.
func TestGenericCustomResource(t *testing.T) {
	m := load(t, fstest.MapFS{
		"resources/example.com/FancyJob/ml/fj.yaml": {Data: []byte("apiVersion: example.com/v1\nkind: FancyJob\nmetadata: {name: fj, namespace: ml, uid: j1}\n" +
			"status:\n  conditions:\n  - {type: Failed, status: \"True\", reason: BackoffLimit, message: boom, lastTransitionTime: \"2026-03-14T10:00:00Z\"}\n")},
		"resources/batch/Job/ml/fj-step.yaml":    {Data: []byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: fj-step, namespace: ml, uid: k1, ownerReferences: [{apiVersion: example.com/v1, kind: FancyJob, name: fj, uid: j1}]}\n")},
		"resources/core/Pod/ml/fj-step-abc.yaml": {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: fj-step-abc, namespace: ml, uid: p1, ownerReferences: [{apiVersion: batch/v1, kind: Job, name: fj-step, uid: k1}]}\nstatus: {phase: Failed}\n")},
		"resources/core/Pod/ml/other.yaml":       {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: other, namespace: ml, uid: p2}\nstatus: {phase: Running}\n")},
		"resources/core/Pod/ml/broken.yaml":      {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n")},
	})
	j := m.Job
	require.Equal(t, "FancyJob", j.Kind)
	require.Equal(t, "generic", j.Adapter)
	require.Equal(t, PhaseFailed, j.Phase)
	require.Len(t, j.Replicas, 1)
	require.Len(t, j.Replicas[0].Pods, 1)
	require.Equal(t, "fj-step-abc", j.Replicas[0].Pods[0].Name)
	require.Equal(t, 1, j.Replicas[0].Failed)
	require.Len(t, m.Warnings, 1)
	require.Contains(t, m.Warnings[0], "resources/core/Pod/ml/broken.yaml: invalid YAML")
}

func TestKubeflowReplicasFromStatusWhenPodsAreGone(t *testing.T) {
	m := load(t, fstest.MapFS{
		"manifest.json": {Data: []byte(`{}`)},
		"resources/kubeflow.org/TFJob/ml/tf.yaml": {Data: []byte("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: tf, namespace: ml, uid: t1}\n" +
			"spec:\n  tfReplicaSpecs:\n    Worker: {replicas: 4}\n    Chief: {replicas: 1}\n" +
			"status:\n  conditions: [{type: Succeeded, status: \"True\"}]\n  replicaStatuses:\n    Worker: {succeeded: 4}\n    Chief: {succeeded: 1}\n")},
	})
	j := m.Job
	require.Equal(t, "kubeflow", j.Adapter)
	require.Equal(t, PhaseSucceeded, j.Phase)
	require.Equal(t, "Chief", j.Replicas[0].Role, "the coordinating role comes first")
	require.Equal(t, 4, j.Replicas[1].Expected)
	require.Equal(t, 4, j.Replicas[1].Succeeded)
	require.True(t, j.Replicas[1].FromStatus)
}
