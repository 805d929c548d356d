package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/coroner-dev/coroner/compare"
	"github.com/coroner-dev/coroner/diagnose"
)

// maxDiffs is how many diff reports the server keeps for paging (the latest).
const maxDiffs = 4

// DiffIn names the two runs a diff compares.
type DiffIn struct {
	Good string `json:"good" jsonschema:"the run that worked: an open bundle's id, or a path under an allowed root as open_bundle takes it"`
	Bad  string `json:"bad" jsonschema:"the run that failed, named the same way"`
	// Section keeps the changes of one section.
	Section string `json:"section,omitempty" jsonschema:"only the changes of one section: diagnosis, spec, logs or progress"`
	// Points includes the curves' points.
	Points bool   `json:"points,omitempty" jsonschema:"include the points of the loss, grad_norm and throughput curves (at most 128 a run and metric); without, each curve is its summary (min, max, last, first nan)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous page"`
}

// DiffOut is what `coroner diff GOOD BAD --format json` says, a page of its changes at a time:
// both runs' verdicts, the changes ranked by how likely they explain the failure (by section:
// diagnosis, spec, logs, progress), where BAD's logs first diverge, and each role's pace and
// curves (on the first page).
type DiffOut struct {
	FormatVersion  int      `json:"formatVersion"`
	CoronerVersion string   `json:"coronerVersion"`
	Good           DiffSide `json:"good"`
	Bad            DiffSide `json:"bad"`
	// Empty is true when the runs differ in nothing the diff looks at.
	Empty      bool                    `json:"empty"`
	Changes    []*compare.Change       `json:"changes"`
	Divergence *compare.Occurrence     `json:"divergence"`
	Progress   []*compare.RoleProgress `json:"progress,omitempty" jsonschema:"each role's pace and curves in both runs; on the first page only"`
	Omitted    map[string]int          `json:"omitted,omitempty" jsonschema:"changes past the diff's bound per section"`
	Warnings   []string                `json:"warnings"`
	Page
}

// DiffSide is what one run's diagnosis says (compare.Side, its root cause as the diagnosis
// tool shows one).
type DiffSide struct {
	Name          string     `json:"name" jsonschema:"the bundle's or log's base name"`
	Job           string     `json:"job"`
	Status        string     `json:"status,omitempty"`
	Verdict       string     `json:"verdict" jsonschema:"healthy, unhealthy or unknown"`
	VerdictReason string     `json:"verdictReason"`
	RootCause     *RootCause `json:"rootCause"`
	Categories    []string   `json:"categories" jsonschema:"the categories of the run's primary findings"`
	Pods          int        `json:"pods"`
	LogLines      int        `json:"logLines"`
}

// diffRun is a kept diff report.
type diffRun struct {
	good, bad string // the real paths
	rep       *compare.Report
}

// runPath resolves a run a diff names: an open bundle (by id or the path it was opened by),
// else a path under an allowed root, checked as open_bundle checks it.
func (s *Server) runPath(name string) (string, error) {
	if name == "" {
		return "", errors.New("name both runs: good (the run that worked) and bad (the one that failed)")
	}
	s.mu.Lock()
	for _, b := range s.bundles {
		if b.id == name || b.path == name {
			s.mu.Unlock()
			return b.real, nil
		}
	}
	s.mu.Unlock()
	_, real, err := s.allowed(name)
	return real, err
}

