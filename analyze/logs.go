package analyze

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/parse"
)

const (
	contextBefore = 4
	contextAfter  = 3
	// maxExcerpt bounds one evidence line in the report.
	maxExcerpt = 600
	// maxEvidence bounds how many evidence entries one finding keeps.
	maxEvidence = 3
)

// logScanner matches one log's lines against the rule set. The index package reads the
// log (once, for the index too) and hands it every line.
type logScanner struct {
	ls       parse.LogStream
	rs       *RuleSet
	sc       *Scratch
	byRule   map[string]*Finding
	findings []*Finding
	// shapes holds, by shape id, how many lines of the shape were seen and then its filter.
	shapes []shapeSeen
}

type shapeSeen struct {
	lines int
	memo  *shapeMemo
}

// filterAfter is how many lines of a shape are matched in full before its filter is worked
// out: most shapes occur a few times, and the filter costs as much as matching a hundred
// lines.
const filterAfter = 16

func newLogScanner(ls parse.LogStream, rs *RuleSet) *logScanner {
	return &logScanner{ls: ls, rs: rs, sc: rs.NewScratch(), byRule: map[string]*Finding{}}
}

func (s *logScanner) visit(l *logscan.Scanned) {
	if !s.mayMatch(l) {
		return
	}
	hits := s.rs.Match(l.Text, s.sc)
	if len(hits) == 0 {
		return
	}
	var ts time.Time
	if l.Time != 0 {
		ts = time.Unix(0, l.Time)
	}
	for _, h := range hits {
		f := s.byRule[h.Rule.ID]
		if f != nil {
			f.Count++
			last := &f.Evidence[len(f.Evidence)-1]
			last.LastLine = l.Number
			last.LastTime = timePtr(ts)
			continue
		}
		f = newFinding(h.Rule, h.Groups)
		f.Pod, f.Container = s.ls.Pod, s.ls.Container
		f.Time = timePtr(ts)
		f.order = l.Number
		f.Evidence = []Evidence{{Source: "log", File: s.ls.Path, Line: l.Number, Time: timePtr(ts), Text: excerpt(l.Text)}}
		s.byRule[h.Rule.ID] = f
		s.findings = append(s.findings, f)
	}
}

// mayMatch reports whether the rules could match a line, from what they can match in lines
// of its shape (see shapeFilter).
func (s *logScanner) mayMatch(l *logscan.Scanned) bool {
	sh := l.Shape
	if sh == nil {
		return true
	}
	for sh.ID >= len(s.shapes) {
		s.shapes = append(s.shapes, shapeSeen{})
	}
	seen := &s.shapes[sh.ID]
	if seen.memo == nil {
		if seen.lines++; seen.lines <= filterAfter {
			return true
		}
		seen.memo = newShapeMemo(s.rs.shapeFilter(sh))
	}
	return seen.memo.mayMatch(l.VarClasses)
}

// addContext reads the lines around each log evidence line back through the index.
func addContext(ix *index.Index, f *Finding) error {
	for i := range f.Evidence {
		ev := &f.Evidence[i]
		if ev.Source != "log" || ev.Line == 0 {
			continue
		}
		lines, err := ix.Window(ev.File, ev.Line, contextBefore, contextAfter)
		if err != nil {
			return err
		}
		ev.Before, ev.After = nil, nil
		for _, l := range lines {
			switch {
			case l.Number < ev.Line:
				ev.Before = append(ev.Before, ContextLine{Line: l.Number, Text: excerpt([]byte(l.Text))})
			case l.Number > ev.Line:
				ev.After = append(ev.After, ContextLine{Line: l.Number, Text: excerpt([]byte(l.Text))})
			}
		}
	}
	return nil
}

// excerpt bounds a line for the report, on a rune boundary.
func excerpt(b []byte) string {
	if len(b) <= maxExcerpt {
		return string(b)
	}
	cut := maxExcerpt
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + fmt.Sprintf(" … [%d more bytes]", len(b)-cut)
}

// truncateText bounds a message that came from a resource.
func truncateText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxExcerpt*2 {
		return s
	}
	return excerpt([]byte(s[:maxExcerpt*2]))
}

// Excerpt bounds a cleaned log line the way evidence lines are bounded.
func Excerpt(text string) string { return excerpt([]byte(text)) }
