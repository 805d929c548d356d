package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"path"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/report"
)

// addTool adds a read-only tool whose handler takes the typed arguments and returns the typed
// answer: the SDK infers both schemas from the types, checks every call's arguments and
// answer against them, and puts an error in the result as a tool error.
func addTool[In, Out any](s *Server, name, title, desc string, h func(ctx context.Context, in In) (Out, error)) {
	no := false
	mcp.AddTool(s.srv, &mcp.Tool{
		Name: name, Title: title, Description: desc,
		Annotations: &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no, DestructiveHint: &no},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		out, err := guard(name, func() (Out, error) { return h(ctx, in) })
		return nil, out, err
	})
}

// as converts a value of the report to its typed view here through the report's own JSON, so
// that every answer says what `coroner analyze --format json` says, with the same names.
func as[T any](v any) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out, err
	}
	err = json.Unmarshal(b, &out)
	return out, err
}

// BundleArg names the bundle a tool reads.
type BundleArg struct {
	Bundle string `json:"bundle,omitempty" jsonschema:"the id of an open bundle (list_bundles); may be left out when exactly one is open"`
}

func (a BundleArg) bundleID() string { return a.Bundle }

// addBundleTool adds a tool that reads one open bundle: fn runs with the bundle the
// arguments name, one call at a time per bundle (its index and search source serve one).
func addBundleTool[In interface{ bundleID() string }, Out any](s *Server, name, title, desc string, fn func(ctx context.Context, b *openBundle, in In) (Out, error)) {
	addTool(s, name, title, desc, func(ctx context.Context, in In) (Out, error) {
		var zero Out
		b, err := s.bundle(in.bundleID())
		if err != nil {
			return zero, err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.d == nil {
			return zero, fmt.Errorf("bundle %s was closed", b.id)
		}
		return fn(ctx, b, in)
	})
}

// Job is what the bundle's job is and how it ended.
type Job struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Status     string `json:"status"`
}

// ContextLine is a log line around an evidence line.
type ContextLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Evidence points into the bundle, as the report's evidence does.
type Evidence struct {
	Source   string        `json:"source" jsonschema:"log, event, pod, job, node or spec"`
	File     string        `json:"file,omitempty" jsonschema:"the bundle path: the log, or the resource file"`
	FileName string        `json:"fileName,omitempty"`
	Line     int           `json:"line,omitempty"`
	Time     string        `json:"time,omitempty"`
	Object   string        `json:"object,omitempty"`
	Text     string        `json:"text"`
	Before   []ContextLine `json:"before,omitempty"`
	After    []ContextLine `json:"after,omitempty"`
	LastLine int           `json:"lastLine,omitempty"`
	LastTime string        `json:"lastTime,omitempty"`
}

// Finding is one finding of the report, with its evidence.
type Finding struct {
	ID          string     `json:"id"`
	RuleID      string     `json:"ruleId"`
	Category    string     `json:"category"`
	Severity    string     `json:"severity"`
	Layer       string     `json:"layer"`
	Title       string     `json:"title"`
	Fault       string     `json:"fault"`
	Retry       string     `json:"retry"`
	Pod         string     `json:"pod,omitempty"`
	Container   string     `json:"container,omitempty"`
	Rank        *int       `json:"rank,omitempty"`
	Node        string     `json:"node,omitempty"`
	Time        string     `json:"time,omitempty"`
	Count       int        `json:"count"`
	Evidence    []Evidence `json:"evidence"`
	SecondaryOf string     `json:"secondaryOf,omitempty"`
	Explanation string     `json:"explanation,omitempty"`
	Remediation string     `json:"remediation,omitempty"`
	Fold
}

// Fold is what a folded finding stands for: the findings of one class on more than 8
// processes, as one (the report's format version 2).
type Fold struct {
	Folded    int      `json:"folded,omitempty" jsonschema:"set on a folded finding: how many findings of one class, on more than 8 processes, it stands for"`
	Processes int      `json:"processes,omitempty" jsonschema:"how many processes (pod, container, rank) they were on"`
	Ranks     string   `json:"ranks,omitempty" jsonschema:"their ranks as ranges: 0-1,3-16383"`
	Pods      []string `json:"pods,omitempty" jsonschema:"their first pods (podCount says how many in all)"`
	PodCount  int      `json:"podCount,omitempty"`
	FirstTime string   `json:"firstTime,omitempty"`
	LastTime  string   `json:"lastTime,omitempty"`
}

