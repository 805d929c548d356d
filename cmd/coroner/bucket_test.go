package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bucket"
	"github.com/coroner-dev/coroner/internal/tests3"
)

// TestAnalyzeAndSearchFromS3: a bundle in object storage is analyzed and searched as the same
// file on disk is, and the keys reach no output.
func TestAnalyzeAndSearchFromS3(t *testing.T) {
	srv := tests3.Start(t, "bundles")
	srv.Env(t)
	tgz := tarSample(t, filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"))
	b, err := bucket.Open("s3://bundles/fleet", bucketConfig())
	require.NoError(t, err)
	uri, err := b.Put(t.Context(), b.Key("prod", "ml", "train-job", filepath.Base(tgz)), tgz)
	require.NoError(t, err)

	code, local, stderr := run(t, "analyze", tgz, "--format", "json", "--no-cache")
	require.Equal(t, 0, code, stderr)
	code, remote, stderr := run(t, "analyze", uri, "--format", "json", "--no-cache")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, local, remote, "the same report, byte for byte")

	code, out, stderr := run(t, "search", uri, "OutOfMemoryError", "--no-cache")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "torch.OutOfMemoryError")
	for _, s := range []string{remote, out, stderr} {
		assert.NotContains(t, s, tests3.SecretKey)
		assert.NotContains(t, s, tests3.AccessKey)
	}

	code, _, stderr = run(t, "analyze", "s3://bundles/fleet/prod/ml/none.tar.gz")
	require.Equal(t, 1, code)
	assert.Contains(t, stderr, "s3://bundles/fleet/prod/ml/none.tar.gz")
	code, _, stderr = run(t, "analyze", uri, "--max-total-bytes", "1Ki")
	require.Equal(t, 1, code)
	assert.Contains(t, stderr, "--max-total-bytes raises the bound")
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), s3Prefix+"*"))
	for _, d := range left {
		_, err := os.Stat(filepath.Join(d, "pytorchjob-cuda-oom-rank.tar.gz"))
		assert.True(t, os.IsNotExist(err), "a copy is left in %s", d)
	}
}
