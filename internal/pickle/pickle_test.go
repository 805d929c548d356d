package pickle

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeValues(t *testing.T) {
	// {"a": [1, 300, 70000, -5, 1700000000000000000, 1.5, True, False, None, ("x", "x")]} as
	// torch writes it: memoized strings fetched again with BINGET, LONG1 of 8 bytes.
	var b bytes.Buffer
	b.WriteString("\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01](K\x01M\x2c\x01J\x70\x11\x01\x00J\xfb\xff\xff\xff\x8a\x08")
	binary.Write(&b, binary.LittleEndian, int64(1700000000000000000))
	b.WriteString("G\x3f\xf8\x00\x00\x00\x00\x00\x00\x88\x89NX\x01\x00\x00\x00xq\x02h\x02\x86eu.")
	v, err := Decode(b.Bytes(), DefaultLimits())
	require.NoError(t, err)
	d := v.(*Dict)
	l, ok := d.Get("a")
	require.True(t, ok)
	assert.Equal(t, []any{int64(1), int64(300), int64(70000), int64(-5), int64(1700000000000000000), 1.5, true, false, nil, Tuple{"x", "x"}}, l.(*List).Items)
}

func TestDecodeTypeTag(t *testing.T) {
	// restore_type_tag({"k": 1}, "Dict[str, int]") as older torch builds wrap every dict.
	p := "\x80\x02ctorch.jit._pickle\nrestore_type_tag\nq\x00}(X\x01\x00\x00\x00kK\x01uX\x0e\x00\x00\x00Dict[str, int]\x86R."
	v, err := Decode([]byte(p), DefaultLimits())
	require.NoError(t, err)
	got, _ := v.(*Dict).Get("k")
	assert.Equal(t, int64(1), got)
}

func TestLong1(t *testing.T) {
	for raw, want := range map[string]int64{"\x00": 0, "\x01\xff": -255, "\xff": -1, "\x00\x01": 256, "": 0} {
		p := "\x80\x02\x8a" + string(rune(len(raw))) + raw + "."
		v, err := Decode([]byte(p), DefaultLimits())
		require.NoError(t, err, "% x", raw)
		assert.Equal(t, want, v, "% x", raw)
	}
}

// TestDecodeHostile: each is a one-line error, never a panic, and nothing is allocated on a
// length's word.
func TestDecodeHostile(t *testing.T) {
	deep := "\x80\x02" + strings.Repeat("(", 100) + "."
	for name, tc := range map[string]struct{ data, err string }{
		"empty":             {"", "not a protocol 2 pickle"},
		"protocol 4":        {"\x80\x04N.", "not a protocol 2 pickle"},
		"os.system":         {"\x80\x02cos\nsystem\nX\x02\x00\x00\x00ls\x85R.", "global os.system is not allowed"},
		"builtins eval":     {"\x80\x02c__builtin__\neval\n.", "global __builtin__.eval is not allowed"},
		"huge string":       {"\x80\x02X\xff\xff\xff\x7f", "over the limit"},
		"string past end":   {"\x80\x02X\x10\x00\x00\x00abc", "truncated"},
		"no stop":           {"\x80\x02N", "no STOP"},
		"unknown opcode":    {"\x80\x02\x95.", "opcode 0x95 is not read"},
		"deep":              {deep, "nested deeper than 64"},
		"memo unset":        {"\x80\x02h\x07.", "memo 7 was never set"},
		"long LONG1":        {"\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x00.", "over 64 bits"},
		"underflow":         {"\x80\x02s.", "stack underflow"},
		"append to int":     {"\x80\x02K\x01K\x02a.", "not a list"},
		"reduce non-global": {"\x80\x02K\x01)R.", "not an allowed global"},
		"tag of an int":     {"\x80\x02ctorch.jit._pickle\nrestore_type_tag\nK\x01X\x00\x00\x00\x00\x86R.", "not a dict or a list"},
		"two values":        {"\x80\x02NN.", "STOP with 2 values"},
		"global result":     {"\x80\x02ctorch.jit._pickle\nbuild_intlist\n.", "a global is the result"},
		"setitems on list":  {"\x80\x02](K\x01K\x02u.", "not a dict"},
		"unhashable key":    {"\x80\x02}]K\x01s.", "dict key of type"},
		"global no newline": {"\x80\x02c" + strings.Repeat("a", 300), "not ended by a newline"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(tc.data), DefaultLimits())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestDecodeLimits(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxValues = 10
	_, err := Decode([]byte("\x80\x02]("+strings.Repeat("N", 20)+"e."), lim)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than 10 values")
	lim = DefaultLimits()
	lim.MaxBytes = 4
	_, err = Decode([]byte("\x80\x02]("+strings.Repeat("N", 20)+"e."), lim)
	assert.ErrorContains(t, err, "over the limit of 4")
}
