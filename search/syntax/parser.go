package syntax

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/coroner-dev/coroner/logscan"
)

// Error is a query that cannot be read: what is wrong, and where (a byte offset into the
// query).
type Error struct {
	Query string
	Pos   int
	Msg   string
	// Err is the error of a term, when the error is one (see RegexWouldDoError).
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("query %q: %s", e.Query, e.Msg) }
func (e *Error) Unwrap() error { return e.Err }

// RegexWouldDoError is a term the query language cannot say and a regular expression can (a
// wildcard inside a word, punctuation alone), so that the caller can say how to give one.
type RegexWouldDoError struct{ Err error }

func (e *RegexWouldDoError) Error() string { return e.Err.Error() }
func (e *RegexWouldDoError) Unwrap() error { return e.Err }

// maxDepth bounds the nesting of parentheses (a query is untrusted input).
const maxDepth = 20

type parser struct {
	toks  []token
	pos   int
	depth int
}

func (p *parser) peek() string { return p.toks[p.pos].kind }

func (p *parser) errorf(pos int, format string, args ...any) error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// Parse reads a query into its tree. Its errors are *Error.
func Parse(s string) (Node, error) {
	n, err := parse(s)
	if e, ok := err.(*Error); ok {
		e.Query = s
	}
	return n, err
}

func parse(s string) (Node, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	if len(toks) == 1 {
		return nil, &Error{Msg: "nothing to search for"}
	}
	p := &parser{toks: toks}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.peek() != "" {
		return nil, p.errorf(p.toks[p.pos].pos, "a closing parenthesis has no opening one")
	}
	return n, nil
}

func (p *parser) or() (Node, error) {
	var kids []Node
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
	return &Or{Kids: kids}, nil
}

func (p *parser) and() (Node, error) {
	var kids []Node
	for {
		switch p.peek() {
		case "", ")", "OR":
			if len(kids) == 0 {
				return nil, p.errorf(p.toks[p.pos].pos, "an operator or parenthesis has nothing beside it")
			}
			if len(kids) == 1 {
				return kids[0], nil
			}
			return &And{Kids: kids}, nil
		case "AND":
			if len(kids) == 0 {
				return nil, p.errorf(p.toks[p.pos].pos, "AND needs something before it")
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

func (p *parser) unary() (Node, error) {
	tok := p.toks[p.pos]
	switch tok.kind {
	case "NOT", "-":
		p.pos++
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &Not{Kid: n}, nil
	case "+":
		p.pos++
		return p.unary()
	case "(":
		if p.depth++; p.depth > maxDepth {
			return nil, p.errorf(tok.pos, "parentheses nested too deep")
		}
		p.pos++
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, p.errorf(tok.pos, "a parenthesis is not closed")
		}
		p.pos++
		p.depth--
		return n, nil
	case "phrase":
		p.pos++
		n, err := words(tok.text)
		return n, at(err, tok.pos)
	case "term":
		p.pos++
		n, err := term(tok.text)
		return n, at(err, tok.pos)
	}
	return nil, p.errorf(tok.pos, "the query ends with an operator")
}

// at makes an error of a term an *Error at the term's position.
func at(err error, pos int) error {
	if err == nil {
		return nil
	}
	return &Error{Pos: pos, Msg: err.Error(), Err: err}
}

// term reads a term: a field clause, a prefix, a word or the phrase of its words.
func term(t string) (Node, error) {
	if f, v, ok := strings.Cut(t, ":"); ok {
		for _, name := range Fields {
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
				return &Field{Field: f, Value: v, Rank: rank}, nil
			}
		}
	}
	if stem, ok := strings.CutSuffix(t, "*"); ok {
		ws := logscan.Words([]byte(stem))
		if len(ws) != 1 || strings.ContainsAny(stem, "*?") || len(stem) != len(ws[0]) {
			return nil, fmt.Errorf("%q: a prefix must be one word followed by *", t)
		}
		return &Prefix{Prefix: ws[0]}, nil
	}
	if strings.ContainsAny(t, "*?") {
		return nil, &RegexWouldDoError{fmt.Errorf("%q: wildcards other than a trailing * are not supported", t)}
	}
	return words(t)
}

// words is a word, or the phrase of the words of s.
func words(s string) (Node, error) {
	ws := logscan.Words([]byte(s))
	if len(ws) == 0 {
		return nil, &RegexWouldDoError{fmt.Errorf("%q holds no word to search for", s)}
	}
	nodes := make([]*Word, len(ws))
	for i, w := range ws {
		nodes[i] = NewWord(w)
	}
	if len(nodes) == 1 {
		return nodes[0], nil
	}
	return &Phrase{Words: nodes}, nil
}
