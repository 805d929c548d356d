package compare

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/index"
)

const (
	// maxPods bounds the pods listed for a template.
	maxPods = 8
	// periodic: a template with at least this many lines in one log repeats with training
	// (a step line, a warning every step); its count is compared per step, not per rank.
	periodic = 4
	// minRatio is the least change of a template's rate per rank (or per step) that is
	// reported as a shift, however significant: a million-line log makes tiny changes
	// significant.
	minRatio = 1.5
	// maxChecks bounds the templates new to one run that are looked up in the other's index
	// (a line the other run has once has no template there).
	maxChecks = 64
)

// TemplateChange is a line template whose presence or frequency differs.
type TemplateChange struct {
	Text  string `json:"text"`
	Level string `json:"level,omitempty"`
	// GoodCount and BadCount are its lines in each run (of the role).
	GoodCount int `json:"goodCount"`
	BadCount  int `json:"badCount"`
	// GoodRate and BadRate are its lines per rank, or per rank and step for a template that
	// repeats with training (PerStep).
	GoodRate float64 `json:"goodRate"`
	BadRate  float64 `json:"badRate"`
	PerStep  bool    `json:"perStep,omitempty"`
	// G is the log-likelihood ratio statistic of the counts given the runs' exposure (ranks,
	// or ranks × steps); P its p-value adjusted for every template tested (Holm).
	G float64 `json:"g"`
	P float64 `json:"p"`
	// Pods are the pods of the run that has more of it (at most 8), PodCount all of them.
	Pods     []string `json:"pods"`
	PodCount int      `json:"podCount"`
	// First is its first line in the run that has more of it.
	First *Occurrence `json:"first,omitempty"`
}

// Occurrence is where a line is: its log, line, time, how long after the run's first log line
// and, when the log has a progress line, about how many progress lines (steps) came before it.
type Occurrence struct {
	Pod     string     `json:"pod,omitempty"`
	Path    string     `json:"path"`
	Line    int        `json:"line"`
	Time    *time.Time `json:"time,omitempty"`
	Elapsed string     `json:"elapsed,omitempty"`
	// Step is the number of progress lines of its log before it (estimated from their first
	// and last times); -1 when the log has none.
	Step int `json:"step"`
	// Text is the template's text, for the divergence.
	Text string `json:"text,omitempty"`
}

// runLogs is what one run's index says of its logs, by role.
type runLogs struct {
	roles map[string]*roleLogs
	// start is the earliest time of any log (Unix ns, 0: none).
	start    int64
	ix       *index.Index
	warnings []string
}

type roleLogs struct {
	pods      map[string]bool
	templates map[string]*tmplAgg
	streams   []*pace
}

type tmplAgg struct {
	text, level string
	count       int
	maxPerLog   int
	pods        map[string]bool
	first       int64
	firstAt     Occurrence
	firstPace   *pace
}

// pace is the progress of one log: its most frequent progress template.
type pace struct {
	pod, path   string
	rank        int
	steps       int
	first, last int64
	progress    string
}

