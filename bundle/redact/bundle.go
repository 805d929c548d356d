package redact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/coroner-dev/coroner/bundle"
)

// Bundle writes every file of src into dst redacted, then closes dst with src's manifest,
// redaction on and this run's counts added, and returns that manifest. Resources are redacted as objects (env values,
// Secret data and annotations are found by their place), anything else line by line. On
// error, or when ctx is cancelled, it returns without closing dst: the caller aborts it, so
// nothing is written under the final name.
func (r *Redactor) Bundle(ctx context.Context, src *bundle.Bundle, dst *bundle.Writer) (*bundle.Manifest, error) {
	for _, f := range src.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if f.Path == bundle.ManifestName {
			continue
		}
		if err := r.file(ctx, dst, src, f); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	if src.Manifest != nil {
		// Collection errors quote API messages, which may hold a URL with credentials.
		for i := range src.Manifest.Errors {
			src.Manifest.Errors[i].Message = r.LineAt(bundle.ManifestName, fmt.Sprintf("errors[%d].message", i), src.Manifest.Errors[i].Message)
		}
	}
	m := redactedManifest(src.Manifest, r.Summary())
	if err := dst.Close(m); err != nil {
		return nil, err
	}
	return m, nil
}

// file copies one file into the new bundle, redacted.
func (r *Redactor) file(ctx context.Context, w *bundle.Writer, b *bundle.Bundle, f bundle.File) error {
	if strings.HasPrefix(f.Path, "resources/") && f.Size <= b.Limits.MaxResourceBytes {
		data, err := fs.ReadFile(b.FS, f.Path)
		if err != nil {
			return err
		}
		if out, ok := r.resource(f.Path, data); ok {
			return w.WriteFile(f.Path, out)
		}
	}
	// Logs, and resources that do not decode as an object: as text, which still masks every
	// secret that has a shape or a name.
	in, err := b.FS.Open(f.Path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := w.Create(f.Path)
	if err != nil {
		return err
	}
	if _, err := r.Copy(ctx, out, in, f.Path); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// docSep separates the documents of a YAML stream.
var docSep = regexp.MustCompile(`(?m)^---[ \t]*\r?$\n?`)

// resource redacts a YAML or JSON object, or each object of a YAML stream. It keeps the
// original bytes when nothing was masked, and reports false when the data is not made of
// objects (the caller then redacts it as text).
func (r *Redactor) resource(name string, data []byte) ([]byte, bool) {
	if path.Ext(name) != ".json" {
		if seps := docSep.FindAllIndex(data, -1); len(seps) > 0 && !(len(seps) == 1 && seps[0][0] == 0) {
			var out []byte
			start := 0
			for i := 0; i <= len(seps); i++ {
				end := len(data)
				if i < len(seps) {
					end = seps[i][0]
				}
				doc := data[start:end]
				if len(bytes.TrimSpace(doc)) > 0 {
					red, ok := r.document(name, doc)
					if !ok {
						return nil, false
					}
					out = append(out, red...)
				}
				if i < len(seps) {
					out = append(out, "---\n"...)
					start = seps[i][1]
				}
			}
			return out, true
		}
	}
	return r.document(name, data)
}

// document redacts one YAML or JSON object.
func (r *Redactor) document(name string, data []byte) ([]byte, bool) {
	js := data
	isJSON := path.Ext(name) == ".json"
	if !isJSON {
		var err error
		if js, err = yaml.YAMLToJSON(data); err != nil {
			return nil, false
		}
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // resourceVersion-like integers stay exact
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return nil, false
	}
	before := r.total()
	r.ObjectAt(name, obj)
	if r.total() == before {
		return data, true
	}
	out, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return nil, false
	}
	if isJSON {
		return append(out, '\n'), true
	}
	y, err := yaml.JSONToYAML(out)
	if err != nil {
		return nil, false
	}
	return y, true
}

// total is how many secrets were masked so far.
func (r *Redactor) total() int {
	n := 0
	for _, s := range r.Summary() {
		n += s.Count
	}
	return n
}

// redactedManifest is the input's manifest with redaction on and the counts of this run added
// to those of an earlier redaction (its tokens were left as they were).
func redactedManifest(in *bundle.Manifest, summary []bundle.RedactionRule) *bundle.Manifest {
	m := &bundle.Manifest{FormatVersion: bundle.FormatVersion}
	if in != nil {
		*m = *in
		m.Files = append([]bundle.FileEntry(nil), in.Files...)
	}
	counts := map[string]int{}
	if m.Redaction.Enabled || m.Options.Redact {
		for _, r := range m.Redaction.Rules {
			counts[r.ID] += r.Count
		}
	}
	for _, r := range summary {
		counts[r.ID] += r.Count
	}
	m.Redaction = bundle.RedactionInfo{Enabled: true, Rules: []bundle.RedactionRule{}}
	for id, n := range counts {
		m.Redaction.Rules = append(m.Redaction.Rules, bundle.RedactionRule{ID: id, Count: n})
	}
	sort.Slice(m.Redaction.Rules, func(i, j int) bool { return m.Redaction.Rules[i].ID < m.Redaction.Rules[j].ID })
	m.Options.Redact = true
	return m
}
