package bundle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
)

// A troubleshoot support bundle (replicatedhq/troubleshoot's `support-bundle`, a
// support-bundle-<time>/ folder or its .tar.gz) holds what a bundle holds in its own layout,
// under cluster-resources/: PodLists at pods/<ns>.json, EventLists at events/<ns>.json, JobLists
// at jobs/<ns>.json, the NodeList at nodes.json, custom resources as bare JSON arrays at
// custom-resources/<plural.group>/<ns>.json (the .yaml beside each is a link to it), and
// container logs at pods/logs/<ns>/<pod>/<ctr>.log and <ctr>-previous.log, without
// timestamps. A `logs` collector writes there too and links <collector>/<pod>/<ctr>.log to
// them; without one, troubleshoot keeps the logs only of the pods it judges unhealthy, the
// last 500 lines or 5 MB of each. version.yaml names the troubleshoot version, analysis.json
// holds its analyzers' results. The files are read in place under their bundle paths, as a
// gather's are; links are followed only to regular files of the same bundle.

// Troubleshoot is the Layout of a troubleshoot support bundle.
const Troubleshoot = "troubleshoot support bundle"

const (
	tsResources = "cluster-resources/"
	tsLogs      = tsResources + "pods/logs/"
	// tsVersion and tsAnalysis are at the bundle's top.
	tsVersion  = "version.yaml"
	tsAnalysis = "analysis.json"
	// maxLinkHops bounds a chain of links; a longer one is taken for a loop.
	maxLinkHops = 8
	// Bounds of what the report shows of troubleshoot's analyzers.
	maxAnalyzers       = 100
	maxAnalyzerTitle   = 200
	maxAnalyzerMessage = 1000
	// maxListedPods bounds the pods a gap names one by one.
	maxListedPods = 5
	// maxPodList bounds a PodList read for the names of the pods without logs.
	maxPodList = 64 << 20
)

// tsKinds are the folders (and files) of cluster-resources/ read as resources: what an
// analysis of a job uses.
var tsKinds = map[string]bool{
	"pods": true, "events": true, "jobs": true, "nodes.json": true, "custom-resources": true,
	"statefulsets": true, "deployments": true, "replicasets": true, "daemonsets": true,
	"pvcs": true, "pvs.json": true, "resource-quota": true, "limitranges": true,
}

// AnalyzerResult is one result of the analyzers of the tool that made a bundle
// (troubleshoot's analysis.json), shown beside coroner's own.
type AnalyzerResult struct {
	Tool string `json:"tool"`
	// Severity is the tool's: error, warn, info or debug (a pass).
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Message  string `json:"message,omitempty"`
}

// findTroubleshoot returns the folder of a troubleshoot support bundle at dir or its only
// folder (support-bundle-<time>/), "" when there is none.
func findTroubleshoot(dir string) string {
	for depth := 0; ; depth++ {
		if isTroubleshootDir(dir) {
			return dir // `coroner redact` leaves a manifest.json beside version.yaml
		}
		if _, err := os.Stat(filepath.Join(dir, ManifestName)); err == nil {
			return "" // a coroner bundle
		}
		if depth == 1 {
			return ""
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return ""
		}
		var dirs []string
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, e.Name())
			}
		}
		if len(dirs) != 1 {
			return "" // one folder down only when it is the only one: no guessing
		}
		dir = filepath.Join(dir, dirs[0])
	}
}

// isTroubleshootDir: version.yaml and cluster-resources/ at the top.
func isTroubleshootDir(dir string) bool {
	v, err := os.Lstat(filepath.Join(dir, tsVersion))
	if err != nil || !v.Mode().IsRegular() {
		return false
	}
	c, err := os.Lstat(filepath.Join(dir, strings.TrimSuffix(tsResources, "/")))
	return err == nil && c.IsDir()
}

// isTroubleshootTree is isTroubleshootDir for the files of an extracted tarball.
func isTroubleshootTree(files []File) bool {
	version, resources := false, false
	for _, f := range files {
		version = version || f.Path == tsVersion
		resources = resources || strings.HasPrefix(f.Path, tsResources)
	}
	return version && resources
}

// tree is a bundle's files as found: regular files by bundle path (to the real file) and
// links by bundle path (to the bundle path they point at, "../..." or absolute when outside).
type tree struct {
	files map[string]string
	sizes map[string]int64
	links map[string]string
}

