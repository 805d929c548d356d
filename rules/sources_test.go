package rules

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// corpusIndex is the development corpus's index (docs/corpus-notes.md): the yardstick the
// rules are measured with, kept beside the repository.
var corpusIndex = filepath.Join("..", "..", "shared", "corpus", "real", "INDEX.tsv")

// urlRE finds the URLs a rule file's comments cite.
var urlRE = regexp.MustCompile(`https?://[^\s'"<>)\]]+`)

// ghThreadRE reads a GitHub issue, pull request or discussion: a repository moved to another
// owner (microsoft/DeepSpeed, deepspeedai/DeepSpeed) keeps its threads' numbers.
var ghThreadRE = regexp.MustCompile(`^github\.com/[^/]+/([^/]+)/(?:issues|pull|discussions)/(\d+)`)

// sourceKey is what two URLs of the same thread or page have in common.
func sourceKey(u string) string {
	u = strings.ToLower(u)
	u, _, _ = strings.Cut(u, "#")
	u, _, _ = strings.Cut(u, "?")
	u = strings.TrimRight(u, "/.,;:")
	u = strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	u = strings.TrimPrefix(u, "www.")
	if m := ghThreadRE.FindStringSubmatch(u); m != nil {
		return "github:" + m[1] + "#" + m[2]
	}
	return u
}

// TestExamplesAreNotFromTheCorpus: the corpus measures the rules, so no rule file may cite a
// thread a corpus excerpt was copied from as the source of its examples (a rule written from
// an excerpt's wording scores on the corpus and nowhere else).
func TestExamplesAreNotFromTheCorpus(t *testing.T) {
	f, err := os.Open(corpusIndex)
	if os.IsNotExist(err) {
		t.Skipf("no corpus at %s: nothing to compare the rules' sources with", corpusIndex)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	corpus := map[string]string{} // source key -> excerpt id
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	col := -1
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "\t")
		if col < 0 {
			for i, c := range cells {
				if c == "source" {
					col = i
				}
			}
			if col < 0 {
				t.Fatalf("%s has no source column", corpusIndex)
			}
			continue
		}
		if col < len(cells) && cells[col] != "" {
			corpus[sourceKey(cells[col])] = cells[0]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(corpus) == 0 {
		t.Fatalf("%s lists no sources", corpusIndex)
	}
	files := 0
	for _, fsys := range []fs.FS{FS, VocabularyFS} {
		err = fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			files++
			data, err := fs.ReadFile(fsys, path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				for _, u := range urlRE.FindAllString(line, -1) {
					if id, ok := corpus[sourceKey(u)]; ok {
						t.Errorf("%s:%d cites %s, the source of corpus excerpt %s: take the example from another thread", path, i+1, u, id)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 2 {
		t.Fatalf("read %d rule files: the walk missed the rules", files)
	}
}

func TestSourceKey(t *testing.T) {
	same := [][2]string{
		{"https://github.com/microsoft/DeepSpeed/issues/3232", "https://github.com/deepspeedai/DeepSpeed/issues/3232#issuecomment-1"},
		{"https://github.com/NVIDIA/nccl/pull/1405", "http://www.github.com/nvidia/nccl/issues/1405/"},
		{"https://example.org/notes.html?x=1", "https://example.org/notes.html"},
	}
	for _, p := range same {
		if sourceKey(p[0]) != sourceKey(p[1]) {
			t.Errorf("%s and %s are one source: %q != %q", p[0], p[1], sourceKey(p[0]), sourceKey(p[1]))
		}
	}
	if sourceKey("https://github.com/NVIDIA/nccl/issues/1405") == sourceKey("https://github.com/NVIDIA/nccl/issues/140") {
		t.Error("two threads have one key")
	}
}
