package parse

import (
	"encoding"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/coroner-dev/coroner/internal/yamlbound"
)

// decodeTyped decodes a generic object (map[string]any as yamlbound gives it) straight into
// the typed object into points to, by the rules encoding/json would apply to the object's
// JSON encoding, without writing and scanning that encoding (the round trip was half of the
// cost of reading a pod: docs/performance.md). It gives the same value as the round trip or
// declines (false): at any value the round trip would refuse or change (a number where a
// string is expected, a fraction into an integer, a key that only matches a field ignoring
// case, a string that is not UTF-8) and at any type it does not know to handle the same way;
// decodeLenient then takes the round trip, which names what is wrong. Strings are copied
// (through strs when it is not nil, which shares the copies of equal strings across
// objects): the object's strings are substrings of the whole YAML text, which must not stay
// pinned.
func decodeTyped(obj map[string]any, into any, strs *interner) bool {
	return decodeTape(yamlbound.TapeOf(obj), into, strs)
}

// decodeTape is decodeTyped of the document a tape holds, with no generic map built: the
// fast path's tape of a pod goes straight into the corev1.Pod. A mapping with a key the type
// has twice declines (a map keeps the last, a walk into a struct would merge them).
func decodeTape(t *yamlbound.Tape, into any, strs *interner) bool {
	return decodeShared(t, into, strs, nil)
}

// decodeShared is decodeTape sharing, through memo (nil: none), the slices, maps and pointers
// of the objects it decodes with the earlier objects that wrote them alike (see valueMemo).
func decodeShared(t *yamlbound.Tape, into any, strs *interner, memo *valueMemo) bool {
	v := reflect.ValueOf(into).Elem()
	v.SetZero()
	d := typedDecoder{strs: strs, toks: t.Tokens(), memo: memo}
	return d.value(v, 0, planOf(v.Type()))
}

// plan is what the decoder knows of a type, worked out once.
type plan struct {
	kind reflect.Kind
	// unmarshaler: *T implements json.Unmarshaler; the value's JSON is handed to it.
	unmarshaler bool
	// unsupported: a type whose decoding by encoding/json this decoder does not reproduce
	// (text unmarshalers, arrays, interfaces, []byte, float32, `,string` fields...).
	unsupported bool
	elem        *plan // of a pointer, slice or map
	// fields of a struct by their JSON name, with the lower-case names (encoding/json
	// matches a key to a field ignoring case: such a key makes the decoder decline).
	fields map[string]field
	folded map[string]bool
}

type field struct {
	index []int
	plan  *plan
	ord   int // the field's number in its struct, below maxFields
}

// maxFields bounds the fields of a struct the decoder takes (the widest Kubernetes struct has
// about 40): it marks those it has set in a bitset of that size.
const maxFields = 256