// diffReport is the diff of two runs: kept from an earlier call, or made by package compare
// exactly as `coroner diff` makes it (each run diagnosed with compare.Diagnose, then
// compare.Compare), and kept for the next pages.
func (s *Server) diffReport(ctx context.Context, good, bad string) (*compare.Report, error) {
	s.diffMu.Lock()
	for _, d := range s.diffs {
		if d.good == good && d.bad == bad {
			s.diffMu.Unlock()
			return d.rep, nil
		}
	}
	s.diffMu.Unlock()
	var runs [2]*compare.Run
	defer func() {
		for _, r := range runs {
			if r != nil {
				r.Close()
			}
		}
	}()
	for i, p := range []string{good, bad} {
		r, err := compare.Diagnose(ctx, diagnose.Input{Paths: []string{p}}, s.opts.Diagnose)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("diff: cancelled")
			}
			return nil, err
		}
		runs[i] = r
	}
	rep, err := compare.Compare(ctx, runs[0], runs[1], s.opts.Diagnose.Version,
		compare.Options{KeepSecrets: s.opts.Diagnose.KeepSecrets, RedactRules: s.opts.Diagnose.RedactRules})
	if err != nil {
		return nil, err
	}
	s.diffMu.Lock()
	s.diffs = append(s.diffs, diffRun{good: good, bad: bad, rep: rep})
	if len(s.diffs) > maxDiffs {
		s.diffs = slices.Delete(s.diffs, 0, len(s.diffs)-maxDiffs)
	}
	s.diffMu.Unlock()
	return rep, nil
}

func (s *Server) diff(ctx context.Context, in DiffIn) (DiffOut, error) {
	if in.Section != "" && !slices.Contains(compare.Sections, in.Section) {
		return DiffOut{}, fmt.Errorf("no section %q: diagnosis, spec, logs or progress", in.Section)
	}
	good, err := s.runPath(in.Good)
	if err != nil {
		return DiffOut{}, fmt.Errorf("good: %w", err)
	}
	bad, err := s.runPath(in.Bad)
	if err != nil {
		return DiffOut{}, fmt.Errorf("bad: %w", err)
	}
	rep, err := s.diffReport(ctx, good, bad)
	if err != nil {
		return DiffOut{}, err
	}
	out := DiffOut{FormatVersion: rep.FormatVersion, CoronerVersion: rep.CoronerVersion,
		Empty: rep.Empty(), Divergence: rep.Divergence, Omitted: rep.Omitted, Warnings: rep.Warnings}
	if out.Good, err = as[DiffSide](rep.Good); err != nil {
		return DiffOut{}, err
	}
	if out.Bad, err = as[DiffSide](rep.Bad); err != nil {
		return DiffOut{}, err
	}
	changes := rep.Changes
	if in.Section != "" {
		changes = rep.Section(in.Section)
	}
	args := in
	args.Cursor = ""
	budget := s.opts.MaxBytes
	if in.Cursor == "" {
		out.Progress = rep.Progress
		if !in.Points {
			out.Progress = withoutPoints(rep.Progress)
		}
		head, err := json.Marshal(out)
		if err != nil {
			return DiffOut{}, err
		}
		if len(head) > budget/2 && in.Points {
			out.Progress = withoutPoints(rep.Progress)
			head, _ = json.Marshal(out)
			out.Warnings = append(slices.Clone(out.Warnings), "the curves' points do not fit in one answer with the changes: they are left out (the diff's JSON report has them)")
		}
		budget -= len(head)
	}
	items, pg, err := page(changes, cursor{"diff", args}, in.Cursor, 100, max(budget, pageOverhead+1), "changes")
	if err != nil {
		return DiffOut{}, err
	}
	out.Changes, out.Page = items, pg
	return out, nil
}

// withoutPoints is the progress with each curve's summary but not its points.
func withoutPoints(ps []*compare.RoleProgress) []*compare.RoleProgress {
	out := make([]*compare.RoleProgress, len(ps))
	for i, p := range ps {
		q := *p
		q.Curves = make([]*compare.CurvePair, len(p.Curves))
		for j, c := range p.Curves {
			cc := *c
			cc.Good, cc.Bad = seriesSummary(c.Good), seriesSummary(c.Bad)
			q.Curves[j] = &cc
		}
		out[i] = &q
	}
	return out
}

func seriesSummary(s *compare.Series) *compare.Series {
	if s == nil {
		return nil
	}
	c := *s
	c.X, c.Y = nil, nil
	return &c
}