// logsOf reads the templates of a run's index by role.
func logsOf(ctx context.Context, d *diagnose.Diagnosis) *runLogs {
	rl := &runLogs{roles: map[string]*roleLogs{}, ix: d.Index}
	if d.Index == nil {
		return rl
	}
	var norm func(string) string
	if d.Model != nil && d.Model.Job != nil {
		norm = normalizer(d.Model.Job)
	} else {
		norm = func(s string) string { return s }
	}
	byPath := map[string]streamRole{}
	for _, s := range d.Index.Streams() {
		role := ""
		if d.Model != nil && d.Model.Job != nil {
			if p := d.Model.Pod(s.Namespace, s.Pod); p != nil {
				role = d.Model.Job.RoleOf(p)
			}
		}
		r := rl.roles[role]
		if r == nil {
			r = &roleLogs{pods: map[string]bool{}, templates: map[string]*tmplAgg{}}
			rl.roles[role] = r
		}
		who := s.Pod
		if who == "" {
			who = s.Path
		}
		r.pods[who] = true
		if s.First != 0 && (rl.start == 0 || s.First < rl.start) {
			rl.start = s.First
		}
		ts := d.Index.Templates(s)
		pc := paceOf(ts)
		pc.pod, pc.path, pc.rank = who, s.Path, s.Rank
		r.streams = append(r.streams, pc)
		sr := streamRole{r: r, pace: pc, who: who, texts: map[string]bool{}}
		byPath[s.Path] = sr
		for _, t := range ts {
			key := norm(t.Text)
			sr.texts[key] = true
			a := r.templates[key]
			if a == nil {
				a = &tmplAgg{text: key, level: t.Level, pods: map[string]bool{}}
				r.templates[key] = a
			}
			a.count += t.Count
			a.maxPerLog = max(a.maxPerLog, t.Count)
			a.pods[who] = true
			if a.firstAt.Path == "" || (t.First != 0 && (a.first == 0 || t.First < a.first)) {
				a.first = t.First
				a.firstAt = Occurrence{Pod: s.Pod, Path: s.Path, Line: t.FirstLine, Step: pc.stepAt(t.First)}
				a.firstPace = pc
			}
		}
	}
	if err := loudLines(ctx, d.Index, func(h index.Hit, level string) {
		if sr, ok := byPath[h.Path]; ok {
			var t int64
			if h.Time != nil {
				t = h.Time.UnixNano()
			}
			if key := norm(digits.ReplaceAllString(h.Text, "<*>")); !sr.texts[key] {
				sr.r.addSingle(key, level, sr.who, h.Pod, h.Path, h.Number, t, sr.pace)
			}
		}
	}); err != nil {
		rl.warnings = append(rl.warnings, err.Error())
	}
	return rl
}

// streamRole is where a log's lines are counted.
type streamRole struct {
	r    *roleLogs
	pace *pace
	who  string
	// texts are the log's templates: a line of one is counted already
	texts map[string]bool
}

// addSingle counts a line that has no template in the index (its shape did not repeat) under
// the shape it is given here.
func (r *roleLogs) addSingle(text, level, who, pod, path string, n int, t int64, pc *pace) {
	a := r.templates[text]
	if a == nil {
		a = &tmplAgg{text: text, level: level, pods: map[string]bool{}}
		r.templates[text] = a
	}
	a.count++
	a.maxPerLog = max(a.maxPerLog, 1)
	a.pods[who] = true
	if a.firstAt.Path == "" || (t != 0 && (a.first == 0 || t < a.first)) {
		a.first = t
		a.firstAt = Occurrence{Pod: pod, Path: path, Line: n, Step: pc.stepAt(t)}
		a.firstPace = pc
	}
}

// maxLoud bounds the warning and error lines of a run read back from its logs (the index's
// collapsed hits: a line repeated in a log is one hit). A line printed once has no template, and
// is what a diff most needs to show.
const maxLoud = 1 << 14

var (
	levelWords = regexp.MustCompile(`(?i)\b(fatal|critical|panic|error|errors|failed|failure|exception|traceback|warning|warn)\b|[a-z](error|exception|warning)\b`)
	digits     = regexp.MustCompile(`[0-9]+`)
)

// loudLines hands on the lines of a run's logs whose level is a warning or worse, as the index
// reads levels, each with the level its words say, but for repeated lines (their templates
// count them).
func loudLines(ctx context.Context, ix *index.Index, fn func(h index.Hit, level string)) error {
	res, err := ix.Search(ctx, index.SearchOptions{Query: "level:critical OR level:error OR level:warning", Limit: maxLoud})
	if err != nil {
		return fmt.Errorf("reading the warnings and errors of the logs: %w", err)
	}
	for _, h := range res.Hits {
		if h.Count > 1 || h.Template != "" {
			continue
		}
		level := "warning"
		if m := levelWords.FindStringSubmatch(h.Text[:min(len(h.Text), 240)]); m != nil {
			switch w := strings.ToLower(m[1] + m[2]); {
			case w == "fatal" || w == "critical" || w == "panic":
				level = "critical"
			case !strings.HasPrefix(w, "warn"):
				level = "error"
			}
		}
		if len(h.Text) > 1024 {
			h.Text = h.Text[:1024]
		}
		fn(h, level)
	}
	if res.Omitted > 0 {
		return fmt.Errorf("the logs have more than %d warning and error lines: the comparison read the first %d", maxLoud, maxLoud)
	}
	return nil
}