var (
	plansMu sync.Mutex
	plans   = map[reflect.Type]*plan{}

	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func planOf(t reflect.Type) *plan {
	plansMu.Lock()
	defer plansMu.Unlock()
	return planLocked(t)
}

func planLocked(t reflect.Type) *plan {
	if p, ok := plans[t]; ok {
		return p
	}
	p := &plan{kind: t.Kind()}
	plans[t] = p // before the elements: a recursive type ends here
	pt := reflect.PointerTo(t)
	switch {
	case pt.Implements(jsonUnmarshaler):
		p.unmarshaler = true
		return p
	case pt.Implements(textUnmarshaler):
		p.unsupported = true
		return p
	}
	switch t.Kind() {
	case reflect.Pointer:
		p.elem = planLocked(t.Elem())
	case reflect.Slice:
		p.unsupported = t.Elem().Kind() == reflect.Uint8 // base64 in JSON
		p.elem = planLocked(t.Elem())
	case reflect.Map:
		kt := t.Key()
		p.unsupported = kt.Kind() != reflect.String || reflect.PointerTo(kt).Implements(textUnmarshaler)
		p.elem = planLocked(t.Elem())
	case reflect.Struct:
		p.fields, p.folded = map[string]field{}, map[string]bool{}
		if !structFields(t, nil, p) {
			p.unsupported = true
		}
	case reflect.String, reflect.Bool, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		p.unsupported = true
	}
	return p
}

// structFields adds t's fields by encoding/json's names, an embedded struct's without a name
// promoted; false when the struct has what this decoder does not reproduce (a name taken twice,
// an embedded pointer, a `,string` option).
func structFields(t reflect.Type, index []int, p *plan) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",string,") {
			return false
		}
		at := append(append([]int{}, index...), i)
		if f.Anonymous && name == "" {
			switch {
			case f.Type.Kind() == reflect.Struct:
				if !structFields(f.Type, at, p) {
					return false
				}
				continue
			case f.Type.Kind() == reflect.Pointer:
				return false
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := p.fields[name]; dup || p.folded[strings.ToLower(name)] {
			return false
		}
		if len(p.fields) >= maxFields {
			return false
		}
		p.fields[name] = field{index: at, plan: planLocked(f.Type), ord: len(p.fields)}
		p.folded[strings.ToLower(name)] = true
	}
	return true
}

type typedDecoder struct {
	strs *interner
	toks []yamlbound.Token
	memo *valueMemo
}

// value decodes the tape's value at i into v.
func (d *typedDecoder) value(v reflect.Value, i int, p *plan) bool {
	tok := &d.toks[i]
	if tok.Kind == yamlbound.Null {
		switch {
		case p.unsupported:
			return false
		case p.unmarshaler && p.kind != reflect.Pointer:
			return d.unmarshal(v, []byte("null"))
		}
		return true // a pointer, slice or map stays nil, anything else its zero
	}
	if p.unsupported {
		return false
	}
	if d.memo != nil && (tok.Kind == yamlbound.Map || tok.Kind == yamlbound.Seq) &&
		(p.kind == reflect.Pointer || p.kind == reflect.Slice || p.kind == reflect.Map) {
		return d.shared(v, i, p)
	}
	return d.fresh(v, i, p)
}

// shared decodes the collection at i into v, a pointer, slice or map, as the value an
// earlier object decoded from the same tokens into the same type when there is one: the
// decode of a span of tokens depends on those tokens and the type alone, and nothing reads
// the model's objects to change them.
func (d *typedDecoder) shared(v reflect.Value, i int, p *plan) bool {
	key, ok := d.memo.key(d.toks, i)
	if !ok {
		return d.fresh(v, i, p)
	}
	if got, ok := d.memo.vals[p][string(key)]; ok {
		v.Set(got)
		return true
	}
	k := string(key) // the buffer serves the values inside too
	if !d.fresh(v, i, p) {
		return false
	}
	d.memo.add(p, k, v)
	return true
}