// walkTree lists the regular files and links under root; links are not followed.
func walkTree(ctx context.Context, root string, lim Limits) (*tree, int, error) {
	t := &tree{files: map[string]string{}, sizes: map[string]int64{}, links: map[string]string{}}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, 0, err
	}
	entries, skipped := 0, 0
	err = filepath.WalkDir(realRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if entries++; entries > lim.MaxEntries {
			return &LimitError{What: "number of entries", Limit: int64(lim.MaxEntries), Kind: LimitEntries}
		}
		rel, err := filepath.Rel(realRoot, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) {
				// The CLI's own folder, before it is archived, links by absolute paths.
				if r, err := filepath.Rel(realRoot, target); err == nil {
					target = r
				}
			} else {
				target = filepath.Join(filepath.Dir(rel), target)
			}
			t.links[rel] = filepath.ToSlash(filepath.Clean(target))
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			t.files[rel], t.sizes[rel] = p, info.Size()
		default:
			skipped++ // devices, FIFOs, sockets
		}
		return nil
	})
	return t, skipped, err
}

// resolve follows the link at name to a regular file of the tree, or says why it does not.
func (t *tree) resolve(name string) (string, error) {
	cur := name
	for range maxLinkHops {
		target := t.links[cur]
		if path.IsAbs(target) || target == ".." || strings.HasPrefix(target, "../") {
			return "", errors.New("a link to outside the bundle: not followed")
		}
		if _, ok := t.files[target]; ok {
			return target, nil
		}
		if _, ok := t.links[target]; !ok {
			return "", errors.New("a link to no regular file of the bundle: not followed")
		}
		cur = target
	}
	return "", errors.New("a loop of links: not followed")
}

// troubleshootPath is the bundle path of a file of a support bundle, "" for a file a bundle
// has no place for.
func troubleshootPath(rel string) string {
	if rest, ok := strings.CutPrefix(rel, tsLogs); ok {
		parts := strings.Split(rest, "/")
		if len(parts) != 3 || !strings.HasSuffix(parts[2], ".log") || strings.HasSuffix(parts[2], "-logs-errors.log") {
			return ""
		}
		ctr := strings.TrimSuffix(parts[2], ".log")
		if c, ok := strings.CutSuffix(ctr, "-previous"); ok && c != "" {
			ctr = c + ".previous"
		}
		return path.Join("logs", parts[0], parts[1], ctr+".log")
	}
	rest, ok := strings.CutPrefix(rel, tsResources)
	if !ok || strings.HasSuffix(rest, "-errors.json") {
		return ""
	}
	if !strings.HasSuffix(rest, ".json") && !strings.HasSuffix(rest, ".yaml") {
		return ""
	}
	top, _, _ := strings.Cut(rest, "/")
	if !tsKinds[top] {
		return ""
	}
	return path.Join("resources", "_troubleshoot", rest)
}

// openTroubleshoot opens the support bundle t (found in source) as a bundle, under the limits.
func openTroubleshoot(ctx context.Context, source string, t *tree, skipped int, lim Limits) (*Bundle, error) {
	vfs := &pathFS{files: map[string]string{}, names: map[string]string{}}
	b := &Bundle{Source: source, FS: vfs, Limits: lim, Layout: Troubleshoot}
	names := make([]string, 0, len(t.files)+len(t.links))
	for p := range t.files {
		names = append(names, p)
	}
	for p := range t.links {
		names = append(names, p)
	}
	sort.Strings(names)
	var total int64
	srcOf := map[string]string{} // bundle path -> the support bundle's regular file
	linked := map[string]bool{}  // files a link outside cluster-resources/ points at: a logs collector's
	for _, p := range names {
		if _, ok := t.links[p]; ok && !strings.HasPrefix(p, tsResources) {
			if target, err := t.resolve(p); err == nil {
				linked[target] = true
			}
		}
	}
	for _, p := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vp := troubleshootPath(p)
		if vp == "" {
			skipped++
			continue
		}
		if yaml, ok := strings.CutSuffix(p, ".yaml"); ok && t.exists(yaml+".json") {
			skipped++ // the custom resources' .yaml twin of the .json (a link to it)
			continue
		}
		real := p
		if _, ok := t.links[p]; ok {
			target, err := t.resolve(p)
			if err != nil {
				b.Gaps = append(b.Gaps, Gap{Step: "open", Object: p, Message: err.Error()})
				continue
			}
			real = target
		}
		if _, dup := vfs.files[vp]; dup {
			return nil, fmt.Errorf("%s: a second file for %s", p, vp)
		}
		if err := checkSize(p, t.sizes[real], &total, lim); err != nil {
			return nil, err
		}
		vfs.files[vp], srcOf[vp] = t.files[real], real
		b.Files = append(b.Files, File{Path: vp, Size: t.sizes[real]})
	}
	sortFiles(b.Files)
	version := t.version()
	b.gapsOfTroubleshoot(t, srcOf, linked)
	b.Analysis = t.analysis(b, lim)
	logs := 0
	for _, f := range b.Files {
		if isLog(f.Path) {
			logs++
		}
	}
	b.Warnings = append(b.Warnings, fmt.Sprintf("read as a %s%s: no manifest, %d log(s) without timestamps, %d file(s) of no use to an analysis skipped; its collection gaps say what it lacks",
		Troubleshoot, version, logs, skipped))
	return b.decodeInPlace(ctx, vfs)
}

