package llm

import (
	"io/fs"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/index"
)

// Windows reads log context: the lines around a line of a bundle log. The bundle's log index
// can implement it; FileWindows reads the bundle's files.
type Windows interface {
	Around(file string, line, before, after int) ([]analyze.ContextLine, error)
}

// Searcher finds the log lines most relevant to a query. A Windows that also implements it
// (the log index) adds those lines' context to the prompt, after the findings and events.
type Searcher interface {
	Top(query string, n int) ([]LogHit, error)
}

// LogHit is a line of a bundle log.
type LogHit struct {
	File string
	Line int
}

// FileWindows reads windows from the bundle's log files, cleaned like evidence lines.
type FileWindows struct {
	FS fs.FS
	// MaxLineBytes bounds a line read (bundle.Limits.MaxLineBytes).
	MaxLineBytes int
}

var _ Windows = FileWindows{}

// Around returns lines line-before..line+after of file.
func (w FileWindows) Around(file string, line, before, after int) ([]analyze.ContextLine, error) {
	return analyze.ReadLines(w.FS, file, line-before, line+after, w.MaxLineBytes)
}

// IndexWindows reads windows from the bundle's log index (the lines the report's evidence
// shows, cleaned and bounded the same way).
//
// It deliberately does not implement Searcher: the index's TopWindows, asked with the root
// cause's title or evidence line, ranked warnings and other ranks' NCCL lines above anything
// useful on the samples (see the closing note of issue 5), and crowded out the timeline.
type IndexWindows struct {
	Index *index.Index
}

var _ Windows = IndexWindows{}

// Around returns lines line-before..line+after of file, cleaned and bounded like evidence.
func (w IndexWindows) Around(file string, line, before, after int) ([]analyze.ContextLine, error) {
	lines, err := w.Index.Window(file, line, before, after)
	if err != nil {
		return nil, err
	}
	out := make([]analyze.ContextLine, len(lines))
	for i, l := range lines {
		out[i] = analyze.ContextLine{Line: l.Number, Text: analyze.Excerpt(l.Text)}
	}
	return out, nil
}
