package diagnose

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/coroner-dev/coroner/bundle"
)

// What a diagnosis (and a search) reads: one bundle (a directory or a .tar.gz/.tgz), or plain
// log files and "-" for standard input. Anything else is an error naming what was expected.

const expectedInput = "a bundle (a directory or .tar.gz made by coroner collect: manifest.json, resources/, logs/) or log files"

// UsageError is an input given the wrong way (a bundle among log files): the caller's usage,
// not the input's content, is wrong.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Open opens what a diagnosis reads: one bundle, or plain log files ("-" reads stdin). A
// directory or archive that holds no bundle, an empty file and a zip or an uncompressed tar
// are errors saying what was expected.
func Open(ctx context.Context, inputs []string, stdin io.Reader, lim bundle.Limits) (*bundle.Bundle, error) {
	if len(inputs) == 1 && inputs[0] != "-" && bundle.IsBundlePath(inputs[0]) {
		b, err := bundle.Open(ctx, inputs[0], lim)
		if err != nil {
			return nil, err
		}
		if err := checkBundle(b, inputs[0]); err != nil {
			b.Close()
			return nil, err
		}
		return b, nil
	}
	for _, p := range inputs {
		if p != "-" && bundle.IsBundlePath(p) {
			return nil, &UsageError{fmt.Errorf("%s is a bundle: give one bundle, or only plain log files", p)}
		}
		if err := checkPlainFile(p); err != nil {
			return nil, err
		}
	}
	return bundle.OpenLogs(ctx, inputs, stdin, lim)
}

// InputName names the inputs in a message.
func InputName(inputs []string) string {
	if len(inputs) == 1 && inputs[0] == "-" {
		return "standard input"
	}
	return strings.Join(inputs, " ")
}

// checkBundle refuses a directory or tarball that holds no bundle: nothing, bundles, or the
// logs/ folder of one. A bundle has manifest.json, or files under resources/ or logs/.
func checkBundle(b *bundle.Bundle, name string) error {
	var nested, logsShaped, other []string
	for _, f := range b.Files {
		switch {
		case f.Path == "manifest.json", strings.HasPrefix(f.Path, "resources/"), strings.HasPrefix(f.Path, "logs/"),
			strings.HasPrefix(f.Path, bundle.FlightRecorderDir):
			return nil
		case isNestedBundleFile(f.Path):
			if dir, _, _ := strings.Cut(f.Path, "/"); !slices.Contains(nested, dir) {
				nested = append(nested, dir)
			}
		case strings.Count(f.Path, "/") == 2 && strings.HasSuffix(f.Path, ".log"):
			logsShaped = append(logsShaped, f.Path)
		default:
			other = append(other, f.Path)
		}
	}
	what := "directory"
	if !isDir(name) {
		what = "archive"
	}
	switch {
	case len(b.Files) == 0:
		return fmt.Errorf("%s: an empty %s, 0 lines read: expected %s", name, what, expectedInput)
	case len(nested) == 1 && what == "archive":
		return fmt.Errorf("%s: the bundle is in the archive's folder %s/: extract it (tar xzf) and give that folder", name, nested[0])
	case len(nested) == 1:
		return fmt.Errorf("%s: the bundle is in %s/: analyze %s", name, nested[0], path.Join(name, nested[0]))
	case len(nested) > 1:
		sort.Strings(nested)
		return fmt.Errorf("%s holds %d bundles (%s): give one of them", name, len(nested), ListSome(nested, 3))
	case len(logsShaped) > 0 && len(other) == 0:
		return fmt.Errorf("%s looks like a bundle's logs/ folder (NAMESPACE/POD/CONTAINER.log): give the bundle, its parent directory, or the log files themselves", name)
	case allLogs(other) && what == "directory":
		return fmt.Errorf("%s is a directory of log files, not a bundle: give the files (coroner analyze %s/*.log) to analyze them as plain logs", name, strings.TrimSuffix(name, "/"))
	}
	return fmt.Errorf("%s is not a bundle (no manifest.json, resources/ or logs/; it holds %s): expected %s", name, ListSome(other, 3), expectedInput)
}

// isNestedBundleFile says whether a path is a bundle's file one folder down:
// DIR/manifest.json, DIR/resources/..., DIR/logs/NAMESPACE/POD/CONTAINER.log.
func isNestedBundleFile(p string) bool {
	parts := strings.Split(p, "/")
	switch {
	case len(parts) == 2:
		return parts[1] == "manifest.json"
	case len(parts) > 2 && parts[1] == "resources":
		return true
	case len(parts) == 5 && parts[1] == "logs":
		return strings.HasSuffix(p, ".log")
	}
	return false
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// allLogs says whether every name looks like a log file.
func allLogs(names []string) bool {
	for _, n := range names {
		switch path.Ext(n) {
		case ".log", ".txt", ".out", ".err":
		default:
			return false
		}
	}
	return len(names) > 0
}

// ListSome joins the first n names and says how many more there are.
func ListSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}

// checkPlainFile refuses archives that are not bundles before they are read as text.
func checkPlainFile(p string) error {
	if p == "-" {
		return nil
	}
	// A pipe or a FIFO is read as a log, and not opened here: opening a FIFO waits for its
	// writer, and an open cannot be interrupted (bundle.OpenLogs opens it so that a signal
	// ends the wait).
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil // replaced by a pipe since: read as a log
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return fmt.Errorf("%s: a zip archive: extract it and give the directory, or give a .tar.gz bundle", p)
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return fmt.Errorf("%s: an uncompressed tar: gzip it (gzip %s) or extract it, then give the .tar.gz or the directory", p, p)
	}
	if bundle.IsFlightRecord(head) {
		return nil // a flight recorder dump beside the logs: bundle.OpenLogs reads it as one
	}
	if what := binaryKind(head); what != "" {
		return fmt.Errorf("%s: %s, not a log: expected log lines, or %s", p, what, expectedInput)
	}
	return nil
}

// binaryMagic names file formats by their first bytes: what is handed over by mistake (a
// screenshot of an error, a PDF export, a checkpoint, a binary) instead of a log.
var binaryMagic = []struct{ magic, what string }{
	{"\x89PNG\r\n\x1a\n", "a PNG image"},
	{"\xff\xd8\xff", "a JPEG image"},
	{"GIF87a", "a GIF image"},
	{"GIF89a", "a GIF image"},
	{"%PDF-", "a PDF document"},
	{"\x7fELF", "an ELF executable"},
	{"\xcf\xfa\xed\xfe", "a Mach-O executable"},
	{"MZ", "a Windows executable"},
	{"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"},
	{"Rar!\x1a\x07", "a RAR archive"},
	{"SQLite format 3\x00", "an SQLite database"},
	{"PAR1", "a Parquet file"},
	{"\x93NUMPY", "a NumPy array"},
	{"\x89HDF\r\n\x1a\n", "an HDF5 file"},
	{"\x80\x02", "a Python pickle"},
	{"\x80\x04\x95", "a Python pickle"},
}

// binaryKind names the binary format head starts with, "" for none it knows. "RIFF" files
// (WebP, WAV) are told by their form type.
func binaryKind(head []byte) string {
	for _, m := range binaryMagic {
		if bytes.HasPrefix(head, []byte(m.magic)) {
			if m.magic == "MZ" && bytes.IndexByte(head[:min(len(head), 64)], 0) < 0 {
				continue // "MZ" followed by text is a log line
			}
			return m.what
		}
	}
	if len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP" {
		return "a WebP image"
	}
	return ""
}
