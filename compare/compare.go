// Package compare puts two diagnoses of the same job side by side: a run that worked (GOOD)
// and one that failed (BAD). It answers "it worked yesterday, what is different today?" from
// what diagnose.Run already made of each run, never from the raw logs: each run's verdict and
// root cause, the job's spec and environment as its objects hold them (redacted as reports
// are), the line templates of the logs' indexes with their counts (a G-test says which shifts
// are beyond chance), and the pace of training. The differences are ranked by how often such a
// difference explains a failure; the report renders as JSON (its contract, docs/diff.md),
// Markdown, HTML and a terminal summary.
package compare

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/report"
)

// FormatVersion is the version of the diff's JSON contract. Names are added, never renamed.
const FormatVersion = 1

// Sections of a change, in the order the report shows them.
const (
	SectionDiagnosis = "diagnosis"
	SectionSpec      = "spec"
	SectionLogs      = "logs"
	SectionProgress  = "progress"
)

// Sections lists the sections in report order.
var Sections = []string{SectionDiagnosis, SectionSpec, SectionLogs, SectionProgress}

// Report is the outcome of `coroner diff`, the JSON contract of docs/diff.md.
type Report struct {
	FormatVersion  int    `json:"formatVersion"`
	CoronerVersion string `json:"coronerVersion"`
	Good           Side   `json:"good"`
	Bad            Side   `json:"bad"`
	// Changes are ordered by section (diagnosis, spec, logs, progress), then by score, highest
	// first: what most likely explains the difference comes first in each section.
	Changes []*Change `json:"changes"`
	// Divergence is where BAD's logs first show what GOOD's never do; null when they do not.
	Divergence *Occurrence `json:"divergence"`
	// Progress is each role's pace and curves in both runs, changed or not.
	Progress []*RoleProgress `json:"progress"`
	// Omitted counts the changes left out of Changes per section (past MaxPerSection).
	Omitted  map[string]int `json:"omitted,omitempty"`
	Warnings []string       `json:"warnings"`
}

// Side is what one run's diagnosis says.
type Side struct {
	// Name is the input's name (a bundle's base name, or the log files).
	Name          string            `json:"name"`
	Job           string            `json:"job"`
	Status        string            `json:"status,omitempty"`
	Verdict       analyze.Verdict   `json:"verdict"`
	VerdictReason string            `json:"verdictReason"`
	RootCause     *report.RootCause `json:"rootCause"`
	// Categories are the categories of the run's primary findings, sorted.
	Categories []string `json:"categories"`
	Pods       int      `json:"pods"`
	LogLines   int      `json:"logLines"`
}

// Change is one difference between the runs.
type Change struct {
	Section string `json:"section"`
	// Kind says what differs: finding-new, finding-gone, finding-spread, pods, restarts, image, command, env, resources,
	// replicas, policy, scheduling, node, version, spec; template-new, template-gone,
	// template-shift; step-time, straggler, nonfinite, curve, throughput.
	Kind string `json:"kind"`
	// Score orders changes within a section: how often such a difference explains a failure.
	Score int    `json:"score"`
	Role  string `json:"role,omitempty"`
	// Path is the field of a spec change ("Worker/pytorch env NCCL_P2P_DISABLE").
	Path  string `json:"path,omitempty"`
	Title string `json:"title"`
	// Good and Bad are the values each run has ("" when absent), redacted as reports are.
	Good     string          `json:"good,omitempty"`
	Bad      string          `json:"bad,omitempty"`
	Template *TemplateChange `json:"template,omitempty"`
	Progress *ProgressChange `json:"progress,omitempty"`
}

// Options tune a comparison.
type Options struct {
	// KeepSecrets shows the spec's values as the bundles have them.
	KeepSecrets bool
	RedactRules []redact.Rule
	// Alpha is the family-wise error rate of the frequency tests (Holm's correction over every
	// template tested); 0 means DefaultAlpha.
	Alpha float64
	// MaxPerSection bounds the changes of a section (0: DefaultMaxPerSection).
	MaxPerSection int
}

const (
	DefaultAlpha         = 0.01
	DefaultMaxPerSection = 200
)

// Compare compares two runs made by Diagnose. Both must be open (their indexes are read).
func Compare(ctx context.Context, goodRun, badRun *Run, version string, opts Options) (*Report, error) {
	good, bad := goodRun.Diagnosis, badRun.Diagnosis
	if opts.Alpha <= 0 {
		opts.Alpha = DefaultAlpha
	}
	if opts.MaxPerSection <= 0 {
		opts.MaxPerSection = DefaultMaxPerSection
	}
	r := &Report{FormatVersion: FormatVersion, CoronerVersion: version, Good: sideOf(good), Bad: sideOf(bad), Warnings: []string{}}
	r.Changes = append(r.Changes, diagnosisChanges(good.Report, bad.Report)...)

	red, err := newRedactor(ctx, good, bad, opts)
	if err != nil {
		return nil, err
	}
	r.Changes = append(r.Changes, specChanges(goodRun, badRun, red)...)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	gl, bl := logsOf(ctx, good), logsOf(ctx, bad)
	r.Warnings = append(append(r.Warnings, gl.warnings...), bl.warnings...)
	logChanges, div := templateChanges(gl, bl, opts.Alpha)
	r.Changes = append(r.Changes, logChanges...)
	r.Divergence = div
	r.Changes = append(r.Changes, progressChanges(gl, bl)...)
	progress, curveChanges := progressSummary(goodRun, badRun, gl, bl)
	r.Progress = progress
	r.Changes = append(r.Changes, curveChanges...)
	if red != nil {
		for _, c := range r.Changes {
			if c.Section == SectionLogs && c.Template != nil {
				c.Template.Text = red.Text(c.Template.Text)
				c.Title = red.Text(c.Title)
			}
		}
	}
	r.Changes, r.Omitted = order(r.Changes, opts.MaxPerSection)
	if r.Changes == nil {
		r.Changes = []*Change{}
	}
	if r.Progress == nil {
		r.Progress = []*RoleProgress{}
	}
	for _, s := range []*diagnose.Diagnosis{good, bad} {
		if s.Index == nil {
			continue
		}
		for _, st := range s.Index.Streams() {
			if n := st.Untemplated(); n > 0 && n*2 > st.Lines && st.Lines > 100 {
				r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d of %d lines of %s have no repeated shape: the log comparison sees only the others",
					s.Report.Bundle.Name, n, st.Lines, st.Path))
			}
		}
	}
	return r, nil
}

