package report

import (
	"regexp"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/bundle"
)

// Options tune how a report is rendered.
type Options struct {
	// Full lists everything in the Markdown and HTML reports: every finding of a group with
	// its evidence, every timeline row, event, pod and log. By default long lists stop at a
	// few dozen rows with a line saying how many more --full shows, so that a report of 1,024
	// ranks still fits a ticket comment.
	Full bool
	// Color colours the terminal summary with ANSI escapes.
	Color bool
	// Width is the terminal's width in columns (0: 100).
	Width int
}

// Caps of the default (not Full) reports.
const (
	capKeyRows     = 60
	capRoutineRows = 30
	capWarnEvents  = 40
	capNormal      = 20
	capLogs        = 30
	capSymptoms    = 25
	capPodsListed  = 16 // a role with more pods lists them folded by state
	capNames       = 8
	capOthers      = 30 // primary finding groups besides the root cause's
	capWarnings    = 30
	capGaps        = 30
	foldLanesOver  = 16 // the SVG shows every pod up to this many
	maxSVGLanes    = 40
	routineWindow  = time.Minute
)

// view is what the Markdown and HTML templates see: the report and what is computed from it.
type view struct {
	*Report
	Full bool
	// Story says how long things took ("failed 10 min 3 s after the first error").
	Story string
	// Root is the root cause's group; Others the other primary groups.
	Root   *Group
	Others []*Group
	// Groups counts all groups, primary and symptom.
	Groups int
	// RootExtra is what the root cause's card adds: rank, other pods with the same failure.
	RootRank string
	AlsoOn   string
	// Chart is the text chart (Markdown), Lanes the SVG (HTML).
	Chart []string
	// legend explains the chart's characters.
	legend string
	SVG    *svgView
	// Roles are the replicas with their pods listed or folded by state.
	Roles []roleView
	// KeyRows and RoutineRows are the timeline, folded; the More counts say what was cut.
	KeyRows, RoutineRows     []tlRow
	KeyMore, RoutineMore     int
	WarnEvents, NormalEvents []evRow
	WarnMore, NormalMore     int
	Logs                     []LogSummary
	LogsMore                 int
	// SymptomsMore counts, by group id, the symptom groups a card leaves out.
	SymptomsMore map[string]int
	OthersMore   int
	// Warnings and Gaps are the report's, cut unless Full.
	Warnings               []string
	Gaps                   []bundle.Gap
	WarningsMore, GapsMore int
}

// ChartBlock is the text chart and its legend, the lines of a Markdown code block.
func (v *view) ChartBlock() []string { return append(append([]string{}, v.Chart...), v.legend) }

func newView(r *Report, opt Options) *view {
	v := &view{Report: r, Full: opt.Full, Story: r.Story(), SymptomsMore: map[string]int{}}
	groups := r.Groups()
	for _, g := range groups {
		v.Groups += 1 + len(g.Symptoms)
		if g.Root {
			v.Root = g
		} else {
			v.Others = append(v.Others, g)
		}
		if !opt.Full && len(g.Symptoms) > capSymptoms {
			v.SymptomsMore[g.ID()] = len(g.Symptoms) - capSymptoms
		}
	}
	if r.RootCause != nil {
		if rank := r.rankOf(r.RootCause.Pod); rank != "" {
			v.RootRank = rank
		}
		if v.Root != nil && len(v.Root.Pods) > 1 {
			var others []string
			for _, p := range v.Root.Pods {
				if p != r.RootCause.Pod {
					others = append(others, p)
				}
			}
			v.AlsoOn = PodsText(others, capNames)
		}
	}
	v.Others, v.OthersMore = capped(v.Others, capOthers, opt.Full)
	v.Warnings, v.WarningsMore = capped(r.Warnings, capWarnings, opt.Full)
	v.Gaps, v.GapsMore = capped(r.Bundle.Gaps, capGaps, opt.Full)
	fold := foldPolicy{minPods: foldLanesOver, maxLanes: maxSVGLanes}
	if lanes := buildLanes(r, groups, fold); lanes != nil {
		v.SVG = newSVG(lanes)
	}
	if lanes := buildLanes(r, groups, foldPolicy{minPods: 1, maxLanes: 8}); lanes != nil {
		v.Chart = textChart(lanes, chartOptions{Width: 110, Indent: "  ", LabelMax: 24})
		v.legend = legendOf(lanes)
	}
	v.Roles = rolesOf(r, opt.Full)
	v.timeline(groups, opt.Full)
	v.events(opt.Full)
	v.Logs, v.LogsMore = capped(r.Logs, capLogs, opt.Full)
	return v
}

