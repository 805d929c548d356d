// Package bucket keeps bundles in S3-compatible object storage (AWS S3, MinIO, Ceph,
// versitygw...) through minio-go: uploads keyed cluster/namespace/job/time.tar.gz under a
// prefix, retention by age and by count, and downloads for analyze and search of an s3:// URI.
// Credentials are the caller's (from the environment or a Secret); no error or log line of
// this package holds them.
package bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config says how to reach the object store.
type Config struct {
	// Endpoint is the server's host[:port] ("" : s3.amazonaws.com), or an http(s):// URL
	// (http:// talks plain HTTP, for a server on a private network or in a test).
	Endpoint string
	// AccessKey and SecretKey sign the requests (both empty: anonymous); SessionToken is a
	// temporary credential's.
	AccessKey, SecretKey, SessionToken string
	Region                             string
}

// Location is an s3://bucket/prefix URI taken apart.
type Location struct {
	Bucket string
	Prefix string // without leading or trailing "/"; "" for the bucket's root
}

// String is the location as an s3:// URI.
func (l Location) String() string {
	if l.Prefix == "" {
		return "s3://" + l.Bucket
	}
	return "s3://" + l.Bucket + "/" + l.Prefix
}

// IsURI says whether s names an object store (s3://...).
func IsURI(s string) bool { return strings.HasPrefix(s, "s3://") }

// Parse reads s3://bucket[/prefix].
func Parse(uri string) (Location, error) {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return Location{}, fmt.Errorf("%q is not an s3://bucket/prefix URI", uri)
	}
	b, p, _ := strings.Cut(rest, "/")
	p = strings.Trim(p, "/")
	if b == "" || strings.ContainsAny(b, " ?#") || strings.Contains(p, "//") || strings.Contains("/"+p+"/", "/../") {
		return Location{}, fmt.Errorf("%q is not an s3://bucket/prefix URI", uri)
	}
	return Location{Bucket: b, Prefix: p}, nil
}

// Bucket is a connection to one bucket under a prefix.
type Bucket struct {
	c   *minio.Client
	loc Location
}

// Open connects to the bucket of uri (s3://bucket/prefix). Nothing is sent until it is used.
func Open(uri string, cfg Config) (*Bucket, error) {
	loc, err := Parse(uri)
	if err != nil {
		return nil, err
	}
	endpoint, secure := cfg.Endpoint, true
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	if u, err := url.Parse(endpoint); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	var creds *credentials.Credentials
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	} else {
		creds = credentials.New(&credentials.Static{}) // anonymous
	}
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", endpoint, err)
	}
	return &Bucket{c: c, loc: loc}, nil
}

// Location is where the bucket's bundles are.
func (b *Bucket) Location() Location { return b.loc }

// Key is the object key of a bundle file named name (its collect time: 20260314T100215Z.tar.gz)
// of a job: prefix/cluster/namespace/job/name. Empty parts are "_", and parts are cleaned of
// "/" so that a name never climbs the tree.
func (b *Bucket) Key(cluster, namespace, job, name string) string {
	part := func(s string) string {
		s = strings.ReplaceAll(s, "/", "_")
		if s == "" || s == "." || s == ".." {
			return "_"
		}
		return s
	}
	return path.Join(b.loc.Prefix, part(cluster), part(namespace), part(job), part(name))
}

// URI is the s3:// URI of key.
func (b *Bucket) URI(key string) string { return "s3://" + b.loc.Bucket + "/" + key }

// Put uploads the file at file as key and returns its URI.
func (b *Bucket) Put(ctx context.Context, key, file string) (string, error) {
	_, err := b.c.FPutObject(ctx, b.loc.Bucket, key, file, minio.PutObjectOptions{ContentType: "application/gzip"})
	if err != nil {
		return "", fmt.Errorf("uploading %s: %w", b.URI(key), err)
	}
	return b.URI(key), nil
}

// Object is a bundle in the bucket.
type Object struct {
	Key      string
	Size     int64
	Modified time.Time
}

