package yamlbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// sampleResources reads every nth resource file of the samples.
func sampleResources(tb testing.TB, nth int) [][]byte {
	paths, err := filepath.Glob("../../samples/*/resources/*/*/*/*.yaml")
	if err != nil || len(paths) < 50 {
		tb.Fatalf("samples: %d, %v", len(paths), err)
	}
	var docs [][]byte
	for i, p := range paths {
		if i%nth != 0 {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		docs = append(docs, data)
	}
	return docs
}

// viaSigs is what sigs.k8s.io/yaml (the Kubernetes way) makes of data: YAML to JSON, then
// encoding/json.
func viaSigs(t testing.TB, data []byte, useNumber bool) (any, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	if useNumber {
		dec.UseNumber()
	}
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("sigs.k8s.io/yaml made invalid JSON: %v", err)
	}
	return v, nil
}

// TestSameAsSigsYAML: every resource of every sample, and YAML's odd corners, decode to what
// sigs.k8s.io/yaml gives.
func TestSameAsSigsYAML(t *testing.T) {
	docs := sampleResources(t, 1)
	for _, s := range []string{
		"a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: n\ng: true\nh: ~\ni: null\nj:\n",
		"a: 0x1F\nb: 017\nc: 0b101\nd: -0b11\ne: 1_000\nf: 1e3\ng: .5\nh: -2.50\ni: 18446744073709551615\nj: 99999999999999999999\n",
		"a: 100Gi\nb: 8x\nc: 500m\nd: 10.0.0.1\ne: 0o17\nf: +12\ng: -1_0\nh: 0xBEEF\ni: 1E-3\nj: 1e3x\nk: 12:30\nl: 0b2\n",
		"a: 5b9e0c8e-1f2a-4c3d\nb: 1-2\nc: +-3\nd: 1e+5\ne: -1.5e-3\nf: 0b-101\ng: 12+3\nh: 0x1-2\ni: -0x1F\nj: 1.\n",
		"a: 2026-03-14T10:00:00Z\nb: 2026-03-14\nc: '123'\nd: \"true\"\ne: !!str 42\nf: !!int \"7\"\ng: !!float 3\n",
		"a: |\n  literal\n  text\nb: >\n  folded\n  text\nc: plain text with: colon\n",
		"base: &base {x: 1, y: 2}\nderived:\n  <<: *base\n  y: 3\nlist: &l [1, 2]\nagain: *l\n",
		"multi:\n  <<: [{a: 1}, {a: 2, b: 2}]\n  c: 3\n",
		"1: one\ntrue: t\n~: n\n1.5: f\n",
		`{"json": [1, 2.5, "x", null, true], "nested": {"k": "v"}}`,
		"key: value\nkey: again\n",
		"- a\n- b\n",
		"plain\n",
		"",
		"a: !custom tagged\n",
	} {
		docs = append(docs, []byte(s))
	}
	for _, useNumber := range []bool{true, false} {
		for i, data := range docs {
			want, werr := viaSigs(t, data, useNumber)
			got, gerr := Decode(data, Options{Limit: 64 << 20, UseNumber: useNumber})
			if (werr != nil) != (gerr != nil) {
				t.Errorf("doc %d: sigs.k8s.io/yaml error %v, ours %v:\n%s", i, werr, gerr, data)
				continue
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("doc %d (useNumber %v) differs (-sigs +ours):\n%s\n%s", i, useNumber, diff, data)
			}
		}
	}
}