// RootCause is the report's rootCause: the finding that explains the failure.
type RootCause struct {
	FindingID   string     `json:"findingId"`
	Category    string     `json:"category"`
	RuleID      string     `json:"ruleId"`
	Title       string     `json:"title"`
	Severity    string     `json:"severity"`
	Fault       string     `json:"fault"`
	Retry       string     `json:"retry"`
	Pod         string     `json:"pod,omitempty"`
	Container   string     `json:"container,omitempty"`
	Rank        *int       `json:"rank,omitempty"`
	Node        string     `json:"node,omitempty"`
	Time        string     `json:"time,omitempty"`
	Evidence    []Evidence `json:"evidence"`
	Explanation string     `json:"explanation,omitempty"`
	Remediation string     `json:"remediation,omitempty" jsonschema:"what to do"`
	Symptoms    int        `json:"symptoms" jsonschema:"how many findings follow from it"`
	Confidence  string     `json:"confidence" jsonschema:"high (a specific rule), medium (named from the failure's words) or low (only an exit code or a generic exception)"`
}

// FindingSummary is a finding in a list: what, where, when, without its evidence.
type FindingSummary struct {
	ID          string `json:"id"`
	RuleID      string `json:"ruleId"`
	Category    string `json:"category"`
	Severity    string `json:"severity"`
	Title       string `json:"title"`
	Pod         string `json:"pod,omitempty"`
	Container   string `json:"container,omitempty"`
	Rank        *int   `json:"rank,omitempty"`
	Node        string `json:"node,omitempty"`
	Time        string `json:"time,omitempty"`
	Count       int    `json:"count"`
	SecondaryOf string `json:"secondaryOf,omitempty"`
	Where       string `json:"where,omitempty" jsonschema:"its first evidence: file:line, or the object"`
	RootCause   bool   `json:"rootCause,omitempty"`
	Fold
}

func summary(f *report.Finding, root string) (FindingSummary, error) {
	s, err := as[FindingSummary](f)
	if len(f.Evidence) > 0 {
		s.Where = f.Evidence[0].Location()
	}
	s.Title = cut(s.Title, maxLineBytes)
	s.RootCause = f.ID == root
	return s, err
}

func rootID(r *report.Report) string {
	if r.RootCause == nil {
		return ""
	}
	return r.RootCause.ID
}

// DiagnosisOut is the diagnosis of a bundle: the verdict, the root cause with its evidence
// and what to do, and the other failures.
type DiagnosisOut struct {
	Bundle        string     `json:"bundle"`
	Job           Job        `json:"job"`
	Verdict       string     `json:"verdict" jsonschema:"healthy, unhealthy or unknown"`
	VerdictReason string     `json:"verdictReason"`
	RootCause     *RootCause `json:"rootCause" jsonschema:"null when the job is healthy or nothing explains its failure"`
	Findings      int        `json:"findings" jsonschema:"how many findings the report has (the findings tool lists them)"`
	// Failures are the lead findings of the failures that follow from nothing else, the root
	// cause's first.
	Failures []FindingSummary `json:"failures"`
	Warnings []string         `json:"warnings,omitempty" jsonschema:"what got in the way of the analysis"`
	Next     string           `json:"next"`
}

// The diagnosis shows the root cause's first evidence and the first failures and warnings;
// finding and findings show the rest.
const (
	diagnosisEvidence = 3
	diagnosisFailures = 10
	diagnosisWarnings = 10
)

func (s *Server) diagnosis(_ context.Context, b *openBundle, _ BundleArg) (DiagnosisOut, error) {
	r := b.d.Report
	job, err := as[Job](r.Job)
	if err != nil {
		return DiagnosisOut{}, err
	}
	out := DiagnosisOut{Bundle: b.id, Job: job, Verdict: string(r.Verdict), VerdictReason: r.VerdictReason, Findings: len(r.Findings), Failures: []FindingSummary{}}
	if r.RootCause != nil {
		rc, err := as[RootCause](r.RootCause)
		if err != nil {
			return out, err
		}
		if len(rc.Evidence) > diagnosisEvidence {
			rc.Evidence = rc.Evidence[:diagnosisEvidence]
		}
		out.RootCause = &rc
	}
	for _, g := range r.Groups() {
		if !g.Primary() || len(out.Failures) == diagnosisFailures {
			continue
		}
		fs, err := summary(g.Lead(), rootID(r))
		if err != nil {
			return out, err
		}
		out.Failures = append(out.Failures, fs)
	}
	for i, w := range r.Warnings {
		if i == diagnosisWarnings {
			out.Warnings = append(out.Warnings, fmt.Sprintf("… and %d more warnings (the report resource has them all)", len(r.Warnings)-i))
			break
		}
		out.Warnings = append(out.Warnings, cut(w, maxLineBytes))
	}
	switch {
	case out.RootCause != nil:
		out.Next = fmt.Sprintf("finding(id: %q) shows the root cause's evidence windows; log_window reads around any line; search finds what else the logs say (findings lists all %d findings)", out.RootCause.FindingID, len(r.Findings))
	case len(r.Findings) > 0:
		out.Next = fmt.Sprintf("findings lists the %d findings; search finds log lines, events and object text", len(r.Findings))
	default:
		out.Next = "search finds log lines, events and object text; timeline shows the job's life"
	}
	return out, nil
}

