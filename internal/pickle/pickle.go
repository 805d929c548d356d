// Package pickle decodes the pickles PyTorch's own pickler writes (torch/csrc/jit/serialization/
// pickler.cpp, protocol 2), and Python's pickle module at protocol 2 writes for the same values:
// dicts, lists, tuples, str, int (BININT*, LONG1 up to 8 bytes), float, bool, None and the memo
// (BINPUT/BINGET). Nothing else: a pickle is hostile input. No object is constructed, no
// GLOBAL is accepted other than torch.jit._pickle's type-tag and list helpers (restore_type_tag
// wraps dicts and lists in older builds), whose REDUCE gives back their argument; every length
// is checked against the bytes left before anything is allocated, and nesting, values and the
// memo are bounded by Limits.
package pickle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Dict is a pickled dict, its items in the order the pickle set them.
type Dict struct {
	Keys   []any
	Values []any
	// index maps string keys to their last position, built at the first Get of a large dict.
	index map[string]int
	n     int
}

// Get returns the value of a string key (the last one set, as Python keeps).
func (d *Dict) Get(key string) (any, bool) {
	if len(d.Keys) > 16 {
		if d.index == nil || d.n != len(d.Keys) {
			d.index = make(map[string]int, len(d.Keys))
			for i, k := range d.Keys {
				if s, ok := k.(string); ok {
					d.index[s] = i
				}
			}
			d.n = len(d.Keys)
		}
		i, ok := d.index[key]
		if !ok {
			return nil, false
		}
		return d.Values[i], true
	}
	for i := len(d.Keys) - 1; i >= 0; i-- {
		if s, ok := d.Keys[i].(string); ok && s == key {
			return d.Values[i], true
		}
	}
	return nil, false
}

// List is a pickled list.
type List struct{ Items []any }

// Tuple is a pickled tuple.
type Tuple []any

// Values are nil (None), bool, int64, float64, string, *Dict, *List and Tuple. A container
// the pickle memoized and fetched again is the same pointer wherever it appears (torch shares
// stack frames between entries): walk values with a budget, not as a tree.

// Limits bound a decode.
type Limits struct {
	// MaxBytes bounds the pickle's length.
	MaxBytes int
	// MaxDepth bounds how deep containers nest while they are built (MARKs and containers on
	// the stack).
	MaxDepth int
	// MaxValues bounds how many values the pickle makes (each opcode makes at most one).
	MaxValues int
	// MaxString bounds one string's length.
	MaxString int
}

// DefaultLimits fit a flight recorder dump of any buffer size torch allows in practice
// (20,000 entries with deep stacks is some tens of MiB).
func DefaultLimits() Limits {
	return Limits{MaxBytes: 512 << 20, MaxDepth: 64, MaxValues: 50_000_000, MaxString: 1 << 20}
}

// Error is a decoding error: where in the pickle and what.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("pickle: offset %d: %s", e.Offset, e.Msg) }

// ErrNotPickle says the data does not start as a protocol 2 pickle.
var ErrNotPickle = errors.New("pickle: not a protocol 2 pickle (no PROTO 2 opcode)")

// IsPickle reports whether data starts as a protocol 2 pickle does.
func IsPickle(head []byte) bool { return len(head) >= 2 && head[0] == 0x80 && head[1] == 2 }

// The opcodes decoded (Python's Lib/pickle.py names).
const (
	opMark        = '('
	opStop        = '.'
	opBinInt      = 'J'
	opBinInt1     = 'K'
	opBinInt2     = 'M'
	opNone        = 'N'
	opBinUnicode  = 'X'
	opAppend      = 'a'
	opAppends     = 'e'
	opBinGet      = 'h'
	opLongBinGet  = 'j'
	opEmptyList   = ']'
	opBinPut      = 'q'
	opLongBinPut  = 'r'
	opSetItem     = 's'
	opSetItems    = 'u'
	opTuple       = 't'
	opEmptyTuple  = ')'
	opEmptyDict   = '}'
	opBinFloat    = 'G'
	opGlobal      = 'c'
	opReduce      = 'R'
	opProto       = 0x80
	opTuple1      = 0x85
	opTuple2      = 0x86
	opTuple3      = 0x87
	opNewTrue     = 0x88
	opNewFalse    = 0x89
	opLong1       = 0x8a
	maxGlobalLine = 128
)

// helper is a GLOBAL torch's pickler may write around the values of a flight recorder dump.
type helper struct{ name string }

// helpers are the globals accepted: each gives back its first argument.
var helpers = map[string]bool{
	"torch.jit._pickle\nrestore_type_tag": true,
	"torch.jit._pickle\nbuild_intlist":    true,
	"torch.jit._pickle\nbuild_doublelist": true,
	"torch.jit._pickle\nbuild_boollist":   true,
}

type markT struct{}

// mark is the MARK on the stack.
var mark = markT{}

// isMark tells the MARK from a value (a Tuple is a slice: never compared with ==).
func isMark(v any) bool { _, ok := v.(markT); return ok }

type decoder struct {
	data   []byte
	pos    int
	lim    Limits
	stack  []any
	marks  int
	values int
	memo   map[uint32]any
}