// SymptomsShown is a group's symptoms as the report lists them (capped unless Full).
func (v *view) SymptomsShown(g *Group) []*Group {
	if !v.Full && len(g.Symptoms) > capSymptoms {
		return g.Symptoms[:capSymptoms]
	}
	return g.Symptoms
}

// capped keeps the first n of a list unless full, and says how many it left out.
func capped[T any](list []T, n int, full bool) ([]T, int) {
	if full || len(list) <= n {
		return list, 0
	}
	return list[:n], len(list) - n
}

// Evidence is what a group's card shows: the lead's first evidence, or with Full every
// evidence of every finding.
func (v *view) Evidence(g *Group) []Evidence {
	if v.Full {
		var out []Evidence
		for _, f := range g.Findings {
			out = append(out, f.Evidence...)
		}
		return out
	}
	if lead := g.Lead(); lead.Folded > 0 {
		return lead.Evidence // its samples
	}
	if ev := g.Lead().Evidence; len(ev) > 0 {
		return ev[:1]
	}
	return nil
}

// EvidenceMore counts the evidence a card leaves out.
func (v *view) EvidenceMore(g *Group) int {
	if v.Full {
		return 0
	}
	n := 0
	for _, f := range g.Findings {
		n += len(f.Evidence)
	}
	if lead := g.Lead(); lead.Folded > 0 {
		return n - len(lead.Evidence)
	}
	return max(0, n-1)
}

// rankOf is "rank 5" for a pod whose logs name its rank.
func (r *Report) rankOf(pod string) string {
	for _, rep := range r.Job.Replicas {
		for _, p := range rep.Pods {
			if p.Name == pod && p.Rank != nil {
				return "rank " + itoa(*p.Rank)
			}
		}
	}
	return ""
}

// GroupWhere says where a group's findings are: one pod (with its container), several, or
// the job.
func (r *Report) GroupWhere(g *Group) string {
	if f := g.Folded(); f != nil && len(g.Findings) == 1 {
		return "on " + FoldedWhere(f)
	}
	switch len(g.Pods) {
	case 0:
		return "the job"
	case 1:
		f := g.Lead()
		if f.Pod == g.Pods[0] {
			return r.where(f.Pod, f.Container)
		}
		return g.Pods[0]
	}
	return PodsText(g.Pods, capNames)
}

// GroupWhen is a group's time or time span.
func GroupWhen(g *Group) string {
	switch {
	case g.First == nil:
		return ""
	case g.Last == nil || g.Last.Equal(*g.First):
		return fmtTime(g.First)
	}
	if g.First.Format("2006-01-02") == g.Last.Format("2006-01-02") {
		return fmtTime(g.First) + "–" + g.Last.UTC().Format("15:04:05.000Z")
	}
	return fmtTime(g.First) + " – " + fmtTime(g.Last)
}

// roleView is one role of the replica table.
type roleView struct {
	Replica
	// Rows are its pods, one a row, or folded by state when there are many.
	Rows []podRow
}

// podRow is one pod, or the pods of one role in the same state.
type podRow struct {
	Names string
	N     int
	Phase string
	Ended string
	// Restarts is the pod's restarts, or the most of the folded pods.
	Restarts int
	Node     string
	Rank     string
	// Pending says for how long a pod that never started waited.
	Pending string
}

func rolesOf(r *Report, full bool) []roleView {
	var out []roleView
	for _, rep := range r.Job.Replicas {
		rv := roleView{Replica: rep}
		if full || len(rep.Pods) <= capPodsListed {
			for _, p := range rep.Pods {
				row := podRow{Names: p.Name, N: 1, Phase: p.Phase, Ended: p.Ended, Restarts: p.Restarts, Node: p.Node, Pending: pendingFor(r, p)}
				if p.Rank != nil {
					row.Rank = "rank " + itoa(*p.Rank)
				}
				rv.Rows = append(rv.Rows, row)
			}
			rv.Rows = append(rv.Rows, groupRows(rep.Groups)...)
			out = append(out, rv)
			continue
		}
		type state struct {
			row   *podRow
			names []string
		}
		var states []*state
		idx := map[string]*state{}
		for _, p := range rep.Pods {
			k := p.Phase + "\x00" + p.Ended + "\x00" + pendingFor(r, p)
			st, ok := idx[k]
			if !ok {
				st = &state{row: &podRow{Phase: p.Phase, Ended: p.Ended, Pending: pendingFor(r, p)}}
				idx[k] = st
				states = append(states, st)
			}
			st.names = append(st.names, p.Name)
			st.row.N++
			st.row.Restarts = max(st.row.Restarts, p.Restarts)
		}
		for _, st := range states {
			st.row.Names = NameList(st.names, capNames)
			rv.Rows = append(rv.Rows, *st.row)
		}
		rv.Rows = append(rv.Rows, groupRows(rep.Groups)...)
		out = append(out, rv)
	}
	return out
}

