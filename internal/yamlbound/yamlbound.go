// Package yamlbound decodes YAML (and JSON, which is YAML) from a bundle into the values
// encoding/json gives — map[string]any, []any, string, float64 or json.Number, bool, nil —
// with a bound on the size of what it builds. Anchors and aliases are expanded against the
// bound while the values are built, so a small file cannot make a large value ("billion
// laughs", or one 1 MiB string aliased a thousand times): the decoder stops at the bound, not
// after it has built a gigabyte.
//
// Scalars resolve as sigs.k8s.io/yaml (YAML 1.1, the way Kubernetes reads manifests) resolves
// them into JSON: yes/no/on/off are booleans, 0x1F is 31, timestamps stay strings, merge keys
// ("<<") merge.
package yamlbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// TooLargeError says that the decoded value would exceed the bound.
type TooLargeError struct {
	Limit int64
	// Aliases is true when aliases made the value that large.
	Aliases bool
}

func (e *TooLargeError) Error() string {
	if e.Aliases {
		return fmt.Sprintf("expands to more than %d bytes through YAML aliases", e.Limit)
	}
	return fmt.Sprintf("decodes to more than %d bytes", e.Limit)
}

// Options tune a decode.
type Options struct {
	// Limit bounds the size of the decoded values, counted as their JSON encoding would be.
	Limit int64
	// UseNumber makes numbers json.Number (exact, as encoding/json's UseNumber) instead of
	// float64.
	UseNumber bool
	// MaxValues bounds the YAML values (nodes) of the input, estimated before it is parsed;
	// 0 means Limit/16.
	MaxValues int
}

// ForResources are the options a bundle's resource file of at most maxBytes (the bundle's
// MaxResourceBytes) is decoded with, by parse and by bundle/redact alike: values up to twice
// maxBytes (aliases count), and at most one YAML value per 16 bytes of maxBytes, counted
// before parsing (the parser's nodes cost about 200 bytes each: a flow map of one-character
// values would otherwise take some 50 times its size).
func ForResources(maxBytes int64) Options {
	return Options{Limit: 2 * maxBytes, MaxValues: int(max(maxBytes/16, 1024))}
}

// maxValues is the bound on values for opts.
func (o Options) maxValues() int {
	if o.MaxValues > 0 {
		return o.MaxValues
	}
	if o.Limit > 0 {
		return int(min(o.Limit/16, 1<<40))
	}
	return 0
}

// checkValues refuses data with more values than opts allow, before anything is parsed.
func checkValues(data []byte, opts Options) error {
	// countValues counts a byte of data at most twice (a line's first byte, and a colon after a
	// quote): data that short is within the bound uncounted, as a resource of a few KiB is
	// against any limit (at 16,384 pods the count was a third of the YAML's decoding).
	if max := opts.maxValues(); max > 0 && len(data) >= max/2 && countValues(data, max) > max {
		return &TooManyError{Limit: max}
	}
	return nil
}

// maxDepth bounds nesting, as the YAML library does.
const maxDepth = 10_000

// DecodeAll decodes every document of a YAML stream; an empty document is nil. The limit holds
// for all documents together.
func DecodeAll(data []byte, opts Options) ([]any, error) {
	if err := checkValues(data, opts); err != nil {
		return nil, err
	}
	if v, ok := fastDecode(data, opts); ok {
		return []any{v}, nil
	}
	return decodeAll(data, opts)
}

// DecodeTape is DecodeAll for a reader that takes what it knows from a tape: when the fast
// path takes data (one document of the YAML clients write), that document as a tape (reusing
// reuse's tokens when it is not nil) and no values; else every document's value, as DecodeAll
// gives them. The limits and errors are DecodeAll's.
func DecodeTape(data []byte, opts Options, reuse *Tape) (*Tape, []any, error) {
	if err := checkValues(data, opts); err != nil {
		return nil, nil, err
	}
	if t, ok := fastTape(data, opts, reuse); ok {
		return t, nil, nil
	}
	docs, err := decodeAll(data, opts)
	return nil, docs, err
}

