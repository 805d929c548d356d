package syntax

import "strings"

// token is one token of a query and where it starts (a byte offset).
type token struct {
	kind string // "(", ")", "term", "phrase", "AND", "OR", "NOT", "+", "-", "" at the end
	text string
	pos  int
}

// lex splits a query into tokens, ending with one of kind "" at the query's end.
func lex(s string) ([]token, error) {
	var out []token
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }
	for pos := 0; ; {
		for pos < len(s) && space(s[pos]) {
			pos++
		}
		if pos >= len(s) {
			return append(out, token{pos: len(s)}), nil
		}
		start := pos
		c := s[pos]
		switch {
		case c == '(' || c == ')':
			out = append(out, token{kind: string(c), pos: start})
			pos++
			continue
		case (c == '+' || c == '-') && pos+1 < len(s) && !space(s[pos+1]):
			out = append(out, token{kind: string(c), pos: start})
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
				return nil, &Error{Pos: start, Msg: "a phrase is missing its closing quote"}
			}
			out = append(out, token{kind: "phrase", text: sb.String(), pos: start})
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
			out = append(out, token{kind: t, pos: start})
		default:
			out = append(out, token{kind: "term", text: t, pos: start})
		}
	}
}