// groupRows are the rows of a role's pod groups, with their exact counts and rank ranges.
func groupRows(gs []*PodGroup) []podRow {
	var out []podRow
	for _, g := range gs {
		names := NameList(g.Pods, capNames)
		if g.Count > len(g.Pods) {
			names = NameList(g.Pods[:min(len(g.Pods), capNames)], capNames) + " … (group " + g.ID + ")"
		}
		row := podRow{Names: names, N: g.Count, Phase: g.Phase, Ended: g.Ended, Restarts: g.Restarts}
		if g.Ranks != "" {
			row.Rank = "ranks " + g.Ranks
		}
		out = append(out, row)
	}
	return out
}

func pendingFor(r *Report, p Pod) string {
	if p.Phase != "Pending" || p.Started != nil || p.Created == nil || r.Bundle.CollectedAt == nil {
		return ""
	}
	return "pending for " + Duration(r.Bundle.CollectedAt.Sub(*p.Created))
}

// tlRow is a timeline row: one entry, or entries of the same kind and text close in time.
type tlRow struct {
	Time, Last time.Time
	Kind       string
	Text       string
	Where      string
	Severity   string
	FindingID  string
	// Symptom is true for a finding that follows from another.
	Symptom   bool
	N         int
	pods      []string
	key       string
	container string
	// groups are the pod groups whose entries the row holds, groupPods how many pods they are.
	groups    []string
	groupPods int
}

// addGroup counts a pod group's folded entry into the row.
func (t *tlRow) addGroup(e TimelineEntry) {
	if e.Group == "" || containsStr(t.groups, e.Group) {
		return
	}
	t.groups = append(t.groups, e.Group)
	t.groupPods += e.Count
}

// When is the row's time or time span.
func (t tlRow) When() string {
	if t.Last.Equal(t.Time) {
		return fmtTime(t.Time)
	}
	return fmtTime(t.Time) + "–" + t.Last.UTC().Format("15:04:05.000Z")
}

// routine says whether a timeline entry is ordinary life (a pod created, scheduled, a
// container started or completed, a Normal event) that the report folds away.
func routine(e TimelineEntry) bool {
	switch e.Kind {
	case "job", "finding":
		return false
	case "event":
		return !strings.HasPrefix(e.Text, "Warning ")
	}
	if i := strings.Index(e.Text, "terminated: "); i >= 0 {
		return strings.HasPrefix(e.Text[i+len("terminated: "):], "Completed, exit code 0")
	}
	return true
}

func (v *view) timeline(groups []*Group, full bool) {
	lead := map[string]string{} // finding id -> its group's lead id
	symptom := map[string]bool{}
	for _, g := range groups {
		for _, f := range g.Findings {
			lead[f.ID] = g.ID()
		}
		for _, s := range g.Symptoms {
			for _, f := range s.Findings {
				lead[f.ID] = s.ID()
				symptom[f.ID] = true
			}
		}
	}
	var key, rout []*tlRow
	open := map[string]*tlRow{}
	for _, e := range v.Timeline {
		isRoutine := routine(e)
		k := e.Kind + "\x00"
		text := e.Text
		switch {
		case e.Kind == "finding":
			k += lead[e.FindingID]
		case isRoutine:
			k += maskNames(e.Text)
		default:
			// The same warning about many pods is one row; its repeat counts differ.
			k += repeatSuffix.ReplaceAllString(e.Text, "")
		}
		last := e.Time
		if e.LastTime != nil {
			last = *e.LastTime
		}
		if row := open[k]; row != nil && e.Time.Sub(row.Last) <= routineWindow {
			if last.After(row.Last) {
				row.Last = last
			}
			row.N += max(1, e.Count)
			if e.Pod != "" && !containsStr(row.pods, e.Pod) {
				row.pods = append(row.pods, e.Pod)
			}
			row.addGroup(e)
			if e.Kind == "event" && !isRoutine {
				row.Text = repeatSuffix.ReplaceAllString(row.Text, "")
				text = repeatSuffix.ReplaceAllString(text, "")
			}
			if row.Text != text && !strings.HasSuffix(row.Text, " …") {
				row.Text += " …"
			}
			continue
		}
		row := &tlRow{Time: e.Time, Last: last, Kind: e.Kind, Text: e.Text, Severity: e.Severity, N: max(1, e.Count), key: k, container: e.Container}
		row.addGroup(e)
		if e.Kind == "finding" {
			row.FindingID, row.Symptom = lead[e.FindingID], symptom[e.FindingID]
		}
		if e.Pod != "" {
			row.pods = []string{e.Pod}
		}
		open[k] = row
		if isRoutine {
			rout = append(rout, row)
		} else {
			key = append(key, row)
		}
	}
	finish := func(rows []*tlRow) []tlRow {
		out := make([]tlRow, len(rows))
		for i, r := range rows {
			if len(r.groups) > 0 {
				gs := strings.Join(r.groups, ", ")
				if len(r.pods) == 0 {
					r.Where = Commas(r.groupPods) + " pods: group " + gs
				} else {
					r.Where = Commas(len(r.pods)+r.groupPods) + " pods: " + NameList(r.pods, capNames) + " and group " + gs
				}
				out[i] = *r
				continue
			}
			switch len(r.pods) {
			case 0:
				r.Where = "—"
			case 1:
				r.Where = v.Report.where(r.pods[0], r.container)
			default:
				r.Where = PodsText(r.pods, capNames)
			}
			out[i] = *r
		}
		return out
	}
	v.KeyRows, v.RoutineRows = finish(key), finish(rout)
	v.KeyRows, v.KeyMore = capped(v.KeyRows, capKeyRows, full)
	v.RoutineRows, v.RoutineMore = capped(v.RoutineRows, capRoutineRows, full)
}

