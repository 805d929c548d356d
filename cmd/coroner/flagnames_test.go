package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagMention is a CLI flag named in a text: "--max-file-bytes" at the start or after a
// non-word character (so "a--b" and "---" are not).
var flagMention = regexp.MustCompile(`(^|[^A-Za-z0-9_-])--[A-Za-z]`)

// otherProgramArg is a literal that is one argument of another program, "--cert-dir=" (the
// test cluster starts etcd and kube-apiserver) or curl's "--user" (a redaction rule looks for
// the password after it): a flag of theirs, data, not a message of ours.
var otherProgramArg = regexp.MustCompile(`^--[a-z][a-z0-9-]*(?:=\S*)?$`)

// TestLibrariesNameNoFlag: libraries say which limit or mistake an error is about and the CLI
// says which flag changes it (docs/design.md), so that a library serves any front end. It
// reads every string literal of every Go file outside cmd/ and its tests; comments may name
// flags (a doc comment saying which flag sets a field helps the reader).
func TestLibrariesNameNoFlag(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "cmd" || d.Name() == "testdata" || (rel != "." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil // data written as Go (the built-in rule files' text), as testdata is
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || otherProgramArg.MatchString(s) {
				return true
			}
			if flagMention.MatchString(s) {
				p := fset.Position(lit.Pos())
				rp, _ := filepath.Rel(root, p.Filename)
				t.Errorf("%s:%d: %s names a CLI flag: name the limit or the mistake (a typed error, a Kind) and let cmd/coroner name the flag", filepath.ToSlash(rp), p.Line, lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d Go files: the walk missed the module", files)
	}
}

func TestFlagMention(t *testing.T) {
	for s, want := range map[string]bool{
		"raise it with --max-file-bytes": true,
		"--regex: %v":                    true,
		"(use --regex)":                  true,
		"a--b":                           false,
		"---- cut ----":                  false,
		"-- 2":                           false,
		"--cert-dir=":                    true, // a mention; otherProgramArg lets it go
	} {
		if flagMention.MatchString(s) != want {
			t.Errorf("flagMention(%q) = %v, want %v", s, !want, want)
		}
	}
	if otherProgramArg.MatchString("raise it with --max-bytes=1Gi") {
		t.Error("a message with a flag=value in it passed as another program's argument")
	}
}
