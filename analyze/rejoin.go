package analyze

import (
	"bytes"
	"slices"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/logscan"
)

// A message is not always one physical line. A paste from a terminal (tmux, screen, a web
// console) is hard-wrapped at its width, so "CUDA out of memory" can arrive as "CUDA out of me"
// and "mory"; a process whose output another rank's line interrupts leaves its message in two
// pieces with that line between them; a reporter's tool breaks a long line at a blank. The
// joiner remembers the last few lines that look cut and offers the matcher each of them joined
// with a later line that continues it. What matches only the joined text is a finding of the
// first physical line, with the joined text as its evidence.
//
// A line looks cut when it is exactly a terminal's width long (80, 100, 120, 132 or 160
// characters, or a width the log repeats: its longest length, once three lines have it) or
// ends in a blank (a break at a word boundary). Before a width is learned, a line as long as
// the log's longest so far is held back one line: the next line of the same length shows that
// both are a wrap at that width (the first message wrapped at a width no list has, such as
// 116, is the one that teaches it), and only that next line may continue it. A later line continues it when it is not the
// start of a record of its own (a date, a traceback) and, if a launcher prefix names its
// process, is of the same process. A piece wrapped inside a word is continued by the next such
// line only; a piece that ends in a blank waits up to maxJoinGap lines for one that completes a
// match (the lines between are another process's). The cost is a match of one joined line per pending piece,
// only after lines that look cut.

const (
	// maxPending bounds the pieces waiting for their continuation.
	maxPending = 4
	// maxJoinGap is how many lines may come between a piece and its continuation (another
	// rank's interleaved lines).
	maxJoinGap = 3
	// maxJoinBytes bounds a joined message (a message wrapped over many lines is joined piece
	// by piece up to this length).
	maxJoinBytes = 4096
	// minLearnedWidth is the shortest width the log's own longest lines can teach.
	minLearnedWidth = 60
)

// wrapWidths are the terminal widths pastes are commonly wrapped at.
var wrapWidths = [...]int{80, 100, 120, 132, 160}

// piece is a line (or lines already joined) waiting for its continuation.
type piece struct {
	line       int
	time, at   int64
	raw        []byte // the physical lines as printed, for the evidence
	text       []byte // without the launcher prefix, what the rules see
	stream     string
	rank       int
	wrapped    bool // cut at a terminal width: joined without a blank
	gap        int  // lines seen since
	rules      []*Rule
	physical   int // physical lines in it
	consumedBy int // line number of the continuation that extended it, 0 while none
}

// joiner follows one log's cut lines.
type joiner struct {
	pending []*piece
	// The log's longest line length so far and how many lines had it.
	longest, longestCount int
	// held is the previous line when it was as long as the longest so far but not yet a
	// learned width, with its length; a next line of that length continues it.
	held      *piece
	heldWidth int
	sc        *Scratch
}

// cutWidth says whether a physical line looks cut, and whether at a terminal width; ascii
// says that raw is all ASCII (its width is its length).
func (j *joiner) cutWidth(raw []byte, ascii bool) (cut, wrapped bool) {
	if len(raw) == 0 {
		return false, false
	}
	n := len(raw)
	if n >= minLearnedWidth {
		if !ascii {
			n = utf8.RuneCount(raw)
		}
		switch {
		case n > j.longest:
			j.longest, j.longestCount = n, 1
		case n == j.longest:
			j.longestCount++
		}
		if slices.Contains(wrapWidths[:], n) || (n == j.longest && j.longestCount >= 3) {
			return true, true
		}
	}
	return endsBlank(raw), false
}

