package index

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/coroner-dev/coroner/logscan"
)

// The query language is bleve's query string syntax, read by coroner so that a query means
// exactly what a scan of the lines would find:
//
//	word            a whole word, any case ("nccl" finds "NCCL" but not "NCCLx")
//	"a phrase"      words in sequence, whatever punctuation or spaces lie between them
//	word*           a word starting with "word"
//	a b, a AND b    both (words side by side are all required, as in grep | grep)
//	a OR b          either; AND binds tighter: "a b OR c" is "(a AND b) OR c"
//	-a, NOT a       not a; +a is a
//	( ... )         grouping
//	pod:glob container:glob level:error rank:3
//
// A term with punctuation ("ProcessGroupNCCL.cpp") is the phrase of its words.

type node interface{}

type orNode struct{ kids []node }

type andNode struct{ kids []node }

type notNode struct{ kid node }

type wordNode struct {
	word  string // folded
	shape string
	value logscan.Value
	digit bool
	run   []byte // the longest run of digits of a word with digits
}

type phraseNode struct{ words []*wordNode }

type prefixNode struct{ prefix string }

type fieldNode struct {
	field, value string
	rank         int // the value of a rank clause
}

// Fields a query can name.
var queryFields = []string{"pod", "container", "level", "rank"}

type qtoken struct {
	kind string // "(", ")", "term", "phrase", "AND", "OR", "NOT", "+", "-", "" at the end
	text string
}

func lex(s string) ([]qtoken, error) {
	var out []qtoken
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }
	for pos := 0; ; {
		for pos < len(s) && space(s[pos]) {
			pos++
		}
		if pos >= len(s) {
			return append(out, qtoken{}), nil
		}
		c := s[pos]
		switch {
		case c == '(' || c == ')':
			out = append(out, qtoken{kind: string(c)})
			pos++
			continue
		case (c == '+' || c == '-') && pos+1 < len(s) && !space(s[pos+1]):
			out = append(out, qtoken{kind: string(c)})
			pos++
			continue
		case c == '"':
			var sb strings.Builder
			end := -1
			for i := pos + 1; i < len(s) && end < 0; i++ {
				switch s[i] {
				case '\\':
					if i+1 < len(s) {
						i++
						sb.WriteByte(s[i])
					}
				case '"':
					end = i
				default:
					sb.WriteByte(s[i])
				}
			}
			if end < 0 {
				return nil, errors.New("a phrase is missing its closing quote")
			}
			out = append(out, qtoken{kind: "phrase", text: sb.String()})
			pos = end + 1
			continue
		}
		var sb strings.Builder
		for pos < len(s) && !space(s[pos]) && s[pos] != '(' && s[pos] != ')' && s[pos] != '"' {
			if s[pos] == '\\' && pos+1 < len(s) {
				pos++
			}
			sb.WriteByte(s[pos])
			pos++
		}
		switch t := sb.String(); t {
		case "AND", "OR", "NOT":
			out = append(out, qtoken{kind: t})
		default:
			out = append(out, qtoken{kind: "term", text: t})
		}
	}
}

type parser struct {
	toks  []qtoken
	pos   int
	depth int
}

func (p *parser) peek() string { return p.toks[p.pos].kind }

// parseQuery reads a query into a tree.
func parseQuery(s string) (node, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", s, err)
	}
	if len(toks) == 1 {
		return nil, fmt.Errorf("query %q: nothing to search for", s)
	}
	p := &parser{toks: toks}
	n, err := p.or()
	if err == nil && p.peek() != "" {
		err = errors.New("a closing parenthesis has no opening one")
	}
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", s, err)
	}
	return n, nil
}

func (p *parser) or() (node, error) {
	var kids []node
	for {
		n, err := p.and()
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
		if p.peek() != "OR" {
			break
		}
		p.pos++
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return &orNode{kids: kids}, nil
}

func (p *parser) and() (node, error) {
	var kids []node
	for {
		switch p.peek() {
		case "", ")", "OR":
			if len(kids) == 0 {
				return nil, errors.New("an operator or parenthesis has nothing beside it")
			}
			if len(kids) == 1 {
				return kids[0], nil
			}
			return &andNode{kids: kids}, nil
		case "AND":
			if len(kids) == 0 {
				return nil, errors.New("AND needs something before it")
			}
			p.pos++
			continue
		}
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		kids = append(kids, n)
	}
}

func (p *parser) unary() (node, error) {
	tok := p.toks[p.pos]
	switch tok.kind {
	case "NOT", "-":
		p.pos++
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &notNode{kid: n}, nil
	case "+":
		p.pos++
		return p.unary()
	case "(":
		if p.depth++; p.depth > 20 {
			return nil, errors.New("parentheses nested too deep")
		}
		p.pos++
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, errors.New("a parenthesis is not closed")
		}
		p.pos++
		p.depth--
		return n, nil
	case "phrase":
		p.pos++
		return wordsNode(tok.text)
	case "term":
		p.pos++
		return termNode(tok.text)
	}
	return nil, errors.New("the query ends with an operator")
}

