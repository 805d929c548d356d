package yamlbound

import (
	"slices"
	"strings"
)

// The fast path: one document of the YAML that Kubernetes clients write (sigs.k8s.io/yaml's
// block style, and the one-line flow collections people write by hand), decoded straight
// into the values DecodeAll gives, with no node tree. It declines — returns ok false, and
// yaml.v3 decodes the data as before — at anything outside that subset: anchors, aliases,
// tags, merge keys, comments, document markers and directives, block scalars, multi-line
// flow collections and scalars, escapes other than the common ones, tabs, carriage returns
// and any byte that is not printable ASCII. It never gives another answer than the slow path
// (FuzzFastAgrees); the bounds hold as they do there: the values are counted before (checkValues)
// and the size charged as it is built, a value over the limit declining so that yaml.v3
// gives the error.

// fastMaxDepth is the deepest nesting the fast path takes; deeper, yaml.v3 says what it makes
// of it (Kubernetes objects nest a dozen levels).
const fastMaxDepth = 100

// fastLine is a non-blank line: its indentation and its text after it, right-trimmed.
type fastLine struct {
	indent int
	text   string
}

type fastParser struct {
	lines []fastLine
	i     int
	c     *converter
	ok    bool  // false once the parser declined
	t     *Tape // what it decoded so far
}

// fastDecode decodes data as one document through the fast path, or declines.
func fastDecode(data []byte, opts Options) (v any, ok bool) {
	t, ok := fastTape(data, opts, nil)
	if !ok {
		return nil, false
	}
	return t.Value(0), true
}

// fastTape decodes data as one document through the fast path into a tape (reusing t's
// tokens when t is not nil), or declines.
func fastTape(data []byte, opts Options, t *Tape) (*Tape, bool) {
	if t == nil {
		t = &Tape{}
	}
	lines, ok := fastLines(data, t.lines[:0])
	if cap(lines) > cap(t.lines) {
		t.lines = lines[:0]
	}
	if !ok || len(lines) == 0 {
		return nil, false
	}
	t.toks = t.toks[:0]
	p := &fastParser{lines: lines, c: &converter{opts: opts}, ok: true, t: t}
	first := lines[0]
	if isSeqItem(first.text) || keyEnd(first.text) > 0 {
		p.block(first.indent, 0)
	} else if len(lines) == 1 {
		p.inline(first.text, 0) // a document of one scalar or flow collection
		p.i = 1
	} else {
		return nil, false
	}
	if !p.ok || p.i != len(lines) || len(t.toks) == 0 || int(t.toks[0].End) != len(t.toks) {
		return nil, false
	}
	return t, true
}

// fastLines splits data into its non-blank lines, appended to lines (a tape's, reused from
// one document to the next), declining at a byte or a line outside the subset.
func fastLines(data []byte, lines []fastLine) ([]fastLine, bool) {
	for _, b := range data {
		if b >= 0x7f || b < ' ' && b != '\n' {
			return nil, false
		}
	}
	s := string(data)
	lines = slices.Grow(lines, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		text := strings.TrimLeft(line, " ")
		text = strings.TrimRight(text, " ")
		if text == "" {
			continue
		}
		switch text[0] {
		case '#', '%':
			return nil, false
		}
		if strings.HasPrefix(text, "---") || strings.HasPrefix(text, "...") {
			return nil, false
		}
		lines = append(lines, fastLine{indent: len(line) - len(strings.TrimLeft(line, " ")), text: text})
	}
	return lines, true
}

func isSeqItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

// keyEnd is the index just after the ':' of a mapping key that starts text, or 0 when text
// does not start with one (or with one the fast path takes).
func keyEnd(text string) int {
	if text == "" {
		return 0
	}
	switch text[0] {
	case '"', '\'':
		_, n := quoted(text)
		if n > 0 && n < len(text) && text[n] == ':' && (n+1 == len(text) || text[n+1] == ' ') {
			return n + 1
		}
		return 0
	}
	if !plainStart(text) {
		return 0
	}
	i := strings.Index(text, ": ")
	if i < 0 {
		if !strings.HasSuffix(text, ":") {
			return 0
		}
		i = len(text) - 1
	}
	key := text[:i]
	if key == "" || key == "<<" || key[len(key)-1] == ' ' || strings.Contains(key, " #") {
		return 0
	}
	return i + 1
}

