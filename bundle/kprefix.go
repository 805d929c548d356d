package bundle

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/coroner-dev/coroner/internal/scratch"
)

// The logs of many pods in one file: `kubectl logs -l ... --prefix [--timestamps]` puts
// "[pod/POD/CONTAINER] " before every line; stern puts "POD CONTAINER " (and the namespace
// first when it tails several), its --timestamps the time after them. Read as one log, such a
// dump is one pseudo-process: no ranks, no per-pod timeline. Each line is handed back to the
// stream of its pod and container, prefix removed, so that the dump is read as the bundle of
// the same logs would be.

// dumpForm is the kind of prefix a multi-pod dump carries.
type dumpForm int

const (
	dumpNone    dumpForm = iota
	dumpKubectl          // [pod/POD/CONTAINER] line
	dumpStern            // POD CONTAINER line
	dumpSternNS          // NAMESPACE POD CONTAINER line
)

func (f dumpForm) String() string {
	switch f {
	case dumpKubectl:
		return "kubectl logs"
	case dumpStern, dumpSternNS:
		return "stern"
	}
	return "plain"
}

// dumpStream is one pod's container's lines of a dump.
type dumpStream struct {
	Namespace, Pod, Container string
	// Real is the file the lines were written to; Lines how many.
	Real  string
	Lines int
	Size  int64
}

// dumpPrefix names the directories of split dumps in the temporary directory.
const dumpPrefix = "coroner-dump-"

// linePrefix is what a dump's line says of its origin, and where its own text starts.
type linePrefix struct {
	ns, pod, container string
	rest               int
}

// sniffDump tells from a log's first lines whether it is a multi-pod dump, and of which form.
// Most lines (nine in ten, ignoring empty lines and stern's "+ pod › container" notes) must
// carry the prefix, and a stern dump must look like one: pod names with a dash, few streams
// for its lines, or stern's timestamps after the prefix.
func sniffDump(head []byte) dumpForm {
	lines := bytes.Split(head, []byte("\n"))
	if len(lines) > 1 {
		lines = lines[:len(lines)-1] // the last may be cut
	}
	var n, kubectl, stern, sternNS, sternTS, sternNSTS int
	pairs := map[string]bool{}
	for _, l := range lines {
		l = stripANSI(bytes.TrimRight(l, "\r"))
		if len(bytes.TrimSpace(l)) == 0 || isSternNote(l) {
			continue
		}
		n++
		if _, ok := parseKubectlPrefix(l); ok {
			kubectl++
		}
		if p, ok := parseSternPrefix(l, false); ok {
			stern++
			pairs[p.pod+"/"+p.container] = true
			if isRFC3339(firstField(l[p.rest:])) {
				sternTS++
			}
		}
		if p, ok := parseSternPrefix(l, true); ok {
			sternNS++
			if isRFC3339(firstField(l[p.rest:])) {
				sternNSTS++
			}
		}
	}
	most := func(k int) bool { return n >= 2 && k*10 >= n*9 }
	switch {
	case most(kubectl):
		return dumpKubectl
	case most(sternNS) && sternNSTS*2 >= n && sternTS*2 < n:
		return dumpSternNS
	case most(stern) && (sternTS*2 >= n || len(pairs)*4 <= stern):
		return dumpStern
	}
	return dumpNone
}

// parseKubectlPrefix reads "[pod/POD/CONTAINER] ".
func parseKubectlPrefix(l []byte) (linePrefix, bool) {
	rest, ok := bytes.CutPrefix(l, []byte("[pod/"))
	if !ok {
		return linePrefix{}, false
	}
	end := bytes.Index(rest, []byte("] "))
	if end < 0 {
		if !bytes.HasSuffix(rest, []byte("]")) {
			return linePrefix{}, false
		}
		end = len(rest) - 1
	}
	pod, ctr, ok := bytes.Cut(rest[:end], []byte("/"))
	if !ok || !isDNSName(pod) || !isDNSName(ctr) {
		return linePrefix{}, false
	}
	skip := len("[pod/") + end + 2
	if skip > len(l) {
		skip = len(l)
	}
	return linePrefix{pod: string(pod), container: string(ctr), rest: skip}, true
}

// parseSternPrefix reads "POD CONTAINER " (with ns, "NAMESPACE POD CONTAINER "). A pod name
// holds a dash: generated names always do, and a plain log's first words rarely.
func parseSternPrefix(l []byte, ns bool) (linePrefix, bool) {
	n := 2
	if ns {
		n = 3
	}
	var fields [3][]byte
	rest := l
	for i := 0; i < n; i++ {
		sp := bytes.IndexByte(rest, ' ')
		if sp <= 0 {
			if i == n-1 && len(rest) > 0 { // an empty message: the line ends after the prefix
				sp = len(rest)
			} else {
				return linePrefix{}, false
			}
		}
		fields[i] = rest[:sp]
		if !isDNSName(fields[i]) {
			return linePrefix{}, false
		}
		if sp < len(rest) {
			sp++
		}
		rest = rest[sp:]
	}
	p := linePrefix{rest: len(l) - len(rest)}
	if ns {
		p.ns, p.pod, p.container = string(fields[0]), string(fields[1]), string(fields[2])
	} else {
		p.pod, p.container = string(fields[0]), string(fields[1])
	}
	if bytes.IndexByte([]byte(p.pod), '-') < 0 {
		return linePrefix{}, false
	}
	return p, true
}

