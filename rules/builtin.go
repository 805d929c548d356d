package rules

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io/fs"
	"sort"
)

//go:generate go test -run TestBuiltinIsGenerated -update .

// Named is a decoded rule file and its path in FS.
type Named struct {
	Path string
	File *File
}

// Builtin returns the built-in rule files as Decode reads them, from Go values written at
// build time (builtin_gen.go), sorted by path, and true; or false when the embedded files
// are not those the values were made from (a file edited since `go generate ./rules`), and
// the caller decodes FS. Decoding the YAML through JSON and the schema cost about 70 ms of
// CPU a process; these values cost none, and a stale copy is never used.
func Builtin() ([]Named, bool) {
	if digestFS(FS) != builtinDigest {
		return nil, false
	}
	return builtinFiles(), true
}

// digestFS is the SHA-256 of the names and contents of the rule files at the root of fsys,
// sorted by name.
func digestFS(fsys fs.FS) string {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return ""
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	h := sha256.New()
	var n [8]byte
	for _, e := range entries {
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return ""
		}
		for _, b := range [][]byte{[]byte(e.Name()), data} {
			binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
			h.Write(n[:])
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ptr returns a pointer to a copy of v (the generated values' enabled: true/false).
func ptr[T any](v T) *T { return &v }
