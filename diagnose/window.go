package diagnose

import (
	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/report"
)

// WindowMasker masks evidence windows with the lines above them read back from the log
// (redact.WindowLead of them): a window that starts inside a private key or a YAML value is
// masked as the whole log is (issue 22: a key's body and END line, with its BEGIN line above
// the window, went into the report and the prompt). A read error is kept and returned by Err.
type WindowMasker struct {
	Index *index.Index
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
		ls, err := w.Index.Window(e.File, first-1, redact.WindowLead-1, 0)
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
