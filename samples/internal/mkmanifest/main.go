// Command mkmanifest rewrites the "files" list of sample bundles' manifest.json: one entry per
// file under resources/, logs/ and flightrecorder/, sorted by path, with its size and sha256. Every other field of
// the manifest is kept as it is.
//
// Usage: go run ./samples/internal/mkmanifest samples/<name> [...]
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

type fileEntry struct {
	Path      string `json:"path"`
	Bytes     int64  `json:"bytes"`
	SHA256    string `json:"sha256"`
	Truncated bool   `json:"truncated"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mkmanifest BUNDLE_DIR [...]")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		if err := rewrite(dir); err != nil {
			fmt.Fprintf(os.Stderr, "mkmanifest: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

func rewrite(dir string) error {
	mpath := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(mpath)
	if err != nil {
		return err
	}
	// keep the other fields and their order: decode into an ordered list of raw members
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return fmt.Errorf("manifest.json is not a JSON object")
	}
	type member struct {
		key string
		val json.RawMessage
	}
	var members []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		members = append(members, member{k.(string), v})
	}

	var files []fileEntry
	for _, sub := range []string{"resources", "logs", "flightrecorder"} {
		root := filepath.Join(dir, sub)
		if _, err := os.Stat(root); os.IsNotExist(err) {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			files = append(files, fileEntry{Path: filepath.ToSlash(rel), Bytes: int64(len(b)), SHA256: hex.EncodeToString(sum[:])})
			return nil
		})
		if err != nil {
			return err
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	if files == nil {
		files = []fileEntry{}
	}
	fj, err := json.Marshal(files)
	if err != nil {
		return err
	}
	replaced := false
	for i := range members {
		if members[i].key == "files" {
			members[i].val = fj
			replaced = true
		}
	}
	if !replaced {
		members = append(members, member{"files", fj})
	}

	var buf bytes.Buffer
	buf.WriteString("{")
	for i, m := range members {
		if i > 0 {
			buf.WriteString(",")
		}
		k, _ := json.Marshal(m.key)
		buf.Write(k)
		buf.WriteString(":")
		buf.Write(m.val)
	}
	buf.WriteString("}")
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return err
	}
	out.WriteString("\n")
	return os.WriteFile(mpath, out.Bytes(), 0o644)
}
