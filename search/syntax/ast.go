// Package syntax is coroner's query language: its lexer, its parser and the tree they make,
// and walks over the tree. The index plans and executes a query by walking it, and search's
// highlighter takes the words it marks from it (Terms): one tokenizer, one grammar.
//
// The language is bleve's query string syntax, read by coroner so that a query means exactly
// what a scan of the lines would find:
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
package syntax

import "github.com/coroner-dev/coroner/logscan"

// Node is a node of a parsed query: *Or, *And, *Not, or a leaf (*Word, *Phrase, *Prefix,
// *Field). Leaves are compared by identity: a planner may key what it learns of a leaf by it.
type Node interface{ node() }

// Or matches what any of its kids matches.
type Or struct{ Kids []Node }

// And matches what all of its kids match.
type And struct{ Kids []Node }

// Not matches what its kid does not.
type Not struct{ Kid Node }

// Word is one whole word, in any case.
type Word struct {
	Word  string // folded (logscan.Fold)
	Shape string // the word with its digits masked, as the index keeps shapes
	Value logscan.Value
	Digit bool   // the word holds a digit
	Run   []byte // the longest run of digits of a word with digits
}

// Phrase is words in sequence.
type Phrase struct{ Words []*Word }

// Prefix is a word starting with Prefix (folded).
type Prefix struct{ Prefix string }

// Field is a clause on what a line is rather than what it says: its log's pod or container
// (a glob), its level, its rank.
type Field struct {
	Field, Value string
	Rank         int // the value of a rank clause
}

// Fields are the fields a query can name.
var Fields = []string{"pod", "container", "level", "rank"}

func (*Or) node()     {}
func (*And) node()    {}
func (*Not) node()    {}
func (*Word) node()   {}
func (*Phrase) node() {}
func (*Prefix) node() {}
func (*Field) node()  {}

// NewWord is the leaf of one word, already one of logscan.Words.
func NewWord(w string) *Word {
	n := &Word{Word: w, Shape: w}
	if logscan.HasDigit(w) {
		n.Digit = true
		n.Shape, n.Value = logscan.ShapeValue(w)
		for i := 0; i < len(w); {
			j := i
			for j < len(w) && w[j] >= '0' && w[j] <= '9' {
				j++
			}
			if j-i > len(n.Run) {
				n.Run = []byte(w[i:j])
			}
			i = j + 1
		}
	}
	return n
}
