package bundle

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing/fstest"
	"time"

	"github.com/coroner-dev/coroner/internal/scratch"
)

// PlainNamespace is the namespace given to logs that came as plain files.
const PlainNamespace = "_"

// PlainContainer is the container name given to logs that came as plain files.
const PlainContainer = "main"

// OpenLogs makes a bundle of plain log files: each file becomes the log of one container of
// an unnamed job, in logs/_/<file name>/main.log; files of the same base name are told apart
// by their directories (logs/_/<directory>/<file name>.log: the pod a log was saved under). A
// dump of many pods' logs (kubectl logs --prefix, stern) is split into its pods' containers. A
// file that holds Kubernetes objects (kubectl get -o yaml) is read as resources.
// The name "-" reads stdin (into a private temporary file, bounded by the limits); a
// cancelled ctx stops that read.
func OpenLogs(ctx context.Context, paths []string, stdin io.Reader, lim Limits) (*Bundle, error) {
	b := &Bundle{Source: strings.Join(paths, " "), Plain: true, Limits: lim}
	b.FS = &pathFS{files: map[string]string{}, names: map[string]string{}}
	if err := b.addPlainLogs(ctx, paths, stdin); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// plainLog is one log of plain inputs: where its bytes are, and what it is named.
type plainLog struct {
	input     string // the path the user gave, "-" for stdin
	real      string
	size      int64
	pod       string // "" until named
	container string
	name      string
}

func (b *Bundle) addPlainLogs(ctx context.Context, paths []string, stdin io.Reader) error {
	var total int64
	var logs []*plainLog
	var dumpDir string
	var objects []File
	usedObjects := map[string]bool{}
	vfs := b.FS.(*pathFS)
	for _, p := range paths {
		real, size, err := b.spoolPlain(ctx, p, stdin, &total)
		if err != nil {
			return err
		}
		head, err := readDumpHead(real)
		if err != nil {
			return err
		}
		if IsFlightRecord(head) {
			// A flight recorder dump beside the logs, known by its content, whatever its name.
			name := filepath.Base(p)
			for i := 2; usedObjects["\x00"+name]; i++ {
				name = fmt.Sprintf("%s-%d", filepath.Base(p), i)
			}
			usedObjects["\x00"+name] = true
			vp := path.Join(FlightRecorderDir, PlainNamespace, PlainNamespace, name)
			vfs.files[vp] = real
			vfs.names[vp] = filepath.Base(p)
			objects = append(objects, File{Path: vp, Size: size})
			continue
		}
		if isKubeObject(head) {
			vp := objectPath(p, head, usedObjects)
			objects = append(objects, File{Path: vp, Size: size})
			vfs.files[vp] = real
			vfs.names[vp] = filepath.Base(p)
			continue
		}
		form := sniffDump(head)
		if form == dumpNone {
			logs = append(logs, &plainLog{input: p, real: real, size: size})
			continue
		}
		if dumpDir == "" {
			if dumpDir, err = b.openDumpDir(); err != nil {
				return err
			}
		}
		sub, err := os.MkdirTemp(dumpDir, "d")
		if err != nil {
			return err
		}
		streams, err := splitDump(ctx, real, form, sub)
		if err != nil {
			return fmt.Errorf("%s: reading as a %s dump: %w", p, form, err)
		}
		file := filepath.Base(p)
		if p == "-" {
			file = "stdin"
		}
		for _, s := range streams {
			l := &plainLog{input: p, real: s.Real, size: s.Size, pod: plainPodName(s.Pod), container: plainPodName(s.Container)}
			l.name = s.Pod + "/" + s.Container + " (" + file + ")"
			if s.Pod == "" { // lines before the first prefix
				l.pod, l.container, l.name = plainPodName(p), PlainContainer, file
			}
			logs = append(logs, l)
		}
	}
	namePlainLogs(logs)
	b.Files = append(b.Files, objects...)
	for _, l := range logs {
		vp := path.Join("logs", PlainNamespace, l.pod, l.container+".log")
		vfs.files[vp] = l.real
		vfs.names[vp] = l.name
		b.Files = append(b.Files, File{Path: vp, Size: l.size})
	}
	sortFiles(b.Files)
	// A log saved by PowerShell (UTF-16) or an old Mac tool ("\r" line ends) is read decoded.
	over, err := b.decodeLogs(ctx, vfs.real, nil)
	if err != nil {
		return err
	}
	for p, real := range over {
		vfs.files[p] = real
	}
	return nil
}

// spoolPlain returns the regular file that holds input p's bytes, and its size: p itself, or
// a private copy of standard input, a FIFO or a pipe, removed when the bundle is closed.
func (b *Bundle) spoolPlain(ctx context.Context, p string, stdin io.Reader, total *int64) (string, int64, error) {
	real := p
	st, err := os.Stat(p)
	if p != "-" && err != nil {
		return "", 0, err
	}
	if p == "-" || (st.Mode()&(fs.ModeNamedPipe|fs.ModeCharDevice|fs.ModeSocket) != 0) {
		// Standard input, a FIFO, a pipe from <(kubectl logs ...): read once, into a
		// private copy.
		var tmp *scratch.File
		what := "standard input"
		if p == "-" {
			tmp, err = spoolStdin(ctx, stdin, b.Limits)
		} else {
			what = p
			var f *os.File
			if f, err = openFile(ctx, p); err == nil {
				stop := interruptible(ctx, f)
				tmp, err = spoolStdin(ctx, f, b.Limits)
				stop()
				f.Close()
			}
		}
		if err != nil {
			return "", 0, fmt.Errorf("reading %s: %w", what, err)
		}
		b.onClose(tmp.Remove)
		real = tmp.Name()
	}
	st, err = os.Stat(real)
	if err != nil {
		return "", 0, err
	}
	if !st.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s: not a regular file", p)
	}
	size := st.Size()
	// A rotated log (train.log.gz) is read as the log it holds.
	if c, _ := sniffCompressed(real); c != "" {
		if real, size, err = b.decompressLog(ctx, p, real, c); err != nil {
			return "", 0, err
		}
	}
	if err := checkSize(p, size, total, b.Limits); err != nil {
		return "", 0, fmt.Errorf("%s: %w", p, err)
	}
	return real, size, nil
}

