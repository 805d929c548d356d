package llm

import (
	"io/fs"

	"github.com/coroner-dev/coroner/analyze"
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
