package yamlbound

import (
	"encoding/json"
	"sort"
)

// Tape is one decoded document as a flat list of tokens in document order, with no map built:
// a mapping's token is followed by its entries, each a Key token and then its value; a
// sequence's by its items. A consumer that knows the type it wants (parse's typed Kubernetes
// objects) walks the tokens into it, and builds the generic value (Value) only for what it
// does not take; building the maps of a pod was a fifth of the cost of reading it
// (docs/performance.md).
type Tape struct {
	toks []Token
	// lines is the fast path's scratch, kept for the next document decoded into this tape.
	lines []fastLine
}

// Kind is what a token holds.
type Kind uint8

const (
	Null    Kind = iota
	String       // Str
	Float        // Num
	Bool         // True
	Number       // a json.Number (Options.UseNumber), its text in Str
	Map          // N entries follow, each a Key then its value
	Seq          // N values follow
	Key          // a mapping key, Str; its value follows
	Removed      // a Key taken out (Tape.Remove): the entry is not there
	Invalid      // a value of a type no decode gives (TapeOf): a consumer declines it
)

// Token is one value of a Tape, or a mapping's key. End is the index just after it: after the
// whole collection of a Map or Seq, after the value of a Key; walking from a collection's
// first entry by End visits its entries.
type Token struct {
	Kind Kind
	True bool
	N    int32
	End  int32
	Str  string
	Num  float64
}

// Tokens are the tape's tokens; the document is the value at 0.
func (t *Tape) Tokens() []Token { return t.toks }

// Lookup is the index of the value of key in the mapping at i (the last entry of that key, as
// a map built from the tape keeps), or -1.
func (t *Tape) Lookup(i int, key string) int {
	if t.toks[i].Kind != Map {
		return -1
	}
	at := -1
	for j := i + 1; j < int(t.toks[i].End); j = int(t.toks[j].End) {
		if t.toks[j].Kind == Key && t.toks[j].Str == key {
			at = j + 1
		}
	}
	return at
}

// Remove takes key out of the mapping at i, as deleting it from the map built from the tape.
func (t *Tape) Remove(i int, key string) {
	if t.toks[i].Kind != Map {
		return
	}
	for j := i + 1; j < int(t.toks[i].End); j = int(t.toks[j].End) {
		if t.toks[j].Kind == Key && t.toks[j].Str == key {
			t.toks[j].Kind = Removed
		}
	}
}

// Value builds the generic value at i: what DecodeAll gives for that part of the document.
func (t *Tape) Value(i int) any {
	tok := &t.toks[i]
	switch tok.Kind {
	case String:
		return tok.Str
	case Float:
		return tok.Num
	case Bool:
		return tok.True
	case Number:
		return json.Number(tok.Str)
	case Map:
		out := make(map[string]any, tok.N)
		for j := i + 1; j < int(tok.End); j = int(t.toks[j].End) {
			if t.toks[j].Kind == Key {
				out[t.toks[j].Str] = t.Value(j + 1) // a repeated key: the last one wins
			}
		}
		return out
	case Seq:
		out := make([]any, 0, tok.N)
		for j := i + 1; j < int(tok.End); j = int(t.toks[j].End) {
			out = append(out, t.Value(j))
		}
		return out
	}
	return nil
}

// TapeOf writes a generic value (as DecodeAll gives it) as a tape, a mapping's keys sorted;
// a value of another type is Invalid.
func TapeOf(v any) *Tape {
	t := &Tape{}
	t.add(v)
	return t
}

func (t *Tape) add(v any) {
	at := len(t.toks)
	t.toks = append(t.toks, Token{})
	tok := Token{}
	switch x := v.(type) {
	case string:
		tok = Token{Kind: String, Str: x}
	case float64:
		tok = Token{Kind: Float, Num: x}
	case bool:
		tok = Token{Kind: Bool, True: x}
	case json.Number:
		tok = Token{Kind: Number, Str: string(x)}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kt := len(t.toks)
			t.toks = append(t.toks, Token{Kind: Key, Str: k})
			t.add(x[k])
			t.toks[kt].End = int32(len(t.toks))
		}
		tok = Token{Kind: Map, N: int32(len(x))}
	case []any:
		for _, e := range x {
			t.add(e)
		}
		tok = Token{Kind: Seq, N: int32(len(x))}
	case nil:
	default:
		tok = Token{Kind: Invalid}
	}
	tok.End = int32(len(t.toks))
	t.toks[at] = tok
}

// open starts a collection (or a Key) at the end of the tape; close ends it there.
func (t *Tape) open(tok Token) int {
	t.toks = append(t.toks, tok)
	return len(t.toks) - 1
}

func (t *Tape) close(at int) { t.toks[at].End = int32(len(t.toks)) }
