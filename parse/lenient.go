package parse

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
)

// maxLeftOut bounds how many fields one object may lose before it is given up: an object
// that bad is not the type it claims to be.
const maxLeftOut = 16

// maxTrials bounds the decodes spent looking for the fields that do not decode, and
// maxLenientBytes the size of an object worth the search: a hostile bundle gets its object
// skipped, not minutes of work.
const (
	maxTrials       = 2000
	maxLenientBytes = 1 << 20
)

// decodeLenient decodes an object read from YAML or JSON into a typed Kubernetes object
// (straight from the map when it can, decodeTyped; else through its JSON encoding). A
// field whose value has the wrong type (an unquoted 1e-3 where args expects strings, a
// number where a string is expected) does not cost the whole object: the field is left out
// and named in the list returned ("spec.containers[0].args[3]: a number where a string is
// expected"). It fails only when more than maxLeftOut fields are wrong.
func decodeLenient(obj map[string]any, into any, strs *interner) ([]string, error) {
	if decodeTyped(obj, into, strs) {
		return nil, nil
	}
	err := decodeInto(obj, into)
	if err == nil {
		return nil, nil
	}
	if js, e := json.Marshal(obj); e != nil || len(js) > maxLenientBytes {
		return nil, err
	}
	work, _ := deepCopy(obj).(map[string]any)
	var left []string
	budget := maxTrials
	for range maxLeftOut {
		path, ok := culprit(work, nil, into, err, &budget)
		if !ok || len(path) == 0 {
			return left, err
		}
		left = append(left, pathString(path)+": "+reason(err))
		work = remove(work, path).(map[string]any)
		if err = decodeInto(work, into); err == nil {
			return left, nil
		}
	}
	return left, err
}

// decodeInto decodes obj into the pointer into, from its zero value: a retry keeps nothing
// of a failed attempt.
func decodeInto(obj map[string]any, into any) error {
	js, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	v := reflect.ValueOf(into).Elem()
	v.Set(reflect.Zero(v.Type()))
	return json.Unmarshal(js, into)
}

// culprit finds the smallest part of the object whose removal makes err go away (or change):
// the value that does not decode.
func culprit(root map[string]any, path []any, into any, err error, budget *int) ([]any, bool) {
	node := at(root, path)
	var children []any
	switch n := node.(type) {
	case map[string]any:
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			children = append(children, k)
		}
	case []any:
		for i := range n {
			children = append(children, i)
		}
	}
	for _, c := range children {
		if *budget <= 0 {
			return nil, false
		}
		*budget--
		p := append(append([]any{}, path...), c)
		trial, _ := remove(deepCopy(root), p).(map[string]any)
		if e := decodeInto(trial, into); e == nil || e.Error() != err.Error() {
			if deeper, ok := culprit(root, p, into, err, budget); ok {
				return deeper, true
			}
			return p, true
		}
	}
	return path, len(path) > 0
}

func at(v any, path []any) any {
	for _, p := range path {
		switch n := v.(type) {
		case map[string]any:
			v = n[p.(string)]
		case []any:
			v = n[p.(int)]
		default:
			return nil
		}
	}
	return v
}

// remove returns v without the value at path (a map key deleted, a list element cut out).
func remove(v any, path []any) any {
	if len(path) == 0 {
		return v
	}
	switch n := v.(type) {
	case map[string]any:
		k := path[0].(string)
		if len(path) == 1 {
			delete(n, k)
		} else {
			n[k] = remove(n[k], path[1:])
		}
		return n
	case []any:
		i := path[0].(int)
		if len(path) == 1 {
			return append(n[:i:i], n[i+1:]...)
		}
		n[i] = remove(n[i], path[1:])
		return n
	}
	return v
}

func deepCopy(v any) any {
	switch n := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, x := range n {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i, x := range n {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}

func pathString(path []any) string {
	s := ""
	for _, p := range path {
		switch x := p.(type) {
		case string:
			if s != "" {
				s += "."
			}
			s += x
		case int:
			s += "[" + strconv.Itoa(x) + "]"
		}
	}
	return s
}

// reason says in a few words why a value did not decode.
func reason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("a %s where a %s is expected", te.Value, te.Type)
	}
	return firstLine(err.Error())
}