// isSternNote is stern's line about a container it starts or stops following:
// "+ POD › CONTAINER" or "- POD › CONTAINER".
func isSternNote(l []byte) bool {
	return (bytes.HasPrefix(l, []byte("+ ")) || bytes.HasPrefix(l, []byte("- "))) && bytes.Contains(l, []byte(" › "))
}

// isDNSName reports whether b is a Kubernetes object name: lower-case letters, digits, '-'
// and '.', starting and ending with a letter or digit, at most 253 bytes.
func isDNSName(b []byte) bool {
	if len(b) == 0 || len(b) > 253 {
		return false
	}
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '-' || c == '.') && i > 0 && i < len(b)-1:
		default:
			return false
		}
	}
	return true
}

func firstField(b []byte) []byte {
	if sp := bytes.IndexByte(b, ' '); sp >= 0 {
		return b[:sp]
	}
	return b
}

func isRFC3339(b []byte) bool {
	if len(b) < 20 || b[10] != 'T' {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, string(b))
	return err == nil
}

// stripANSI removes the colour escapes (ESC [ ... letter) stern writes with --color always.
func stripANSI(l []byte) []byte {
	if bytes.IndexByte(l, 0x1b) < 0 {
		return l
	}
	out := make([]byte, 0, len(l))
	for i := 0; i < len(l); i++ {
		if l[i] == 0x1b && i+1 < len(l) && l[i+1] == '[' {
			j := i + 2
			for j < len(l) && (l[j] < 0x40 || l[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		out = append(out, l[i])
	}
	return out
}

// splitDump writes each stream of the dump at real into its own file under dir, prefix
// removed, and returns the streams sorted by namespace, pod and container. A line without the
// prefix (a message's continuation that a tool printed bare) stays with the stream before it;
// stern's notes are dropped. Lines longer than maxLine are copied whole, in pieces.
func splitDump(ctx context.Context, real string, form dumpForm, dir string) ([]*dumpStream, error) {
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type open struct {
		s *dumpStream
		w *bufio.Writer
		f *os.File
	}
	streams := map[string]*open{}
	defer func() {
		for _, o := range streams {
			o.f.Close()
		}
	}()
	var cur *open
	get := func(p linePrefix) (*open, error) {
		key := p.ns + "/" + p.pod + "/" + p.container
		if o := streams[key]; o != nil {
			return o, nil
		}
		if len(streams) >= maxDumpStreams {
			return nil, fmt.Errorf("more than %d pod and container streams in one dump", maxDumpStreams)
		}
		name := filepath.Join(dir, fmt.Sprintf("%d.log", len(streams)))
		w, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		o := &open{s: &dumpStream{Namespace: p.ns, Pod: p.pod, Container: p.container, Real: name}, w: bufio.NewWriter(w), f: w}
		streams[key] = o
		return o, nil
	}
	br := bufio.NewReaderSize(ctxReader{ctx, f}, 64<<10)
	continued, skip := false, false // the line read is the rest of a longer one; of a note
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return nil, err
		}
		if len(line) > 0 && !continued {
			l := stripANSI(bytes.TrimRight(line, "\r\n"))
			skip = form != dumpKubectl && isSternNote(l)
			if !skip {
				var p linePrefix
				ok := false
				if form == dumpKubectl {
					p, ok = parseKubectlPrefix(l)
				} else {
					p, ok = parseSternPrefix(l, form == dumpSternNS)
				}
				if ok || cur == nil { // lines before the first prefix: a stream of their own
					o, gerr := get(p)
					if gerr != nil {
						return nil, gerr
					}
					cur = o
				}
				if ok {
					line = l[p.rest:]
					if err == nil {
						line = append(line, '\n')
					}
				}
				cur.s.Lines++
			}
		}
		if len(line) > 0 && !skip {
			n, werr := cur.w.Write(line)
			if werr != nil {
				return nil, werr
			}
			cur.s.Size += int64(n)
		}
		continued = err == bufio.ErrBufferFull
		if err == io.EOF {
			break
		}
	}
	out := make([]*dumpStream, 0, len(streams))
	for _, o := range streams {
		if err := o.w.Flush(); err != nil {
			return nil, err
		}
		out = append(out, o.s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return a.Container < b.Container
	})
	return out, nil
}

// maxDumpStreams bounds the files one dump is split into.
const maxDumpStreams = 10_000

// readDumpHead returns the first sniffSize bytes of a file.
func readDumpHead(real string) ([]byte, error) {
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, sniffSize)
	n, err := io.ReadFull(f, head)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return head[:n], err
}

// openDumpDir makes the private directory a bundle's split dumps are written to, removed
// when the bundle is closed.
func (b *Bundle) openDumpDir() (string, error) {
	scratch.Sweep("", dumpPrefix)
	d, err := scratch.MkdirTemp("", dumpPrefix+"*")
	if err != nil {
		return "", err
	}
	b.onClose(d.Remove)
	return d.Path, nil
}
