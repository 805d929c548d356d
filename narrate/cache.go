package narrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/coroner-dev/coroner/bundle"
)

// Bounds on stored answers read back.
const (
	maxCacheEntryBytes  = 1 << 20
	maxAnswersFileBytes = 64 << 20
)

// Entry is a stored answer to one question.
type Entry struct {
	// Key names the question: the model, the prompt's hash, the answer format and the options.
	Key        string     `json:"key"`
	Model      string     `json:"model"`
	Digest     string     `json:"digest"`
	PromptHash string     `json:"promptHash"`
	Options    GenOptions `json:"options"`
	Text       string     `json:"text"`
	DoneReason string     `json:"doneReason,omitempty"`
	// PromptTokens is the model's count of the prompt's tokens (0 when not known).
	PromptTokens int `json:"promptTokens,omitempty"`
}

// questionKey hashes what makes two questions the same. The model's digest is not in it: a
// cached answer records the digest it came from, and is used only while the server still
// serves that digest (or cannot be asked).
func questionKey(model, promptHash string, format json.RawMessage, o GenOptions) string {
	h := sha256.New()
	opts, _ := json.Marshal(o)
	for _, part := range [][]byte{[]byte(model), []byte(promptHash), format, opts} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Cache keeps answers in a directory, one file per question
// (${XDG_CACHE_HOME:-~/.cache}/coroner/llm/ for the CLI).
type Cache struct {
	Dir string
}

// Get returns the stored answer to a question, or nil.
func (c *Cache) Get(ctx context.Context, key string) (*Entry, error) {
	p := filepath.Join(c.Dir, key+".json")
	var e Entry
	if err := readJSON(ctx, p, maxCacheEntryBytes, &e); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if e.Key != key {
		return nil, fmt.Errorf("answer cache %s: holds the answer to another question", p)
	}
	return &e, nil
}

// Put stores an answer.
func (c *Cache) Put(ctx context.Context, e *Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	return writeJSON(ctx, filepath.Join(c.Dir, e.Key+".json"), e)
}

// Answers is a file of recorded answers (--llm-record writes it, --llm-replay answers from
// it), for test suites that must not need a model.
type Answers struct {
	path    string
	entries map[string]*Entry
}

type answersFile struct {
	FormatVersion int      `json:"formatVersion"`
	Answers       []*Entry `json:"answers"`
}

// LoadAnswers reads a file of answers. A file that does not exist is empty unless mustExist;
// a file to record into (not mustExist) must not be a symbolic link, which Save would replace.
func LoadAnswers(ctx context.Context, path string, mustExist bool) (*Answers, error) {
	a := &Answers{path: path, entries: map[string]*Entry{}}
	if !mustExist {
		if err := notALink(path); err != nil {
			return nil, err
		}
	}
	var f answersFile
	if err := readJSON(ctx, path, maxAnswersFileBytes, &f); err != nil {
		if errors.Is(err, fs.ErrNotExist) && !mustExist {
			return a, nil
		}
		return nil, err
	}
	if f.FormatVersion != 1 {
		return nil, fmt.Errorf("%s: answers file format version %d, want 1", path, f.FormatVersion)
	}
	for _, e := range f.Answers {
		if e == nil || e.Key == "" {
			return nil, fmt.Errorf("%s: an answer without a key", path)
		}
		a.entries[e.Key] = e
	}
	return a, nil
}

// Path is the file's path.
func (a *Answers) Path() string { return a.path }

// Get returns the recorded answer to a question, or nil.
func (a *Answers) Get(key string) *Entry { return a.entries[key] }

// Put records an answer, replacing the one to the same question.
func (a *Answers) Put(e *Entry) { a.entries[e.Key] = e }

// Save writes the file, answers sorted by key so that it diffs well.
func (a *Answers) Save(ctx context.Context) error {
	f := answersFile{FormatVersion: 1, Answers: []*Entry{}}
	for _, e := range a.entries {
		f.Answers = append(f.Answers, e)
	}
	sort.Slice(f.Answers, func(i, j int) bool { return f.Answers[i].Key < f.Answers[j].Key })
	return writeJSON(ctx, a.path, &f)
}

// readJSON reads a JSON file of at most limit bytes; an answers file can be tens of MiB, so
// the read stops when ctx ends.
func readJSON(ctx context.Context, path string, limit int64, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(bundle.ContextReader(ctx, f), limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// notALink refuses a path that is a symbolic link: the file written there would replace the
// link, not what it points to (and coroner writes through no link).
func notALink(path string) error {
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link: coroner does not replace or write through links; name the file itself", path)
	}
	return nil
}

// writeJSON writes to a temporary file beside path and renames it: a reader never sees half
// an answer, and a write interrupted by ctx leaves nothing behind. A link at path is refused.
func writeJSON(ctx context.Context, path string, v any) error {
	if err := notALink(path); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
