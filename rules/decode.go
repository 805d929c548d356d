package rules

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"sigs.k8s.io/yaml"
)

// Schema is the JSON Schema of a rule file (published as docs/rules.schema.json, for editors).
// Decode checks every file against it.
//
//go:embed rules.schema.json
var Schema []byte

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("rules.schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("rules.schema.json")
})

// Decode reads a rule file: its apiVersion, then the whole file against Schema (an unknown
// field, a value of the wrong type or an unknown word is an error naming the entry), then
// the file's defaults applied to its rules. Errors are one line.
func Decode(data []byte) (*File, error) {
	js, err := toJSON(data)
	if err != nil {
		return nil, err
	}
	if err := checkVersion(js, APIVersion, "rule file"); err != nil {
		return nil, err
	}
	sch, err := compiled()
	if err != nil {
		return nil, fmt.Errorf("the rule file schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return nil, err
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, schemaError(inst, ve)
		}
		return nil, err
	}
	var f File
	if err := strictJSON(js, &f); err != nil {
		return nil, err // the schema and the struct disagree: a test keeps them together
	}
	var keys struct {
		Rules, Progress, Facts []map[string]json.RawMessage
	}
	if err := json.Unmarshal(js, &keys); err != nil {
		return nil, err
	}
	for i, s := range f.Rules {
		s.keys = slices.Sorted(maps.Keys(keys.Rules[i]))
		if !s.IsPatch() {
			f.Defaults.apply(s)
		}
	}
	for i, p := range f.Progress {
		p.keys = slices.Sorted(maps.Keys(keys.Progress[i]))
	}
	for i, t := range f.Facts {
		t.keys = slices.Sorted(maps.Keys(keys.Facts[i]))
	}
	return &f, nil
}

// toJSON converts YAML to JSON, refusing duplicate keys; the error is its first line.
func toJSON(data []byte) ([]byte, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		// One line: "yaml: unmarshal errors: line 4: key "id" already set in map".
		return nil, errors.New(strings.Join(strings.Fields(err.Error()), " "))
	}
	return js, nil
}

// strictJSON decodes js into v, refusing unknown fields.
func strictJSON(js []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg, _, _ := strings.Cut(strings.TrimPrefix(err.Error(), "json: "), "\n")
		return errors.New(msg)
	}
	return nil
}

// checkVersion says whether a file states the apiVersion want. A file without one is of
// before the versioned schema: the message names the migration.
func checkVersion(js []byte, want, what string) error {
	var head struct {
		APIVersion any `json:"apiVersion"`
	}
	if err := json.Unmarshal(js, &head); err != nil || head.APIVersion == nil {
		return fmt.Errorf("no apiVersion: a %s of schema v1 starts with \"apiVersion: %s\" (docs/rules.md, \"Migrating to v1\")", what, want)
	}
	if head.APIVersion != want {
		return fmt.Errorf("apiVersion %s is not %s", jsonText(head.APIVersion), want)
	}
	return nil
}

// schemaError turns the schema's verdict into one line: each problem at the deepest place it
// was found, the entry named by its id ("rule \"x\": match: unknown field \"paterns\""),
// sorted, joined with "; ".
func schemaError(inst any, ve *jsonschema.ValidationError) error {
	var problems []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		problems = append(problems, describe(inst, e))
	}
	walk(ve)
	sort.Strings(problems)
	return errors.New(strings.Join(slices.Compact(problems), "; "))
}

var printer = message.NewPrinter(language.English)

// describe writes one problem the schema found: "rule \"x\": match: patterns is a string, not
// an array".
func describe(inst any, e *jsonschema.ValidationError) string {
	entry, path := place(inst, e.InstanceLocation)
	// name is the value's own name (its field, or its item: explainsOnNode[1]); parent the
	// path to it.
	parent, name := "", path
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		parent, name = path[:i], path[i+1:]
	}
	if name == "" {
		name = "the file"
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		var quoted []string
		for _, p := range k.Properties {
			quoted = append(quoted, strconv.Quote(p))
		}
		return join(entry, path, "unknown field "+strings.Join(quoted, ", "))
	case *kind.Required:
		return join(entry, path, strings.Join(k.Missing, ", ")+" is missing")
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			want = append(want, fmt.Sprint(w))
		}
		return join(entry, parent, fmt.Sprintf("%s %s is not one of %s", name, jsonText(k.Got), strings.Join(want, ", ")))
	case *kind.Type:
		var want []string
		for _, w := range k.Want {
			want = append(want, article(w))
		}
		if path == "" && entry != "" {
			return fmt.Sprintf("%s is %s, not %s", entry, article(k.Got), strings.Join(want, " or ")) // "rule 3 is null, ..."
		}
		return join(entry, parent, fmt.Sprintf("%s is %s, not %s", name, article(k.Got), strings.Join(want, " or ")))
	case *kind.MinLength:
		return join(entry, parent, name+" is empty")
	}
	return join(entry, path, e.ErrorKind.LocalizedString(printer))
}

func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ": ")
}