func (t *tree) exists(p string) bool {
	_, file := t.files[p]
	_, link := t.links[p]
	return file || link
}

// head reads at most n bytes of the regular file at bundle path p.
func (t *tree) head(p string, n int64) ([]byte, error) {
	f, err := os.Open(t.files[p])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// version is " (troubleshoot vX)" from version.yaml, "" when it names none.
func (t *tree) version() string {
	data, err := t.head(tsVersion, 4<<10)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "versionNumber:"); ok {
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			if v != "" && len(v) <= 64 && strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) || r == ' ' }) < 0 {
				return " (troubleshoot " + v + ")"
			}
		}
	}
	return ""
}

// gapsOfTroubleshoot says what the support bundle lacks: the logs troubleshoot could not
// collect, the pods it kept no logs of, and the logs its default spec cut.
func (b *Bundle) gapsOfTroubleshoot(t *tree, srcOf map[string]string, linked map[string]bool) {
	var errs []string
	for p := range t.files {
		if strings.HasPrefix(p, tsLogs) && strings.HasSuffix(p, "-logs-errors.log") {
			errs = append(errs, p)
		}
	}
	sort.Strings(errs)
	for _, p := range errs {
		data, _ := t.head(p, 1<<10)
		obj := strings.TrimSuffix(strings.TrimPrefix(p, tsLogs), "-logs-errors.log")
		b.Gaps = append(b.Gaps, Gap{Step: "logs", Object: obj, Message: "troubleshoot could not collect them: " + printable(string(data), 300)})
	}
	// Pods with logs, and the logs cluster-resources kept itself (no logs collector links them).
	withLogs := map[string]bool{}
	cut := 0
	for _, f := range b.Files {
		parts := strings.Split(f.Path, "/")
		if parts[0] != "logs" || len(parts) != 4 {
			continue
		}
		withLogs[parts[1]+"/"+parts[2]] = true
		if !linked[srcOf[f.Path]] {
			cut++
		}
	}
	var missing []string
	for _, pod := range t.pods() {
		if !withLogs[pod] {
			missing = append(missing, pod)
		}
	}
	if len(missing) > 0 {
		listed := missing[:min(len(missing), maxListedPods)]
		more := ""
		if len(missing) > len(listed) {
			more = fmt.Sprintf(" and %d more", len(missing)-len(listed))
		}
		why := "troubleshoot's default spec keeps the logs only of pods it judges unhealthy, so running ranks have none (a logs collector on the job's pods keeps them all)"
		if len(linked) > 0 {
			why = "no logs collector of the spec kept them, nor did cluster-resources (a pod that never started has none)"
		}
		b.Gaps = append(b.Gaps, Gap{Step: "logs", Object: fmt.Sprintf("%d pod(s)", len(missing)),
			Message: "no logs: " + why + ": " + strings.Join(listed, ", ") + more})
	}
	if cut > 0 {
		b.Gaps = append(b.Gaps, Gap{Step: "logs", Object: fmt.Sprintf("%d log(s)", cut),
			Message: "kept by troubleshoot's default spec: only the last 500 lines or 5 MB of each (early lines lost) and no timestamps"})
	}
}

