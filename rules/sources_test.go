package rules

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// corpusDir holds the development corpus (docs/corpus-notes.md): the yardstick the rules are
// measured with, kept beside the repository; corpusIndex is its index.
var (
	corpusDir   = filepath.Join("..", "..", "shared", "corpus", "real")
	corpusIndex = filepath.Join(corpusDir, "INDEX.tsv")
)

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
		eachYAML(t, fsys, func(path string, data []byte) error {
			files++
			for i, line := range strings.Split(string(data), "\n") {
				for _, u := range urlRE.FindAllString(line, -1) {
					if id, ok := corpus[sourceKey(u)]; ok {
						t.Errorf("%s:%d cites %s, the source of corpus excerpt %s: take the example from another thread", path, i+1, u, id)
					}
				}
			}
			return nil
		})
	}
	if files < 2 {
		t.Fatalf("read %d rule files: the walk missed the rules", files)
	}
}

// instanceRE finds what only one run prints: a time of day, an IPv4 address, a hexadecimal
// constant or a number of four digits or more (a pid, a step, a port, a sequence number). A
// message's fixed wording is the same in every source; a line that also repeats such details
// was copied from where they were printed.
var instanceRE = regexp.MustCompile(`\d\d:\d\d:\d\d|\d+\.\d+\.\d+\.\d+|0x[0-9a-fA-F]+|\d{4,}`)

// oneRun says whether a line holds a detail of one run. The decimals of a number below one
// are not: fp16 loss scales halve through the same powers of two in every run (0.0625).
func oneRun(line string) bool {
	for _, m := range instanceRE.FindAllStringIndex(line, -1) {
		if m[0] >= 2 && line[m[0]-2:m[0]] == "0." && (m[0] == 2 || !isDigit(line[m[0]-3])) {
			continue
		}
		return true
	}
	return false
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// TestExamplesAreNotCopiedFromTheCorpus: an example line, cited or not, that holds the
// details of one run (times, pids, addresses, step numbers) and is found verbatim in a corpus
// excerpt was copied from that excerpt or its thread (a line under 16 characters is too short
// to tell); the rule's examples must come from
// other real failures, or the corpus no longer measures anything the rule was not shown.
func TestExamplesAreNotCopiedFromTheCorpus(t *testing.T) {
	logs, err := filepath.Glob(filepath.Join(corpusDir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) == 0 {
		t.Skipf("no corpus at %s: nothing to compare the rules' examples with", corpusDir)
	}
	excerpts := make([]string, len(logs))
	for i, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		excerpts[i] = string(b)
	}
	check := func(where, text string) {
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if len(line) < 16 || !oneRun(line) {
				continue
			}
			for i, ex := range excerpts {
				if strings.Contains(ex, line) {
					t.Errorf("%s: example %q is verbatim in corpus excerpt %s: take a real line from an outside source", where, line, filepath.Base(logs[i]))
					break
				}
			}
		}
	}
	checkAll := func(where string, ex Examples) {
		for _, e := range slices.Concat(ex.Match, ex.NotMatch) {
			check(where, e.Text)
		}
	}
	seen := 0
	eachYAML(t, FS, func(path string, data []byte) error {
		f, err := Decode(data)
		if err != nil {
			return err
		}
		for _, r := range f.Rules {
			seen++
			checkAll(path+": "+r.ID, r.Examples)
		}
		for _, p := range f.Progress {
			checkAll(path+": "+p.ID, p.Examples)
		}
		for _, x := range f.Facts {
			checkAll(path+": "+x.ID, x.Examples)
		}
		return nil
	})
	eachYAML(t, VocabularyFS, func(path string, data []byte) error {
		v, err := DecodeVocabulary(data)
		if err != nil {
			return err
		}
		for _, c := range v.Categories {
			seen++
			for _, e := range slices.Concat(c.Examples.Match, c.Examples.NotMatch) {
				check(path+": "+c.Category, e)
			}
		}
		return nil
	})
	if seen < 20 {
		t.Fatalf("read %d rules and categories: the walk missed them", seen)
	}
}

// eachYAML calls fn with each YAML file of fsys; an error fails the test.
func eachYAML(t *testing.T, fsys fs.FS, fn func(path string, data []byte) error) {
	t.Helper()
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		return fn(path, data)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestInstanceDetails(t *testing.T) {
	for _, line := range []string{
		"[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE)",
		"[2023-06-07 22:16:00,018] [INFO] OVERFLOW!",
		"NET/IB : Got completion from peer 10.0.0.7<39138> with error 12",
		"epoch: 3451 loss: nan",
		"{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 9.773696745450087e-06, 'epoch': 0.53}",
	} {
		if !oneRun(line) {
			t.Errorf("%q holds the details of one run: not seen", line)
		}
	}
	for _, line := range []string{
		"RuntimeError: CUDA error: an illegal memory access was encountered",
		"OSError: [Errno 116] Stale file handle",
		"ORTE has lost communication with a remote daemon.",
		"| WARNING: overflow detected, setting loss scale to: 0.0625",
	} {
		if oneRun(line) {
			t.Errorf("%q is a fixed message: taken for one run's", line)
		}
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