func endsBlank(b []byte) bool { return len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') }

// startsRecord says whether a line starts a record of its own, which no cut line continues:
// an ISO date, or a traceback.
func startsRecord(text []byte) bool {
	t := bytes.TrimLeft(text, " \t")
	if len(t) >= 5 && digitsAt(t) == 4 && t[4] == '-' {
		return true
	}
	return bytes.HasPrefix(t, []byte("Traceback (most recent call last)")) || bytes.HasPrefix(t, []byte(`File "`))
}

// joinText joins a piece with its continuation: a terminal wrap cuts anywhere, so the pieces
// are joined as they are; a break at a blank keeps one blank between the words.
func joinText(a, b []byte, wrapped bool) []byte {
	out := make([]byte, 0, len(a)+len(b)+1)
	out = append(out, a...)
	if !wrapped {
		out = bytes.TrimRight(out, " \t")
		b = bytes.TrimLeft(b, " \t")
		out = append(out, ' ')
	}
	return append(out, b...)
}

// rejoin offers the rules the line l joined with each pending piece it may continue, records
// what matches only the joined text, and keeps l as a piece when it looks cut. text and pre
// are l's text without its prefix and what the prefix said; hits are what l matched alone.
func (s *logScanner) rejoin(l *logscan.Scanned, text []byte, pre linePrefix, rank int, hits []Hit) {
	j := &s.join
	cut, wrapped := j.cutWidth(l.Text, l.ASCII)
	if h := j.held; h != nil {
		j.held = nil
		if lineWidth(l.Text, l.ASCII) == j.heldWidth {
			j.pending = append(j.pending, h)
		}
	}
	if !cut && j.longestCount < 3 && len(l.Text) >= minLearnedWidth {
		if n := lineWidth(l.Text, l.ASCII); n == j.longest {
			j.held, j.heldWidth = s.newPiece(l, text, pre, rank, hits, true), n
		}
	}
	if len(j.pending) == 0 && !cut {
		return
	}
	var fresh []*piece
	if len(bytes.TrimSpace(text)) > 0 && !startsRecord(text) {
		for _, p := range j.pending {
			if p.consumedBy != 0 || (pre.stream != "" && pre.stream != p.stream) || len(p.text)+len(text) > maxJoinBytes {
				continue
			}
			joined := joinText(p.text, text, p.wrapped)
			if j.sc == nil {
				j.sc = s.rs.NewScratch()
			}
			seen := slices.Clone(p.rules)
			for _, h := range hits {
				seen = append(seen, h.Rule)
			}
			var added []Hit
			for _, h := range s.rs.Match(joined, j.sc) {
				if !slices.Contains(seen, h.Rule) {
					added = append(added, h)
					seen = append(seen, h.Rule)
				}
			}
			raw := joinText(p.raw, l.Text, p.wrapped)
			if len(added) > 0 {
				s.record(added, p.line, p.time, p.at, &lineText{b: raw}, p.stream, p.rank, s.proc(p.stream, p.rank))
			}
			if cut {
				// The continuation is cut too: the message goes on, and the pieces so far are
				// one piece.
				fresh = append(fresh, &piece{line: p.line, time: p.time, at: p.at, raw: raw, text: joined,
					stream: p.stream, rank: p.rank, wrapped: wrapped, rules: seen, physical: p.physical + 1})
			}
			// A terminal wraps into the very next line: a wrapped piece is continued once. A
			// piece broken at a blank may wait past lines of other processes for its own.
			if len(added) > 0 || cut || (p.wrapped && !endsBlank(p.raw)) {
				p.consumedBy = l.Number
			}
		}
	}
	keep := j.pending[:0]
	for _, p := range j.pending {
		if p.gap++; p.consumedBy == 0 && p.gap <= maxJoinGap {
			keep = append(keep, p)
		}
	}
	j.pending = keep
	if cut && len(fresh) == 0 {
		fresh = append(fresh, s.newPiece(l, text, pre, rank, hits, wrapped))
	}
	j.pending = append(j.pending, fresh...)
	if over := len(j.pending) - maxPending; over > 0 {
		j.pending = j.pending[over:]
	}
}

// newPiece is line l as a piece waiting for its continuation.
func (s *logScanner) newPiece(l *logscan.Scanned, text []byte, pre linePrefix, rank int, hits []Hit, wrapped bool) *piece {
	rules := make([]*Rule, 0, len(hits))
	for _, h := range hits {
		rules = append(rules, h.Rule)
	}
	if rank < 0 {
		rank = contentRank(text)
	}
	return &piece{line: l.Number, time: l.Time, at: s.latest, raw: slices.Clone(l.Text), text: slices.Clone(text),
		stream: pre.stream, rank: rank, wrapped: wrapped, rules: rules, physical: 1}
}

// lineWidth is a line's width in characters (its length when it is all ASCII).
func lineWidth(raw []byte, ascii bool) int {
	if ascii {
		return len(raw)
	}
	return utf8.RuneCount(raw)
}
