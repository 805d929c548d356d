package bundle

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing/fstest"
	"time"
)

// PlainNamespace is the namespace given to logs that came as plain files.
const PlainNamespace = "_"

// PlainContainer is the container name given to logs that came as plain files.
const PlainContainer = "main"

// OpenLogs makes a bundle of plain log files: each file becomes the log of one container of
// an unnamed job, in logs/_/<file name>/main.log. The name "-" reads stdin (into a private
// temporary file, bounded by the limits).
func OpenLogs(paths []string, stdin io.Reader, lim Limits) (*Bundle, error) {
	b := &Bundle{Source: strings.Join(paths, " "), Plain: true, Limits: lim}
	vfs := &pathFS{files: map[string]string{}}
	var total int64
	used := map[string]bool{}
	for _, p := range paths {
		real := p
		if p == "-" {
			tmp, err := spoolStdin(stdin, lim)
			if err != nil {
				b.Close()
				return nil, fmt.Errorf("reading standard input: %w", err)
			}
			prev := b.cleanup
			b.cleanup = func() error {
				if prev != nil {
					prev()
				}
				return os.Remove(tmp)
			}
			real = tmp
		}
		st, err := os.Stat(real)
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
		pod := plainPodName(p)
		for i := 2; used[pod]; i++ {
			pod = fmt.Sprintf("%s-%d", plainPodName(p), i)
		}
		used[pod] = true
		vp := path.Join("logs", PlainNamespace, pod, PlainContainer+".log")
		vfs.files[vp] = real
		b.Files = append(b.Files, File{Path: vp, Size: st.Size()})
	}
	sortFiles(b.Files)
	b.FS = vfs
	return b, nil
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

func spoolStdin(r io.Reader, lim Limits) (string, error) {
	f, err := os.CreateTemp("", "coroner-stdin-")
	if err != nil {
		return "", err
	}
	n, err := io.Copy(f, io.LimitReader(r, lim.MaxFileBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > lim.MaxFileBytes {
		err = &LimitError{What: "standard input", Limit: lim.MaxFileBytes, Flag: "max-file-bytes"}
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// pathFS is a read-only fs.FS whose files are real files under other names. Directories are
// synthesised from the file paths.
type pathFS struct {
	files map[string]string // virtual path -> real path
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