// namePlainLogs gives each plain log not named yet its pod, container and name. A file is
// its own pod ("train.log": pod train, container main), unless other files have its base
// name: then it is the log of the directory it was saved in (".../worker-1/pytorch.log": pod
// worker-1, container pytorch, named "worker-1/pytorch.log"), the layout of logs saved per
// pod. The name is the base name, not the path, so that the same logs give the same report
// wherever they are; names still taken get a number ("train.log (2)").
func namePlainLogs(logs []*plainLog) {
	bases := map[string]int{}
	for _, l := range logs {
		if l.pod == "" && l.input != "-" {
			bases[filepath.Base(l.input)]++
		}
	}
	usedPod := map[string]bool{}
	usedName := map[string]bool{}
	for _, l := range logs {
		if l.pod != "" {
			usedPod[l.pod+"/"+l.container] = true
			usedName[l.name] = true
		}
	}
	for _, l := range logs {
		if l.pod != "" {
			continue
		}
		base := filepath.Base(l.input)
		dir := filepath.Base(filepath.Dir(absOr(l.input)))
		if l.input != "-" && bases[base] > 1 && dir != "." && dir != string(filepath.Separator) {
			l.pod, l.container = plainPodName(dir), plainPodName(base)
			l.name = dir + "/" + base
		} else {
			l.pod, l.container = plainPodName(l.input), PlainContainer
			l.name = base
			if l.input == "-" {
				l.name = "stdin"
			}
		}
		pod := l.pod
		for i := 2; usedPod[l.pod+"/"+l.container]; i++ {
			l.pod = fmt.Sprintf("%s-%d", pod, i)
		}
		usedPod[l.pod+"/"+l.container] = true
		name := l.name
		for i := 2; usedName[l.name]; i++ {
			l.name = fmt.Sprintf("%s (%d)", name, i)
		}
		usedName[l.name] = true
	}
}

// absOr is p made absolute, or p.
func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// PlainName is the name the user gave a plain log, by its path in the bundle ("" for a
// bundle's own files).
func (b *Bundle) PlainName(path string) string {
	if p, ok := b.FS.(*pathFS); ok {
		return p.names[path]
	}
	return ""
}

func plainPodName(p string) string {
	if p == "-" {
		return "stdin"
	}
	base := filepath.Base(p)
	for _, ext := range []string{".gz", ".xz", ".zst", ".bz2", ".txt", ".log", ".out", ".err"} {
		base = strings.TrimSuffix(base, ext)
	}
	var sb strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			sb.WriteRune(r)
		default:
			sb.WriteRune('_')
		}
	}
	if sb.Len() == 0 || base == "." {
		return "log"
	}
	return sb.String()
}

// stdinPrefix names the copies of standard input in the temporary directory.
const stdinPrefix = "coroner-stdin-"

// spoolStdin copies r into a temporary file. A read from a terminal or a pipe cannot be
// interrupted, so the copy runs on its own and a cancelled ctx returns at once (the process is
// about to end; the copy is abandoned and its file removed).
func spoolStdin(ctx context.Context, r io.Reader, lim Limits) (*scratch.File, error) {
	scratch.Sweep("", stdinPrefix)
	f, err := scratch.CreateTemp("", stdinPrefix+"*")
	if err != nil {
		return nil, err
	}
	type copied struct {
		n   int64
		err error
	}
	done := make(chan copied, 1)
	go func() {
		n, err := io.Copy(f, io.LimitReader(ctxReader{ctx, r}, lim.MaxFileBytes+1))
		done <- copied{n, err}
	}()
	var n int64
	select {
	case c := <-done:
		n, err = c.n, c.err
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil && n > lim.MaxFileBytes {
		err = &LimitError{What: "the input", Limit: lim.MaxFileBytes, Kind: LimitFileBytes}
	}
	if err != nil {
		f.Remove()
		return nil, err
	}
	// The file stays open, hence locked against Sweep, until the bundle is closed.
	return f, nil
}

// pathFS is a read-only fs.FS whose files are real files under other names. Directories are
// synthesised from the file paths.
type pathFS struct {
	files map[string]string // virtual path -> real path
	names map[string]string // virtual path -> the name reports show
}

// real is the real file of a virtual path.
func (p *pathFS) real(name string) (string, bool) {
	r, ok := p.files[name]
	return r, ok
}

func (p *pathFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if real, ok := p.files[name]; ok {
		return os.Open(real)
	}
	// A directory: list it through a MapFS of the virtual names.
	m := fstest.MapFS{}
	for v := range p.files {
		m[v] = &fstest.MapFile{Mode: 0o444, ModTime: time.Time{}}
	}
	return m.Open(name)
}