// List lists the bundles (.tar.gz) under the bucket's prefix, sorted by key.
func (b *Bucket) List(ctx context.Context) ([]Object, error) {
	prefix := b.loc.Prefix
	if prefix != "" {
		prefix += "/"
	}
	var out []Object
	for o := range b.c.ListObjects(ctx, b.loc.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("listing %s: %w", b.loc, o.Err)
		}
		if strings.HasSuffix(o.Key, ".tar.gz") {
			out = append(out, Object{Key: o.Key, Size: o.Size, Modified: o.LastModified})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Retain removes bundles older than maxAge (0: no bound) and, of each namespace's
// (cluster/namespace/), all but the newest keep (0: no bound), and returns the keys removed.
// Age is the object's time in its name (when its job was collected), else its upload time.
func (b *Bucket) Retain(ctx context.Context, keep int, maxAge time.Duration, now time.Time) ([]string, error) {
	if keep <= 0 && maxAge <= 0 {
		return nil, nil
	}
	objs, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	byNS := map[string][]Object{}
	var removed []string
	for _, o := range objs {
		if maxAge > 0 && now.Sub(collectedAt(o)) > maxAge {
			removed = append(removed, o.Key)
			continue
		}
		byNS[namespaceOf(b.loc.Prefix, o.Key)] = append(byNS[namespaceOf(b.loc.Prefix, o.Key)], o)
	}
	if keep > 0 {
		for _, list := range byNS {
			sort.SliceStable(list, func(i, j int) bool { return collectedAt(list[i]).After(collectedAt(list[j])) })
			for _, o := range list[min(keep, len(list)):] {
				removed = append(removed, o.Key)
			}
		}
	}
	sort.Strings(removed)
	for _, k := range removed {
		if err := b.c.RemoveObject(ctx, b.loc.Bucket, k, minio.RemoveObjectOptions{}); err != nil {
			return nil, fmt.Errorf("removing %s: %w", b.URI(k), err)
		}
	}
	return removed, nil
}

// collectedAt is the time in a bundle's name, else its upload time.
func collectedAt(o Object) time.Time {
	if t, err := time.Parse("20060102T150405Z", strings.TrimSuffix(path.Base(o.Key), ".tar.gz")); err == nil {
		return t
	}
	return o.Modified
}

// namespaceOf is the cluster/namespace part of a key under prefix.
func namespaceOf(prefix, key string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(key, prefix), "/")
	parts := strings.SplitN(rel, "/", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// Download copies the object uri names (s3://bucket/key) to w, at most limit bytes (0: no
// bound; a larger object is refused before it is read).
func Download(ctx context.Context, uri string, cfg Config, w io.Writer, limit int64) error {
	loc, err := Parse(uri)
	if err != nil {
		return err
	}
	if loc.Prefix == "" {
		return fmt.Errorf("%s names a bucket, not a bundle in it", uri)
	}
	b, err := Open("s3://"+loc.Bucket, cfg)
	if err != nil {
		return err
	}
	obj, err := b.c.GetObject(ctx, loc.Bucket, loc.Prefix, minio.GetObjectOptions{})
	if err != nil {
		return fmt.Errorf("reading %s: %w", uri, err)
	}
	defer obj.Close()
	st, err := obj.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", uri, err)
	}
	if limit > 0 && st.Size > limit {
		return &TooLargeError{URI: uri, Size: st.Size, Limit: limit}
	}
	if _, err := io.Copy(w, io.LimitReader(obj, st.Size)); err != nil {
		return fmt.Errorf("reading %s: %w", uri, err)
	}
	return nil
}

// TooLargeError says that an object is larger than the caller reads.
type TooLargeError struct {
	URI         string
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, more than the %d a bundle may be", e.URI, e.Size, e.Limit)
}

// IsNotFound says whether err means that the object or bucket does not exist.
func IsNotFound(err error) bool {
	code := minio.ToErrorResponse(errors.Unwrap(err)).Code
	return code == "NoSuchKey" || code == "NoSuchBucket"
}
