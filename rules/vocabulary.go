package rules

import "embed"

// VocabularyFS holds the built-in vocabulary of the second tier (vocabulary/*.yaml). It is
// kept apart from the rule files: it is not a list of rules, and LoadRules reads only the
// top directory.
//
//go:embed vocabulary/*.yaml
var VocabularyFS embed.FS

// Vocabulary is the second tier's model: for each category, weighted words and phrases that
// failure messages use. The terminal failure of a log that no specific rule explained is
// scored against every category; the best category wins when its score reaches MinScore
// and beats the runner-up by MinMargin.
type Vocabulary struct {
	// APIVersion is VocabularyAPIVersion.
	APIVersion string `json:"apiVersion"`
	// MinScore is the score a category needs to be named.
	MinScore float64 `json:"minScore"`
	// MinMargin is how far the best category must be ahead of the runner-up.
	MinMargin float64 `json:"minMargin"`
	// ContextWeight scales the terms found in the lines around the terminal failure (not in
	// the failure's own lines); 0 ignores the context.
	ContextWeight float64            `json:"contextWeight"`
	Categories    []*VocabularyEntry `json:"categories"`
}

// VocabularyEntry is one category's words.
type VocabularyEntry struct {
	Category string `json:"category"`
	// Title names the failure in a finding: "likely <category>: <terms>" with Title as the
	// explanation's first words.
	Title       string `json:"title"`
	Fault       string `json:"fault"`
	Retry       string `json:"retry"`
	Remediation string `json:"remediation,omitempty"`
	// Terms are matched case-insensitively at word boundaries (a term that starts or ends
	// with a letter or digit does not match inside a longer word). Where two terms overlap,
	// the longer one counts and the shorter does not: "cuda out of memory" beats "out of
	// memory". A negative weight speaks against the category.
	Terms []Term `json:"terms"`
	// Examples are failure texts (one string, lines separated by "\n", the last line the
	// terminal failure) that must be classified as this category (Match) and must not be
	// (NotMatch). `coroner rules lint` runs them.
	Examples VocabularyExamples `json:"examples"`
}

// Term is one word or phrase and its weight.
type Term struct {
	Text   string  `json:"text"`
	Weight float64 `json:"weight"`
	// Raised: the term counts only when the failure holds a line that shows on its own that
	// the process failed (an exception, a fatal line, a signal, an exit code), not only a
	// traceback cut before its exception line: a library prints the same words, warns and
	// runs on.
	Raised bool `json:"raised,omitempty"`
}

// VocabularyExamples are the texts a category must and must not classify.
type VocabularyExamples struct {
	Match    []string `json:"match"`
	NotMatch []string `json:"notMatch"`
}

// VocabularyAPIVersion is the version of the vocabulary file's schema, which every
// vocabulary file states.
const VocabularyAPIVersion = "coroner.dev/vocabulary/v1"

// DecodeVocabulary reads a vocabulary file strictly: a missing or other apiVersion, or an
// unknown field, is an error.
func DecodeVocabulary(data []byte) (*Vocabulary, error) {
	js, err := toJSON(data)
	if err != nil {
		return nil, err
	}
	if err := checkVersion(js, VocabularyAPIVersion, "vocabulary file"); err != nil {
		return nil, err
	}
	var v Vocabulary
	if err := strictJSON(js, &v); err != nil {
		return nil, err
	}
	return &v, nil
}
