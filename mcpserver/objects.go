package mcpserver

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
)

// ResourcesIn filters the objects of a bundle.
type ResourcesIn struct {
	BundleArg
	Kind      string `json:"kind,omitempty" jsonschema:"only objects of this kind (Pod, Node, PyTorchJob...; any case)"`
	Namespace string `json:"namespace,omitempty" jsonschema:"only objects of this namespace (_cluster for cluster-scoped objects)"`
	Name      string `json:"name,omitempty" jsonschema:"only objects whose name this glob matches; with a name, each object's YAML is included"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous page"`
}

// Object is one collected Kubernetes object (or list of objects) of the bundle.
type Object struct {
	Path      string `json:"path" jsonschema:"its file in the bundle"`
	Group     string `json:"group" jsonschema:"the API group; core for the core API"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Bytes     int64  `json:"bytes"`
	// YAML is the object as collected, secrets masked; only when a name was asked for.
	YAML string `json:"yaml,omitempty"`
}

// ResourcesOut is a page of objects, by path.
type ResourcesOut struct {
	Bundle  string   `json:"bundle"`
	Objects []Object `json:"objects"`
	Page
}

// maxYAMLLines bounds the YAML of one object in an answer.
const maxYAMLLines = 2000

func (s *Server) resources(ctx context.Context, b *openBundle, in ResourcesIn) (ResourcesOut, error) {
	if err := checkGlob("name", in.Name); err != nil {
		return ResourcesOut{}, err
	}
	var all []Object
	for _, f := range b.d.Bundle.Files {
		parts := strings.Split(f.Path, "/")
		if len(parts) != 5 || parts[0] != "resources" {
			continue
		}
		o := Object{Path: f.Path, Group: parts[1], Kind: parts[2], Namespace: parts[3], Name: strings.TrimSuffix(parts[4], ".yaml"), Bytes: f.Size}
		if in.Kind != "" && !strings.EqualFold(in.Kind, o.Kind) || in.Namespace != "" && in.Namespace != o.Namespace || !globMatch(in.Name, o.Name) {
			continue
		}
		all = append(all, o)
	}
	c := cursor{"resources", ResourcesIn{BundleArg: BundleArg{b.id}, Kind: in.Kind, Namespace: in.Namespace, Name: in.Name}}
	off, err := c.offset(in.Cursor)
	if err != nil {
		return ResourcesOut{}, err
	}
	if in.Name != "" {
		// Only the objects the page can show are read: the page is cut by their size.
		for i := off; i < len(all) && i < off+50; i++ {
			y, err := s.objectYAML(ctx, b, all[i])
			if err != nil {
				return ResourcesOut{}, err
			}
			all[i].YAML = y
		}
	}
	items, pg, err := page(all, c, in.Cursor, 50, s.opts.MaxBytes, "objects")
	return ResourcesOut{Bundle: b.id, Objects: items, Page: pg}, err
}

// objectYAML reads an object's file, masked as the report's text is, its lines cut.
func (s *Server) objectYAML(ctx context.Context, b *openBundle, o Object) (string, error) {
	if o.Bytes > b.d.Bundle.Limits.MaxResourceBytes {
		return fmt.Sprintf("# %s is %d bytes, over the resource limit: not read", o.Path, o.Bytes), nil
	}
	data, err := fs.ReadFile(b.d.Bundle.FS, o.Path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", o.Path, err)
	}
	text, _, _ := strings.Cut(string(data), "\x00")
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	more := 0
	if len(lines) > maxYAMLLines {
		lines, more = lines[:maxYAMLLines], len(lines)-maxYAMLLines
	}
	lines, err = s.mask(ctx, b, nil, lines)
	if err != nil {
		return "", err
	}
	for i := range lines {
		lines[i] = cut(lines[i], maxLineBytes)
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("# … %d more lines", more))
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// EventsIn filters the events.
type EventsIn struct {
	BundleArg
	Object string `json:"object,omitempty" jsonschema:"only events of objects this glob matches, as events name them: 'Pod ml/train-job-worker-3', 'Pod */*worker-3', 'Node *'"`
	Type   string `json:"type,omitempty" jsonschema:"Normal or Warning"`
	Reason string `json:"reason,omitempty" jsonschema:"only this reason: FailedScheduling, BackOff, OOMKilling..."`
	Cursor string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous page"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many events (default 100)"`
}

// Event is one Kubernetes event.
type Event struct {
	Time     string `json:"time,omitempty"`
	LastTime string `json:"lastTime,omitempty"`
	Type     string `json:"type"`
	Reason   string `json:"reason"`
	Object   string `json:"object"`
	Message  string `json:"message"`
	Count    int    `json:"count"`
}

// EventsOut is a page of events, by time.
type EventsOut struct {
	Bundle string  `json:"bundle"`
	Events []Event `json:"events"`
	Page
}

func (s *Server) events(_ context.Context, b *openBundle, in EventsIn) (EventsOut, error) {
	if err := checkGlob("object", in.Object); err != nil {
		return EventsOut{}, err
	}
	var all []Event
	for _, e := range b.d.Report.Events {
		if in.Type != "" && !strings.EqualFold(in.Type, e.Type) || in.Reason != "" && !strings.EqualFold(in.Reason, e.Reason) || !globMatch(in.Object, e.Object) {
			continue
		}
		ev, err := as[Event](e)
		if err != nil {
			return EventsOut{}, err
		}
		ev.Message = cut(ev.Message, maxLineBytes)
		all = append(all, ev)
	}
	c := cursor{"events", EventsIn{BundleArg: BundleArg{b.id}, Object: in.Object, Type: in.Type, Reason: in.Reason}}
	items, pg, err := page(all, c, in.Cursor, clamp(in.Limit, 100, 1, 1000), s.opts.MaxBytes, "events")
	return EventsOut{Bundle: b.id, Events: items, Page: pg}, err
}
