package bundle

import (
	"archive/tar"
	"fmt"
	"sort"
	"strings"
)

// SparseEntry returns an error naming the entry when a tar header describes a sparse file, in
// any of GNU's forms: the old GNU type 'S', or a PAX header with GNU.sparse.* records (the
// 0.0, 0.1 and 1.0 formats). archive/tar fills a sparse file's holes with NUL bytes as it is
// read, so a few hundred bytes of archive, which decompress to a few kilobytes and never trip
// the expansion limit, would be read as gigabytes of zeros and written to the scratch
// directory. coroner never writes a sparse file: a bundle that holds one is refused whole,
// before a byte of it is read.
func SparseEntry(hdr *tar.Header) error {
	form := ""
	if hdr.Typeflag == tar.TypeGNUSparse {
		form = "old GNU sparse header, type 'S'"
	}
	var keys []string
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 && form == "" {
		sort.Strings(keys)
		form = "PAX record " + keys[0]
	}
	if form == "" {
		return nil
	}
	return fmt.Errorf("%s: tar entry is a sparse file (%s); bundles hold no sparse files, refusing the archive", entryName(hdr.Name), form)
}

// entryName is a tar entry's name as an error shows it: quoted when it holds what a terminal
// or a log line would render.
func entryName(name string) string {
	for _, r := range name {
		if r < ' ' || r == 0x7f {
			return fmt.Sprintf("%q", name)
		}
	}
	return name
}
