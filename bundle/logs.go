package bundle

import (
	"fmt"
	"strings"
)

// LogStream is one container log file of a bundle.
type LogStream struct {
	Path      string
	Namespace string
	Pod       string
	Container string
	Previous  bool
	Size      int64
	// Truncated and TruncatedBytes come from the manifest: the collector cut the middle.
	Truncated      bool
	TruncatedBytes int64
}

// LogStreams lists the container logs of a bundle, in path order, without reading resources
// (search needs only the logs). Files under logs/ at another path are skipped with a warning.
func LogStreams(b *Bundle) ([]LogStream, []string) {
	n := 0
	for _, f := range b.Files {
		if strings.HasPrefix(f.Path, "logs/") {
			n++
		}
	}
	var logs []LogStream
	if n > 0 { // grown a log at a time, its copies were 5% of a warm search of 200,000 logs
		logs = make([]LogStream, 0, n)
	}
	var warnings []string
	for _, f := range b.Files {
		if !strings.HasPrefix(f.Path, "logs/") {
			continue
		}
		ns, pod, file, ok := logParts(f.Path)
		if !ok {
			warnings = append(warnings, fmt.Sprintf("%s: not at logs/<namespace>/<pod>/<container>.log; skipped", f.Path))
			continue
		}
		name := strings.TrimSuffix(file, ".log")
		ls := LogStream{Path: f.Path, Namespace: ns, Pod: pod, Container: name, Size: f.Size}
		if c, ok := strings.CutSuffix(name, ".previous"); ok {
			ls.Container, ls.Previous = c, true
		}
		if e := b.Manifest.File(f.Path); e != nil {
			ls.Truncated, ls.TruncatedBytes = e.Truncated, e.TruncatedBytes
		}
		logs = append(logs, ls)
	}
	return logs, warnings
}

// logParts splits "logs/<namespace>/<pod>/<container>.log" into its names, substrings of p
// (no allocation per log: a bundle may hold 200,000).
func logParts(p string) (ns, pod, file string, ok bool) {
	rest := strings.TrimPrefix(p, "logs/")
	ns, rest, ok1 := strings.Cut(rest, "/")
	pod, file, ok2 := strings.Cut(rest, "/")
	ok = ok1 && ok2 && !strings.Contains(file, "/") && strings.HasSuffix(file, ".log")
	return ns, pod, file, ok
}
