package yamlbound

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTapeLookupAndRemove: a tape's Lookup and Remove act as reading and deleting a key of the
// map it makes, a key given twice included; what it cannot hold is Invalid.
func TestTapeLookupAndRemove(t *testing.T) {
	data := []byte("a: 1\nb: {c: x, d: [y, z], c: w}\ne: null\nb: {c: v}\n")
	tape, docs, err := DecodeTape(data, Options{Limit: 1 << 20}, nil)
	if err != nil || tape == nil || docs != nil {
		t.Fatalf("DecodeTape: %v %v %v", tape, docs, err)
	}
	all, err := DecodeAll(data, Options{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(all[0], tape.Value(0)); d != "" {
		t.Fatalf("the tape's value (-DecodeAll +tape):\n%s", d)
	}
	b := tape.Lookup(0, "b")
	if got := tape.Value(b); !cmp.Equal(got, map[string]any{"c": "v"}) {
		t.Fatalf("Lookup of a key given twice: %v, want the last", got)
	}
	if i := tape.Lookup(0, "nope"); i != -1 {
		t.Fatalf("Lookup of a missing key: %d", i)
	}
	if i := tape.Lookup(tape.Lookup(0, "a"), "x"); i != -1 {
		t.Fatalf("Lookup in a scalar: %d", i)
	}
	tape.Remove(0, "b")
	if d := cmp.Diff(map[string]any{"a": 1.0, "e": nil}, tape.Value(0)); d != "" {
		t.Fatalf("after Remove (-want +got):\n%s", d)
	}
	odd := TapeOf(map[string]any{"n": json.Number("12"), "i": 3})
	if k := odd.Tokens()[odd.Lookup(0, "i")].Kind; k != Invalid {
		t.Fatalf("an int in a generic value: kind %d, want Invalid", k)
	}
	if d := cmp.Diff(map[string]any{"n": json.Number("12"), "i": nil}, odd.Value(0)); d != "" {
		t.Fatalf("TapeOf (-want +got):\n%s", d)
	}
}

// TestDecodeTapeDeclines: what the fast path does not take comes back as DecodeAll's values,
// and a bound is DecodeAll's error.
func TestDecodeTapeDeclines(t *testing.T) {
	tape, docs, err := DecodeTape([]byte("a: &x 1\nb: *x\n---\nc: 2\n"), Options{Limit: 1 << 20}, &Tape{})
	if err != nil || tape != nil || len(docs) != 2 {
		t.Fatalf("DecodeTape of two documents with an alias: %v %v %v", tape, docs, err)
	}
	_, _, err = DecodeTape([]byte("a: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"), Options{Limit: 20, MaxValues: 1000}, nil)
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("DecodeTape over the bound: %v, want a TooLargeError", err)
	}
}
