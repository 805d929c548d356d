package bucket

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/internal/tests3"
)

func TestParse(t *testing.T) {
	for uri, want := range map[string]Location{
		"s3://bundles":             {Bucket: "bundles"},
		"s3://bundles/":            {Bucket: "bundles"},
		"s3://bundles/fleet/prod/": {Bucket: "bundles", Prefix: "fleet/prod"},
	} {
		got, err := Parse(uri)
		require.NoError(t, err, uri)
		assert.Equal(t, want, got, uri)
	}
	for _, bad := range []string{"bundles/x", "s3://", "s3:///x", "s3://b/a/../../etc", "s3://b/a//c", "https://b/x"} {
		_, err := Parse(bad)
		assert.Error(t, err, bad)
	}
}

// TestBucketAgainstVersitygw uploads, lists, downloads and prunes bundles on a real
// S3-compatible server.
func TestBucketAgainstVersitygw(t *testing.T) {
	ctx := context.Background()
	srv := tests3.Start(t, "bundles")
	cfg := Config{Endpoint: srv.Endpoint, AccessKey: tests3.AccessKey, SecretKey: tests3.SecretKey, Region: "us-east-1"}
	b, err := Open("s3://bundles/fleet", cfg)
	require.NoError(t, err)

	dir := t.TempDir()
	n := 0
	put := func(cluster, ns, job, name string) string {
		n++
		p := filepath.Join(dir, strconv.Itoa(n))
		require.NoError(t, os.WriteFile(p, []byte("bundle "+ns+"/"+job+"/"+name), 0o644))
		uri, err := b.Put(ctx, b.Key(cluster, ns, job, name), p)
		require.NoError(t, err)
		return uri
	}
	uri := put("prod", "ml", "a", "20260301T000000Z.tar.gz")
	assert.Equal(t, "s3://bundles/fleet/prod/ml/a/20260301T000000Z.tar.gz", uri)
	put("prod", "ml", "b", "20260302T000000Z.tar.gz")
	put("prod", "ml", "c", "20260303T000000Z.tar.gz")
	put("prod", "team", "d", "20260101T000000Z.tar.gz")
	put("prod", "../..", "e/f", "20260304T000000Z.tar.gz") // names from a cluster never climb

	objs, err := b.List(ctx)
	require.NoError(t, err)
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	assert.Equal(t, []string{
		"fleet/prod/.._../e_f/20260304T000000Z.tar.gz",
		"fleet/prod/ml/a/20260301T000000Z.tar.gz",
		"fleet/prod/ml/b/20260302T000000Z.tar.gz",
		"fleet/prod/ml/c/20260303T000000Z.tar.gz",
		"fleet/prod/team/d/20260101T000000Z.tar.gz",
	}, keys)

	var buf bytes.Buffer
	require.NoError(t, Download(ctx, uri, cfg, &buf, 0))
	assert.Equal(t, "bundle ml/a/20260301T000000Z.tar.gz", buf.String())
	var big *TooLargeError
	require.ErrorAs(t, Download(ctx, uri, cfg, &bytes.Buffer{}, 4), &big)
	err = Download(ctx, "s3://bundles/fleet/none.tar.gz", cfg, &bytes.Buffer{}, 0)
	require.Error(t, err)
	assert.True(t, IsNotFound(err), "%v", err)

	// Two per namespace: ml loses its oldest; then nothing older than 30 days on 2026-03-20.
	now := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	removed, err := b.Retain(ctx, 2, 0, now)
	require.NoError(t, err)
	assert.Equal(t, []string{"fleet/prod/ml/a/20260301T000000Z.tar.gz"}, removed)
	removed, err = b.Retain(ctx, 0, 30*24*time.Hour, now)
	require.NoError(t, err)
	assert.Equal(t, []string{"fleet/prod/team/d/20260101T000000Z.tar.gz"}, removed)
	objs, err = b.List(ctx)
	require.NoError(t, err)
	assert.Len(t, objs, 3)

	// A wrong key is refused, and the error does not carry the keys.
	bad := cfg
	bad.SecretKey = "not-the-secret-" + tests3.SecretKey
	err = Download(ctx, uri, bad, &bytes.Buffer{}, 0)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), tests3.SecretKey)
	assert.NotContains(t, err.Error(), "not-the-secret")
}