// TestAliasBomb: one 1 MiB string aliased 1,000 times (1 GB expanded) stops at the bound
// having built about the bound, and the classic billion laughs too.
func TestAliasBomb(t *testing.T) {
	var s strings.Builder
	s.WriteString("apiVersion: v1\nkind: ConfigMap\ndata:\n  big: &a \"" + strings.Repeat("x", 1<<20) + "\"\nitems: [")
	for range 1000 {
		s.WriteString("*a, ")
	}
	s.WriteString("*a]\n")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Decode([]byte(s.String()), Options{Limit: 32 << 20})
	runtime.ReadMemStats(&after)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !tl.Aliases {
		t.Fatalf("want a TooLargeError from aliases, got %v", err)
	}
	if got := err.Error(); got != "expands to more than 33554432 bytes through YAML aliases" {
		t.Fatalf("message: %s", got)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("1 MiB x 1000 aliases: stopped after allocating %d MB", alloc>>20)
	if alloc > 200<<20 {
		t.Fatalf("allocated %d MB to refuse it", alloc>>20)
	}

	var laughs strings.Builder
	laughs.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&laughs, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 9), ","))
	}
	_, err = Decode([]byte(laughs.String()), Options{Limit: 1 << 20})
	if !errors.As(err, &tl) || !tl.Aliases {
		t.Fatalf("billion laughs: %v", err)
	}

	// Within the bound, aliases are copies: changing one leaves the others alone.
	v, err := Decode([]byte("a: &a {k: v}\nb: *a\n"), Options{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	m["a"].(map[string]any)["k"] = "changed"
	if m["b"].(map[string]any)["k"] != "v" {
		t.Fatal("an alias shares its value with the anchor")
	}
}

// TestDecodeErrors: what cannot be decoded is an error, never a panic or a hang.
func TestDecodeErrors(t *testing.T) {
	for _, s := range []string{
		"a: [unclosed\n",
		"? [complex, key]\n: v\n",
		"a: !!int notanumber\n",
		"a: *nope\n",
		"a: &a [*a]\n",
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		"<<: 3\n",
	} {
		if _, err := Decode([]byte(s), Options{Limit: 1 << 20}); err == nil {
			t.Errorf("no error for %q", s[:min(len(s), 40)])
		}
	}
}

func TestDecodeAll(t *testing.T) {
	docs, err := DecodeAll([]byte("a: 1\n---\n---\nb: 2\n"), Options{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{map[string]any{"a": 1.0}, nil, map[string]any{"b": 2.0}}, docs); diff != "" {
		t.Fatal(diff)
	}
	// The bound holds for the stream, not per document.
	big := "a: " + strings.Repeat("x", 600) + "\n---\n"
	if _, err := DecodeAll([]byte(big+big), Options{Limit: 1000}); err == nil {
		t.Fatal("two documents of 600 bytes fit a bound of 1000")
	}
}

// nodes counts the nodes of a parsed YAML stream.
func nodes(data []byte) (int, bool) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	total := 0
	for {
		var doc yamlv3.Node
		if err := dec.Decode(&doc); err != nil {
			return total, errors.Is(err, io.EOF)
		}
		var walk func(n *yamlv3.Node)
		walk = func(n *yamlv3.Node) {
			total++
			for _, c := range n.Content {
				walk(c)
			}
		}
		walk(&doc)
	}
}

// TestCountValues: the estimate made before parsing is close to the nodes the parser makes,
// never far below them, for every sample resource and YAML's odd shapes; and the issue's
// shapes (15 MiB of one-character values) are refused before they are parsed.
func TestCountValues(t *testing.T) {
	docs := sampleResources(t, 1)
	for _, s := range []string{
		"a: [1, 2, 3]\nb: {x: 1, y: [a, b]}\n",
		"- - - a\n- b: c\n  d: e\n",
		"key: |\n  line, with: [brackets, and, commas]\n  - and a dash\nnext: >-\n  folded, text\n",
		"msg: don't stop, 'here\nlist: [1, 1, 1, 1]\nend: it's\n",
		"msg: \"quoted, with: [things]\"\nother: 'single '' quote, [x]'\n",
		`{"json": {"a": [1, 2, {"b": null}]}, "c": "d"}`,
		"{a, b, c, d}\n",
		"? complex\n: value\n",
		"a: &x [1, 2]\nb: *x\n",
		"# comment, with [brackets]\na: b # trailing, [x]\n",
		"---\na: 1\n---\nb: 2\n",
		"\"a\": 1\n\"b\": [1, {\"c\": 2}]\n",
	} {
		docs = append(docs, []byte(s))
	}
	for _, data := range docs {
		n, ok := nodes(data)
		if !ok {
			t.Fatalf("does not parse: %s", data)
		}
		est := countValues(data, 1<<30)
		if 2*est+2 < n {
			t.Errorf("estimate %d for %d nodes:\n%s", est, n, data)
		}
		if est > 2*len(data)+1 {
			t.Errorf("estimate %d over twice the %d bytes, which checkValues leaves uncounted:\n%s", est, len(data), data)
		}
		if n > 20 && est > 4*n {
			t.Errorf("estimate %d far above %d nodes:\n%s", est, n, data)
		}
	}

	// Not YAML, but counted all the same: a byte is counted twice at most.
	for _, s := range []string{"\"a\": \"b\": c\n- - -\n[\n{\n", "-\n-\n-", ":\n:", "[{[{,,,"} {
		if est := countValues([]byte(s), 1<<30); est > 2*len(s)+1 {
			t.Errorf("estimate %d over twice the %d bytes of %q", est, len(s), s)
		}
	}

	for name, data := range map[string]string{
		"flow list of digits": "data: [" + strings.Repeat("1, ", 5<<20) + "1]\n",
		"block list":          "items:\n" + strings.Repeat("- a\n", 4<<20),
	} {
		_, err := Decode([]byte(data), Options{Limit: 32 << 20})
		var tm *TooManyError
		if !errors.As(err, &tm) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzDecode: any bytes decode within the bound or give an error, never a panic; what decodes
// is no larger than the bound, and the estimate made before parsing is never far below the
// nodes the parser makes.
func FuzzDecode(f *testing.F) {
	for _, data := range sampleResources(f, 7) {
		f.Add(data)
	}
	f.Add([]byte("a0: &a0 [x, x, x]\na1: &a1 [*a0, *a0, *a0]\na2: [*a1, *a1, *a1]\n"))
	f.Add([]byte("base: &b {x: 1}\nd: {<<: *b, y: 2}\n"))
	f.Add([]byte("{a, b, [c, d]: e}\n"))
	const limit = 4 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := DecodeAll(data, Options{Limit: limit, MaxValues: 1 << 20})
		if err == nil {
			js, jerr := json.Marshal(docs)
			if jerr == nil && len(js) > 2*limit+64 {
				t.Fatalf("decoded %d bytes of JSON with a bound of %d", len(js), limit)
			}
		}
		if est := countValues(data, 1<<30); est > 2*len(data)+1 {
			t.Fatalf("estimate %d over twice the %d bytes, which checkValues leaves uncounted", est, len(data))
		}
		if n, ok := nodes(data); ok {
			if est := countValues(data, 1<<30); 2*est+2 < n {
				t.Fatalf("estimate %d for %d nodes", est, n)
			}
		}
	})
}