// fresh decodes the value at i into v.
func (d *typedDecoder) fresh(v reflect.Value, i int, p *plan) bool {
	tok := &d.toks[i]
	if p.kind == reflect.Pointer {
		e := reflect.New(v.Type().Elem())
		if !d.value(e.Elem(), i, p.elem) {
			return false
		}
		v.Set(e)
		return true
	}
	if p.unmarshaler {
		var x any
		switch tok.Kind {
		case yamlbound.String:
			if plainJSON(tok.Str) {
				js := make([]byte, 0, len(tok.Str)+2)
				return d.unmarshal(v, append(append(append(js, '"'), tok.Str...), '"'))
			}
			x = tok.Str
		case yamlbound.Bool:
			x = tok.True
		case yamlbound.Float:
			x = tok.Num
		default:
			return false
		}
		js, err := json.Marshal(x)
		return err == nil && d.unmarshal(v, js)
	}
	switch p.kind {
	case reflect.Struct:
		if tok.Kind != yamlbound.Map {
			return false
		}
		var set [maxFields / 64]uint64
		for j := i + 1; j < int(tok.End); j = int(d.toks[j].End) {
			if d.toks[j].Kind != yamlbound.Key {
				continue // removed
			}
			k := d.toks[j].Str
			f, ok := p.fields[k]
			if !ok {
				if !asciiKey(k) || p.folded[strings.ToLower(k)] {
					return false
				}
				continue // a field the type does not have
			}
			if set[f.ord/64]&(1<<(f.ord%64)) != 0 {
				return false // a key given twice
			}
			set[f.ord/64] |= 1 << (f.ord % 64)
			if !d.value(v.FieldByIndex(f.index), j+1, f.plan) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if tok.Kind != yamlbound.Seq {
			return false
		}
		s := reflect.MakeSlice(v.Type(), int(tok.N), int(tok.N))
		n := 0
		for j := i + 1; j < int(tok.End); j = int(d.toks[j].End) {
			if !d.value(s.Index(n), j, p.elem) {
				return false
			}
			n++
		}
		v.Set(s)
		return true
	case reflect.Map:
		return d.mapValue(v, tok, i, p)
	case reflect.String:
		if tok.Kind != yamlbound.String || !utf8.ValidString(tok.Str) {
			return false
		}
		v.SetString(d.str(tok.Str))
		return true
	case reflect.Bool:
		if tok.Kind != yamlbound.Bool {
			return false
		}
		v.SetBool(tok.True)
		return true
	case reflect.Float64:
		if tok.Kind != yamlbound.Float {
			return false
		}
		v.SetFloat(tok.Num)
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		// encoding/json writes an integral float64 under 1e21 as its digits, which an integer
		// field takes when it is in range; a fraction or an exponent it refuses.
		f, ok := tok.Num, tok.Kind == yamlbound.Float
		if !ok || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 || v.OverflowInt(int64(f)) {
			return false
		}
		v.SetInt(int64(f))
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f, ok := tok.Num, tok.Kind == yamlbound.Float
		if !ok || f != math.Trunc(f) || f < 0 || f >= 1<<64 || v.OverflowUint(uint64(f)) {
			return false
		}
		v.SetUint(uint64(f))
		return true
	}
	return false
}

// mapValue decodes the mapping tok (at i) into the map v. A key given twice: the last wins,
// as in the map the tape would make.
func (d *typedDecoder) mapValue(v reflect.Value, tok *yamlbound.Token, i int, p *plan) bool {
	if tok.Kind != yamlbound.Map {
		return false
	}
	if v.Type() == reflect.TypeFor[map[string]string]() { // labels, annotations, selectors
		m := make(map[string]string, tok.N)
		for j := i + 1; j < int(tok.End); j = int(d.toks[j].End) {
			if d.toks[j].Kind != yamlbound.Key {
				continue // removed
			}
			k, val := d.toks[j].Str, &d.toks[j+1]
			if val.Kind != yamlbound.String && val.Kind != yamlbound.Null || !utf8.ValidString(k) || !utf8.ValidString(val.Str) {
				return false // a value json would refuse or change: the round trip says which
			}
			m[d.str(k)] = d.str(val.Str)
		}
		v.Set(reflect.ValueOf(m))
		return true
	}
	m := reflect.MakeMapWithSize(v.Type(), int(tok.N))
	kt, et := v.Type().Key(), v.Type().Elem()
	for j := i + 1; j < int(tok.End); j = int(d.toks[j].End) {
		if d.toks[j].Kind != yamlbound.Key {
			continue // removed
		}
		k := d.toks[j].Str
		if !utf8.ValidString(k) {
			return false
		}
		e := reflect.New(et).Elem()
		if !d.value(e, j+1, p.elem) {
			return false
		}
		key := reflect.New(kt).Elem()
		key.SetString(d.str(k))
		m.SetMapIndex(key, e)
	}
	v.Set(m)
	return true
}

// unmarshal hands js to the value's UnmarshalJSON (a time, a quantity, an int-or-string).
func (d *typedDecoder) unmarshal(v reflect.Value, js []byte) bool {
	u, ok := v.Addr().Interface().(json.Unmarshaler)
	return ok && u.UnmarshalJSON(js) == nil
}

func (d *typedDecoder) str(s string) string {
	if d.strs == nil {
		return strings.Clone(s)
	}
	return d.strs.get(s)
}

// plainJSON says whether s is written in JSON as itself between quotes (printable ASCII
// that encoding/json neither escapes nor replaces).
func plainJSON(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c < ' ' || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func asciiKey(k string) bool {
	for i := range len(k) {
		if k[i] >= 0x80 {
			return false
		}
	}
	return true
}

// maxInterned bounds the strings an interner shares: longer ones (a command line, a
// message) are rarely equal across pods and are copied.
const maxInterned = 128

// interner shares one copy of each short string among the typed objects of a bundle: the
// 16,384 pods of a job repeat their images, container names, ports' names and environment.
// It lives while the resources are read.
type interner struct {
	mu sync.Mutex
	m  map[string]string
}

func newInterner() *interner { return &interner{m: map[string]string{}} }

func (t *interner) get(s string) string {
	if len(s) > maxInterned {
		return strings.Clone(s)
	}
	t.mu.Lock()
	c, ok := t.m[s]
	if !ok {
		c = strings.Clone(s)
		t.m[c] = c
	}
	t.mu.Unlock()
	return c
}

// maxMemoKey and maxMemoBytes bound what a valueMemo keeps: the key of one value (a longer
// collection is decoded afresh each time) and the keys of all (beyond, values are still found
// but no more are added). A memo lives while a Load worker reads the resources.
const (
	maxMemoKey   = 4 << 10
	maxMemoBytes = 8 << 20
)

// valueMemo shares the slices, maps and pointers that objects of one kind write alike across
// the objects a Load worker decodes: 16,384 pods of a job hold the same containers, resource
// lists, volumes, owners and conditions, each about 2.7 KB as Go values
// (docs/performance.md). A value is keyed by its type's plan and its tokens, written out
// whole (kinds, sizes, strings, numbers): equal keys are equal tokens, which decode to equal
// values.
type valueMemo struct {
	vals  map[*plan]map[string]reflect.Value
	buf   []byte
	bytes int
}

func newValueMemo() *valueMemo { return &valueMemo{vals: map[*plan]map[string]reflect.Value{}} }

// key writes the collection at i, everything in it, out as the memo's key, in a buffer the
// next call reuses; false when it is longer than maxMemoKey.
func (m *valueMemo) key(toks []yamlbound.Token, i int) ([]byte, bool) {
	b := m.buf[:0]
	defer func() { m.buf = b[:0] }()
	for j := i; j < int(toks[i].End); j++ {
		t := &toks[j]
		truth := byte(0)
		if t.True {
			truth = 1
		}
		b = append(b, byte(t.Kind), truth)
		b = binary.AppendUvarint(b, uint64(uint32(t.N)))
		b = binary.AppendUvarint(b, uint64(uint32(int(t.End)-i)))
		b = binary.AppendUvarint(b, uint64(len(t.Str)))
		b = append(b, t.Str...)
		if t.Kind == yamlbound.Float {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(t.Num))
		}
		if len(b) > maxMemoKey {
			return nil, false
		}
	}
	return b, true
}

// memoEntryCost is what an entry costs beside its key: the map's slot, the key's string
// header and the reflect.Value, so that many small keys are bounded too.
const memoEntryCost = 64

// add keeps v as the value of key, within maxMemoBytes.
func (m *valueMemo) add(p *plan, key string, v reflect.Value) {
	if m.bytes+len(key)+memoEntryCost > maxMemoBytes {
		return
	}
	vs := m.vals[p]
	if vs == nil {
		vs = map[string]reflect.Value{}
		m.vals[p] = vs
	}
	vs[key] = v
	m.bytes += len(key) + memoEntryCost
}
