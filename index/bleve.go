package index

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/whitespace"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
)

// The bleve index holds one document per distinct template text of the bundle: its words
// (constant words as they are, variable words as their shape: "rank0", "0"). Ranks of a
// training job log the same shapes: a step line is one document, not one per rank. Lines are
// not documents: a hit expands to each log's template of that text, whose compact line list
// expands it into exact lines. Fields (pod, container, level, rank) are answered from the
// templates and lines themselves, not by bleve.

const shapesAnalyzer = "coroner-shapes"

func indexMapping() (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	// Words are split and folded by coroner (logscan's words) before bleve sees them, so that
	// search, templates and verification agree: bleve only splits on the spaces between them.
	if err := im.AddCustomAnalyzer(shapesAnalyzer, map[string]interface{}{"type": custom.Name, "tokenizer": whitespace.Name}); err != nil {
		return nil, err
	}
	text := bleve.NewTextFieldMapping()
	text.Store, text.IncludeInAll, text.DocValues = false, false, false
	text.Analyzer = shapesAnalyzer
	text.IncludeTermVectors = true // phrases
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("text", text)
	im.DefaultMapping = dm
	im.DefaultAnalyzer = shapesAnalyzer
	im.StoreDynamic, im.IndexDynamic, im.DocValuesDynamic = false, false, false
	return im, nil
}

// docText is what bleve indexes of a template text: its words and variable words' shapes.
func docText(key string) string {
	toks := tokensOf(key)
	words := make([]string, len(toks))
	for i, tok := range toks {
		words[i] = bleveTerm(tok.shape)
	}
	return strings.Join(words, " ")
}

// bleveTerm is a folded word as bleve holds it. A folded word is valid UTF-8, but an invalid
// byte of the log (a Latin-1 "é") became U+FFFD, where bleve's tokenizer stops reading the
// text, as if every later word were not there: it is NUL for bleve, which no word holds.
func bleveTerm(w string) string { return strings.ReplaceAll(w, "\uFFFD", "\x00") }

// writeBleve indexes the template texts into a new bleve index at dir (document i is text
// i). It uses bleve's offline builder: one segment written once, with none of an online
// index's background persisting and merging. It stops when ctx is done.
func writeBleve(ctx context.Context, dir string, keys []string) error {
	im, err := indexMapping()
	if err != nil {
		return err
	}
	if len(keys) == 0 { // the builder needs a document: an empty index is an ordinary one
		bi, err := bleve.New(dir, im)
		if err != nil {
			return fmt.Errorf("creating the bleve index: %w", err)
		}
		return bi.Close()
	}
	bb, err := bleve.NewBuilder(dir, im, map[string]interface{}{
		"batchSize":       len(keys) + 1, // one segment (MaxDocs bounds it)
		"buildPathPrefix": filepath.Dir(dir),
	})
	if err != nil {
		return fmt.Errorf("creating the bleve index: %w", err)
	}
	for i, k := range keys {
		if i%1024 == 0 && ctx.Err() != nil {
			bb.Close()
			return fmt.Errorf("writing the bleve index: %w", ctx.Err())
		}
		if err := bb.Index(strconv.Itoa(i), map[string]interface{}{"text": docText(k)}); err != nil {
			bb.Close()
			return err
		}
	}
	if err := bb.Close(); err != nil {
		return fmt.Errorf("writing the bleve index: %w", err)
	}
	return nil
}

// docsMatching returns the documents (template texts) that match q, one bool each.
func (ix *Index) docsMatching(ctx context.Context, q query.Query) ([]bool, error) {
	out := make([]bool, len(ix.docs))
	if len(ix.docs) == 0 {
		return out, nil
	}
	req := bleve.NewSearchRequestOptions(q, len(ix.docs), 0, false)
	res, err := ix.bleve.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("searching the index: %w", err)
	}
	for _, h := range res.Hits {
		i, err := strconv.Atoi(h.ID)
		if err != nil || i < 0 || i >= len(ix.docs) {
			return nil, fmt.Errorf("the index names template %q that it does not hold", h.ID)
		}
		out[i] = true
	}
	return out, nil
}
