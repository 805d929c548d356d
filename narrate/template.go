package narrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// Template names with a meaning of their own.
const (
	// DefaultTemplate serves job kinds that have no template of their own.
	DefaultTemplate = "default"
	// RoleTemplate asks for one role's diagnosis (--llm-per-role).
	RoleTemplate = "role"
	// BuiltIn is the Source of an embedded template.
	BuiltIn = "built-in"
	// maxTemplateBytes bounds a template file.
	maxTemplateBytes = 256 << 10
)

// builtin holds the built-in prompt templates: one per job kind (pytorchjob.tmpl serves
// PyTorchJob), default.tmpl for the other kinds and role.tmpl for --llm-per-role.
//
//go:embed prompts/*.tmpl
var builtin embed.FS

// versionComment is a template's version line: a comment such as
// {{/* coroner prompt for PyTorchJob, version: 3 */}} in its first five lines.
var versionComment = regexp.MustCompile(`\{\{-?\s*/\*.*\bversion:\s*([\w.\-]+)`)

func templateVersion(text string) string {
	lines := strings.SplitN(text, "\n", 6)
	for _, l := range lines[:min(len(lines), 5)] {
		if m := versionComment.FindStringSubmatch(l); m != nil {
			return m[1]
		}
	}
	return ""
}

// Template is a prompt template: Go text/template over Data. Its body is the user message;
// an optional {{define "system"}} block is the system message.
type Template struct {
	Name    string
	Version string
	// Source is BuiltIn or the file the template was read from.
	Source string
	// Hash is the sha256 of the template's text.
	Hash string
	Text string
	tmpl *template.Template
}

// Templates is a set of prompt templates by name.
type Templates struct {
	byName map[string]*Template
}

// LoadTemplates reads the built-in templates and, when dir is not empty, the *.tmpl files of
// dir, which replace the built-ins of the same name or add templates for other job kinds. A
// template that does not parse is an error naming its file.
func LoadTemplates(ctx context.Context, dir string) (*Templates, error) {
	ts := &Templates{byName: map[string]*Template{}}
	names, err := fs.Glob(builtin, "prompts/*.tmpl")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		data, err := fs.ReadFile(builtin, n)
		if err != nil {
			return nil, err
		}
		t, err := NewTemplate(strings.TrimSuffix(path.Base(n), ".tmpl"), BuiltIn, string(data))
		if err != nil {
			return nil, err
		}
		ts.byName[t.Name] = t
	}
	if dir == "" {
		return ts, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading prompt templates: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".tmpl") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		file := filepath.Join(dir, e.Name())
		data, err := readBounded(file, maxTemplateBytes)
		if err != nil {
			return nil, err
		}
		t, err := NewTemplate(strings.TrimSuffix(e.Name(), ".tmpl"), file, string(data))
		if err != nil {
			return nil, err
		}
		ts.byName[t.Name] = t
	}
	if ts.byName[DefaultTemplate] == nil {
		return nil, fmt.Errorf("no %s.tmpl prompt template", DefaultTemplate)
	}
	return ts, nil
}

// readBounded reads a template file of at most limit bytes. The bound is on what is read, not
// on what the directory entry says: a ConfigMap mounted as a directory holds its files as
// symbolic links (pytorchjob.tmpl -> ..data/pytorchjob.tmpl), whose own size is a few bytes.
func readBounded(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("prompt template %s: %w", file, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("prompt template %s: more than the %d bytes allowed", file, limit)
	}
	return data, nil
}

// NewTemplate parses a template. Errors name the source and the line.
func NewTemplate(name, source, text string) (*Template, error) {
	t := &Template{Name: name, Source: source, Text: text}
	sum := sha256.Sum256([]byte(text))
	t.Hash = "sha256:" + hex.EncodeToString(sum[:])
	t.Version = templateVersion(text)
	where := source
	if source == BuiltIn {
		where = "built-in " + name + ".tmpl"
	}
	tmpl, err := template.New(name).Option("missingkey=error").Funcs(templateFuncs).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("prompt template %s: %s", where, oneLine(err.Error()))
	}
	t.tmpl = tmpl
	return t, nil
}

// For returns the template of a job kind ("PyTorchJob" uses pytorchjob.tmpl), or the default.
func (ts *Templates) For(kind string) *Template {
	if t := ts.byName[strings.ToLower(kind)]; t != nil && kind != "" {
		return t
	}
	return ts.byName[DefaultTemplate]
}

// Get returns the template of that name.
func (ts *Templates) Get(name string) (*Template, bool) {
	t, ok := ts.byName[strings.TrimSuffix(name, ".tmpl")]
	return t, ok
}

// List returns the templates sorted by name.
func (ts *Templates) List() []*Template {
	out := make([]*Template, 0, len(ts.byName))
	for _, t := range ts.byName {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Render executes the template: the system message (empty without a "system" block) and the
// user message. A reference to a field or Metadata key that does not exist is an error.
//
// Bundle text reaches the template flat or fenced (safeData): no value can start a line of
// the prompt of its own.
func (t *Template) Render(d *Data) (system, user string, err error) {
	d = safeData(d)
	var b bytes.Buffer
	if err := t.tmpl.Execute(&b, d); err != nil {
		return "", "", t.execError(err)
	}
	user = strings.TrimSpace(b.String())
	if s := t.tmpl.Lookup("system"); s != nil {
		b.Reset()
		if err := s.Execute(&b, d); err != nil {
			return "", "", t.execError(err)
		}
		system = strings.TrimSpace(b.String())
	}
	return system, user, nil
}

func (t *Template) execError(err error) error {
	where := t.Source
	if t.Source == BuiltIn {
		where = "built-in " + t.Name + ".tmpl"
	}
	return fmt.Errorf("prompt template %s: %s", where, oneLine(err.Error()))
}

var templateFuncs = template.FuncMap{
	"index": strictIndex,
	"join":  strings.Join,
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
	"trim":  strings.TrimSpace,
}

// strictIndex is text/template's index, except that a missing map key is an error: a typo
// such as {{ index .Metadata "JobNmae" }} must fail before any call, not send an empty value.
func strictIndex(item any, keys ...any) (any, error) {
	v := reflect.ValueOf(item)
	for _, k := range keys {
		for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return nil, fmt.Errorf("index of nil")
			}
			v = v.Elem()
		}
		kv := reflect.ValueOf(k)
		switch v.Kind() {
		case reflect.Map:
			if !kv.IsValid() || !kv.Type().AssignableTo(v.Type().Key()) {
				return nil, fmt.Errorf("cannot index a map with %v", k)
			}
			e := v.MapIndex(kv)
			if !e.IsValid() {
				return nil, fmt.Errorf("no key %q (known keys: %s)", fmt.Sprint(k), mapKeys(v))
			}
			v = e
		case reflect.Slice, reflect.Array, reflect.String:
			if !kv.IsValid() || !kv.CanInt() {
				return nil, fmt.Errorf("cannot index with %v", k)
			}
			i := int(kv.Int())
			if i < 0 || i >= v.Len() {
				return nil, fmt.Errorf("index %d out of range (length %d)", i, v.Len())
			}
			v = v.Index(i)
		default:
			return nil, fmt.Errorf("cannot index a %s", v.Kind())
		}
	}
	return v.Interface(), nil
}

func mapKeys(v reflect.Value) string {
	var ks []string
	for _, k := range v.MapKeys() {
		ks = append(ks, fmt.Sprint(k.Interface()))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
