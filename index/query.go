package index

import (
	"path"

	"github.com/coroner-dev/coroner/logscan"
	"github.com/coroner-dev/coroner/search/syntax"
)

// The query language (search/syntax) is read into a tree; a search evaluates it with
// three-valued logic over what the index knows (templates, blocks, chunks), then on the
// lines it reads back.

// Three-valued answers: a template or block surely matches, surely does not, or its lines
// must be read to tell.
type tri uint8

const (
	no tri = iota
	maybe
	yes
)

// eval combines leaf answers with Kleene's logic, which stays exact when every maybe is later
// settled by reading the line. Leaves answer without side effects: an AND stops at the first
// no, an OR at the first yes.
func eval(n syntax.Node, leaf func(syntax.Node) tri) tri {
	switch n := n.(type) {
	case *syntax.Or:
		v := no
		for _, k := range n.Kids {
			if v = max(v, eval(k, leaf)); v == yes {
				break // the rest cannot change it
			}
		}
		return v
	case *syntax.And:
		v := yes
		for _, k := range n.Kids {
			if v = min(v, eval(k, leaf)); v == no {
				break
			}
		}
		return v
	case *syntax.Not:
		return yes - eval(n.Kid, leaf)
	}
	return leaf(n)
}

// lineWords are the folded words of a line, in one buffer.
type lineWords struct {
	buf  []byte
	ends []int
}

func (lw *lineWords) reset(text []byte) {
	lw.buf, lw.ends = lw.buf[:0], lw.ends[:0]
	for i := 0; i < len(text); {
		if !logscan.IsWordByte(text[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(text) && logscan.IsWordByte(text[j]) {
			j++
		}
		lw.buf = logscan.Fold(lw.buf, text[i:j])
		lw.ends = append(lw.ends, len(lw.buf))
		i = j
	}
}

func (lw *lineWords) len() int { return len(lw.ends) }

func (lw *lineWords) word(i int) []byte {
	start := 0
	if i > 0 {
		start = lw.ends[i-1]
	}
	return lw.buf[start:lw.ends[i]]
}

func (lw *lineWords) has(w string) bool {
	start := 0
	for _, end := range lw.ends {
		if string(lw.buf[start:end]) == w {
			return true
		}
		start = end
	}
	return false
}

func (lw *lineWords) hasPhrase(p []*syntax.Word) bool {
	for i := 0; i+len(p) <= lw.len(); i++ {
		ok := true
		for k, w := range p {
			if string(lw.word(i+k)) != w.Word {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (lw *lineWords) hasPrefix(p string) bool {
	start := 0
	for _, end := range lw.ends {
		if w := lw.buf[start:end]; len(w) >= len(p) && string(w[:len(p)]) == p {
			return true
		}
		start = end
	}
	return false
}

// level is the level the line names among its first words (see levelWord).
func (lw *lineWords) level() string {
	for i := 0; i < lw.len() && i < levelWords; i++ {
		var prev []byte
		if i > 0 {
			prev = lw.word(i - 1)
		}
		if l := levelWord(prev, lw.word(i)); l != "" {
			return l
		}
	}
	return ""
}

// matchLine evaluates a query on one line: its folded words, and its fields (the log's pod
// and container, the line's level and rank).
func matchLine(n syntax.Node, words *lineWords, s *Stream, text []byte) bool {
	return eval(n, func(n syntax.Node) tri {
		ok := false
		switch l := n.(type) {
		case *syntax.Word:
			ok = words.has(l.Word)
		case *syntax.Phrase:
			ok = words.hasPhrase(l.Words)
		case *syntax.Prefix:
			ok = words.hasPrefix(l.Prefix)
		case *syntax.Field:
			switch l.Field {
			case "level":
				ok = l.Value == words.level()
			case "rank":
				ok = logscan.RankPrefix(text) == l.Rank
			default:
				ok = streamField(l, s)
			}
		}
		if ok {
			return yes
		}
		return no
	}) == yes
}

// streamField answers a pod or container clause for a log.
func streamField(f *syntax.Field, s *Stream) bool {
	switch f.Field {
	case "pod":
		ok, _ := path.Match(f.Value, s.Pod)
		return ok
	case "container":
		ok, _ := path.Match(f.Value, s.Container)
		return ok
	}
	return false
}
