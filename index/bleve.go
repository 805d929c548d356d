package index

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/whitespace"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
)

// The bleve index holds one document per template of each stream: its words (constant words
// as they are, variable words as their shape: "rank0", "0"), pod, container, rank, level,
// first and last time and count. Lines are not documents: a template's compact line list
// expands a hit into exact lines.

const shapesAnalyzer = "coroner-shapes"

func indexMapping() (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	// Words are split and folded by coroner (words.go) before bleve sees them, so that search,
	// templates and verification agree: bleve only splits on the spaces between them.
	if err := im.AddCustomAnalyzer(shapesAnalyzer, map[string]interface{}{"type": custom.Name, "tokenizer": whitespace.Name}); err != nil {
		return nil, err
	}
	quiet := func(f *mapping.FieldMapping) *mapping.FieldMapping {
		f.Store, f.IncludeInAll, f.DocValues = false, false, false
		return f
	}
	text := quiet(bleve.NewTextFieldMapping())
	text.Analyzer = shapesAnalyzer
	text.IncludeTermVectors = true // phrases
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("text", text)
	for _, f := range []string{"pod", "container", "level"} {
		dm.AddFieldMappingsAt(f, quiet(bleve.NewKeywordFieldMapping()))
	}
	for _, f := range []string{"rank", "count"} {
		dm.AddFieldMappingsAt(f, quiet(bleve.NewNumericFieldMapping()))
	}
	for _, f := range []string{"first", "last"} {
		dm.AddFieldMappingsAt(f, quiet(bleve.NewDateTimeFieldMapping()))
	}
	im.DefaultMapping = dm
	im.DefaultAnalyzer = shapesAnalyzer
	im.StoreDynamic, im.IndexDynamic, im.DocValuesDynamic = false, false, false
	return im, nil
}

// tmplDoc is what bleve indexes of a template.
type tmplDoc struct {
	id  string
	doc map[string]interface{}
}

func docOf(s *Stream, t *Template) tmplDoc {
	words := make([]string, len(t.tokens))
	for i, tok := range t.tokens {
		words[i] = tok.shape
	}
	doc := map[string]interface{}{
		"text": strings.Join(words, " "), "pod": s.Pod, "container": s.Container, "level": t.Level,
		"rank": float64(t.Rank), "count": float64(t.Count),
	}
	if t.First != 0 {
		doc["first"] = time.Unix(0, t.First).UTC()
		doc["last"] = time.Unix(0, t.Last).UTC()
	}
	return tmplDoc{id: docID(t.stream, t.id), doc: doc}
}

func docID(stream, tmpl int) string { return strconv.Itoa(stream) + "." + strconv.Itoa(tmpl) }

// writeBleve indexes the templates of every stream (but overflow ones, which search reads
// line by line) into a new bleve index at dir.
func writeBleve(dir string, streams []*Stream) error {
	im, err := indexMapping()
	if err != nil {
		return err
	}
	bi, err := bleve.New(dir, im)
	if err != nil {
		return fmt.Errorf("creating the bleve index: %w", err)
	}
	batch := bi.NewBatch()
	for _, s := range streams {
		for _, t := range s.Templates {
			if t.Overflow {
				continue
			}
			d := docOf(s, t)
			if err := batch.Index(d.id, d.doc); err != nil {
				bi.Close()
				return err
			}
			if batch.Size() >= 2000 {
				if err := bi.Batch(batch); err != nil {
					bi.Close()
					return err
				}
				batch.Reset()
			}
		}
	}
	if err := bi.Batch(batch); err != nil {
		bi.Close()
		return err
	}
	return bi.Close()
}

// templatesMatching returns the templates whose bleve document matches q.
func (ix *Index) templatesMatching(q query.Query) (map[*Template]float64, error) {
	req := bleve.NewSearchRequestOptions(q, max(ix.docs, 1), 0, false)
	res, err := ix.bleve.Search(req)
	if err != nil {
		return nil, fmt.Errorf("searching the index: %w", err)
	}
	out := make(map[*Template]float64, len(res.Hits))
	for _, h := range res.Hits {
		t := ix.templateByID(h.ID)
		if t == nil {
			return nil, fmt.Errorf("the index names template %q that it does not hold", h.ID)
		}
		out[t] = h.Score
	}
	return out, nil
}

func (ix *Index) templateByID(id string) *Template {
	a, b, ok := strings.Cut(id, ".")
	if !ok {
		return nil
	}
	si, err1 := strconv.Atoi(a)
	ti, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || si < 0 || si >= len(ix.streams) || ti < 0 || ti >= len(ix.streams[si].Templates) {
		return nil
	}
	return ix.streams[si].Templates[ti]
}

func termQuery(field, term string) query.Query {
	q := bleve.NewTermQuery(term)
	q.SetField(field)
	return q
}