// plainStart says whether text may start a plain scalar the fast path takes: not with an
// indicator (nor a "-" of a sequence entry).
func plainStart(text string) bool {
	if text == "" {
		return false
	}
	switch text[0] {
	case '-':
		return len(text) > 1 && text[1] != ' '
	case '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	}
	return true
}

// block decodes the block mapping or sequence whose lines are at indent. Each of the parser's
// functions that decodes a value adds it to the tape (or declines).
func (p *fastParser) block(indent, depth int) {
	if depth > fastMaxDepth {
		p.ok = false
		return
	}
	if isSeqItem(p.lines[p.i].text) {
		p.sequence(indent, depth)
		return
	}
	p.mapping(indent, depth)
}

func (p *fastParser) charge(n int64) {
	if p.c.charge(n, false) != nil {
		p.ok = false // yaml.v3 says how large
	}
}

func (p *fastParser) sequence(indent, depth int) {
	p.charge(2)
	at := p.t.open(Token{Kind: Seq})
	for p.ok && p.i < len(p.lines) && p.lines[p.i].indent == indent && isSeqItem(p.lines[p.i].text) {
		rest := strings.TrimLeft(p.lines[p.i].text[1:], " ")
		switch {
		case rest == "":
			p.nested(indent, false, depth)
		case isSeqItem(rest):
			p.ok = false // "- - x"
		case keyEnd(rest) > 0:
			// A mapping that starts on the entry's line: its keys line up with the first.
			l := &p.lines[p.i]
			l.indent += len(l.text) - len(rest)
			l.text = rest
			p.mapping(l.indent, depth+1)
		default:
			p.scalarLine(rest, indent, depth)
		}
		p.t.toks[at].N++
		p.charge(1)
	}
	p.after(indent)
	p.t.close(at)
}

func (p *fastParser) mapping(indent, depth int) {
	p.charge(2)
	at := p.t.open(Token{Kind: Map})
	for p.ok && p.i < len(p.lines) && p.lines[p.i].indent == indent {
		text := p.lines[p.i].text
		end := keyEnd(text)
		if end == 0 {
			p.ok = false
			break
		}
		key := p.key(text[:end-1], false)
		if !p.ok {
			break
		}
		k := p.t.open(Token{Kind: Key, Str: key})
		if rest := strings.TrimLeft(text[end:], " "); rest == "" {
			p.nested(indent, true, depth)
		} else {
			p.scalarLine(rest, indent, depth)
		}
		p.t.close(k)
		p.t.toks[at].N++
	}
	p.after(indent)
	p.t.close(at)
}

// nested decodes the block value of a key or entry with nothing after it on its line: the
// lines indented more, or a sequence at the key's own indentation; nothing is null.
func (p *fastParser) nested(indent int, key bool, depth int) {
	p.i++
	if p.i < len(p.lines) {
		next := p.lines[p.i]
		if next.indent > indent {
			if !isSeqItem(next.text) && keyEnd(next.text) == 0 {
				p.ok = false // a scalar on lines of its own
				return
			}
			p.block(next.indent, depth+1)
			return
		}
		if key && next.indent == indent && isSeqItem(next.text) {
			p.sequence(indent, depth+1)
			return
		}
	}
	p.scalar("", "")
}

// scalarLine decodes the value that ends the current line; the next line may not continue it.
func (p *fastParser) scalarLine(text string, indent, depth int) {
	p.inline(text, depth)
	p.i++
	if p.i < len(p.lines) && p.lines[p.i].indent > indent {
		p.ok = false // a multi-line scalar
	}
}

// after checks that a block collection at indent ends where its parent goes on.
func (p *fastParser) after(indent int) {
	if p.i < len(p.lines) && p.lines[p.i].indent > indent {
		p.ok = false
	}
}

// inline decodes a scalar or flow collection that is all of text.
func (p *fastParser) inline(text string, depth int) {
	if n := p.flowValue(text, 0, false, depth); n != len(text) {
		p.ok = false
	}
}

// scalar adds the scalar value of the given tag: "" for a plain one, strTag for a quoted one.
func (p *fastParser) scalar(value, tag string) {
	tok, size, err := p.c.scalarToken(value, tag, 0)
	if err != nil {
		p.ok = false
		return
	}
	tok.End = int32(len(p.t.toks) + 1)
	p.t.toks = append(p.t.toks, tok)
	p.charge(size)
}

// flowValue decodes the value at s[i:]: a quoted or plain scalar, or a flow collection; in a
// flow collection (flow) a plain scalar ends at ",", "]" or "}". It returns the value and
// where it ends, after the spaces that follow it.
func (p *fastParser) flowValue(s string, i int, flow bool, depth int) int {
	if depth > fastMaxDepth || i >= len(s) {
		p.ok = false
		return i
	}
	switch s[i] {
	case '[':
		i = p.flowSeq(s, i+1, depth+1)
	case '{':
		i = p.flowMap(s, i+1, depth+1)
	case '"', '\'':
		text, n := quoted(s[i:])
		if n == 0 {
			p.ok = false
			return i
		}
		p.scalar(text, strTag)
		i += n
	default:
		end := len(s)
		if flow {
			end = i + strings.IndexAny(s[i:]+",", ",]}")
		}
		text := strings.TrimRight(s[i:end], " ")
		if !plainStart(text) || strings.Contains(text, ": ") || strings.HasSuffix(text, ":") || strings.Contains(text, " #") ||
			flow && strings.ContainsAny(text, ":#[{") {
			p.ok = false
			return i
		}
		p.scalar(text, "")
		i = end
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

// flowSeq decodes a flow sequence after its "[", to just after its "]".
func (p *fastParser) flowSeq(s string, i, depth int) int {
	p.charge(2)
	at := p.t.open(Token{Kind: Seq})
	defer p.t.close(at)
	i = skipSpaces(s, i)
	if i < len(s) && s[i] == ']' {
		return i + 1
	}
	for p.ok {
		i = p.flowValue(s, i, true, depth)
		p.t.toks[at].N++
		p.charge(1)
		var closed bool
		if i, closed = p.flowNext(s, i, ']'); closed {
			return i
		}
	}
	return i
}

// flowMap decodes a flow mapping after its "{", to just after its "}".
func (p *fastParser) flowMap(s string, i, depth int) int {
	p.charge(2)
	at := p.t.open(Token{Kind: Map})
	defer p.t.close(at)
	i = skipSpaces(s, i)
	if i < len(s) && s[i] == '}' {
		return i + 1
	}
	for p.ok {
		end := keyEnd(s[i:])
		if end == 0 || i+end >= len(s) || s[i+end] != ' ' {
			p.ok = false // a key without a value, or one the fast path does not take
			break
		}
		key := p.key(s[i:i+end-1], true)
		if !p.ok {
			break
		}
		k := p.t.open(Token{Kind: Key, Str: key})
		i = p.flowValue(s, skipSpaces(s, i+end), true, depth)
		p.t.close(k)
		p.t.toks[at].N++
		var closed bool
		if i, closed = p.flowNext(s, i, '}'); closed {
			return i
		}
	}
	return i
}

// key decodes a mapping key (keyEnd found it, without its ':') and charges it.
func (p *fastParser) key(text string, flow bool) string {
	tag := ""
	if text[0] == '"' || text[0] == '\'' {
		text, _ = quoted(text)
		tag = strTag
	} else if flow && strings.ContainsAny(text, ",[]{}#:") {
		p.ok = false
		return ""
	}
	key, err := p.c.keyOf(text, tag, 0)
	if err != nil {
		p.ok = false
		return ""
	}
	p.charge(int64(len(key)) + 4)
	return key
}

// flowNext reads what follows an entry of a flow collection at s[i]: its closer (closed, and
// the index after it) or a comma and the next entry.
func (p *fastParser) flowNext(s string, i int, closer byte) (int, bool) {
	switch {
	case !p.ok || i >= len(s):
	case s[i] == closer:
		return i + 1, true
	case s[i] == ',':
		i = skipSpaces(s, i+1)
		if i < len(s) && s[i] != closer && s[i] != ',' {
			return i, false
		}
	}
	p.ok = false
	return i, false
}

func skipSpaces(s string, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

// quoted reads the quoted scalar that starts s: its value and its length with the quotes, or
// 0 when it does not end on this line or holds an escape the fast path does not take.
func quoted(s string) (string, int) {
	q := s[0]
	var b strings.Builder
	start := 1
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case q == '\'' && c == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteString(s[start : i+1])
				i++
				start = i + 1
				continue
			}
		case q == '"' && c == '\\':
			if i+1 >= len(s) {
				return "", 0
			}
			var r byte
			switch s[i+1] {
			case '\\', '"', '/':
				r = s[i+1]
			case 'n':
				r = '\n'
			case 't':
				r = '\t'
			case 'r':
				r = '\r'
			default:
				return "", 0
			}
			b.WriteString(s[start:i])
			b.WriteByte(r)
			i++
			start = i + 1
			continue
		case c != q:
			continue
		}
		if b.Len() == 0 {
			return s[start:i], i + 1
		}
		b.WriteString(s[start:i])
		return b.String(), i + 1
	}
	return "", 0
}