// progressWords are the words of training progress lines.
var progressWords = []string{"loss", "step", "iter", "it/s", "s/it", "epoch", "samples/s", "tokens/s"}

// paceOf finds a log's progress lines: its most frequent template that says a progress word,
// taken with its siblings (a loss line whose values turn to nan is another template of the
// same steps: the same words but for a variable one).
func paceOf(ts []index.TemplateStat) *pace {
	best := -1
	for i, t := range ts {
		if t.Count >= 2 && progressText(t.Text) && (best < 0 || t.Count > ts[best].Count) {
			best = i
		}
	}
	if best < 0 {
		return &pace{}
	}
	p := &pace{}
	words := strings.Fields(ts[best].Text)
	common := append([]string(nil), words...)
	for _, t := range ts {
		tw := strings.Fields(t.Text)
		if t.Count < 2 || !siblings(words, tw) {
			continue
		}
		for i := range tw {
			if tw[i] != common[i] {
				common[i] = "<*>" // the words all siblings share are the progress line's
			}
		}
		p.steps += t.Count
		if t.First != 0 && (p.first == 0 || t.First < p.first) {
			p.first = t.First
		}
		p.last = max(p.last, t.Last)
	}
	p.progress = strings.Join(common, " ")
	return p
}

// progressText reports whether a template says a progress word.
func progressText(t string) bool {
	l := strings.ToLower(t)
	for _, w := range progressWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// siblings reports whether two templates are the same line but for at most two words that are
// variable in one of them.
func siblings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	diff := 0
	for i := range a {
		if a[i] != b[i] {
			if !strings.Contains(a[i], "<*>") && !strings.Contains(b[i], "<*>") {
				return false
			}
			diff++
		}
	}
	return diff <= 2
}

// stepAt estimates how many progress lines of the log came before a time (the lines are
// taken as evenly spaced between the progress template's first and last), or -1.
func (p *pace) stepAt(t int64) int {
	if p.steps < 2 || p.first == 0 || p.last <= p.first || t == 0 {
		return -1
	}
	switch {
	case t <= p.first:
		return 0
	case t >= p.last:
		return p.steps
	}
	return int(float64(p.steps-1)*float64(t-p.first)/float64(p.last-p.first)) + 1
}

// steps is the median progress lines per log of a role (at least 1).
func (r *roleLogs) steps() float64 {
	var ns []int
	for _, s := range r.streams {
		ns = append(ns, s.steps)
	}
	if len(ns) == 0 {
		return 1
	}
	sort.Ints(ns)
	return math.Max(1, float64(ns[len(ns)/2]))
}

// candidate is a template of one role tested for a difference.
type candidate struct {
	role       string
	g, b       *tmplAgg
	gc, bc     int
	ge, be     float64
	perStep    bool
	stat, p    float64
	adjusted   float64
	reportable bool
}

// templateChanges compares the templates of the runs role by role: a template that only BAD
// has (or only GOOD) or whose rate per rank (per rank and step, for one that repeats with
// training) shifted beyond chance by a G-test, with Holm's correction over every template
// tested. It returns the changes and where BAD first shows a template GOOD has not.
func templateChanges(good, bad *runLogs, alpha float64) ([]*Change, *Occurrence) {
	var cands []*candidate
	for _, role := range sortedUnion(good.roles, bad.roles) {
		gr, br := good.roles[role], bad.roles[role]
		if gr == nil || br == nil {
			continue // a role only one run has logs of: the spec and the diagnosis say so
		}
		granks, branks := float64(len(gr.pods)), float64(len(br.pods))
		gsteps, bsteps := gr.steps(), br.steps()
		for _, t := range sortedUnion(gr.templates, br.templates) {
			c := &candidate{role: role, g: gr.templates[t], b: br.templates[t]}
			if c.g != nil {
				c.gc = c.g.count
			}
			if c.b != nil {
				c.bc = c.b.count
			}
			c.ge, c.be = granks, branks
			if (c.g != nil && c.g.maxPerLog >= periodic) || (c.b != nil && c.b.maxPerLog >= periodic) {
				c.perStep = true
				c.ge, c.be = granks*gsteps, branks*bsteps
			}
			c.stat = gTest(c.bc, c.gc, c.be/(c.be+c.ge))
			c.p = chi2Survival1(c.stat)
			cands = append(cands, c)
		}
	}
	holm(cands, alpha)
	var out []*Change
	checks := 0
	var div *Occurrence
	for _, c := range cands {
		ch := c.change(good, bad, &checks)
		if ch == nil {
			continue
		}
		out = append(out, ch)
		if ch.Kind == "template-new" && ch.Template.First != nil {
			f := ch.Template.First
			if div == nil || earlier(f, div) {
				d := *f
				d.Text = ch.Template.Text
				div = &d
			}
		}
	}
	if div != nil && div.Time != nil && bad.start != 0 {
		div.Elapsed = (time.Duration(div.Time.UnixNano() - bad.start)).Round(time.Second).String()
	}
	return out, div
}