// decodeAll is DecodeAll through yaml.v3's node tree.
func decodeAll(data []byte, opts Options) ([]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	c := &converter{opts: opts, size: map[*yaml.Node]int64{}}
	var out []any
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		v, err := c.value(&doc, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// Decode decodes the first document of data (nil for an empty one).
func Decode(data []byte, opts Options) (any, error) {
	if err := checkValues(data, opts); err != nil {
		return nil, err
	}
	if v, ok := fastDecode(data, opts); ok {
		return v, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	c := &converter{opts: opts, size: map[*yaml.Node]int64{}}
	return c.value(&doc, 0)
}

type converter struct {
	opts Options
	used int64
	// size remembers what an anchored node expands to, once it has been built.
	size map[*yaml.Node]int64
	// open holds the anchored nodes being built: an alias to one of them is a cycle.
	open []*yaml.Node
}

// charge counts n bytes of output against the limit.
func (c *converter) charge(n int64, alias bool) error {
	c.used += n
	if c.opts.Limit > 0 && c.used > c.opts.Limit {
		return &TooLargeError{Limit: c.opts.Limit, Aliases: alias}
	}
	return nil
}

func (c *converter) value(n *yaml.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested deeper than %d levels", n.Line, maxDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth+1)
	case yaml.AliasNode:
		return c.alias(n, depth)
	case yaml.ScalarNode:
		v, size, err := c.scalar(n)
		if err != nil {
			return nil, err
		}
		return v, c.charge(size, false)
	case yaml.SequenceNode:
		if err := c.charge(2, false); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := c.anchored(item, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			if err := c.charge(1, false); err != nil {
				return nil, err
			}
		}
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n, depth)
	}
	return nil, fmt.Errorf("line %d: unknown YAML node", n.Line)
}

// anchored builds a node that may carry an anchor, remembering what it expands to so that
// each alias to it is charged its full size.
func (c *converter) anchored(n *yaml.Node, depth int) (any, error) {
	if n.Anchor == "" {
		return c.value(n, depth)
	}
	c.open = append(c.open, n)
	before := c.used
	v, err := c.value(n, depth)
	c.open = c.open[:len(c.open)-1]
	if err == nil {
		c.size[n] = c.used - before
	}
	return v, err
}

// alias builds a fresh copy of the aliased node (the caller may change what it gets), charged
// before it is built when its size is known.
func (c *converter) alias(n *yaml.Node, depth int) (any, error) {
	target := n.Alias
	if target == nil {
		return nil, fmt.Errorf("line %d: alias to an unknown anchor", n.Line)
	}
	for _, o := range c.open {
		if o == target {
			return nil, fmt.Errorf("line %d: anchor %q contains an alias to itself", n.Line, target.Anchor)
		}
	}
	if size, ok := c.size[target]; ok {
		// Its size is known: charged before anything is built, so that a thousand aliases of
		// a large value stop at the bound, having built no more than it.
		if err := c.charge(size, true); err != nil {
			return nil, err
		}
		c.used -= size // building it charges the same again
		v, err := c.anchored(target, depth+1)
		return v, aliasErr(err)
	}
	v, err := c.anchored(target, depth+1)
	return v, aliasErr(err)
}

// aliasErr marks a size error met while expanding an alias as caused by aliases.
func aliasErr(err error) error {
	var tl *TooLargeError
	if errors.As(err, &tl) {
		tl.Aliases = true
	}
	return err
}

func (c *converter) mapping(n *yaml.Node, depth int) (any, error) {
	if err := c.charge(2, false); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(n.Content)/2)
	// Merge keys first: the mapping's own keys win over merged ones, wherever they are.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMerge(n.Content[i]) {
			continue
		}
		v, err := c.anchored(n.Content[i+1], depth+1)
		if err != nil {
			return nil, err
		}
		if err := merge(out, v, n.Content[i+1].Line); err != nil {
			return nil, err
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, kv := n.Content[i], n.Content[i+1]
		if isMerge(k) {
			continue
		}
		key, err := c.key(k)
		if err != nil {
			return nil, err
		}
		if err := c.charge(int64(len(key))+4, false); err != nil {
			return nil, err
		}
		v, err := c.anchored(kv, depth+1)
		if err != nil {
			return nil, err
		}
		out[key] = v // a repeated key: the last one wins, as in sigs.k8s.io/yaml
	}
	return out, nil
}

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0
}

