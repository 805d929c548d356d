package syntax

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func w(s string) *Word { return NewWord(s) }

func TestParse(t *testing.T) {
	for _, c := range []struct {
		q    string
		want Node
	}{
		{"nccl", w("nccl")},
		{"NCCL", w("nccl")},
		{"NCCL timeout", &And{Kids: []Node{w("nccl"), w("timeout")}}},
		{"NCCL AND timeout", &And{Kids: []Node{w("nccl"), w("timeout")}}},
		{"a b OR c", &Or{Kids: []Node{&And{Kids: []Node{w("a"), w("b")}}, w("c")}}},
		{"a (b OR c)", &And{Kids: []Node{w("a"), &Or{Kids: []Node{w("b"), w("c")}}}}},
		{"NCCL -info", &And{Kids: []Node{w("nccl"), &Not{Kid: w("info")}}}},
		{"NOT info +warn", &And{Kids: []Node{&Not{Kid: w("info")}, w("warn")}}},
		{`"out of memory"`, &Phrase{Words: []*Word{w("out"), w("of"), w("memory")}}},
		{`"say \"hi\""`, &Phrase{Words: []*Word{w("say"), w("hi")}}},
		{"ProcessGroupNCCL.cpp", &Phrase{Words: []*Word{w("processgroupnccl"), w("cpp")}}},
		{`foo\ bar`, &Phrase{Words: []*Word{w("foo"), w("bar")}}},
		{"alloc*", &Prefix{Prefix: "alloc"}},
		{"pod:*worker-3", &Field{Field: "pod", Value: "*worker-3"}},
		{"level:ERROR", &Field{Field: "level", Value: "error"}},
		{"rank:5", &Field{Field: "rank", Value: "5", Rank: 5}},
		{"http://host:80", &Phrase{Words: []*Word{w("http"), w("host"), w("80")}}}, // not a field
	} {
		got, err := Parse(c.q)
		require.NoError(t, err, c.q)
		require.Equal(t, c.want, got, c.q)
	}
}

func TestWordShapes(t *testing.T) {
	n := NewWord("step48120x7")
	require.True(t, n.Digit)
	require.Equal(t, "48120", string(n.Run))
	require.NotEqual(t, n.Word, n.Shape, "digits are masked in the shape")
	plain := NewWord("timeout")
	require.False(t, plain.Digit)
	require.Equal(t, "timeout", plain.Shape)
	require.Nil(t, plain.Run)
}

// TestParseErrors: every error says what is wrong and where (a byte offset), and keeps the
// message search has always printed.
func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("(", 21) + "a" + strings.Repeat(")", 21)
	for _, c := range []struct {
		q   string
		pos int
		msg string
	}{
		{"", 0, "nothing to search for"},
		{"   ", 0, "nothing to search for"},
		{`nccl "out of`, 5, "a phrase is missing its closing quote"},
		{"a b)", 3, "a closing parenthesis has no opening one"},
		{"a OR", 4, "an operator or parenthesis has nothing beside it"},
		{"() a", 1, "an operator or parenthesis has nothing beside it"},
		{"AND a", 0, "AND needs something before it"},
		{"a NOT", 5, "the query ends with an operator"},
		{"x (a b", 2, "a parenthesis is not closed"},
		{deep, 20, "parentheses nested too deep"},
		{"a pod:", 2, "pod: needs a value"},
		{"rank:x", 0, "rank:x: not a rank number"},
		{"rank:-1", 0, "rank:-1: not a rank number"},
		{"x pod:[ab]", 2, "pod:[ab]: only * and ? are wildcards"},
		{"a*b*", 0, `"a*b*": a prefix must be one word followed by *`},
		{"foo.bar*", 0, `"foo.bar*": a prefix must be one word followed by *`},
		{"x a?c", 2, `"a?c": wildcards other than a trailing * are not supported`},
		{"a - b", 2, `"-" holds no word to search for`},
		{`a "..."`, 2, `"..." holds no word to search for`},
	} {
		_, err := Parse(c.q)
		var e *Error
		require.ErrorAs(t, err, &e, c.q)
		require.Equal(t, c.pos, e.Pos, "%q: %v", c.q, err)
		require.Equal(t, c.msg, e.Msg, c.q)
		require.Equal(t, "query "+quote(c.q)+": "+c.msg, err.Error())
	}
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// TestTerms: what a highlighter marks is what the query looks for in the text: not what it
// excludes, however the exclusion is written, nor field clauses.
func TestTerms(t *testing.T) {
	for _, c := range []struct {
		q        string
		words    []string
		prefixes []string
	}{
		{"NCCL timeout", []string{"nccl", "timeout"}, nil},
		{`"out of memory" OR oom`, []string{"out", "of", "memory", "oom"}, nil},
		{"NCCL -info", []string{"nccl"}, nil},
		{"NCCL NOT (info OR debug) warn", []string{"nccl", "warn"}, nil},
		{"alloc* level:error pod:*worker-3 rank:3", nil, []string{"alloc"}},
		{"ProcessGroupNCCL.cpp", []string{"processgroupnccl", "cpp"}, nil},
		{"-a", nil, nil},
	} {
		n, err := Parse(c.q)
		require.NoError(t, err, c.q)
		terms := TermsOf(n)
		var words []string
		for w := range terms.Words {
			words = append(words, w)
		}
		require.ElementsMatch(t, c.words, words, c.q)
		require.Equal(t, c.prefixes, terms.Prefixes, c.q)
		require.Equal(t, len(c.words)+len(c.prefixes) == 0, terms.Empty(), c.q)
	}
	terms := TermsOf(mustParse(t, "alloc* nccl"))
	require.True(t, terms.Match("allocated"))
	require.True(t, terms.Match("nccl"))
	require.False(t, terms.Match("ncclx"))
	require.False(t, terms.Match("all"))
}

// TestLeaves: the leaves a planner answers, in the query's order, a phrase as one leaf.
func TestLeaves(t *testing.T) {
	n := mustParse(t, `a ("b c" OR -d*) level:error`)
	var kinds []string
	for _, l := range Leaves(n) {
		switch l := l.(type) {
		case *Word:
			kinds = append(kinds, "word "+l.Word)
		case *Phrase:
			kinds = append(kinds, "phrase")
		case *Prefix:
			kinds = append(kinds, "prefix "+l.Prefix)
		case *Field:
			kinds = append(kinds, "field "+l.Field)
		}
	}
	require.Equal(t, []string{"word a", "phrase", "prefix d", "field level"}, kinds)
}

func mustParse(t *testing.T, q string) Node {
	t.Helper()
	n, err := Parse(q)
	require.NoError(t, err, q)
	return n
}
