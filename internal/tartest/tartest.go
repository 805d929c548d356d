// Package tartest reads the gzipped tarballs coroner writes, for tests: every entry in order.
package tartest

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// Entry is one entry of a tarball: its header, and its body for a regular file.
type Entry struct {
	Header *tar.Header
	Body   []byte
}

// Entries reads every entry of the gzipped tarball at path, failing the test on any error.
func Entries(t testing.TB, path string) []Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []Entry
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		e := Entry{Header: hdr}
		if hdr.Typeflag == tar.TypeReg {
			if e.Body, err = io.ReadAll(tr); err != nil {
				t.Fatalf("%s: %s: %v", path, hdr.Name, err)
			}
		}
		out = append(out, e)
	}
}

// Links maps each symbolic link of the tarball at path to its target.
func Links(t testing.TB, path string) map[string]string {
	t.Helper()
	links := map[string]string{}
	for _, e := range Entries(t, path) {
		if e.Header.Typeflag == tar.TypeSymlink {
			links[e.Header.Name] = e.Header.Linkname
		}
	}
	return links
}