// merge adds the keys of a merged mapping (or of each mapping of a sequence, the first one
// winning) that out does not have yet.
func merge(out map[string]any, v any, line int) error {
	switch m := v.(type) {
	case map[string]any:
		for k, x := range m {
			if _, ok := out[k]; !ok {
				out[k] = x
			}
		}
	case []any:
		for _, item := range m {
			mm, ok := item.(map[string]any)
			if !ok {
				return fmt.Errorf("line %d: a merge key (<<) needs mappings", line)
			}
			for k, x := range mm {
				if _, ok := out[k]; !ok {
					out[k] = x
				}
			}
		}
	default:
		return fmt.Errorf("line %d: a merge key (<<) needs a mapping", line)
	}
	return nil
}

// key is a mapping key as JSON has it: a string. A scalar key of another type becomes its
// text, as sigs.k8s.io/yaml makes it.
func (c *converter) key(k *yaml.Node) (string, error) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: a mapping key that is not a scalar", k.Line)
	}
	return c.keyOf(k.Value, tagOf(k), k.Line)
}

// keyOf is key of a scalar's text and tag (tagOf).
func (c *converter) keyOf(value, tag string, line int) (string, error) {
	tok, _, err := c.scalarToken(value, tag, line)
	if err != nil {
		return "", err
	}
	switch tok.Kind {
	case Null:
		return "", fmt.Errorf("line %d: a null mapping key", line)
	case Bool:
		return strconv.FormatBool(tok.True), nil
	case Float:
		return strconv.FormatFloat(tok.Num, 'g', -1, 64), nil
	}
	return tok.Str, nil // String, and Number's text
}

const (
	strTag       = "!!str"
	binaryTag    = "!!binary"
	boolTag      = "!!bool"
	intTag       = "!!int"
	floatTag     = "!!float"
	nullTag      = "!!null"
	timestampTag = "!!timestamp"
)

// scalar resolves a scalar node, and says how many bytes it takes in JSON.
func (c *converter) scalar(n *yaml.Node) (any, int64, error) {
	tok, size, err := c.scalarToken(n.Value, tagOf(n), n.Line)
	if err != nil {
		return nil, 0, err
	}
	switch tok.Kind {
	case String:
		return tok.Str, size, nil
	case Float:
		return tok.Num, size, nil
	case Bool:
		return tok.True, size, nil
	case Number:
		return json.Number(tok.Str), size, nil
	}
	return nil, size, nil
}

// tagOf is the tag that decides how a scalar node resolves: its own, strTag for a quoted or
// block scalar, "" for a plain one.
func tagOf(n *yaml.Node) string {
	switch {
	case n.Style&yaml.TaggedStyle != 0:
		return n.ShortTag()
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return strTag
	}
	return ""
}

