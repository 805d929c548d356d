package analyze

import (
	"bytes"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/coroner-dev/coroner/rules"
)

// Vocabulary is the second tier's model (see rules.Vocabulary): weighted words and phrases
// per category, scored over a log's terminal failure when no specific rule explained it.
// It is transparent on purpose: a classification lists the terms that decided it.
type Vocabulary struct {
	minScore, minMargin, contextWeight float64
	cats                               []*vocabCategory
	// terms holds every category's terms, longest first (overlaps go to the longer term).
	terms []vocabTerm
}

type vocabCategory struct {
	category    Category
	title       string
	fault       Fault
	retry       Retry
	remediation string
	examples    rules.VocabularyExamples
	source      string
}

type vocabTerm struct {
	// text is lower case; wordStart and wordEnd say whether its first and last bytes are word
	// characters, which must then not continue outside the match.
	text               string
	cat                int
	weight             float64
	wordStart, wordEnd bool
	// raised: counted only when the failure shows that the process failed (rules.Term).
	raised bool
}

// Classification is what the vocabulary made of a failure text.
type Classification struct {
	// Category is the best-scoring category, CategoryUnknown when none reached the minimum
	// score with the minimum margin ("could not tell").
	Category Category
	// Best is the best-scoring category whatever the thresholds, and Score its score;
	// RunnerUp and RunnerUpScore the second.
	Best, RunnerUp       Category
	Score, RunnerUpScore float64
	// Terms are the best category's terms found, strongest first, as the text wrote them.
	Terms []MatchedTerm
	// Frame, when set, is what named the category instead of terms: the words of the
	// innermost frame of a traceback cut before its exception line (cutframe.go).
	Frame string
	// Call, when set, is what named the category instead of terms: an installed package's
	// call that constructed a class with an argument it does not take (libcall.go).
	Call *libraryCall
}

// MatchedTerm is one term found in a failure text.
type MatchedTerm struct {
	Text   string
	Weight float64
	// Context: found only in the lines around the failure, counted at the context weight.
	Context bool
}

// Classified says whether a category was named.
func (c Classification) Classified() bool { return c.Category != CategoryUnknown && c.Category != "" }

// DefaultVocabulary loads the built-in vocabulary.
func DefaultVocabulary() (*Vocabulary, error) {
	return LoadVocabulary(rules.VocabularyFS, "vocabulary")
}

// LoadVocabulary reads every *.yaml file of dir in fsys as one vocabulary: the thresholds of
// the first file that sets them, the categories of all. Unknown fields, categories, faults
// and retries, empty terms, zero weights and a term listed twice in a category are errors.
func LoadVocabulary(fsys fs.FS, dir string) (*Vocabulary, error) {
	files, err := readYAMLDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	v := &Vocabulary{}
	seen := map[Category]string{}
	for _, f := range files {
		p := f.path
		vf, err := rules.DecodeVocabulary(f.data)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p, err)
		}
		if v.minScore == 0 {
			v.minScore, v.minMargin, v.contextWeight = vf.MinScore, vf.MinMargin, vf.ContextWeight
		}
		for i, ce := range vf.Categories {
			if ce == nil {
				return nil, fmt.Errorf("%s: category %d is empty", p, i+1)
			}
			c, err := newVocabCategory(ce)
			if err != nil {
				return nil, fmt.Errorf("%s: category %q: %w", p, ce.Category, err)
			}
			if prev, ok := seen[c.category]; ok {
				return nil, fmt.Errorf("%s: category %q is already in %s", p, c.category, prev)
			}
			seen[c.category] = p
			c.source = p
			idx := len(v.cats)
			v.cats = append(v.cats, c)
			for _, t := range ce.Terms {
				lt := strings.ToLower(strings.TrimSpace(t.Text))
				v.terms = append(v.terms, vocabTerm{text: lt, cat: idx, weight: t.Weight,
					wordStart: isAlnum(lt[0]), wordEnd: isAlnum(lt[len(lt)-1]), raised: t.Raised})
			}
		}
	}
	if v.minScore <= 0 {
		return nil, fmt.Errorf("%s: minScore must be above 0", dir)
	}
	if v.minMargin < 0 || v.contextWeight < 0 || v.contextWeight > 1 {
		return nil, fmt.Errorf("%s: minMargin must be at least 0 and contextWeight between 0 and 1", dir)
	}
	sort.SliceStable(v.terms, func(i, j int) bool { return len(v.terms[i].text) > len(v.terms[j].text) })
	return v, nil
}

