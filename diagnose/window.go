package diagnose

import (
	"sort"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/report"
)

// WindowMasker masks evidence windows with the lines above them read back from the log
// (redact.WindowLead of them): a window that starts inside a private key or a YAML value is
// masked as the whole log is (issue 22: a key's body and END line, with its BEGIN line above
// the window, went into the report and the prompt). A read error is kept and returned by Err.
type WindowMasker struct {
	Index *index.Index
	// Carry, when set, says which lines of the logs may begin a secret of several lines (see
	// Carry): a window with none of them among the lines above it reads only the line just
	// above it, which may end with the start of a token wrapped into the window.
	Carry *Carry
	err   error
}

// Mask redacts the lines of e's window with red.
func (w *WindowMasker) Mask(red *redact.Redactor, e *report.Evidence, lines []string) []string {
	first := e.Line
	if len(e.Before) > 0 {
		first = e.Before[0].Line
	}
	var lead []string
	if w.Index != nil && e.Source == analyze.SourceLog && e.File != "" && first > 1 {
		before := redact.WindowLead - 1
		if w.Carry.none(e.File, first-redact.WindowLead, first-1) {
			before = 0
		}
		ls, err := w.Index.Window(e.File, first-1, before, 0)
		if err != nil && w.err == nil {
			w.err = err
		}
		for _, l := range ls {
			lead = append(lead, analyze.Excerpt(l.Text))
		}
	}
	return red.Window(lead, lines)
}

// Err is the first error met reading lines back.
func (w *WindowMasker) Err() error { return w.err }

// maxCarry bounds the lines Carry keeps of one log: past it, every window of the log is
// masked with its whole lead.
const maxCarry = 1 << 16

// Carry is a visitor of the logs' scan that keeps, for each log, the numbers of the lines
// that may begin a secret of several lines (redact.Redactor.Carries, on the line as a window's
// lead shows it), so that masking the report's windows reads and redacts the lines above a
// window only where they may matter. Most logs have none.
type Carry struct {
	red   *redact.Redactor
	paths map[string]int
	lines [][]int // by log: ascending line numbers
	all   []bool  // by log: more than maxCarry lines, or a log not scanned whole
}

// NewCarry returns the visitor of logs with red's rules.
func NewCarry(red *redact.Redactor, logs []bundle.LogStream) *Carry {
	c := &Carry{red: red, paths: make(map[string]int, len(logs)), lines: make([][]int, len(logs)), all: make([]bool, len(logs))}
	for i, ls := range logs {
		c.paths[ls.Path] = i
	}
	return c
}

// Log returns what sees the lines of log i.
func (c *Carry) Log(i int) func(*logscan.Scanned) {
	// never[id] is 1 when no line of the log's shape id carries (redact.NeverCarries), 2
	// when one may: the lines of a shape are then not looked at one by one.
	var never []uint8
	return func(s *logscan.Scanned) {
		if c.all[i] {
			return
		}
		text := s.Text
		if len(text) > analyze.MaxExcerpt {
			text = []byte(analyze.Excerpt(string(text)))
		} else if sh := s.Shape; sh != nil {
			if sh.ID >= len(never) {
				never = append(never, make([]uint8, sh.ID+1-len(never))...)
			}
			if never[sh.ID] == 0 {
				never[sh.ID] = 2
				if redact.NeverCarries(sh.Parts) {
					never[sh.ID] = 1
				}
			}
			if never[sh.ID] == 1 {
				return
			}
		}
		if !c.red.Carries(text) {
			return
		}
		if len(c.lines[i]) == maxCarry {
			c.all[i], c.lines[i] = true, nil
			return
		}
		c.lines[i] = append(c.lines[i], s.Number)
	}
}

// Done marks a log whose scan stopped (ctx done) as unknown.
func (c *Carry) Done(i int, _ logscan.Stats, err error) {
	if err != nil {
		c.all[i], c.lines[i] = true, nil
	}
}

// none reports whether no line from..to of the log at path may begin a secret of several
// lines. A nil Carry, or a log it did not see, knows of none: false.
func (c *Carry) none(path string, from, to int) bool {
	if c == nil {
		return false
	}
	i, ok := c.paths[path]
	if !ok || c.all[i] {
		return false
	}
	ls := c.lines[i]
	j := sort.SearchInts(ls, from)
	return j == len(ls) || ls[j] > to
}