// FindingsIn filters the findings.
type FindingsIn struct {
	BundleArg
	Category string `json:"category,omitempty" jsonschema:"only this category (cuda-oom, collective-timeout, ...)"`
	Severity string `json:"severity,omitempty" jsonschema:"only findings at or above this severity: info, warning, error or critical"`
	Pod      string `json:"pod,omitempty" jsonschema:"only findings about pods this glob matches (the whole name: *worker-3)"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous page"`
	Limit    int    `json:"limit,omitempty" jsonschema:"at most this many findings (default 50)"`
}

// FindingsOut is a page of findings, by id (by time).
type FindingsOut struct {
	Bundle   string           `json:"bundle"`
	Findings []FindingSummary `json:"findings"`
	Page
}

func (s *Server) findings(_ context.Context, b *openBundle, in FindingsIn) (FindingsOut, error) {
	var min analyze.Severity
	if in.Severity != "" {
		var err error
		if min, err = analyze.ParseSeverity(in.Severity); err != nil {
			return FindingsOut{}, err
		}
	}
	if err := checkGlob("pod", in.Pod); err != nil {
		return FindingsOut{}, err
	}
	r := b.d.Report
	var all []FindingSummary
	for _, f := range r.Findings {
		if in.Category != "" && string(f.Category) != in.Category || f.Severity < min || !podMatch(in.Pod, f) {
			continue
		}
		fs, err := summary(f, rootID(r))
		if err != nil {
			return FindingsOut{}, err
		}
		all = append(all, fs)
	}
	c := cursor{"findings", FindingsIn{BundleArg: BundleArg{b.id}, Category: in.Category, Severity: in.Severity, Pod: in.Pod}}
	items, pg, err := page(all, c, in.Cursor, clamp(in.Limit, 50, 1, 500), s.opts.MaxBytes, "findings")
	return FindingsOut{Bundle: b.id, Findings: items, Page: pg}, err
}

// podMatch reports whether the glob matches the finding's pod, or one of a folded finding's.
func podMatch(glob string, f *report.Finding) bool {
	if f.Folded == 0 {
		return globMatch(glob, f.Pod)
	}
	for _, p := range f.PodNames() {
		if globMatch(glob, p) {
			return true
		}
	}
	return false
}

// FindingIn names a finding.
type FindingIn struct {
	BundleArg
	ID     string `json:"id" jsonschema:"the finding's id: f1, f2... (findings, diagnosis)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the nextCursor of the previous page of its evidence"`
}

// FindingOut is a finding with its evidence windows, paged when they are many.
type FindingOut struct {
	Bundle    string  `json:"bundle"`
	Finding   Finding `json:"finding"`
	RootCause bool    `json:"rootCause,omitempty"`
	// Follows are the findings that follow from this one (their ids), when it leads a failure.
	Follows []string `json:"follows,omitempty"`
	Page    Page     `json:"evidencePage"`
}

func (s *Server) finding(_ context.Context, b *openBundle, in FindingIn) (FindingOut, error) {
	r := b.d.Report
	var f *report.Finding
	for _, x := range r.Findings {
		if x.ID == in.ID {
			f = x
		}
	}
	if f == nil {
		return FindingOut{}, fmt.Errorf("no finding %q in %s (ids f1 to f%d; findings lists them)", in.ID, b.id, len(r.Findings))
	}
	out, err := as[Finding](f)
	if err != nil {
		return FindingOut{}, err
	}
	c := cursor{"finding", FindingIn{BundleArg: BundleArg{b.id}, ID: in.ID}}
	ev, pg, err := page(out.Evidence, c, in.Cursor, 100, s.opts.MaxBytes, "evidence entries")
	out.Evidence = ev
	res := FindingOut{Bundle: b.id, Finding: out, RootCause: f.ID == rootID(r), Page: pg}
	for _, x := range r.Findings {
		if x.SecondaryOf == f.ID {
			res.Follows = append(res.Follows, x.ID)
		}
	}
	if len(res.Follows) > 100 {
		res.Follows = append(res.Follows[:100], fmt.Sprintf("… and %d more", len(res.Follows)-100))
	}
	return res, err
}

