package analyze

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

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

// streamResult is what scanning one log stream produced.
type streamResult struct {
	findings  []*Finding
	lines     int
	bytes     int64
	longLines int
	hasTime   bool
	first     *time.Time
	last      *time.Time
	err       error
}

// scanLog reads one log once, streaming, and matches every line against the rule set.
// Memory is bounded by the line limit and the context window, not by the log's size.
func scanLog(fsys fs.FS, ls parse.LogStream, rs *RuleSet, maxLine int) streamResult {
	var res streamResult
	f, err := fsys.Open(ls.Path)
	if err != nil {
		res.err = err
		return res
	}
	defer f.Close()

	sc := rs.NewScratch()
	br := bufio.NewReaderSize(f, 64<<10)
	var long []byte
	byRule := map[string]*Finding{}
	// The before-context ring reuses its buffers: most lines never become evidence.
	var ring [contextBefore]struct {
		line int
		text []byte
	}
	ringN := 0
	type pending struct {
		ev   *Evidence
		left int
	}
	var waiting []pending
	var lastTime time.Time
	lineNo := 0
	var clean []byte

	for {
		line, err := br.ReadSlice('\n')
		res.bytes += int64(len(line))
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: keep up to maxLine bytes, drop the rest.
			long = append(long[:0], line[:min(len(line), maxLine+1)]...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				res.bytes += int64(len(line))
				if room := maxLine + 1 - len(long); room > 0 {
					long = append(long, line[:min(room, len(line))]...)
				}
			}
			line = long
		}
		if len(line) > maxLine && !(len(line) == maxLine+1 && line[maxLine] == '\n') {
			line = line[:maxLine]
			res.longLines++
		}
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				res.err = err
			}
			break
		}
		lineNo++
		line = bytes.TrimRight(line, "\r\n")
		ts, text, ok := parse.SplitTimestamp(line)
		if ok {
			res.hasTime = true
			lastTime = ts
		} else if t, ok := parse.LeadingTime(line); ok {
			res.hasTime = true
			lastTime = t
		}
		if !lastTime.IsZero() {
			if res.first == nil {
				res.first = timePtr(lastTime)
			}
		}
		clean = cleanLine(clean[:0], text)

		for i := 0; i < len(waiting); {
			w := &waiting[i]
			w.ev.After = append(w.ev.After, ContextLine{Line: lineNo, Text: excerpt(clean)})
			w.left--
			if w.left == 0 {
				waiting = append(waiting[:i], waiting[i+1:]...)
				continue
			}
			i++
		}

		for _, h := range rs.Match(clean, sc) {
			f := byRule[h.Rule.ID]
			if f != nil {
				f.Count++
				last := &f.Evidence[len(f.Evidence)-1]
				last.LastLine = lineNo
				last.LastTime = timePtr(lastTime)
				continue
			}
			f = newFinding(h.Rule, h.Groups)
			f.Pod, f.Container = ls.Pod, ls.Container
			f.Time = timePtr(lastTime)
			f.order = lineNo
			ev := Evidence{Source: "log", File: ls.Path, Line: lineNo, Time: timePtr(lastTime), Text: excerpt(clean)}
			for k := min(ringN, contextBefore); k > 0; k-- {
				r := &ring[(ringN-k)%contextBefore]
				ev.Before = append(ev.Before, ContextLine{Line: r.line, Text: excerpt(r.text)})
			}
			f.Evidence = []Evidence{ev}
			byRule[h.Rule.ID] = f
			res.findings = append(res.findings, f)
			waiting = append(waiting, pending{ev: &f.Evidence[0], left: contextAfter})
		}
		r := &ring[ringN%contextBefore]
		r.line, r.text = lineNo, append(r.text[:0], clean...)
		ringN++
		if err != nil {
			if err != io.EOF {
				res.err = err
			}
			break
		}
	}
	res.lines = lineNo
	res.last = timePtr(lastTime)
	return res
}

// cleanLine removes what terminals render but matching should not see: ANSI escape
// sequences, the carriage-return frames of progress bars (the last frame is kept), NUL
// bytes and invalid UTF-8.
func cleanLine(dst, line []byte) []byte {
	if i := bytes.LastIndexByte(line, '\r'); i >= 0 {
		if rest := bytes.TrimSpace(line[i+1:]); len(rest) > 0 {
			line = line[i+1:]
		} else {
			line = line[:i]
			if j := bytes.LastIndexByte(line, '\r'); j >= 0 {
				line = line[j+1:]
			}
		}
	}
	if bytes.IndexByte(line, 0x1b) < 0 && bytes.IndexByte(line, 0) < 0 && utf8.Valid(line) {
		return append(dst, line...)
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == 0x1b:
			i = skipEscape(line, i)
			continue
		case c == 0:
			i++
			continue
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(line[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, line[i:i+n]...)
		}
		i += n
	}
	return dst
}

// skipEscape returns the index after the escape sequence starting at i (CSI "ESC [ ... final"
// or a two-byte escape).
func skipEscape(b []byte, i int) int {
	i++
	if i >= len(b) {
		return i
	}
	if b[i] != '[' {
		return i + 1
	}
	i++
	for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
		i++
	}
	return i + 1
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

// ReadLines returns lines from..to (1-based, inclusive) of a bundle log, cleaned and bounded
// as evidence lines are (kubelet timestamp removed, escape sequences dropped, long lines cut
// to maxLine bytes then to an excerpt). It reads the log once, streaming, up to line to.
func ReadLines(fsys fs.FS, path string, from, to, maxLine int) ([]ContextLine, error) {
	from = max(from, 1)
	if to < from {
		return nil, nil
	}
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var out []ContextLine
	var long, clean []byte
	for lineNo := 1; lineNo <= to; lineNo++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line[:min(len(line), maxLine)]...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				if room := maxLine - len(long); room > 0 {
					long = append(long, line[:min(room, len(line))]...)
				}
			}
			line = long
		}
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, err
		}
		if lineNo >= from {
			line = bytes.TrimRight(line[:min(len(line), maxLine)], "\r\n")
			_, text, _ := parse.SplitTimestamp(line)
			clean = cleanLine(clean[:0], text)
			out = append(out, ContextLine{Line: lineNo, Text: excerpt(clean)})
		}
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, err
		}
	}
	return out, nil
}