// earlier orders occurrences by time, untimed last, then by log and line.
func earlier(a, b *Occurrence) bool {
	switch {
	case a.Time != nil && b.Time == nil:
		return true
	case a.Time == nil && b.Time != nil:
		return false
	case a.Time != nil && !a.Time.Equal(*b.Time):
		return a.Time.Before(*b.Time)
	case a.Path != b.Path:
		return a.Path < b.Path
	}
	return a.Line < b.Line
}

// change is the candidate as a change, or nil when it is not one.
func (c *candidate) change(good, bad *runLogs, checks *int) *Change {
	gr, br := 0.0, 0.0
	if c.ge > 0 {
		gr = float64(c.gc) / c.ge
	}
	if c.be > 0 {
		br = float64(c.bc) / c.be
	}
	loud := func(a *tmplAgg) bool {
		return a != nil && (a.level == "error" || a.level == "critical" || a.level == "warning")
	}
	var kind string
	var score int
	var a *tmplAgg
	var own, other *runLogs
	switch {
	case c.gc == 0 && (c.reportable || loud(c.b)):
		kind, a, own, other = "template-new", c.b, bad, good
		score = 300
		switch c.b.level {
		case "error", "critical":
			score = 400
		case "warning":
			score = 350
		}
	case c.bc == 0 && c.reportable:
		kind, a, own, other, score = "template-gone", c.g, good, bad, 150
	case c.gc > 0 && c.bc > 0 && c.reportable && (br >= gr*minRatio || gr >= br*minRatio):
		kind, score = "template-shift", 200
		a = c.b
		if gr > br {
			a = c.g
		}
	default:
		return nil
	}
	if kind != "template-shift" {
		// The other run may have the line once, kept without a template: look it up.
		if *checks >= maxChecks {
			return nil
		}
		*checks++
		if other.has(a.text) {
			return nil
		}
		own.firstLine(a)
	}
	tc := &TemplateChange{Text: a.text, Level: a.level, GoodCount: c.gc, BadCount: c.bc, GoodRate: round3(gr), BadRate: round3(br),
		PerStep: c.perStep, G: round3(c.stat), P: roundSig(c.adjusted), PodCount: len(a.pods)}
	tc.Pods = sortedKeys(a.pods)
	if len(tc.Pods) > maxPods {
		tc.Pods = tc.Pods[:maxPods]
	}
	first := a.firstAt
	if a.first != 0 {
		t := time.Unix(0, a.first).UTC()
		first.Time = &t
	}
	tc.First = &first
	role := c.role
	label := role
	if label == "" {
		label = "logs"
	}
	ch := &Change{Section: SectionLogs, Kind: kind, Score: score, Role: role, Template: tc}
	switch kind {
	case "template-new":
		ch.Title = fmt.Sprintf("%s: %d line(s) only in BAD, on %d pod(s): %s", label, c.bc, len(a.pods), a.text)
	case "template-gone":
		ch.Title = fmt.Sprintf("%s: %d line(s) only in GOOD, on %d pod(s): %s", label, c.gc, len(a.pods), a.text)
	default:
		unit := "per rank"
		if c.perStep {
			unit = "per rank and step"
		}
		ch.Title = fmt.Sprintf("%s: %s → %s lines %s: %s", label, fmtRate(gr), fmtRate(br), unit, a.text)
	}
	return ch
}

// has reports whether a run's logs hold a line of a template's text, templated or not.
func (r *runLogs) has(text string) bool {
	if r.ix == nil {
		return false
	}
	for _, rl := range r.roles {
		if _, ok := rl.templates[text]; ok {
			return true
		}
	}
	q := phraseQuery(text)
	if q == "" {
		return false
	}
	res, err := r.ix.Search(context.Background(), index.SearchOptions{Query: q, Limit: 1})
	return err == nil && res.Lines > 0
}