// checkGlob refuses a malformed glob; globMatch matches a whole name ("" matches all).
func checkGlob(field, g string) error {
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("%s %q: bad pattern", field, g)
	}
	return nil
}

func globMatch(g, name string) bool {
	if g == "" {
		return true
	}
	ok, _ := path.Match(g, name)
	return ok
}

// addTools adds every tool.
func (s *Server) addTools() {
	addTool(s, "list_bundles", "List bundles",
		"List the bundles this server has open (with their id, job and verdict) and the bundles found under its allowed roots (directories holding a manifest.json, and .tar.gz files) that open_bundle can open.",
		func(ctx context.Context, in ListIn) (ListOut, error) { return s.list(ctx, in) })
	addTool(s, "open_bundle", "Open a bundle",
		"Open and diagnose a bundle (a directory or .tar.gz made by coroner collect, or a plain log file) under one of the server's allowed roots; any other path is refused. Returns its id, which the other tools take, and its verdict. A large bundle takes seconds; a bundle already open is returned at once.",
		func(ctx context.Context, in OpenIn) (OpenOut, error) { return s.openTool(ctx, in) })
	addBundleTool(s, "diagnosis", "Diagnosis",
		"The diagnosis of a bundle, as coroner analyze makes it: the job, the verdict and why, the root cause with its confidence, evidence (file, line, the lines around it), explanation and what to do, and the other failures. Start here.",
		s.diagnosis)
	addBundleTool(s, "findings", "Findings",
		"List the findings of a bundle by time (id f1, f2...), filtered by category, minimum severity or pod glob, a page at a time; rootCause marks the root cause and secondaryOf what a finding follows from. finding(id) shows one with its evidence.",
		s.findings)
	addBundleTool(s, "finding", "Finding",
		"One finding with its evidence windows (each evidence line with the log lines before and after it), its explanation and remediation, and the findings that follow from it.",
		s.finding)
	addBundleTool(s, "timeline", "Timeline",
		"The job's life on one timeline: the job's and pods' lifecycle (created, scheduled, started, restarted, ended), events and findings, by time; filtered by pod glob and a time window.",
		s.timeline)
	addBundleTool(s, "search", "Search",
		searchHelp,
		s.search)
	addBundleTool(s, "log_window", "Log window",
		"Read lines of one container's log around a line: the pod and container (as findings, hits and timeline name them), the line number, how many lines before and after (at most 200 each), previous for the log of the container before its last restart.",
		s.window)
	addBundleTool(s, "resources", "Kubernetes objects",
		"List the Kubernetes objects collected in the bundle (the job, its pods, nodes, services, events...), filtered by kind, namespace and name glob. With a name, each object's YAML is included (secrets masked).",
		s.resources)
	addBundleTool(s, "events", "Events",
		"The Kubernetes events of the job, its pods and their nodes, by time, filtered by object glob (\"Pod ml/*worker-3\"), type (Normal, Warning) and reason (FailedScheduling, BackOff...).",
		s.events)
	addTool(s, "rules", "Rules",
		"The rules coroner diagnoses with: without an id, the list (id, category, severity, title), filtered by category; with an id (a finding's ruleId), the rule whole: what it matches, why it happens, what to do, and its examples.",
		func(ctx context.Context, in RulesIn) (RulesOut, error) { return s.rules(in) })
	addTool(s, "diff", "Diff two runs",
		"What changed between a run that worked (good) and one that failed (bad), as coroner diff says it: both verdicts, then the differences ranked by how likely they explain the failure, by section: diagnosis (root causes, finding categories one run has), spec (images, command, env, resources, replicas, policy, scheduling, node labels, versions the logs print), logs (line templates new in BAD, gone, or shifted beyond chance, and where BAD first diverges) and progress (step time, stragglers, loss or grad norm turned nan, curves that end apart). Each run is an open bundle's id or a path under an allowed root. The first page has each role's pace and curves.",
		s.diff)
}