// scalarToken resolves a scalar's text of the given tag (tagOf) into a token of kind Null,
// String, Float, Bool or Number, and says how many bytes it takes in JSON. The fast path
// takes the token as it is: a string boxed into an any for each scalar and key was a fifth of
// the allocations of loading 4,096 pods.
func (c *converter) scalarToken(value, tag string, line int) (Token, int64, error) {
	size := int64(len(value)) + 3
	text := Token{Kind: String, Str: value}
	switch tag {
	case strTag, binaryTag:
		return text, size, nil
	case "", boolTag, intTag, floatTag, nullTag, timestampTag:
	default:
		return text, size, nil // a local tag (!foo): the text, as JSON has no tags
	}
	r := resolve(value)
	switch tag {
	case boolTag:
		if r.kind != Bool {
			return Token{}, 0, fmt.Errorf("line %d: cannot decode %q as a !!bool", line, value)
		}
	case intTag, floatTag:
		if r.kind != Float {
			return Token{}, 0, fmt.Errorf("line %d: cannot decode %q as a %s", line, value, tag)
		}
	case nullTag:
		r.kind = Null
	case timestampTag:
		r.kind = String
	}
	switch r.kind {
	case Float:
		x := r.n
		if math.IsInf(x.f, 0) || math.IsNaN(x.f) {
			return text, size, nil // JSON has no infinity: keep the text
		}
		if c.opts.UseNumber {
			return Token{Kind: Number, Str: x.text}, int64(len(x.text)), nil
		}
		return Token{Kind: Float, Num: x.f}, int64(len(x.text)), nil
	case Bool:
		return Token{Kind: Bool, True: r.b}, 5, nil
	case Null:
		return Token{}, 4, nil
	}
	return text, size, nil
}

// number is a resolved number: its value, and its text as JSON writes it.
type number struct {
	f    float64
	text string
}

var yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// resolved is what resolve makes of a plain scalar: its kind (Null, Bool, Float for a number
// or String, the text itself) and its value.
type resolved struct {
	kind Kind
	b    bool
	n    number
}

// resolve gives a plain scalar its YAML 1.1 type, as go.yaml.in/yaml/v2 (and so
// sigs.k8s.io/yaml) does: null, bool, number (Float) or string. Timestamps stay strings.
func resolve(s string) resolved {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return resolved{kind: Null}
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return resolved{kind: Bool, b: true}
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return resolved{kind: Bool}
	case ".nan", ".NaN", ".NAN":
		return resolved{kind: Float, n: number{f: math.NaN()}}
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return resolved{kind: Float, n: number{f: math.Inf(1)}}
	case "-.inf", "-.Inf", "-.INF":
		return resolved{kind: Float, n: number{f: math.Inf(-1)}}
	}
	switch c := s[0]; {
	case c == '.':
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return resolved{kind: Float, n: floatNumber(f)}
		}
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		if !numberChars(s) || isTimestamp(s) {
			return resolved{kind: String} // "100Gi", "8x": the parses below would each fail, and allocate to say so
		}
		plain := strings.ReplaceAll(s, "_", "")
		// No integer of any base has a point, or a sign but in front: both parses of an
		// address such as 10.0.0.1 or a uid such as 5b9e0c8e-... would fail, each allocating
		// its error.
		if !strings.ContainsAny(plain[1:], ".+-") {
			if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
				return resolved{kind: Float, n: number{f: float64(i), text: strconv.FormatInt(i, 10)}}
			}
			if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
				return resolved{kind: Float, n: number{f: float64(u), text: strconv.FormatUint(u, 10)}}
			}
		}
		if yamlFloat.MatchString(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return resolved{kind: Float, n: floatNumber(f)}
			}
		}
		if b, ok := strings.CutPrefix(plain, "0b"); ok {
			if i, err := strconv.ParseInt(b, 2, 64); err == nil {
				return resolved{kind: Float, n: number{f: float64(i), text: strconv.FormatInt(i, 10)}}
			}
		} else if b, ok := strings.CutPrefix(plain, "-0b"); ok {
			if i, err := strconv.ParseInt("-"+b, 2, 64); err == nil {
				return resolved{kind: Float, n: number{f: float64(i), text: strconv.FormatInt(i, 10)}}
			}
		}
	}
	return resolved{kind: String}
}

// numberChars says whether s has only characters a number that resolve reads can have (digits
// of any base, signs, points, exponents, base prefixes, underscores).
func numberChars(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F',
			c == '+', c == '-', c == '.', c == '_', c == 'x', c == 'X', c == 'o', c == 'O':
		default:
			return false
		}
	}
	return true
}