// repeatSuffix is the timeline's note on a repeated event: " (x23, last 2026-03-14T10:03:25Z)".
var repeatSuffix = regexp.MustCompile(` \(x[0-9]+, last [^)]*\)$`)

// maskNames hides the numbers inside names ("train-job-worker-3", a uid) so that the same
// message about many pods folds into one row; a number on its own ("exit code 137") stays.
func maskNames(s string) string {
	var b strings.Builder
	for _, tok := range strings.Fields(s) {
		letters := strings.IndexFunc(tok, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) >= 0
		if letters {
			tok = strings.Map(func(r rune) rune {
				if r >= '0' && r <= '9' {
					return '#'
				}
				return r
			}, tok)
		}
		b.WriteString(tok + " ")
	}
	return b.String()
}

// evRow is an event, or the same event about many objects.
type evRow struct {
	Time, LastTime *time.Time
	Type, Reason   string
	Object         string
	Message        string
	Count          int
	objects        []string
}

func (v *view) events(full bool) {
	var warn, normal []*evRow
	idx := map[string]*evRow{}
	for _, e := range v.Events {
		k := e.Type + "\x00" + e.Reason + "\x00" + maskNames(e.Message)
		if row := idx[k]; row != nil {
			row.Count += e.Count
			if !containsStr(row.objects, e.Object) {
				row.objects = append(row.objects, e.Object)
			}
			last := e.LastTime
			if last == nil {
				last = e.Time
			}
			if last != nil && (row.LastTime == nil || last.After(*row.LastTime)) {
				row.LastTime = last
			}
			continue
		}
		row := &evRow{Time: e.Time, LastTime: e.LastTime, Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count, objects: []string{e.Object}}
		idx[k] = row
		if e.Type == "Normal" {
			normal = append(normal, row)
		} else {
			warn = append(warn, row)
		}
	}
	finish := func(rows []*evRow) []evRow {
		out := make([]evRow, len(rows))
		for i, r := range rows {
			r.Object = objectList(r.objects)
			out[i] = *r
		}
		return out
	}
	v.WarnEvents, v.NormalEvents = finish(warn), finish(normal)
	v.WarnEvents, v.WarnMore = capped(v.WarnEvents, capWarnEvents, full)
	v.NormalEvents, v.NormalMore = capped(v.NormalEvents, capNormal, full)
}

// objectList names the objects of a folded event: "Pod ml/train-job-worker-[0-6]".
func objectList(objs []string) string {
	if len(objs) == 1 {
		return objs[0]
	}
	prefix := ""
	var names []string
	for i, o := range objs {
		j := strings.LastIndexAny(o, " /")
		if i == 0 {
			prefix = o[:j+1]
		}
		if o[:j+1] != prefix {
			return Commas(len(objs)) + " objects: " + NameList(objs, capNames)
		}
		names = append(names, o[j+1:])
	}
	return prefix + NameList(names, capNames)
}

// card is what the group templates see: the view and one group.
type card struct {
	V *view
	G *Group
}

// Card pairs a group with the view for the templates.
func (v *view) Card(g *Group) card { return card{V: v, G: g} }