// place names where a location is: the entry of the file ("rule \"cuda-oom/x\"", or "rule 3"
// when it has no id) and the path inside it ("match.patterns[0]").
func place(inst any, loc []string) (entry, path string) {
	names := map[string]string{"rules": "rule", "progress": "progress", "facts": "fact"}
	rest := loc
	if len(loc) >= 2 && names[loc[0]] != "" {
		if i, err := strconv.Atoi(loc[1]); err == nil {
			entry = fmt.Sprintf("%s %d", names[loc[0]], i+1)
			if top, ok := inst.(map[string]any); ok {
				if list, ok := top[loc[0]].([]any); ok && i < len(list) {
					if m, ok := list[i].(map[string]any); ok {
						if id, ok := m["id"].(string); ok && id != "" {
							entry = fmt.Sprintf("%s %q", names[loc[0]], id)
						}
					}
				}
			}
			rest = loc[2:]
		}
	}
	var b strings.Builder
	for _, tok := range rest {
		if _, err := strconv.Atoi(tok); err == nil {
			fmt.Fprintf(&b, "[%s]", tok)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return entry, b.String()
}

// article names a JSON type as a phrase: "a string", "an array", "null".
func article(t string) string {
	switch t {
	case "null":
		return "null"
	case "array", "object", "integer":
		return "an " + t
	}
	return "a " + t
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// apply fills the fields a rule does not set from the file's defaults.
func (d *Defaults) apply(s *Spec) {
	if d == nil {
		return
	}
	fill := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	fill(&s.Severity, d.Severity)
	fill(&s.Layer, d.Layer)
	fill(&s.Fault, d.Fault)
	fill(&s.Retry, d.Retry)
	fill(&s.Role, d.Role)
	if s.Enabled == nil && d.Enabled != nil {
		on := *d.Enabled
		s.Enabled = &on
	}
	if len(d.Labels) > 0 {
		labels := maps.Clone(d.Labels)
		maps.Copy(labels, s.Labels)
		s.Labels = labels
	}
}

// IsToggle reports whether the entry only turns the rule of its id, loaded before it, on or
// off: it has an id and enabled and nothing else.
func (s *Spec) IsToggle() bool { return isToggle(s.keys) }

// IsPatch reports whether the entry changes the rule of its id loaded before it rather than
// defining a rule: it has override, or it is a toggle.
func (s *Spec) IsPatch() bool { return s.Override != nil || s.IsToggle() }

// IsToggle reports whether the entry only turns the entry of its id, loaded before it, on or off.
func (p *Progress) IsToggle() bool { return isToggle(p.keys) }

// IsToggle reports whether the entry only turns the entry of its id, loaded before it, on or off.
func (t *TextFact) IsToggle() bool { return isToggle(t.keys) }

func isToggle(keys []string) bool {
	return slices.Equal(keys, []string{"enabled", "id"})
}

// appendable are the fields an override can append to: labels are added (the override's
// win), lists are extended, and a patterns rule's match gets more patterns and event reasons.
var appendable = map[string]bool{"labels": true, "explainsOnNode": true, "match": true, "examples": true}

// Apply returns base changed by the entry s: for a toggle, base turned on or off; for an
// override, each field s.Override names replaced by s's or appended to (labels, lists,
// match patterns, examples), every other field kept. An override must name every field it
// sets, and set every field it names.
func (s *Spec) Apply(base *Spec) (*Spec, error) {
	out, err := base.clone()
	if err != nil {
		return nil, err
	}
	if s.IsToggle() {
		out.Enabled = s.Enabled
		return out, nil
	}
	var problems []string
	for _, k := range s.keys {
		if k != "id" && k != "override" && s.Override[k] == "" {
			problems = append(problems, fmt.Sprintf("%s is set but override does not name it (replace or append)", k))
		}
	}
	for _, field := range slices.Sorted(maps.Keys(s.Override)) {
		how := s.Override[field]
		if !slices.Contains(s.keys, field) {
			problems = append(problems, fmt.Sprintf("override names %s but the entry does not set it", field))
			continue
		}
		if how == "append" && !appendable[field] {
			problems = append(problems, fmt.Sprintf("override: %s can be replaced, not appended to", field))
			continue
		}
		if err := out.take(s, field, how == "append"); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}

// take sets one field of out from s, replacing it or appending to it.
func (out *Spec) take(s *Spec, field string, add bool) error {
	switch field {
	case "category":
		out.Category = s.Category
	case "severity":
		out.Severity = s.Severity
	case "layer":
		out.Layer = s.Layer
	case "title":
		out.Title = s.Title
	case "fault":
		out.Fault = s.Fault
	case "retry":
		out.Retry = s.Retry
	case "role":
		out.Role = s.Role
	case "namesNoCause":
		out.NamesNoCause = s.NamesNoCause
	case "enabled":
		out.Enabled = s.Enabled
	case "explanation":
		out.Explanation = s.Explanation
	case "remediation":
		out.Remediation = s.Remediation
	case "rootOnlyIf":
		out.RootOnlyIf = s.RootOnlyIf
	case "labels":
		if !add || out.Labels == nil {
			out.Labels = map[string]string{}
		}
		maps.Copy(out.Labels, s.Labels)
	case "explainsOnNode":
		if !add {
			out.ExplainsOnNode = nil
		}
		out.ExplainsOnNode = append(out.ExplainsOnNode, s.ExplainsOnNode...)
	case "examples":
		if !add {
			out.Examples = Examples{}
		}
		out.Examples.Match = append(out.Examples.Match, s.Examples.Match...)
		out.Examples.NotMatch = append(out.Examples.NotMatch, s.Examples.NotMatch...)
	case "match":
		if !add {
			out.Match = s.Match
			return nil
		}
		m := s.Match
		if m.Object != nil || m.Streak != nil || m.Sequence != nil || m.Silence != nil || m.Restate != "" ||
			out.Match.Object != nil || out.Match.Streak != nil || out.Match.Sequence != nil || out.Match.Silence != nil {
			return errors.New("override: match can be appended to only with patterns and eventReasons, on a rule that matches patterns")
		}
		out.Match.Patterns = append(out.Match.Patterns, m.Patterns...)
		out.Match.Unless = append(out.Match.Unless, m.Unless...)
		out.Match.EventReasons = append(out.Match.EventReasons, m.EventReasons...)
	}
	return nil
}

// clone copies a spec deeply, through its JSON.
func (s *Spec) clone() (*Spec, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var out Spec
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	out.keys = s.keys
	return &out, nil
}
