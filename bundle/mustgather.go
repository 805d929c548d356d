package bundle

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// An OpenShift must-gather (or `oc adm inspect`) and a crust-gather snapshot hold what a bundle
// holds in their own layouts: objects as YAML (lists per resource, or one file per object) under
// namespaces/<ns>/ and cluster-scoped-resources/, and container logs under
// namespaces/<ns>/pods/<pod>/<ctr>/<ctr>/logs/{current,previous}.log (must-gather) or
// namespaces/<ns>/pod/<pod>/<ctr>/{current,previous}.log (crust-gather). They are read in
// place, each file under its bundle path: logs at logs/<ns>/<pod>/<ctr>.log, every YAML under
// resources/ (parse reads objects and lists from any file there).

// gatherLayout names a layout and the file that marks it.
type gatherLayout struct {
	name, marker string
}

var gatherLayouts = []gatherLayout{
	{"must-gather", "timestamp"},
	{"must-gather", "cluster-scoped-resources"},
	{"crust-gather", "collected.timestamp"},
}

// findGather returns the folder of a must-gather or crust-gather tree at dir or up to two
// folders down (must-gather.local.N/<image>/), and the layout's name; "" when there is none.
func findGather(dir string) (string, string) {
	var try func(d string, depth int) (string, string)
	try = func(d string, depth int) (string, string) {
		if st, err := os.Stat(filepath.Join(d, "namespaces")); err == nil && st.IsDir() {
			for _, l := range gatherLayouts {
				if _, err := os.Stat(filepath.Join(d, l.marker)); err == nil {
					return d, l.name
				}
			}
		}
		if depth == 2 {
			return "", ""
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			return "", ""
		}
		var dirs []string
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, e.Name())
			}
		}
		if len(dirs) != 1 {
			return "", "" // one folder down only when it is the only one: no guessing
		}
		return try(filepath.Join(d, dirs[0]), depth+1)
	}
	if root, layout := try(dir, 2); root != "" {
		return root, layout // `coroner redact` leaves a manifest.json beside its marker
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestName)); err == nil {
		return "", "" // a coroner bundle
	}
	return try(dir, 0)
}

// gatherPath is the bundle path of a file of a gather tree, "" for a file a bundle has no
// place for.
func gatherPath(rel string) string {
	parts := strings.Split(rel, "/")
	n := len(parts)
	if strings.HasSuffix(rel, ".log") && n >= 6 && parts[0] == "namespaces" {
		ns := parts[1]
		prev := ""
		switch parts[n-1] {
		case "current.log":
		case "previous.log":
			prev = ".previous"
		default:
			return ""
		}
		switch {
		case n == 8 && parts[2] == "pods" && parts[n-2] == "logs" && parts[4] == parts[5]: // must-gather
			return path.Join("logs", ns, parts[3], parts[4]+prev+".log")
		case n == 6 && parts[2] == "pod": // crust-gather
			return path.Join("logs", ns, parts[3], parts[4]+prev+".log")
		}
		return ""
	}
	if strings.HasSuffix(rel, ".yaml") || strings.HasSuffix(rel, ".yml") || strings.HasSuffix(rel, ".json") {
		return path.Join("resources", "_gather", rel)
	}
	return ""
}

// openGather opens the gather tree at root (found in source) as a bundle, under the limits.
func openGather(ctx context.Context, source, root, layout string, lim Limits) (*Bundle, error) {
	vfs := &pathFS{files: map[string]string{}, names: map[string]string{}}
	b := &Bundle{Source: source, FS: vfs, Limits: lim}
	var total int64
	entries, skipped := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if entries++; entries > lim.MaxEntries {
			return &LimitError{What: "number of entries", Limit: int64(lim.MaxEntries), Kind: LimitEntries}
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		vp := gatherPath(rel)
		if vp == "" || !d.Type().IsRegular() { // links, devices and files of no use are not read
			skipped++
			return nil
		}
		if _, dup := vfs.files[vp]; dup {
			return fmt.Errorf("%s: a second file for %s", rel, vp)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := checkSize(rel, info.Size(), &total, lim); err != nil {
			return err
		}
		vfs.files[vp] = p
		b.Files = append(b.Files, File{Path: vp, Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortFiles(b.Files)
	b.Warnings = append(b.Warnings, fmt.Sprintf("read as a %s: no manifest (collection time, options and gaps unknown); %d file(s) of no use to an analysis skipped", layout, skipped))
	return b.decodeInPlace(ctx, vfs)
}

// decodeInPlace gives the logs of a bundle read in place through vfs their decoded copies
// (decodeLogs), read in their place.
func (b *Bundle) decodeInPlace(ctx context.Context, vfs *pathFS) (*Bundle, error) {
	over, err := b.decodeLogs(ctx, vfs.real, nil)
	if err != nil {
		b.Close()
		return nil, err
	}
	for p, real := range over {
		vfs.files[p] = real
	}
	return b, nil
}