// firstLine moves a template's first occurrence to its first line: a shape that is not among
// the first of its log gets its template at its second line, so the index's first line of a
// template may be its second.
func (r *runLogs) firstLine(a *tmplAgg) {
	q := phraseQuery(a.text)
	if r.ix == nil || q == "" || a.firstAt.Pod == "" {
		return
	}
	res, err := r.ix.Search(context.Background(), index.SearchOptions{Query: q, Pods: []string{a.firstAt.Pod}, Limit: 1})
	if err != nil || len(res.Hits) == 0 {
		return
	}
	h := res.Hits[0]
	if h.Path == a.firstAt.Path && h.Number < a.firstAt.Line {
		a.firstAt.Line = h.Number
		if h.Time != nil {
			a.first = h.Time.UnixNano()
		}
	}
	if n, ok := r.stepsBefore(a.firstPace, a.firstAt.Pod, a.first); ok {
		a.firstAt.Step = n
	}
}

// stepsBefore counts the progress lines of a pod's log before a time with the index (lines
// with the words of the progress template; the estimate from their first and last times is
// off when the pace changes).
func (r *runLogs) stepsBefore(p *pace, pod string, t int64) (int, bool) {
	q := phraseQuery(p.progress)
	if p.progress == "" || q == "" || t == 0 {
		return 0, false
	}
	res, err := r.ix.Search(context.Background(), index.SearchOptions{Query: q, Pods: []string{pod}, Until: time.Unix(0, t-1), Limit: 1})
	if err != nil || res.Partial {
		return 0, false
	}
	return res.Lines, true
}

// phraseQuery is a query for the literal words of a template: each run of whole words between
// variable words as a phrase ("" when it has none). A word glued to a variable word ("<*>GiB")
// is only part of a word of the line, and left out.
func phraseQuery(text string) string {
	isWord := func(r rune) bool {
		return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80
	}
	frags := strings.Split(text, "<*>")
	var parts []string
	for i, frag := range frags {
		words := strings.FieldsFunc(frag, func(r rune) bool { return !isWord(r) })
		if len(words) > 0 && i > 0 && isWord([]rune(frag)[0]) {
			words = words[1:] // glued to the variable word before it
		}
		if r := []rune(frag); len(words) > 0 && i < len(frags)-1 && isWord(r[len(r)-1]) {
			words = words[:len(words)-1] // glued to the variable word after it
		}
		if len(words) > 0 {
			parts = append(parts, `"`+strings.Join(words, " ")+`"`)
		}
	}
	return strings.Join(parts, " ")
}

// gTest is the G statistic (log-likelihood ratio) of a lines of one run and b of the other
// when a share p of the lines was expected in the first (by exposure).
func gTest(a, b int, p float64) float64 {
	n := float64(a + b)
	if n == 0 || p <= 0 || p >= 1 {
		return 0
	}
	g := 0.0
	if a > 0 {
		g += float64(a) * math.Log(float64(a)/(n*p))
	}
	if b > 0 {
		g += float64(b) * math.Log(float64(b)/(n*(1-p)))
	}
	return math.Max(0, 2*g)
}

// chi2Survival1 is P(X >= x) for X chi-squared with one degree of freedom.
func chi2Survival1(x float64) float64 {
	if x <= 0 {
		return 1
	}
	return math.Erfc(math.Sqrt(x / 2))
}

// holm marks the candidates whose test rejects at family-wise error rate alpha with Holm's
// step-down correction, and sets each one's adjusted p-value.
func holm(cs []*candidate, alpha float64) {
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return cs[idx[i]].p < cs[idx[j]].p })
	m := len(cs)
	running := 0.0
	rejecting := true
	for k, i := range idx {
		adj := math.Min(1, cs[i].p*float64(m-k))
		running = math.Max(running, adj)
		cs[i].adjusted = running
		if rejecting && adj < alpha {
			cs[i].reportable = true
		} else {
			rejecting = false
		}
	}
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// roundSig keeps 3 significant digits of a p-value.
func roundSig(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	return f
}

func fmtRate(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 1:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.3g", x)
}
