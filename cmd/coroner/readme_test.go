package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeSampleOutput keeps the README honest: the summary it shows for the sample is what
// coroner prints today, line for line.
func TestReadmeSampleOutput(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	const cmd = "$ coroner analyze samples/pytorchjob-cuda-oom-rank\n"
	_, block, ok := strings.Cut(string(data), cmd)
	require.True(t, ok, "the README shows %q", cmd)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	out := requireExit(t, exitOK, "", "analyze", filepath.Join(samplesDir, "pytorchjob-cuda-oom-rank"), "--no-cache")
	require.Equal(t, out, block, "README.md's sample output differs from what coroner prints: paste the new output")
}

// citedTest is a test or fuzz target named in the documentation: `TestX`, or `pkg.TestX` for
// the one in package pkg.
var citedTest = regexp.MustCompile(`\b(?:([a-z][a-z0-9]*)\.)?((?:Test|Fuzz)[A-Z0-9_][A-Za-z0-9_]*)\b`)

// TestReadmeCitesTestsThatExist keeps the documentation's claims tied to tests: every test the
// README or docs/ name beside a claim ("(`TestOutputIsNeverTheInput`)") is a test function of
// the module, in the package named when the citation names one, so a renamed or deleted test
// cannot leave a claim standing on nothing.
func TestReadmeCitesTestsThatExist(t *testing.T) {
	root := filepath.Join("..", "..")
	declared := declaredTests(t, root)

	docs := []string{filepath.Join(root, "README.md")}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	docs = append(docs, more...)

	cited, dangling := 0, []string{}
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, doc)
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range citedTest.FindAllStringSubmatch(line, -1) {
				cited++
				pkg, name := m[1], m[2]
				dirs := declared[name]
				ok := len(dirs) > 0
				if ok && pkg != "" {
					ok = false
					for _, d := range dirs {
						ok = ok || path.Base(d) == pkg
					}
				}
				if !ok {
					dangling = append(dangling, fmt.Sprintf("%s:%d: %s (declared in: %v)", rel, i+1, m[0], dirs))
				}
			}
		}
	}
	require.Greater(t, cited, 20, "the README names the tests behind its claims")
	require.Empty(t, dangling, "the documentation cites tests the module does not have")
}

// declaredTests maps each top-level Test or Fuzz function of the module's test files to the
// directories (slash-separated, relative to root) that declare it.
func declaredTests(t *testing.T, root string) map[string][]string {
	t.Helper()
	declared := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			if name := fn.Name.Name; strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Fuzz") {
				declared[name] = append(declared[name], filepath.ToSlash(dir))
			}
		}
		return nil
	})
	require.NoError(t, err)
	return declared
}
