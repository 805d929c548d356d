package narrate

import (
	"context"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/bundle/redact"
	"github.com/coroner-dev/coroner/index"
)

// Windows reads log context: the lines around a line of a bundle log. The bundle's log index
// implements it (IndexWindows).
type Windows interface {
	Around(ctx context.Context, file string, line, before, after int) ([]Line, error)
}

// Line is one line of a log window.
type Line struct {
	Number int
	Text   string
}

// IndexWindows reads windows from the bundle's log index (the lines the report's evidence
// shows, cleaned and bounded the same way).
//
// Prompts take no relevance search of the index: one (TopWindows, since removed), asked with
// the root cause's title or evidence line, ranked warnings and other ranks' NCCL lines above
// anything useful on the samples, and crowded out the timeline.
type IndexWindows struct {
	Index *index.Index
}

var _ Windows = IndexWindows{}

// Around returns lines line-before..line+after of file, cleaned and bounded like evidence. A
// window is a few dozen lines read back from the bundle: ctx is checked before each one.
func (w IndexWindows) Around(ctx context.Context, file string, line, before, after int) ([]Line, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lines, err := w.Index.Window(file, line, before, after)
	if err != nil {
		return nil, err
	}
	out := make([]Line, len(lines))
	for i, l := range lines {
		out[i] = Line{Number: l.Number, Text: analyze.Excerpt(l.Text)}
	}
	return out, nil
}

// redactedWindows reads windows through a redactor of whole texts: each window's lines are
// one text, so the body of a private key or a YAML value below its key, which no line shows
// alone to be a secret, is masked as in a redacted bundle. The lines above the window are read
// too (redact.WindowLead of them): a window that starts inside a key or a YAML value is masked
// as the whole log is, with what began above it.
type redactedWindows struct {
	w   Windows
	red *redact.Redactor
}

func (r redactedWindows) Around(ctx context.Context, file string, line, before, after int) ([]Line, error) {
	lines, err := r.w.Around(ctx, file, line, max(before, 0)+redact.WindowLead, after)
	if err != nil || len(lines) == 0 {
		return lines, err
	}
	first := line - max(before, 0)
	var lead, texts []string
	for _, l := range lines {
		if l.Number < first {
			lead = append(lead, l.Text)
		} else {
			texts = append(texts, l.Text)
		}
	}
	lines = lines[len(lead):]
	for i, t := range r.red.Window(lead, texts) {
		lines[i].Text = t
	}
	return lines, nil
}
