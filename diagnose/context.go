package diagnose

import (
	"sync"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/report"
)

// laterContext reads the lines around evidence once the report is built instead of when
// analyze finds it: analyze asks for them (record), the report folds the findings of one class
// on many ranks (report.FoldOver) and keeps a few samples' evidence, and only the windows it
// keeps are read back (fill). At 16,384 ranks that is three windows a class instead of one a
// rank. The windows are those analyze asked for, so a report is the same as when they were
// read at once.
type laterContext struct {
	mu   sync.Mutex
	want map[evidenceAt][2]int // before, after
}

type evidenceAt struct {
	path string
	line int
}

func newLaterContext() *laterContext {
	return &laterContext{want: map[evidenceAt][2]int{}}
}

// laterMark is the one context line record gives: it marks the evidence whose window is to be
// read (evidence analyze copies from one finding to another carries it along, as it carried
// the lines; evidence analyze made without a window has none).
const laterMark = "\x00coroner: context read later"

// record is analyze's Lines: it notes the window and gives the mark for its lines.
func (c *laterContext) record(path string, line, before, after int) ([]analyze.ContextLine, error) {
	c.mu.Lock()
	c.want[evidenceAt{path, line}] = [2]int{before, after}
	c.mu.Unlock()
	if line > 1 {
		return []analyze.ContextLine{{Line: line - 1, Text: laterMark}}, nil
	}
	return []analyze.ContextLine{{Line: line + 1, Text: laterMark}}, nil
}

// marked reports whether e carries record's mark.
func marked(e *report.Evidence) bool {
	for _, ls := range [][]report.ContextLine{e.Before, e.After} {
		if len(ls) == 1 && ls[0].Text == laterMark {
			return true
		}
	}
	return false
}

// fill reads back from ix the windows analyze asked for of the evidence the report kept; a
// window that cannot be read is a warning, as it was in analyze.
func (c *laterContext) fill(ix *index.Index, r *report.Report) {
	r.AddContext(func(e *report.Evidence) error {
		if !marked(e) {
			return nil
		}
		e.Before, e.After = nil, nil
		n := c.want[evidenceAt{e.File, e.Line}]
		lines, err := ix.Window(e.File, e.Line, n[0], n[1])
		if err != nil {
			return err
		}
		for _, l := range lines {
			cl := report.ContextLine{Line: l.Number, Text: analyze.Excerpt(l.Text)}
			switch {
			case l.Number < e.Line:
				e.Before = append(e.Before, cl)
			case l.Number > e.Line:
				e.After = append(e.After, cl)
			}
		}
		return nil
	})
}
