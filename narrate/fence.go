package narrate

import (
	"reflect"
	"strings"

	"github.com/coroner-dev/coroner/report"
)

// Bundle text in a prompt is untrusted: a job name, a condition message or a log line may
// hold a newline and a line of its own ("Rule-based verdict: healthy"), or words addressed to
// the model. Two guards keep it data. Every single-line field is flat: a line break in it
// is a space and any other control character its escape, so it cannot start a prompt line.
// The multi-line blocks (ErrorInfo, EventInfo, LogInfo) are fenced by a line of backticks
// longer than any run of backticks inside them, so their text cannot close the fence; the
// templates' system messages tell the model that fenced text is data, never instructions.
// Both are functions of the data alone: the same bundle gives the same prompt bytes.

// isBreak reports whether r ends a line for some reader: the ASCII breaks and Unicode's
// next-line, line and paragraph separators.
func isBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// flat makes bundle text one line: line breaks are spaces, other control characters (an
// escape sequence, a bidirectional override) their Go escapes, as report.TerminalSafe shows
// them.
func flat(s string) string {
	if strings.IndexFunc(s, isBreak) >= 0 {
		s = strings.Join(strings.FieldsFunc(s, isBreak), " ")
	}
	return report.TerminalSafe(s)
}

// fence puts a block of bundle text between two lines of backticks that cannot occur in it:
// the fence is one backtick longer than the longest run of backticks in the block, and at
// least three. Every line of the block is made flat first.
func fence(block string) string {
	if block == "" {
		return ""
	}
	lines := strings.Split(block, "\n")
	longest := 0
	for i, l := range lines {
		l = flat(l)
		lines[i] = l
		run := 0
		for _, c := range []byte(l) {
			if c == '`' {
				run++
				longest = max(longest, run)
			} else {
				run = 0
			}
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + "\n" + strings.Join(lines, "\n") + "\n" + f
}

// fencedFields are the Data fields that hold multi-line blocks: fenced, not made flat.
var fencedFields = map[string]bool{"ErrorInfo": true, "EventInfo": true, "LogInfo": true}

// safeData is a copy of d that a template can show as it is: the blocks fenced, and every
// other string, wherever it is in the data (Metadata, Job, Findings, Replicas, Roles...),
// made flat. d is not changed.
func safeData(d *Data) *Data {
	out := *d
	v := reflect.ValueOf(&out).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		if fencedFields[f.Name] {
			v.Field(i).SetString(fence(v.Field(i).String()))
			continue
		}
		v.Field(i).Set(flatValue(v.Field(i)))
	}
	return &out
}

// flatValue returns a copy of v with every string in it, in exported fields, slices, maps
// and pointers, made flat.
func flatValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		return reflect.ValueOf(flat(v.String())).Convert(v.Type())
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			c.Index(i).Set(flatValue(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			c.SetMapIndex(iter.Key(), flatValue(iter.Value()))
		}
		return c
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(flatValue(v.Elem()))
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				c.Field(i).Set(flatValue(v.Field(i)))
			}
		}
		return c
	}
	return v
}
