package redact

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/frtrace"
	"github.com/coroner-dev/coroner/internal/yamlbound"
)

// Bundle reads the bundle at src once (a tarball as it decompresses, never extracted: see
// bundle.Stream), writes every file into dst redacted, then closes dst with src's manifest,
// redaction on and this run's counts added. It returns what was read (its warnings) and the
// manifest written. Resources are redacted as objects (env values, Secret data and
// annotations are found by their place) and as text; anything else line by line. On error,
// or when ctx is cancelled, it returns without closing dst: the caller aborts it, so nothing
// is written under the final name.
func (r *Redactor) Bundle(ctx context.Context, src string, lim bundle.Limits, dst *bundle.Writer) (*bundle.Bundle, *bundle.Manifest, error) {
	b, err := bundle.Stream(ctx, src, lim, func(f bundle.File, in io.Reader) error {
		if f.Path == bundle.ManifestName {
			return nil
		}
		return r.file(ctx, dst, f, in, lim)
	})
	if err != nil {
		return nil, nil, err
	}
	if b.Manifest != nil {
		// Collection errors quote API messages, which may hold a URL with credentials.
		for i := range b.Manifest.Errors {
			b.Manifest.Errors[i].Message = r.LineAt(bundle.ManifestName, fmt.Sprintf("errors[%d].message", i), b.Manifest.Errors[i].Message)
		}
	}
	for _, l := range b.Links { // after the files: each leads to one of them
		if err := dst.Symlink(l.Path, l.Target); err != nil {
			return nil, nil, err
		}
	}
	m := redactedManifest(b.Manifest, r.Summary(), r.Files())
	if err := dst.Close(m); err != nil {
		return nil, nil, err
	}
	return b, m, nil
}

// file copies one file into the new bundle, redacted; a file that is not text is decoded,
// decompressed or withheld (see binary.go).
func (r *Redactor) file(ctx context.Context, w *bundle.Writer, f bundle.File, raw io.Reader, lim bundle.Limits) error {
	br := bufio.NewReaderSize(raw, headSize)
	head, _ := br.Peek(headSize)
	if strings.HasPrefix(f.Path, bundle.FlightRecorderDir) && len(head) >= 2 && head[0] == 0x80 && head[1] == 2 {
		return r.flightRecord(ctx, w, f, br, lim)
	}
	switch kind := kindOf(head); kind {
	case "gzip":
		return r.gzipFile(ctx, w, f, br, lim)
	case "text":
	default:
		return r.binary(w, f.Path, br, kind)
	}
	in, _, _ := bundle.DecodeText(br)
	if strings.HasPrefix(f.Path, "resources/") && f.Size <= lim.MaxResourceBytes {
		data, err := io.ReadAll(io.LimitReader(in, 2*lim.MaxResourceBytes))
		if err != nil {
			return err
		}
		if out, ok := r.resource(f.Path, data, lim.MaxResourceBytes); ok {
			return w.WriteFile(f.Path, out)
		}
		in = bytes.NewReader(data)
	}
	// Logs, and resources that do not decode as an object: as text, which still masks every
	// secret that has a shape or a name.
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

// flightRecord redacts an NCCL Flight Recorder dump written as a pickle: it is decoded (the
// bounded reader of package frtrace), rewritten as its JSON form, which analyze reads as it
// read the pickle, and redacted as text. A pickle that does not decode is binary data.
func (r *Redactor) flightRecord(ctx context.Context, w *bundle.Writer, f bundle.File, in io.Reader, lim bundle.Limits) error {
	data, err := io.ReadAll(io.LimitReader(in, lim.MaxFileBytes))
	if err != nil {
		return err
	}
	flim := frtrace.DefaultLimits()
	if lim.MaxFileBytes > 0 && lim.MaxFileBytes < int64(flim.Pickle.MaxBytes) {
		flim.Pickle.MaxBytes = int(lim.MaxFileBytes)
	}
	d, err := frtrace.Decode(data, flim)
	if err != nil {
		return r.binary(w, f.Path, bytes.NewReader(data), "binary data (not a readable flight recorder dump: "+err.Error()+")")
	}
	js, err := frtrace.EncodeJSON(d)
	if err != nil {
		return err
	}
	r.note(bundle.RedactionFile{Path: f.Path, Action: ActionRewritten, Reason: "flight recorder dump (pickle)"})
	out, err := w.Create(f.Path)
	if err != nil {
		return err
	}
	if _, err := r.Copy(ctx, out, bytes.NewReader(js), f.Path); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// docSep separates the documents of a YAML stream.
var docSep = regexp.MustCompile(`(?m)^---[ \t]*\r?$\n?`)

// resource redacts a YAML or JSON object, or each object of a YAML stream. It keeps the
// original bytes when nothing was masked, and reports false when the data is not made of
// objects (the caller then redacts it as text). A YAML document is decoded within the bounds
// parse decodes a resource of at most maxBytes with (yamlbound.ForResources): what analyze
// skips, redact does not build either.
func (r *Redactor) resource(name string, data []byte, maxBytes int64) ([]byte, bool) {
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
					red, ok := r.document(name, doc, maxBytes)
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
	return r.document(name, data, maxBytes)
}

// document redacts one YAML or JSON object. A YAML document over the bounds of a resource of
// at most maxBytes (yamlbound.ForResources: aliases, values) is not decoded (the caller
// redacts it as text).
func (r *Redactor) document(name string, data []byte, maxBytes int64) ([]byte, bool) {
	isJSON := path.Ext(name) == ".json"
	var obj map[string]any
	if isJSON {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // resourceVersion-like integers stay exact
		if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
			return nil, false
		}
	} else {
		opts := yamlbound.ForResources(maxBytes)
		opts.UseNumber = true
		v, err := yamlbound.Decode(data, opts)
		m, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, false
		}
		obj = m
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
	n, _ := r.Masked()
	return n
}

// redactedManifest is the input's manifest with redaction on and the counts of this run added
// to those of an earlier redaction (its tokens were left as they were).
func redactedManifest(in *bundle.Manifest, summary []bundle.RedactionRule, files []bundle.RedactionFile) *bundle.Manifest {
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
	// An earlier redaction's notes stand for the files it left out or kept (a kept file is
	// read again, and noted again, by this one).
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Path] = true
	}
	var notes []bundle.RedactionFile
	if m.Redaction.Enabled || m.Options.Redact {
		for _, f := range m.Redaction.Files {
			if !seen[f.Path] {
				notes = append(notes, f)
			}
		}
	}
	notes = append(notes, files...)
	sortFiles(notes)
	m.Redaction = bundle.RedactionInfo{Enabled: true, Rules: []bundle.RedactionRule{}, Files: notes}
	for id, n := range counts {
		m.Redaction.Rules = append(m.Redaction.Rules, bundle.RedactionRule{ID: id, Count: n})
	}
	sort.Slice(m.Redaction.Rules, func(i, j int) bool { return m.Redaction.Rules[i].ID < m.Redaction.Rules[j].ID })
	m.Options.Redact = true
	return m
}
