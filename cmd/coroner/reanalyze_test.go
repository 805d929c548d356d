package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/coroner-dev/coroner/bucket"
	"github.com/coroner-dev/coroner/internal/testpg"
	"github.com/coroner-dev/coroner/internal/tests3"
	"github.com/coroner-dev/coroner/store"
)

// trialRules overrides a built-in rule's category: the module-not-found sample's cause changes
// under it. (Turning the rule off no longer does: the second tier names the sample's
// ModuleNotFoundError by its words.)
const trialRules = "apiVersion: coroner.dev/rules/v1\nrules:\n  - {id: module-not-found/no-module, override: {category: replace}, category: config-error}\n"

// reanalyzeManifest splits the manifest into its ConfigMap and Job.
func reanalyzeManifest(t *testing.T, text string) (*corev1.ConfigMap, *batchv1.Job) {
	t.Helper()
	docs := strings.Split(text, "\n---\n")
	require.Len(t, docs, 2)
	var cm corev1.ConfigMap
	var job batchv1.Job
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), &cm))
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &job))
	return &cm, &job
}

// TestReanalyzeManifest: the Indexed Job takes one shard a pod, mounts the rules from its
// ConfigMap and reads the store and object store from Secrets, never from its arguments.
func TestReanalyzeManifest(t *testing.T) {
	rules := siteDir(t, trialRules)
	code, out, stderr := run(t, "fleet", "reanalyze", "--rules", rules, "--trial", "no-mnf", "--shards", "4", "--parallelism", "2",
		"--bundle-store", "s3://bundles/fleet", "--image", "registry.example/coroner:9")
	require.Equal(t, 0, code, stderr)
	cm, job := reanalyzeManifest(t, out)
	assert.Equal(t, trialRules, cm.Data["site.yaml"])
	assert.Equal(t, "coroner-reanalyze-no-mnf", job.Name)
	assert.Equal(t, "coroner", job.Namespace)
	require.NotNil(t, job.Spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *job.Spec.CompletionMode)
	assert.Equal(t, int32(4), *job.Spec.Completions)
	assert.Equal(t, int32(2), *job.Spec.Parallelism)
	c := job.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "registry.example/coroner:9", c.Image)
	assert.Equal(t, []string{"fleet", "reanalyze", "--run", "--rules", "/rules", "--trial", "no-mnf", "--shards", "4", "--bundle-store", "s3://bundles/fleet"}, c.Args)
	assert.Equal(t, "coroner-fleet", c.Env[0].ValueFrom.SecretKeyRef.Name)
	assert.Equal(t, storeEnv, c.Env[0].Name)
	assert.Equal(t, cm.Name, job.Spec.Template.Spec.Volumes[0].ConfigMap.Name)

	for _, bad := range [][]string{
		{"--trial", "No Spaces", "--rules", rules, "--bundle-store", "s3://b/p"},
		{"--trial", "t", "--bundle-store", "s3://b/p"},
		{"--trial", "t", "--rules", rules, "--bundle-store", "/var/bundles"},
		{"--trial", "t", "--rules", rules, "--bundle-store", "s3://b/p", "--shards", "0"},
		{"--trial", "t", "--rules", rules, "--bundle-store", "s3://b/p", "--run", "--index", "4", "--shards", "4"},
	} {
		code, _, stderr := run(t, append([]string{"fleet", "reanalyze"}, bad...)...)
		assert.Equal(t, 2, code, "%v: %s", bad, stderr)
	}
}

// TestReanalyzeShardsIntoATrial: each shard's command, run as a pod of the Indexed Job runs it
// (JOB_COMPLETION_INDEX set), re-analyzes its bundles from the bucket into the trial, beside
// the current analyses; the report compares the trial, and promote makes it current.
func TestReanalyzeShardsIntoATrial(t *testing.T) {
	s3 := tests3.Start(t, "bundles")
	s3.Env(t)
	dsn := testpg.Start(t).NewDatabase(t)
	code, _, stderr := run(t, "store", "migrate", "--store", dsn)
	require.Equal(t, 0, code, stderr)
	b, err := bucket.Open("s3://bundles/fleet", bucketConfig())
	require.NoError(t, err)
	for _, name := range []string{"pytorchjob-module-not-found", "pytorchjob-cuda-oom-rank"} {
		uri, err := b.Put(t.Context(), b.Key("prod-a", "ml", name, "20260314T100000Z.tar.gz"), tarSample(t, filepath.Join(samplesDir, name)))
		require.NoError(t, err)
		code, _, stderr := run(t, "analyze", uri, "--store", dsn, "--cluster-name", "prod-a", "-q", "--no-cache")
		require.Equal(t, 0, code, stderr)
	}
	rules := siteDir(t, trialRules)
	shard := func(index int) int {
		t.Setenv(indexEnv, strconv.Itoa(index))
		code, out, stderr := run(t, "fleet", "reanalyze", "--run", "--rules", rules, "--trial", "no-mnf", "--shards", "2",
			"--bundle-store", "s3://bundles/fleet", "--store", dsn)
		require.Equal(t, 0, code, stderr)
		m := regexp.MustCompile(`^shard \d of 2: (\d+) bundles re-analyzed into trial no-mnf, 0 failed\n$`).FindStringSubmatch(out)
		require.NotNil(t, m, out)
		n, _ := strconv.Atoi(m[1])
		return n
	}
	assert.Equal(t, 2, shard(0)+shard(1), "the shards cover every bundle once")
	shard(0) // a pod run again (a retried pod) writes the same rows

	report := func(args ...string) *store.FleetReport {
		code, out, stderr := run(t, append([]string{"fleet", "report", "--store", dsn, "--since", "all", "--format", "json"}, args...)...)
		require.Equal(t, 0, code, stderr)
		var r store.FleetReport
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		return &r
	}
	causes := func(r *store.FleetReport) []string {
		var cs []string
		for _, c := range r.Causes {
			cs = append(cs, c.Category)
		}
		return cs
	}
	r := report("--trial", "no-mnf")
	assert.Equal(t, 2, r.Totals.Interruptions)
	assert.ElementsMatch(t, []string{"module-not-found", "cuda-oom"}, causes(r), "the trial does not count until promoted")
	require.NotNil(t, r.Trial)
	assert.Equal(t, 2, r.Trial.Attempts)
	assert.Equal(t, 1, r.Trial.Changed)
	require.Len(t, r.Trial.Changes, 1)
	assert.Equal(t, "module-not-found", r.Trial.Changes[0].From)
	to := r.Trial.Changes[0].To

	code, out, stderr := run(t, "fleet", "promote", "no-mnf", "--store", dsn)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "trial no-mnf promoted: 2 job attempts now count its analyses\n", out)
	r = report()
	assert.Equal(t, 2, r.Totals.Interruptions, "still one analysis per attempt")
	assert.NotContains(t, causes(r), "module-not-found")
	assert.Contains(t, causes(r), to)
	code, _, stderr = run(t, "fleet", "promote", "no-mnf", "--store", dsn)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `no trial "no-mnf"`)
}
