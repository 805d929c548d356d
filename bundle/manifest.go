// Package bundle reads and describes coroner bundles: a directory or a gzip'd tar holding
// manifest.json, resources/ and logs/ (see docs/design.md). It uses only the standard library.
package bundle

import (
	"encoding/json"
	"fmt"
	"time"
)

// FormatVersion is the bundle format this version of coroner reads and writes.
const FormatVersion = 1

// Manifest describes a bundle: what was collected, how, and what could not be.
type Manifest struct {
	FormatVersion  int           `json:"formatVersion"`
	CoronerVersion string        `json:"coronerVersion,omitempty"`
	CollectedAt    *time.Time    `json:"collectedAt,omitempty"`
	ServerVersion  string        `json:"serverVersion,omitempty"`
	Target         Target        `json:"target"`
	Options        Options       `json:"options"`
	Files          []FileEntry   `json:"files"`
	Errors         []Gap         `json:"errors"`
	Redaction      RedactionInfo `json:"redaction"`

	// byPath indexes Files by path (the first entry of each), made by ParseManifest so that
	// File is not a scan of a manifest of 100,000 entries per call.
	byPath map[string]int
}

// Target names the object the bundle was collected for.
type Target struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// Options are the collection options recorded in the manifest.
type Options struct {
	Since       string `json:"since,omitempty"`
	TailLines   int64  `json:"tailLines,omitempty"`
	MaxLogBytes int64  `json:"maxLogBytes,omitempty"`
	Redact      bool   `json:"redact"`
}

// FileEntry is one file of the bundle as the collector wrote it.
type FileEntry struct {
	Path           string `json:"path"`
	Bytes          int64  `json:"bytes"`
	SHA256         string `json:"sha256,omitempty"`
	Truncated      bool   `json:"truncated,omitempty"`
	TruncatedBytes int64  `json:"truncatedBytes,omitempty"`
}

// Gap is something the collector could not collect, and why.
type Gap struct {
	Step    string `json:"step"`
	Object  string `json:"object"`
	Message string `json:"message"`
	// Limit is the limit that made the gap, when one did, so that the caller can say how to
	// raise it. It is not written to the manifest: the message names the limit.
	Limit LimitKind `json:"-"`
}

// RedactionInfo summarises redaction: rule ids and counts, never values.
type RedactionInfo struct {
	Enabled bool            `json:"enabled"`
	Rules   []RedactionRule `json:"rules"`
	// Files are the files redaction could not read as text (binary data, archives): left
	// out of the bundle, or kept as they were when the user asked for that.
	Files []RedactionFile `json:"files,omitempty"`
}

// RedactionFile says what redaction did with a file it could not read as text.
type RedactionFile struct {
	Path string `json:"path"`
	// Action is "withheld" (left out of the bundle), "kept unredacted", or "rewritten as
	// JSON" (a flight recorder pickle, redacted in its JSON form).
	Action string `json:"action"`
	// Reason says what the file is: "a zip archive", "binary data"...
	Reason string `json:"reason"`
}

// RedactionRule is how often one redaction rule fired.
type RedactionRule struct {
	ID    string `json:"id"`
	Count int    `json:"count"`
}

// ParseManifest decodes manifest.json and checks its format version.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if m.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("formatVersion %d is not supported (this coroner reads %d)", m.FormatVersion, FormatVersion)
	}
	m.byPath = make(map[string]int, len(m.Files))
	for i, f := range m.Files {
		if _, ok := m.byPath[f.Path]; !ok {
			m.byPath[f.Path] = i
		}
	}
	return &m, nil
}

// File returns the manifest entry for path, or nil.
func (m *Manifest) File(path string) *FileEntry {
	if m == nil {
		return nil
	}
	if i, ok := m.byPath[path]; ok && i < len(m.Files) && m.Files[i].Path == path {
		return &m.Files[i]
	}
	for i := range m.Files {
		if m.Files[i].Path == path {
			return &m.Files[i]
		}
	}
	return nil
}
