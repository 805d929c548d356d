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
// an unnamed job, in logs/_/<file name>/main.log. The name "-" reads stdin (into a private
// temporary file, bounded by the limits); a cancelled ctx stops that read.
func OpenLogs(ctx context.Context, paths []string, stdin io.Reader, lim Limits) (*Bundle, error) {
	b := &Bundle{Source: strings.Join(paths, " "), Plain: true, Limits: lim}
	vfs := &pathFS{files: map[string]string{}, names: map[string]string{}}
	var total int64
	used := map[string]bool{}
	names := map[string]bool{}
	for _, p := range paths {
		real := p
		st, err := os.Stat(p)
		if p != "-" && err != nil {
			b.Close()
			return nil, err
		}
		if p == "-" || (st.Mode()&(fs.ModeNamedPipe|fs.ModeCharDevice|fs.ModeSocket) != 0) {
			// Standard input, a FIFO, a pipe from <(kubectl logs ...): read once, into a
			// private copy.
			var tmp *scratch.File
			what := "standard input"
			if p == "-" {
				tmp, err = spoolStdin(ctx, stdin, lim)
			} else {
				what = p
				var f *os.File
				if f, err = openFile(ctx, p); err == nil {
					stop := interruptible(ctx, f)
					tmp, err = spoolStdin(ctx, f, lim)
					stop()
					f.Close()
				}
			}
			if err != nil {
				b.Close()
				return nil, fmt.Errorf("reading %s: %w", what, err)
			}
			prev := b.cleanup
			b.cleanup = func() error {
				if prev != nil {
					prev()
				}
				return tmp.Remove()
			}
			real = tmp.Name()
		}
		st, err = os.Stat(real)
		if err != nil {
			b.Close()
			return nil, err
		}
		if !st.Mode().IsRegular() {
			b.Close()
			return nil, fmt.Errorf("%s: not a regular file", p)
		}
		if err := checkSize(p, st.Size(), &total, lim); err != nil {
			b.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if isFlightRecordFile(real) {
			// A flight recorder dump beside the logs, known by its content, whatever its name.
			name := filepath.Base(p)
			for i := 2; used["\x00"+name]; i++ {
				name = fmt.Sprintf("%s-%d", filepath.Base(p), i)
			}
			used["\x00"+name] = true
			vp := path.Join(FlightRecorderDir, PlainNamespace, PlainNamespace, name)
			vfs.files[vp] = real
			vfs.names[vp] = plainName(p, names)
			b.Files = append(b.Files, File{Path: vp, Size: st.Size()})
			continue
		}
		pod := plainPodName(p)
		for i := 2; used[pod]; i++ {
			pod = fmt.Sprintf("%s-%d", plainPodName(p), i)
		}
		used[pod] = true
		vp := path.Join("logs", PlainNamespace, pod, PlainContainer+".log")
		vfs.files[vp] = real
		vfs.names[vp] = plainName(p, names)
		b.Files = append(b.Files, File{Path: vp, Size: st.Size()})
	}
	sortFiles(b.Files)
	// A log saved by PowerShell (UTF-16) or an old Mac tool ("\r" line ends) is read decoded.
	over, err := b.decodeLogs(ctx, vfs.files)
	if err != nil {
		b.Close()
		return nil, err
	}
	for p, real := range over {
		vfs.files[p] = real
	}
	b.FS = vfs
	return b, nil
}

// isFlightRecordFile sniffs a plain input's head for a flight recorder dump.
func isFlightRecordFile(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	return IsFlightRecord(head[:n])
}

// plainName is how reports name a plain log: its base name ("train.log"), "stdin", and a
// number after a name already taken ("train.log (2)"). The base name, not the path, so that
// the same logs give the same report wherever they are.
func plainName(p string, used map[string]bool) string {
	name := filepath.Base(p)
	if p == "-" {
		name = "stdin"
	}
	n := name
	for i := 2; used[n]; i++ {
		n = fmt.Sprintf("%s (%d)", name, i)
	}
	used[n] = true
	return n
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
	for _, ext := range []string{".gz", ".txt", ".log", ".out", ".err"} {
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
