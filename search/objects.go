package search

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/parse"
)

// resourceBundle is a bundle of a tarball's resource files (what objectText reads), as the
// tarball's index kept them. A resource over the resource limit is left out, as parse leaves
// it out of an opened bundle.
func resourceBundle(p string, files fstest.MapFS, lim bundle.Limits) *bundle.Bundle {
	var kept []bundle.File
	for name, f := range files {
		if int64(len(f.Data)) > lim.MaxResourceBytes {
			delete(files, name)
			continue
		}
		kept = append(kept, bundle.File{Path: name, Size: int64(len(f.Data))})
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].Path < kept[j].Path })
	return &bundle.Bundle{Source: p, FS: files, Files: kept, Limits: lim}
}

// StreamResources reads the resources of a bundle tarball as it decompresses, without
// extracting it, into a bundle of those files alone (what objectText reads). A resource over
// the resource limit is left out, as parse leaves it out of an opened bundle. The files carry
// the tarball's modification time, which the objects index's cache entry compares.
func StreamResources(ctx context.Context, p string, lim bundle.Limits) (*bundle.Bundle, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	files := fstest.MapFS{}
	_, err = bundle.Stream(ctx, p, lim, func(f bundle.File, r io.Reader) error {
		if !strings.HasPrefix(f.Path, "resources/") || f.Size > lim.MaxResourceBytes {
			return nil
		}
		data, err := io.ReadAll(io.LimitReader(r, lim.MaxResourceBytes+1))
		if err != nil {
			return err
		}
		files[f.Path] = &fstest.MapFile{Data: data, Mode: 0o444, ModTime: info.ModTime()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resourceBundle(p, files, lim), nil
}

// objectText makes a bundle's events and objects searchable like logs: the events of each
// object as one timestamped line each ("events/Pod/ml/x"), and each resource's YAML as it is
// (Event resources aside: their events are the lines). The resources are read from the
// bundle; only the events' lines are made, in memory. Its index is cached like the logs',
// keyed by content, and a warm search reads nothing but the event files.
func objectText(b *bundle.Bundle) (*bundle.Bundle, []bundle.LogStream, error) {
	var eventFiles []bundle.File
	var streams []bundle.LogStream
	// Made at the count of resource files, at most what is kept: grown a stream at a time,
	// its copies were 7 MB of a warm search at 16,384 pods.
	n := 0
	for _, f := range b.Files {
		if strings.HasPrefix(f.Path, "resources/") {
			n++
		}
	}
	if n > 0 {
		streams = make([]bundle.LogStream, 0, n)
	}
	for _, f := range b.Files {
		kind, ns, ok := resourceParts(f.Path)
		if !ok {
			continue
		}
		if kind == "Event" {
			eventFiles = append(eventFiles, f)
			continue
		}
		// No pod: --pod narrows to pods' logs and events (a file may hold a List of pods).
		streams = append(streams, bundle.LogStream{Path: f.Path, Namespace: ns, Size: f.Size})
	}
	// Only the events are parsed (parse reads them whatever their API version or form).
	m, err := parse.Load(&bundle.Bundle{Source: b.Source, FS: b.FS, Files: eventFiles, Limits: b.Limits})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", b.Source, err)
	}
	var newest time.Time
	for _, f := range eventFiles {
		if st, err := fs.Stat(b.FS, f.Path); err == nil && st.ModTime().After(newest) {
			newest = st.ModTime()
		}
	}
	type eventLog struct {
		lines []string
		pod   string
		ns    string
	}
	byObject := map[string]*eventLog{}
	var order []string
	for i := range m.Events {
		e := &m.Events[i]
		io := e.InvolvedObject
		p := path.Join("events", io.Kind, nonEmpty(io.Namespace, "_cluster"), io.Name)
		el, ok := byObject[p]
		if !ok {
			el = &eventLog{ns: io.Namespace}
			if io.Kind == "Pod" {
				el.pod = io.Name
			}
			byObject[p] = el
			order = append(order, p)
		}
		line := e.Type + " " + e.Reason + ": " + strings.Join(strings.Fields(e.Message), " ")
		if e.Count > 1 {
			line += fmt.Sprintf(" (x%d, last %s)", e.Count, parse.EventTime(e).UTC().Format(time.RFC3339))
		}
		if t := parse.EventFirstTime(e); !t.IsZero() {
			line = t.UTC().Format(time.RFC3339Nano) + " " + line
		}
		el.lines = append(el.lines, line)
	}
	events := fstest.MapFS{}
	for _, p := range order {
		el := byObject[p]
		data := []byte(strings.Join(el.lines, "\n") + "\n")
		// The modification time is what the cache's stat entry compares.
		events[p] = &fstest.MapFile{Data: data, Mode: 0o444, ModTime: newest}
		streams = append(streams, bundle.LogStream{Path: p, Namespace: el.ns, Pod: el.pod, Container: "events", Size: int64(len(data))})
	}
	sort.Slice(streams, func(i, j int) bool { return streams[i].Path < streams[j].Path })
	// The name of the objects' entry: one for a directory however it was spelled ("big/" as
	// completion gives it, and "big"), so analyze's and search's look-ups meet.
	src := b.Source
	if !strings.Contains(src, "://") && len(src) > 1 {
		src = strings.TrimRight(src, "/")
	}
	ob := b.Beside(src+"#objects", overlayFS{base: b.FS, extra: events}, func(p string) bool {
		_, made := events[p]
		return made
	})
	return ob, streams, nil
}

// overlayFS is a bundle's files with the event lines made for search beside them.
type overlayFS struct {
	base  fs.FS
	extra fstest.MapFS
}

func (o overlayFS) Open(name string) (fs.File, error) {
	if _, ok := o.extra[name]; ok {
		return o.extra.Open(name)
	}
	return o.base.Open(name)
}

// Stat is the base's Stat where it has one: a warm search stats every resource (the cache's
// stat entry), and fs.Stat without it opens and closes each.
func (o overlayFS) Stat(name string) (fs.FileInfo, error) {
	if _, ok := o.extra[name]; ok {
		return o.extra.Stat(name)
	}
	return fs.Stat(o.base, name)
}

// resourceParts reads "resources/<group>/<kind>/<namespace>/<file>" without allocating (a
// warm search lists every resource: 25,000 pods at 200,000 files).
func resourceParts(p string) (kind, ns string, ok bool) {
	rest, ok := strings.CutPrefix(p, "resources/")
	if !ok {
		return "", "", false
	}
	var parts [4]string
	for i := range parts {
		if i == len(parts)-1 {
			parts[i] = rest
			break
		}
		if parts[i], rest, ok = strings.Cut(rest, "/"); !ok {
			return "", "", false
		}
	}
	return parts[1], parts[2], ok && !strings.Contains(rest, "/")
}

func nonEmpty(s, or string) string {
	if s == "" {
		return or
	}
	return s
}