func newVocabCategory(ce *rules.VocabularyEntry) (*vocabCategory, error) {
	var problems []string
	problem := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	c := &vocabCategory{title: ce.Title, remediation: ce.Remediation, examples: ce.Examples}
	var err error
	c.category, err = oneOf("category", ce.Category, Categories)
	problem(err)
	if c.category == CategoryUnknown {
		problems = append(problems, "unknown is what the vocabulary says when it cannot tell; it has no terms")
	}
	c.fault, err = oneOf("fault", ce.Fault, Faults)
	problem(err)
	c.retry, err = oneOf("retry", ce.Retry, Retries)
	problem(err)
	if c.title == "" {
		problems = append(problems, "title is empty")
	}
	if len(ce.Terms) == 0 {
		problems = append(problems, "no terms")
	}
	dup := map[string]bool{}
	for i, t := range ce.Terms {
		lt := strings.ToLower(strings.TrimSpace(t.Text))
		switch {
		case lt == "":
			problems = append(problems, fmt.Sprintf("term %d is empty", i+1))
		case t.Weight == 0:
			problems = append(problems, fmt.Sprintf("term %q has no weight", t.Text))
		case dup[lt]:
			problems = append(problems, fmt.Sprintf("term %q is listed twice", t.Text))
		}
		dup[lt] = true
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return c, nil
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

// isAlnum says whether a term's edge is a word that must not continue: "torch_" ends in
// "_" on purpose, to match a prefix.
func isAlnum(b byte) bool { return b != '_' && isWordByte(b) }

// lowerASCII lower-cases ASCII letters only, so byte offsets stay those of s.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// echoedCommand finds a command line that a wrapper repeats when the command it ran failed:
// Python's CalledProcessError ("Command '...' returned non-zero exit status 1", the command a
// string or an argv list; "died with <Signals.SIGKILL: 9>." when a signal ended it, as
// torch.distributed.launch raises it for a rank killed by the OOM killer), the "Command
// \"...\"" of SageMaker's ExecuteUserScriptError, and
// the argv list DeepSpeed's launcher prints before "exits with return code". Group 1, 2 or 3
// is the command. Its words are the program's arguments (--master_port, s3://bucket/...), not
// words of the failure, so the vocabulary does not read inside it; a term that names the
// whole command ("['ninja', '-v']", the build of an extension) still counts.
var echoedCommand = regexp.MustCompile(`\bcommand '([^\n]*?)' (?:returned non-zero exit status|died with <signals\.)|\bcommand "([^"\n]*)"|(\['[^\n]*?'\]) exits with return code`)

// echoedCommands returns the spans of the echoed commands of low (lower case).
func echoedCommands(low string) [][2]int {
	var spans [][2]int
	for _, loc := range echoedCommand.FindAllStringSubmatchIndex(low, -1) {
		for g := 1; g < len(loc)/2; g++ {
			if loc[2*g] >= 0 && loc[2*g+1] > loc[2*g] {
				spans = append(spans, [2]int{loc[2*g], loc[2*g+1]})
			}
		}
	}
	return spans
}

// inEcho says whether the match [s, e) reads inside an echoed command without naming all of it.
func inEcho(spans [][2]int, s, e int) bool {
	for _, sp := range spans {
		if s < sp[1] && e > sp[0] && !(s <= sp[0] && e >= sp[1]) {
			return true
		}
	}
	return false
}

// listedNames returns the spans of the NAMESPACE and NAME columns of the rows of a kubectl
// get pods listing in text: a pod's name is what its owner called it (an "nccl-tests-efa"
// launcher, an "oom-test" job, a "cuda-smoke" pod), not a word of how it failed, so the
// vocabulary does not read inside it; the row's STATUS and what follows it still count.
func listedNames(text string) [][2]int {
	var spans [][2]int
	for off := 0; off < len(text); {
		end := strings.IndexByte(text[off:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += off
		}
		line := text[off:end]
		if strings.IndexByte(line, '/') >= 0 {
			if r, ok := listedRow([]byte(line)); ok && podName(r.name) && len(r.status) > 0 && r.status[0] >= 'A' && r.status[0] <= 'Z' {
				from := strings.Index(line, string(r.name))
				if r.ns != nil {
					from = strings.Index(line, string(r.ns))
				}
				if to := strings.Index(line, string(r.name)); from >= 0 && to >= 0 {
					spans = append(spans, [2]int{off + from, off + to + len(r.name)})
				}
			}
		}
		off = end + 1
	}
	return spans
}

// podName says whether w can be a pod's name as a listing prints it: a DNS subdomain, lower
// case letters, digits, '-' and '.', after kubectl's "pod/" when it names the kind. A line of
// another program that happens to have a listing row's shape ("NCCL 1/8 ranks 0 ...") keeps
// its words.
func podName(w []byte) bool {
	w = bytes.TrimPrefix(w, []byte("pod/"))
	if len(w) == 0 || w[0] == '-' || w[0] == '.' {
		return false
	}
	for _, b := range w {
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '.') {
			return false
		}
	}
	return true
}

// inSpan says whether the match [s, e) overlaps one of spans.
func inSpan(spans [][2]int, s, e int) bool {
	for _, sp := range spans {
		if s < sp[1] && e > sp[0] {
			return true
		}
	}
	return false
}

type termHit struct {
	term       int
	start, end int
}

// Classify scores a failure text (the terminal failure's own lines) and the lines around it
// (context, counted at the vocabulary's context weight) against every category.
func (v *Vocabulary) Classify(failure, context string) Classification {
	return v.classify(failure, context, true)
}

// classify is Classify of a failure that shows on its own that the process failed (raised),
// or does not: then the terms marked raised do not count.
func (v *Vocabulary) classify(failure, context string, raised bool) Classification {
	text := failure + "\n" + context
	low := lowerASCII(text)
	echoes := echoedCommands(low)
	names := listedNames(text) // the same offsets as low's; a pod's name is lower case, a status capitalised
	var accepted []termHit
	for i, t := range v.terms { // longest first
		if t.raised && !raised {
			continue
		}
		for from := 0; from < len(low); {
			j := strings.Index(low[from:], t.text)
			if j < 0 {
				break
			}
			s, e := from+j, from+j+len(t.text)
			from = s + 1
			if t.wordStart && s > 0 && isWordByte(low[s-1]) || t.wordEnd && e < len(low) && isWordByte(low[e]) || inEcho(echoes, s, e) || inSpan(names, s, e) {
				continue
			}
			// A shorter term inside a longer one that matched says nothing more.
			inside := false
			for _, a := range accepted {
				if a.start <= s && e <= a.end && a.end-a.start > e-s {
					inside = true
					break
				}
			}
			if !inside {
				accepted = append(accepted, termHit{term: i, start: s, end: e})
			}
		}
	}
	// Each term counts once: fully when the failure's lines hold it, else at the context weight.
	best := map[int]termHit{}
	for _, h := range accepted {
		if prev, ok := best[h.term]; !ok || h.start < prev.start {
			best[h.term] = h
		}
	}
	scores := make([]float64, len(v.cats))
	matched := make([][]MatchedTerm, len(v.cats))
	for i := range v.terms { // in term order: deterministic
		h, ok := best[i]
		if !ok {
			continue
		}
		t := v.terms[i]
		w := t.weight
		inContext := h.start > len(failure)
		if inContext {
			w *= v.contextWeight
		}
		if w == 0 {
			continue
		}
		scores[t.cat] += w
		matched[t.cat] = append(matched[t.cat], MatchedTerm{Text: text[h.start:h.end], Weight: w, Context: inContext})
	}
	c := Classification{Category: CategoryUnknown, Best: CategoryUnknown, RunnerUp: CategoryUnknown}
	bi, ri := -1, -1
	for i, s := range scores {
		switch {
		case bi < 0 || s > scores[bi]:
			bi, ri = i, bi
		case ri < 0 || s > scores[ri]:
			ri = i
		}
	}
	if bi < 0 || scores[bi] <= 0 {
		return c
	}
	c.Best, c.Score = v.cats[bi].category, scores[bi]
	if ri >= 0 && scores[ri] > 0 {
		c.RunnerUp, c.RunnerUpScore = v.cats[ri].category, scores[ri]
	}
	terms := matched[bi]
	sort.SliceStable(terms, func(i, j int) bool { return terms[i].Weight > terms[j].Weight })
	c.Terms = terms
	if c.Score >= v.minScore && c.Score-c.RunnerUpScore >= v.minMargin {
		c.Category = c.Best
	}
	return c
}

// category returns the vocabulary's entry of a category.
func (v *Vocabulary) category(c Category) *vocabCategory {
	for _, vc := range v.cats {
		if vc.category == c {
			return vc
		}
	}
	return nil
}

// Explain says in one sentence how a classification was decided: the terms, the scores and
// the thresholds.
func (v *Vocabulary) Explain(c Classification) string {
	var b strings.Builder
	if c.Call != nil {
		fmt.Fprintf(&b, "The exception is %s constructed with a keyword argument it does not take, in a call made inside an installed package (%s): "+
			"one package calls another, or forwards its caller's arguments, with an argument the installed version does not know, "+
			"most often because the two were installed at versions that do not fit together. ", c.Call.class, c.Call.pkg)
		b.WriteString("This is a guess from where the call was made, not from the error's words: check the packages' versions before acting on it.")
		return b.String()
	}
	if c.Frame != "" {
		fmt.Fprintf(&b, "The log ends inside a traceback, before its exception line; its innermost frame (%q) is where %s is most often raised. ", c.Frame, c.Category)
		b.WriteString("This is a guess from where the process failed, not from its error: check the evidence before acting on it.")
		return b.String()
	}
	if c.Classified() {
		fmt.Fprintf(&b, "The second tier classified this failure by its words: %s scored %s", c.Best, fmtScore(c.Score))
	} else {
		fmt.Fprintf(&b, "The second tier could not tell what this failure is: the best category, %s, scored %s", c.Best, fmtScore(c.Score))
	}
	if c.RunnerUp != CategoryUnknown {
		fmt.Fprintf(&b, " against %s for %s", fmtScore(c.RunnerUpScore), c.RunnerUp)
	}
	fmt.Fprintf(&b, " (it needs %s and a lead of %s)", fmtScore(v.minScore), fmtScore(v.minMargin))
	if len(c.Terms) > 0 {
		parts := make([]string, 0, len(c.Terms))
		for _, t := range c.Terms {
			s := fmt.Sprintf("%q %s", t.Text, signed(t.Weight))
			if t.Context {
				s += " (nearby)"
			}
			parts = append(parts, s)
		}
		b.WriteString("; terms: " + strings.Join(parts, ", "))
	}
	b.WriteString("." + noSpecificRule)
	return b.String()
}

// noSpecificRule ends the second tier's account of a cause it named alone.
const noSpecificRule = " No specific rule matched this wording, so check the evidence before acting on it."

func fmtScore(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func signed(f float64) string {
	if f >= 0 {
		return "+" + fmtScore(f)
	}
	return fmtScore(f)
}

// Lint runs every category's examples: each match example must be classified as its
// category, each notMatch example must not be. Problems are "source: category: what".
func (v *Vocabulary) Lint() []string {
	var out []string
	for _, c := range v.cats {
		if len(c.examples.Match) == 0 || len(c.examples.NotMatch) == 0 {
			out = append(out, fmt.Sprintf("%s: %s: needs at least one match and one notMatch example", c.source, c.category))
		}
		for _, ex := range c.examples.Match {
			if got := v.Classify(ex, ""); got.Category != c.category {
				out = append(out, fmt.Sprintf("%s: %s: example not classified as %s (got %s; %s %s, runner-up %s %s): %q",
					c.source, c.category, c.category, got.Category, got.Best, fmtScore(got.Score), got.RunnerUp, fmtScore(got.RunnerUpScore), ex))
			}
		}
		for _, ex := range c.examples.NotMatch {
			if got := v.Classify(ex, ""); got.Category == c.category {
				out = append(out, fmt.Sprintf("%s: %s: notMatch example classified as %s: %q", c.source, c.category, c.category, ex))
			}
		}
	}
	return out
}

// Examples counts the vocabulary's examples.
func (v *Vocabulary) Examples() int {
	n := 0
	for _, c := range v.cats {
		n += len(c.examples.Match) + len(c.examples.NotMatch)
	}
	return n
}

// Categories lists the categories the vocabulary knows, in file order.
func (v *Vocabulary) Categories() []Category {
	out := make([]Category, 0, len(v.cats))
	for _, c := range v.cats {
		out = append(out, c.category)
	}
	return slices.Clip(out)
}