func termNode(t string) (node, error) {
	if f, v, ok := strings.Cut(t, ":"); ok {
		for _, name := range queryFields {
			if f == name {
				if v == "" {
					return nil, fmt.Errorf("%s: needs a value", f)
				}
				rank := 0
				if f == "rank" {
					n, err := strconv.Atoi(v)
					if err != nil || n < 0 || n > 999999 {
						return nil, fmt.Errorf("rank:%s: not a rank number", v)
					}
					rank = n
				}
				if strings.ContainsAny(v, "[]\\") {
					return nil, fmt.Errorf("%s: only * and ? are wildcards", t)
				}
				if f == "level" {
					v = strings.ToLower(v)
				}
				return &fieldNode{field: f, value: v, rank: rank}, nil
			}
		}
	}
	if stem, ok := strings.CutSuffix(t, "*"); ok {
		words := logscan.Words([]byte(stem))
		if len(words) != 1 || strings.ContainsAny(stem, "*?") || len(stem) != len(words[0]) {
			return nil, fmt.Errorf("%q: a prefix must be one word followed by *", t)
		}
		return &prefixNode{prefix: words[0]}, nil
	}
	if strings.ContainsAny(t, "*?") {
		return nil, fmt.Errorf("%q: wildcards other than a trailing * are not supported (use --regex)", t)
	}
	return wordsNode(t)
}

// wordsNode is a word, or the phrase of the words of s.
func wordsNode(s string) (node, error) {
	words := logscan.Words([]byte(s))
	if len(words) == 0 {
		return nil, fmt.Errorf("%q holds no word to search for (use --regex for punctuation)", s)
	}
	ws := make([]*wordNode, len(words))
	for i, w := range words {
		ws[i] = newWordNode(w)
	}
	if len(ws) == 1 {
		return ws[0], nil
	}
	return &phraseNode{words: ws}, nil
}

func newWordNode(w string) *wordNode {
	n := &wordNode{word: w, shape: w}
	if logscan.HasDigit(w) {
		n.digit = true
		n.shape, n.value = logscan.ShapeValue(w)
		for i := 0; i < len(w); {
			j := i
			for j < len(w) && w[j] >= '0' && w[j] <= '9' {
				j++
			}
			if j-i > len(n.run) {
				n.run = []byte(w[i:j])
			}
			i = j + 1
		}
	}
	return n
}

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
func eval(n node, leaf func(node) tri) tri {
	switch n := n.(type) {
	case *orNode:
		v := no
		for _, k := range n.kids {
			if v = max(v, eval(k, leaf)); v == yes {
				break // the rest cannot change it
			}
		}
		return v
	case *andNode:
		v := yes
		for _, k := range n.kids {
			if v = min(v, eval(k, leaf)); v == no {
				break
			}
		}
		return v
	case *notNode:
		return yes - eval(n.kid, leaf)
	}
	return leaf(n)
}

// leaves lists the leaf nodes of a query.
func leaves(n node, out []node) []node {
	switch n := n.(type) {
	case *orNode:
		for _, k := range n.kids {
			out = leaves(k, out)
		}
		return out
	case *andNode:
		for _, k := range n.kids {
			out = leaves(k, out)
		}
		return out
	case *notNode:
		return leaves(n.kid, out)
	}
	return append(out, n)
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

func (lw *lineWords) hasPhrase(p []*wordNode) bool {
	for i := 0; i+len(p) <= lw.len(); i++ {
		ok := true
		for k, w := range p {
			if string(lw.word(i+k)) != w.word {
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
func matchLine(n node, words *lineWords, s *Stream, text []byte) bool {
	return eval(n, func(n node) tri {
		ok := false
		switch l := n.(type) {
		case *wordNode:
			ok = words.has(l.word)
		case *phraseNode:
			ok = words.hasPhrase(l.words)
		case *prefixNode:
			ok = words.hasPrefix(l.prefix)
		case *fieldNode:
			switch l.field {
			case "level":
				ok = l.value == words.level()
			case "rank":
				ok = logscan.RankPrefix(text) == l.rank
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
func streamField(f *fieldNode, s *Stream) bool {
	switch f.field {
	case "pod":
		ok, _ := path.Match(f.value, s.Pod)
		return ok
	case "container":
		ok, _ := path.Match(f.value, s.Container)
		return ok
	}
	return false
}