func floatNumber(f float64) number {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return number{f: f}
	}
	text, _ := json.Marshal(f)
	return number{f: f, text: string(text)}
}

// isTimestamp reports whether s is a YAML timestamp (YYYY-...), which stays a string.
func isTimestamp(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i == 4 && i < len(s) && s[i] == '-' && timestampRE.MatchString(s)
}

var timestampRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?$`)

// TooManyError says that a document holds more YAML values than the bound allows, found before
// it was parsed: the parser builds a node of about 200 bytes per value, so a 15 MiB flow list
// of one-digit numbers ("[1, 1, 1, ...]") would take 1.4 GB before a value was built.
type TooManyError struct {
	Limit int
}

func (e *TooManyError) Error() string {
	return fmt.Sprintf("holds more than %d YAML values", e.Limit)
}

// countValues estimates the YAML nodes data makes, stopping once it passes limit: one per
// non-blank line, flow collection and flow separator, and mapping and sequence indicator,
// outside quoted and block scalars and comments. It errs high, except for flow mappings of
// keys without values ("{a, b}": two nodes a comma), where it is within a factor of two. A
// quote, a comment or a block scalar is skipped only where YAML itself starts one, so that
// "don't" or "a, 'b" in a plain scalar hides nothing from the count.
func countValues(data []byte, limit int) int {
	n := 1
	lineStart, indent := true, 0
	blockIndent := -1 // inside a block scalar: the indentation of the line that opened it
	flow := 0         // depth of [ and {
	scalarStart := true
	for i := 0; i < len(data) && n <= limit; i++ {
		c := data[i]
		if lineStart {
			j := i
			for j < len(data) && data[j] == ' ' {
				j++
			}
			if j >= len(data) {
				break
			}
			if data[j] == '\n' || data[j] == '\r' {
				i = j
				continue
			}
			indent = j - i
			if blockIndent >= 0 {
				if indent > blockIndent {
					i = lineEnd(data, j)
					continue
				}
				blockIndent = -1
			}
			lineStart = false
			scalarStart = scalarStart || flow == 0
			n++
			i = j
			c = data[i]
		}
		switch c {
		case '\n':
			lineStart = true
			continue
		case ' ', '\t', '\r':
			continue
		case '#':
			if i == 0 || data[i-1] == ' ' || data[i-1] == '\t' {
				i = lineEnd(data, i) - 1
				continue
			}
		case '"', '\'':
			if scalarStart {
				i = quoteEnd(data, i)
				scalarStart = false
				if i+1 < len(data) && data[i+1] == ':' {
					n++ // "key":value, as JSON writes it
				}
				continue
			}
		case '|', '>':
			if scalarStart && flow == 0 {
				blockIndent = indent
				i = lineEnd(data, i) - 1
				continue
			}
		case '[', '{':
			if scalarStart || flow > 0 {
				flow++
				n++
				scalarStart = true
				continue
			}
		case ']', '}':
			if flow > 0 {
				flow--
			}
		case ',':
			if flow > 0 {
				n++
				scalarStart = true
				continue
			}
		case '-', '?', ':':
			if next := i + 1; next >= len(data) || data[next] == ' ' || data[next] == '\n' || data[next] == '\r' || data[next] == '\t' {
				if c == ':' || scalarStart {
					n++
					scalarStart = true
					continue
				}
			}
		}
		scalarStart = false
	}
	return n
}

// lineEnd is the index of the newline ending the line that holds i, or len(data).
func lineEnd(data []byte, i int) int {
	if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(data)
}

// quoteEnd is the index of the quote that closes the quoted scalar opening at i (or the end).
func quoteEnd(data []byte, i int) int {
	q := data[i]
	for j := i + 1; j < len(data); j++ {
		switch {
		case q == '"' && data[j] == '\\':
			j++
		case data[j] == q && q == '\'' && j+1 < len(data) && data[j+1] == '\'':
			j++ // '' is a quote inside single quotes
		case data[j] == q:
			return j
		}
	}
	return len(data) - 1
}
