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

// TestReadmeCommandsAreValid keeps every command the README shows runnable: each `coroner ...`
// (or `kubectl coroner ...`) line of its shell blocks names an existing command whose flags parse
// and whose arguments are accepted, each `make TARGET` is a target of the Makefile, and each
// repository path a command names exists. The sample's own output is TestReadmeSampleOutput's.
func TestReadmeCommandsAreValid(t *testing.T) {
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)

	checked := 0
	for _, line := range shellBlockLines(string(data)) {
		for _, words := range shellCommands(line) {
			if len(words) > 1 && words[0] == "kubectl" && words[1] == "coroner" {
				words = words[1:]
			}
			switch {
			case len(words) == 0:
			case words[0] == "coroner":
				checked++
				cmd, rest, err := NewCmdRoot(&IOStreams{}).Find(words[1:])
				require.NoError(t, err, line)
				require.NotEqual(t, "coroner", cmd.Name(), "%q names no command", line)
				require.NoError(t, cmd.ParseFlags(rest), line)
				require.NoError(t, cmd.ValidateArgs(cmd.Flags().Args()), line)
			case words[0] == "make":
				checked++
				for _, target := range words[1:] {
					require.Regexp(t, regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(target)+`:`), string(makefile), "%q: no make target %s", line, target)
				}
			case words[0] == "kubectl":
				for _, w := range words {
					if strings.HasPrefix(w, "deploy/") {
						checked++
						_, err := os.Stat(filepath.Join(root, w))
						require.NoError(t, err, line)
					}
				}
			}
		}
	}
	require.GreaterOrEqual(t, checked, 12, "the README shows its commands in ```sh blocks")
}

// shellBlockLines returns the lines of a Markdown document's ```sh blocks, comments removed.
func shellBlockLines(doc string) []string {
	var lines []string
	in := false
	for _, l := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			in = l == "```sh"
		case in:
			lines = append(lines, l)
		}
	}
	return lines
}

// shellCommands splits a shell line into its commands (at |, &&, ; and a comment's #) and each
// command into words, honouring single and double quotes.
func shellCommands(line string) [][]string {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	flushWord := func() {
		if inWord {
			words = append(words, word.String())
		}
		word.Reset()
		inWord = false
	}
	flushCmd := func() {
		flushWord()
		cmds = append(cmds, words)
		words = nil
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord:
			flushCmd()
			return cmds
		case r == '|' || r == ';' || r == '&':
			flushCmd()
		case r == ' ' || r == '\t':
			flushWord()
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	flushCmd()
	return cmds
}
