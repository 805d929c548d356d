package mcpserver

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/coroner-dev/coroner/report"
)

// ListIn pages the list of bundles.
type ListIn struct {
	Cursor string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous page"`
}

// BundleInfo is a bundle the server has open or can open.
type BundleInfo struct {
	// Bundle is the id the other tools take; empty until it is opened.
	Bundle string `json:"bundle,omitempty"`
	Path   string `json:"path"`
	Open   bool   `json:"open"`
	// Origin is "argument" (given when the server started) or "root" (found under a root).
	Origin  string `json:"origin"`
	Kind    string `json:"kind" jsonschema:"directory, tarball or log"`
	Bytes   int64  `json:"bytes,omitempty"`
	Job     string `json:"job,omitempty" jsonschema:"Kind namespace/name, when open"`
	Verdict string `json:"verdict,omitempty"`
}

// ListOut is a page of bundles: the open ones first (in the order they were opened), then
// those found under the roots, by path.
type ListOut struct {
	Bundles []BundleInfo `json:"bundles"`
	Roots   []string     `json:"roots" jsonschema:"the directories open_bundle may open bundles under"`
	// Incomplete is true when the roots held more entries than the search for bundles reads.
	Incomplete bool `json:"incomplete,omitempty"`
	Page
}

func (s *Server) list(ctx context.Context, in ListIn) (ListOut, error) {
	s.mu.Lock()
	open := slices.Clone(s.bundles)
	s.mu.Unlock()
	var all []BundleInfo
	opened := map[string]bool{}
	for _, b := range open { // a bundle busy with a long search is waited for, not the server
		all = append(all, info(b))
		opened[b.real] = true
		opened[b.path] = true
	}
	fs, cut := s.findBundles(ctx)
	for _, f := range fs {
		if opened[f.path] {
			continue
		}
		if _, real, err := s.allowed(f.path); err != nil || opened[real] {
			continue
		}
		kind := "tarball"
		if f.dir {
			kind = "directory"
		}
		all = append(all, BundleInfo{Path: f.path, Origin: "root", Kind: kind, Bytes: f.bytes})
	}
	items, pg, err := page(all, cursor{"list_bundles", nil}, in.Cursor, 200, s.opts.MaxBytes, "bundles")
	roots := []string{}
	for _, r := range s.roots {
		roots = append(roots, r.given)
	}
	return ListOut{Bundles: items, Roots: roots, Incomplete: cut, Page: pg}, err
}

func info(b *openBundle) BundleInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	bi := BundleInfo{Bundle: b.id, Path: b.path, Open: b.d != nil, Origin: b.origin, Kind: "log"}
	if st, err := os.Stat(b.real); err == nil {
		switch {
		case st.IsDir():
			bi.Kind = "directory"
		case b.d != nil && !b.d.Bundle.Plain:
			bi.Kind, bi.Bytes = "tarball", st.Size()
		default:
			bi.Bytes = st.Size()
		}
	}
	if b.d != nil {
		bi.Job = jobName(b.d.Report.Job)
		bi.Verdict = string(b.d.Report.Verdict)
	}
	return bi
}

func jobName(j report.Job) string {
	if j.Namespace == "" {
		return j.Kind + " " + j.Name
	}
	return j.Kind + " " + j.Namespace + "/" + j.Name
}

// OpenIn names a bundle to open.
type OpenIn struct {
	Path string `json:"path" jsonschema:"the bundle's path: as list_bundles shows it, absolute, or relative to an allowed root"`
}

// OpenOut is an opened bundle: its id and its verdict in one line.
type OpenOut struct {
	BundleInfo
	VerdictReason string `json:"verdictReason"`
	RootCause     string `json:"rootCause,omitempty" jsonschema:"the root cause's title, when there is one"`
	Findings      int    `json:"findings"`
}

func (s *Server) openTool(ctx context.Context, in OpenIn) (OpenOut, error) {
	shown, real, err := s.allowed(in.Path)
	if err != nil {
		return OpenOut{}, err
	}
	b, err := s.open(ctx, shown, real, "root")
	if err != nil {
		if ctx.Err() != nil {
			return OpenOut{}, fmt.Errorf("opening %s: cancelled", in.Path)
		}
		return OpenOut{}, err
	}
	s.addResources(b)
	out := OpenOut{BundleInfo: info(b)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.d == nil {
		return out, fmt.Errorf("bundle %s was closed", b.id)
	}
	r := b.d.Report
	out.VerdictReason, out.Findings = r.VerdictReason, len(r.Findings)
	if r.RootCause != nil {
		out.RootCause = cut(r.RootCause.Title, maxLineBytes)
	}
	return out, nil
}
