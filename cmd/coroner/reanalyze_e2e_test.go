//go:build e2e

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/coroner-dev/coroner/internal/testcluster"
)

// TestReanalyzeApplyE2E: the Indexed Job and its rules' ConfigMap, applied to a real
// kube-apiserver, pass its validation as written, and a second apply of the same trial is
// refused rather than replacing a running one.
func TestReanalyzeApplyE2E(t *testing.T) {
	c := testcluster.Start(t)
	cs, err := kubernetes.NewForConfig(c.Config(testcluster.AdminToken))
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet-trials"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	kc := c.Kubeconfig(t, testcluster.AdminToken, "admin", "default")
	rules := siteDir(t, trialRules)
	args := []string{"fleet", "reanalyze", "--apply", "--kubeconfig", kc, "-n", "fleet-trials", "--rules", rules, "--trial", "no-mnf",
		"--shards", "3", "--bundle-store", "s3://bundles/fleet"}
	code, out, stderr := run(t, args...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "job.batch/coroner-reanalyze-no-mnf created in fleet-trials: 3 shards\n", out)

	job, err := cs.BatchV1().Jobs("fleet-trials").Get(t.Context(), "coroner-reanalyze-no-mnf", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, job.Spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *job.Spec.CompletionMode)
	assert.Equal(t, int32(3), *job.Spec.Completions)
	assert.Contains(t, job.Spec.Template.Spec.Containers[0].Args, "--run")
	cm, err := cs.CoreV1().ConfigMaps("fleet-trials").Get(t.Context(), "coroner-reanalyze-no-mnf", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, trialRules, cm.Data["site.yaml"])

	code, _, stderr = run(t, args...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "Job fleet-trials/coroner-reanalyze-no-mnf exists")
}
