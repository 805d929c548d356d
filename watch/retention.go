package watch

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// retention bounds what the bundle directory keeps. Zero values mean no bound. Keep and
// MaxBytes bound each namespace on its own (the first directory under the bundle directory),
// so that one tenant's failures never evict another's bundles; MaxDirBytes bounds the whole
// directory (the volume), and when it is over, the namespace that stores the most gives first.
type retention struct {
	Keep        int           // bundles per namespace
	MaxBytes    int64         // bundles and their reports, per namespace
	MaxAge      time.Duration // by the bundle's modification time
	MaxDirBytes int64         // bundles and their reports, all namespaces together
}

// stored is one bundle with its reports: <dir>/<ns>/<job>/<base>.tar.gz, .html, .json.
type stored struct {
	base  string // the path without extension
	ns    string // the namespace directory ("" for a bundle directly under dir)
	files []string
	bytes int64
	mod   time.Time
}

// bundleExts are the files of one stored bundle.
var bundleExts = []string{".tar.gz", ".html", ".json"}

// scanStored lists the bundles under dir, oldest first. Temporary files of bundles being
// written are not bundles.
func scanStored(dir string) ([]*stored, error) {
	var out []*stored
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // a directory removed meanwhile
		}
		if d.IsDir() || !strings.HasSuffix(p, ".tar.gz") || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		s := &stored{base: strings.TrimSuffix(p, ".tar.gz")}
		if rel, err := filepath.Rel(dir, p); err == nil {
			if ns, _, ok := strings.Cut(filepath.ToSlash(rel), "/"); ok {
				s.ns = ns
			}
		}
		for _, ext := range bundleExts {
			st, err := os.Stat(s.base + ext)
			if err != nil {
				continue
			}
			s.files = append(s.files, s.base+ext)
			s.bytes += st.Size()
			if ext == ".tar.gz" {
				s.mod = st.ModTime()
			}
		}
		out = append(out, s)
		return nil
	})
	sort.Slice(out, func(a, b int) bool {
		if !out[a].mod.Equal(out[b].mod) {
			return out[a].mod.Before(out[b].mod)
		}
		return out[a].base < out[b].base
	})
	return out, err
}

// usage is what one namespace stores.
type usage struct {
	count int
	bytes int64
}

// prune removes the oldest bundles (with their reports) beyond the bounds, never one in
// keep (bundles being written, analysed or handed to the hook; they still count towards the
// bounds). It returns how many it removed and what is left, oldest first.
func prune(dir string, r retention, now time.Time, keep func(base string) bool) (removed int, left []*stored, err error) {
	all, err := scanStored(dir)
	if err != nil {
		return 0, nil, err
	}
	per := map[string]*usage{}
	var total int64
	for _, s := range all {
		u := per[s.ns]
		if u == nil {
			u = &usage{}
			per[s.ns] = u
		}
		u.count++
		u.bytes += s.bytes
		total += s.bytes
	}
	gone := make([]bool, len(all))
	drop := func(i int) {
		gone[i] = true
		u := per[all[i].ns]
		u.count--
		u.bytes -= all[i].bytes
		total -= all[i].bytes
	}
	// Each namespace within its own bounds, oldest first.
	for i, s := range all {
		u := per[s.ns]
		over := (r.Keep > 0 && u.count > r.Keep) || (r.MaxBytes > 0 && u.bytes > r.MaxBytes) || (r.MaxAge > 0 && now.Sub(s.mod) > r.MaxAge)
		if over && !keep(s.base) {
			drop(i)
		}
	}
	// The volume: while over, the oldest bundle of the namespace that stores the most goes (the
	// name decides between equals): the heaviest tenant pays for the volume first.
	for r.MaxDirBytes > 0 && total > r.MaxDirBytes {
		victim := -1
		for i, s := range all {
			if gone[i] || keep(s.base) {
				continue
			}
			if victim < 0 {
				victim = i
				continue
			}
			v, u := per[all[victim].ns], per[s.ns]
			if u.bytes > v.bytes || u.bytes == v.bytes && s.ns < all[victim].ns {
				victim = i
			}
		}
		if victim < 0 {
			break // all in use
		}
		drop(victim)
	}

	var firstErr error
	for i, s := range all {
		if !gone[i] {
			left = append(left, s)
			continue
		}
		for _, f := range s.files {
			if err := os.Remove(f); err != nil && !os.IsNotExist(err) && firstErr == nil {
				firstErr = err
			}
		}
		removed++
		removeEmptyDirs(dir, filepath.Dir(s.base))
	}
	return removed, left, firstErr
}

// removeEmptyDirs removes d and its parents up to (not including) root while they are empty.
func removeEmptyDirs(root, d string) {
	for d != root && strings.HasPrefix(d, root+string(filepath.Separator)) {
		if os.Remove(d) != nil {
			return
		}
		d = filepath.Dir(d)
	}
}

// removeStaleTemps removes what an interrupted run left: the temporary files of bundles
// and reports (".<name>.tmp-*"). Only the leader writes, and it calls this before it starts.
func removeStaleTemps(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".tmp-") {
			if os.Remove(p) == nil {
				n++
			}
		}
		return nil
	})
	return n, err
}
