package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/coroner-dev/coroner/bucket"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/scratch"
)

// s3Prefix names the scratch directories of bundles read from object storage.
const s3Prefix = "coroner-s3-"

// bucketConfig is the object store's address and credentials, from the variables the AWS
// tools read (a Secret sets them in the watch Deployment): AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL (http:// for plain HTTP), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION.
func bucketConfig() bucket.Config {
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	return bucket.Config{Endpoint: endpoint, AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken: os.Getenv("AWS_SESSION_TOKEN"), Region: os.Getenv("AWS_REGION")}
}

// fetchInputs copies each s3:// input into a private scratch directory, under the object's
// own name (the report names the bundle by it), and returns the inputs to read; done removes
// the copies. A tarball larger than --max-total-bytes is refused before it is read.
func fetchInputs(ctx context.Context, inputs []string, lim bundle.Limits) (local []string, done func(), err error) {
	var dirs []*scratch.Dir
	done = func() {
		for _, d := range dirs {
			d.Remove()
		}
	}
	defer func() {
		if err != nil {
			done()
		}
	}()
	for _, in := range inputs {
		if !bucket.IsURI(in) {
			local = append(local, in)
			continue
		}
		loc, err := bucket.Parse(in)
		if err != nil {
			return nil, done, &FlagError{err}
		}
		scratch.Sweep("", s3Prefix)
		d, err := scratch.MkdirTemp("", s3Prefix+"*")
		if err != nil {
			return nil, done, err
		}
		dirs = append(dirs, d)
		name := path.Base(loc.Prefix)
		if name == "." || name == "/" || name == "" {
			return nil, done, flagErrorf("%s names a bucket, not a bundle in it", in)
		}
		p := filepath.Join(d.Path, name)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, done, err
		}
		err = bucket.Download(ctx, in, bucketConfig(), f, lim.MaxTotalBytes)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		var big *bucket.TooLargeError
		if errors.As(err, &big) {
			return nil, done, fmt.Errorf("%w (--max-total-bytes raises the bound)", err)
		}
		if err != nil {
			return nil, done, err
		}
		local = append(local, p)
	}
	return local, done, nil
}