// newRedactor is the redactor of the values the report shows, or nil with KeepSecrets. Its key
// is made of both bundles' digests, as a report's is of its bundle's: the same secret in both
// runs gives the same token (so it is not a change), and a reader cannot test guesses.
func newRedactor(ctx context.Context, good, bad *diagnose.Diagnosis, opts Options) (*redact.Redactor, error) {
	if opts.KeepSecrets {
		return nil, nil
	}
	h := sha256.New()
	for _, d := range []*diagnose.Diagnosis{good, bad} {
		k, err := d.Bundle.Digest(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Bundle.Source, err)
		}
		h.Write(k)
	}
	return redact.New(redact.Options{Key: h.Sum(nil), Extra: opts.RedactRules})
}

func sideOf(d *diagnose.Diagnosis) Side {
	rep := d.Report
	s := Side{Name: rep.Bundle.Name, Job: jobRef(rep), Status: rep.Job.Status, Verdict: rep.Verdict, VerdictReason: rep.VerdictReason,
		RootCause: rep.RootCause, Categories: primaryCategories(rep), LogLines: rep.Bundle.LogLines}
	for _, rp := range rep.Job.Replicas {
		s.Pods += len(rp.Pods)
		for _, g := range rp.Groups {
			s.Pods += g.Count
		}
	}
	return s
}

func jobRef(rep *report.Report) string {
	if rep.Job.Name == "" {
		return "plain logs"
	}
	if rep.Job.Namespace == "" {
		return rep.Job.Kind + " " + rep.Job.Name
	}
	return rep.Job.Kind + " " + rep.Job.Namespace + "/" + rep.Job.Name
}

// primaryCategories are the categories of the findings that follow from no other, sorted.
func primaryCategories(rep *report.Report) []string {
	seen := map[string]bool{}
	for _, f := range rep.Findings {
		if f.SecondaryOf == "" {
			seen[string(f.Category)] = true
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// order sorts the changes by section, score and then their words, and keeps at most max of
// each section, counting the rest.
func order(cs []*Change, max int) ([]*Change, map[string]int) {
	rank := map[string]int{}
	for i, s := range Sections {
		rank[s] = i
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Section != b.Section {
			return rank[a.Section] < rank[b.Section]
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if ea, eb := a.effect(), b.effect(); ea != eb {
			return ea > eb
		}
		if a.Role != b.Role {
			return a.Role < b.Role
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Title < b.Title
	})
	var omitted map[string]int
	out := cs[:0]
	per := map[string]int{}
	for _, c := range cs {
		if per[c.Section]++; per[c.Section] > max {
			if omitted == nil {
				omitted = map[string]int{}
			}
			omitted[c.Section]++
			continue
		}
		out = append(out, c)
	}
	return out, omitted
}

// effect is how big a change of the same score is, to order it among its peers.
func (c *Change) effect() float64 {
	switch {
	case c.Template != nil:
		return c.Template.G + float64(c.Template.BadCount+c.Template.GoodCount)/1e9
	case c.Progress != nil:
		return c.Progress.Ratio
	}
	return 0
}

// Top is the first change that is not a diagnosis: what most likely explains the difference.
func (r *Report) Top() *Change {
	for _, c := range r.Changes {
		if c.Section != SectionDiagnosis {
			return c
		}
	}
	return nil
}

// Section returns the changes of one section, in order.
func (r *Report) Section(s string) []*Change {
	var out []*Change
	for _, c := range r.Changes {
		if c.Section == s {
			out = append(out, c)
		}
	}
	return out
}

// Empty reports whether the runs differ in nothing the diff looks at.
func (r *Report) Empty() bool { return len(r.Changes) == 0 }

// NewFindings is the highest severity of the primary findings BAD has in a category GOOD has
// none of (0: none): what `--fail-on` compares.
func NewFindings(good, bad *report.Report) analyze.Severity {
	had := map[analyze.Category]bool{}
	for _, f := range good.Findings {
		had[f.Category] = true
	}
	var worst analyze.Severity
	for _, f := range bad.Findings {
		if f.SecondaryOf == "" && !had[f.Category] && f.Severity > worst {
			worst = f.Severity
		}
	}
	return worst
}