// Decode decodes one pickle. It never panics: malformed, truncated or hostile input gives an
// *Error (or ErrNotPickle).
func Decode(data []byte, lim Limits) (any, error) {
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
		return nil, &Error{0, fmt.Sprintf("%d bytes, over the limit of %d", len(data), lim.MaxBytes)}
	}
	if !IsPickle(data) {
		return nil, ErrNotPickle
	}
	d := &decoder{data: data, lim: lim, memo: map[uint32]any{}}
	return d.run()
}

func (d *decoder) fail(format string, args ...any) error {
	return &Error{d.pos, fmt.Sprintf(format, args...)}
}

// take returns the next n bytes, or fails when fewer are left: a length the pickle declares
// is checked against the bytes left before it is used.
func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.data)-d.pos {
		return nil, d.fail("truncated: %d bytes needed, %d left", n, len(d.data)-d.pos)
	}
	b := d.data[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

func (d *decoder) push(v any) error {
	d.values++
	if d.lim.MaxValues > 0 && d.values > d.lim.MaxValues {
		return d.fail("more than %d values", d.lim.MaxValues)
	}
	d.stack = append(d.stack, v)
	return nil
}

func (d *decoder) pop() (any, error) {
	if len(d.stack) == 0 {
		return nil, d.fail("stack underflow")
	}
	v := d.stack[len(d.stack)-1]
	d.stack = d.stack[:len(d.stack)-1]
	if isMark(v) {
		return nil, d.fail("unexpected MARK")
	}
	return v, nil
}

// popMark pops the values above the topmost MARK, and the MARK.
func (d *decoder) popMark() ([]any, error) {
	for i := len(d.stack) - 1; i >= 0; i-- {
		if isMark(d.stack[i]) {
			items := append([]any(nil), d.stack[i+1:]...)
			d.stack = d.stack[:i]
			d.marks--
			return items, nil
		}
	}
	return nil, d.fail("no MARK on the stack")
}

func (d *decoder) top() (any, error) {
	if len(d.stack) == 0 {
		return nil, d.fail("stack underflow")
	}
	return d.stack[len(d.stack)-1], nil
}

func (d *decoder) run() (any, error) {
	for {
		if d.pos >= len(d.data) {
			return nil, d.fail("truncated: no STOP")
		}
		op := d.data[d.pos]
		d.pos++
		if err := d.step(op); err != nil {
			if errors.Is(err, errStop) {
				if len(d.stack) != 1 || d.marks != 0 {
					return nil, d.fail("STOP with %d values on the stack", len(d.stack))
				}
				v := d.stack[0]
				if _, ok := v.(helper); ok {
					return nil, d.fail("a global is the result")
				}
				return v, nil
			}
			return nil, err
		}
	}
}

var errStop = errors.New("stop")

func (d *decoder) step(op byte) error {
	switch op {
	case opProto:
		b, err := d.take(1)
		if err != nil {
			return err
		}
		if b[0] != 2 {
			return d.fail("protocol %d, only 2 is read", b[0])
		}
		return nil
	case opStop:
		return errStop
	case opMark:
		if d.lim.MaxDepth > 0 && d.marks >= d.lim.MaxDepth {
			return d.fail("nested deeper than %d", d.lim.MaxDepth)
		}
		d.marks++
		d.stack = append(d.stack, mark)
		return nil
	case opNone:
		return d.push(nil)
	case opNewTrue:
		return d.push(true)
	case opNewFalse:
		return d.push(false)
	case opBinInt1:
		b, err := d.take(1)
		if err != nil {
			return err
		}
		return d.push(int64(b[0]))
	case opBinInt2:
		b, err := d.take(2)
		if err != nil {
			return err
		}
		return d.push(int64(binary.LittleEndian.Uint16(b)))
	case opBinInt:
		b, err := d.take(4)
		if err != nil {
			return err
		}
		return d.push(int64(int32(binary.LittleEndian.Uint32(b))))
	case opLong1:
		b, err := d.take(1)
		if err != nil {
			return err
		}
		n := int(b[0])
		if n > 8 {
			return d.fail("LONG1 of %d bytes: over 64 bits", n)
		}
		raw, err := d.take(n)
		if err != nil {
			return err
		}
		var u uint64
		for i := n - 1; i >= 0; i-- {
			u = u<<8 | uint64(raw[i])
		}
		if n > 0 && n < 8 && raw[n-1]&0x80 != 0 {
			u |= ^uint64(0) << (8 * n) // sign-extend
		}
		return d.push(int64(u))
	case opBinFloat:
		b, err := d.take(8)
		if err != nil {
			return err
		}
		return d.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
	case opBinUnicode:
		b, err := d.take(4)
		if err != nil {
			return err
		}
		n := binary.LittleEndian.Uint32(b)
		if d.lim.MaxString > 0 && int64(n) > int64(d.lim.MaxString) {
			return d.fail("string of %d bytes, over the limit of %d", n, d.lim.MaxString)
		}
		s, err := d.take(int(n))
		if err != nil {
			return err
		}
		str := string(s)
		if !utf8.ValidString(str) {
			str = strings.ToValidUTF8(str, "\uFFFD")
		}
		return d.push(str)
	case opEmptyList:
		return d.push(&List{})
	case opEmptyDict:
		return d.push(&Dict{})
	case opEmptyTuple:
		return d.push(Tuple{})
	case opTuple:
		items, err := d.popMark()
		if err != nil {
			return err
		}
		return d.push(Tuple(items))
	case opTuple1, opTuple2, opTuple3:
		n := int(op-opTuple1) + 1
		t := make(Tuple, n)
		for i := n - 1; i >= 0; i-- {
			v, err := d.pop()
			if err != nil {
				return err
			}
			t[i] = v
		}
		return d.push(t)
	case opAppend:
		v, err := d.pop()
		if err != nil {
			return err
		}
		return d.appendTo([]any{v})
	case opAppends:
		items, err := d.popMark()
		if err != nil {
			return err
		}
		return d.appendTo(items)
	case opSetItem:
		v, err := d.pop()
		if err != nil {
			return err
		}
		k, err := d.pop()
		if err != nil {
			return err
		}
		return d.setItems([]any{k, v})
	case opSetItems:
		items, err := d.popMark()
		if err != nil {
			return err
		}
		if len(items)%2 != 0 {
			return d.fail("SETITEMS with an odd number of values")
		}
		return d.setItems(items)
	case opBinPut, opLongBinPut:
		idx, err := d.memoIndex(op == opLongBinPut)
		if err != nil {
			return err
		}
		v, err := d.top()
		if err != nil {
			return err
		}
		if isMark(v) {
			return d.fail("memoizing a MARK")
		}
		if _, ok := d.memo[idx]; !ok && d.lim.MaxValues > 0 && len(d.memo) >= d.lim.MaxValues {
			return d.fail("memo over %d values", d.lim.MaxValues)
		}
		d.memo[idx] = v
		return nil
	case opBinGet, opLongBinGet:
		idx, err := d.memoIndex(op == opLongBinGet)
		if err != nil {
			return err
		}
		v, ok := d.memo[idx]
		if !ok {
			return d.fail("memo %d was never set", idx)
		}
		return d.push(v)
	case opGlobal:
		module, err := d.line()
		if err != nil {
			return err
		}
		name, err := d.line()
		if err != nil {
			return err
		}
		key := module + "\n" + name
		if !helpers[key] {
			return d.fail("global %s.%s is not allowed", module, name)
		}
		return d.push(helper{name})
	case opReduce:
		args, err := d.pop()
		if err != nil {
			return err
		}
		fn, err := d.pop()
		if err != nil {
			return err
		}
		h, ok := fn.(helper)
		if !ok {
			return d.fail("REDUCE on a value that is not an allowed global")
		}
		t, ok := args.(Tuple)
		if !ok || len(t) == 0 {
			return d.fail("REDUCE of %s without its arguments", h.name)
		}
		switch t[0].(type) {
		case *Dict, *List:
		default:
			return d.fail("%s of a value that is not a dict or a list", h.name)
		}
		return d.push(t[0])
	}
	return d.fail("opcode 0x%02x is not read", op)
}

func (d *decoder) memoIndex(long bool) (uint32, error) {
	if long {
		b, err := d.take(4)
		if err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint32(b), nil
	}
	b, err := d.take(1)
	if err != nil {
		return 0, err
	}
	return uint32(b[0]), nil
}

// line reads a GLOBAL's module or name: printable ASCII up to a newline, bounded.
func (d *decoder) line() (string, error) {
	for i := d.pos; i < len(d.data) && i-d.pos <= maxGlobalLine; i++ {
		c := d.data[i]
		if c == '\n' {
			s := string(d.data[d.pos:i])
			d.pos = i + 1
			return s, nil
		}
		if c < 0x20 || c > 0x7e {
			return "", d.fail("GLOBAL with a byte 0x%02x in its name", c)
		}
	}
	return "", d.fail("GLOBAL name not ended by a newline within %d bytes", maxGlobalLine)
}

func (d *decoder) appendTo(items []any) error {
	v, err := d.top()
	if err != nil {
		return err
	}
	l, ok := v.(*List)
	if !ok {
		return d.fail("APPEND to a value that is not a list")
	}
	for _, it := range items {
		if _, ok := it.(helper); ok {
			return d.fail("a global as a list item")
		}
	}
	l.Items = append(l.Items, items...)
	return nil
}

func (d *decoder) setItems(kv []any) error {
	v, err := d.top()
	if err != nil {
		return err
	}
	m, ok := v.(*Dict)
	if !ok {
		return d.fail("SETITEM on a value that is not a dict")
	}
	for i := 0; i < len(kv); i += 2 {
		switch kv[i].(type) {
		case string, int64, bool, nil, float64, Tuple:
		default:
			return d.fail("dict key of type %T", kv[i])
		}
		if _, ok := kv[i+1].(helper); ok {
			return d.fail("a global as a dict value")
		}
		m.Keys = append(m.Keys, kv[i])
		m.Values = append(m.Values, kv[i+1])
	}
	return nil
}