// pods are the "namespace/name" of the pods the PodLists name, sorted.
func (t *tree) pods() []string {
	var out []string
	for p := range t.files {
		rest, ok := strings.CutPrefix(p, tsResources+"pods/")
		if !ok || strings.Contains(rest, "/") || !strings.HasSuffix(rest, ".json") {
			continue
		}
		if t.sizes[p] > maxPodList {
			continue // parse says it is over the resource limit
		}
		data, err := t.head(p, maxPodList)
		if err != nil {
			continue
		}
		var list struct {
			Items []struct {
				Metadata struct{ Namespace, Name string } `json:"metadata"`
			} `json:"items"`
		}
		if json.Unmarshal(data, &list) != nil {
			continue
		}
		for _, it := range list.Items {
			if it.Metadata.Name != "" && !strings.ContainsAny(it.Metadata.Namespace+it.Metadata.Name, "/\n") {
				out = append(out, it.Metadata.Namespace+"/"+it.Metadata.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// analysis reads troubleshoot's analysis.json: its analyzers' results, bounded and cut to
// printable one-line text (a report escapes them again as it renders).
func (t *tree) analysis(b *Bundle, lim Limits) []AnalyzerResult {
	size, ok := t.sizes[tsAnalysis]
	if !ok {
		return nil
	}
	if size > lim.MaxResourceBytes {
		b.Warnings = append(b.Warnings, fmt.Sprintf("%s: %d bytes exceeds the %s of %d; troubleshoot's analyzers are not shown", tsAnalysis, size, LimitResourceBytes, lim.MaxResourceBytes))
		return nil
	}
	data, err := t.head(tsAnalysis, size)
	if err != nil {
		return nil
	}
	var results []struct {
		Name     string `json:"name"`
		Severity string `json:"severity"`
		Insight  *struct {
			Primary  string `json:"primary"`
			Detail   string `json:"detail"`
			Severity string `json:"severity"`
		} `json:"insight"`
	}
	if err := json.Unmarshal(data, &results); err != nil {
		b.Warnings = append(b.Warnings, tsAnalysis+": not troubleshoot's analysis (an array of results); its analyzers are not shown")
		return nil
	}
	var out []AnalyzerResult
	for _, r := range results {
		a := AnalyzerResult{Tool: "troubleshoot", Severity: printable(r.Severity, 16), Title: printable(r.Name, maxAnalyzerTitle)}
		if in := r.Insight; in != nil {
			if in.Primary != "" {
				a.Title = printable(in.Primary, maxAnalyzerTitle)
			}
			a.Message = printable(in.Detail, maxAnalyzerMessage)
			if a.Severity == "" {
				a.Severity = printable(in.Severity, 16)
			}
		}
		if a.Title == "" && a.Message == "" {
			continue
		}
		if len(out) == maxAnalyzers {
			b.Warnings = append(b.Warnings, fmt.Sprintf("%s: the first %d of %d results are shown", tsAnalysis, maxAnalyzers, len(results)))
			break
		}
		out = append(out, a)
	}
	return out
}

// printable is s on one line, without control characters, cut to at most n runes.
func printable(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// openTroubleshootDir opens the support bundle folder root (found in source).
func openTroubleshootDir(ctx context.Context, source, root string, lim Limits) (*Bundle, error) {
	t, skipped, err := walkTree(ctx, root, lim)
	if err != nil {
		return nil, err
	}
	return openTroubleshoot(ctx, source, t, skipped, lim)
}

// Link is a symbolic link of a bundle: Path points at Target, a regular file of the same bundle
// (both bundle paths).
type Link struct {
	Path, Target string
}

// keepLinks sets b.Links to the links of t that lead to a regular file of t; the others are
// warned about and left out.
func (b *Bundle) keepLinks(t *tree) {
	names := make([]string, 0, len(t.links))
	for n := range t.links {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		target, err := t.resolve(n)
		if err != nil {
			b.Warnings = append(b.Warnings, fmt.Sprintf("%s: %v", n, err))
			continue
		}
		b.Links = append(b.Links, Link{Path: n, Target: target})
	}
}

// streamTree is Stream of the folder of another tool's layout (a support bundle, a gather
// tree): its regular files, those at its top first (so that a tarball written in this order is
// recognised by its first entry as having no top folder), then by path; its links are followed
// only to regular files of the tree and returned in Links, not read twice.
func streamTree(ctx context.Context, root, layout string, lim Limits, fn func(File, io.Reader) error) (*Bundle, error) {
	t, skipped, err := walkTree(ctx, root, lim)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Source: root, Limits: lim, Layout: layout, sums: map[string]string{}}
	for p, size := range t.sizes {
		b.Files = append(b.Files, File{Path: p, Size: size})
	}
	sort.Slice(b.Files, func(i, j int) bool {
		ti, tj := !strings.Contains(b.Files[i].Path, "/"), !strings.Contains(b.Files[j].Path, "/")
		if ti != tj {
			return ti
		}
		return b.Files[i].Path < b.Files[j].Path
	})
	var total int64
	for _, f := range b.Files {
		if err := checkSize(f.Path, f.Size, &total, lim); err != nil {
			return nil, err
		}
	}
	for _, f := range b.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		in, err := os.Open(t.files[f.Path])
		if err != nil {
			return nil, err
		}
		if b.sums[f.Path], err = streamFile(ctx, f, in, nil, fn); err != nil {
			return nil, err
		}
	}
	sortFiles(b.Files)
	b.keepLinks(t)
	if skipped > 0 {
		b.Warnings = append(b.Warnings, fmt.Sprintf("%d file(s) that are not regular files (devices, pipes) left out", skipped))
	}
	return b, nil
}
