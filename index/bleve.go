package index

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/whitespace"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
)

// The bleve index holds one document per distinct template text of the bundle: its words
// (constant words as they are, variable words as their shape: "rank0", "0"), and the pods,
// containers, ranks, level, first and last time and count of the logs' templates of that text.
// Ranks of a training job log the same shapes: a step line is one document, not one per rank.
// Lines are not documents: a hit expands to each log's template of that text, whose compact
// line list expands it into exact lines.

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

// shapeGroups groups the templates of the streams (but overflow ones, which search reads
// line by line) by text: document i of the bleve index is group i, groups in key order.
func shapeGroups(streams []*Stream) [][]*Template {
	byKey := map[string][]*Template{}
	for _, s := range streams {
		for _, t := range s.Templates {
			if !t.Overflow {
				byKey[t.key] = append(byKey[t.key], t)
			}
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	groups := make([][]*Template, len(keys))
	for i, k := range keys {
		groups[i] = byKey[k]
	}
	return groups
}

// docOf is the bleve document of a group of templates of one text.
func docOf(streams []*Stream, group []*Template) map[string]interface{} {
	t0 := group[0]
	words := make([]string, len(t0.toks()))
	for i, tok := range t0.toks() {
		words[i] = tok.shape
	}
	var pods, containers []string
	var ranks []float64
	count := 0
	var first, last int64
	for _, t := range group {
		s := streams[t.stream]
		pods, containers = append(pods, s.Pod), append(containers, s.Container)
		ranks = append(ranks, float64(t.Rank))
		count += t.Count
		if t.First != 0 && (first == 0 || t.First < first) {
			first = t.First
		}
		last = max(last, t.Last)
	}
	doc := map[string]interface{}{
		"text": strings.Join(words, " "), "pod": distinct(pods), "container": distinct(containers), "level": t0.Level,
		"rank": distinct(ranks), "count": float64(count),
	}
	if first != 0 {
		doc["first"] = time.Unix(0, first).UTC()
		doc["last"] = time.Unix(0, last).UTC()
	}
	return doc
}

func distinct[T cmp.Ordered](vs []T) []T {
	slices.Sort(vs)
	return slices.Compact(vs)
}

// writeBleve indexes the templates of every stream (but overflow ones, which search reads
// line by line) into a new bleve index at dir. It uses bleve's offline builder: one segment
// written once, with none of an online index's background persisting and merging. It stops
// when ctx is done.
func writeBleve(ctx context.Context, dir string, streams []*Stream) error {
	im, err := indexMapping()
	if err != nil {
		return err
	}
	groups := shapeGroups(streams)
	docs := len(groups)
	if docs == 0 { // the builder needs a document: an empty index is an ordinary one
		bi, err := bleve.New(dir, im)
		if err != nil {
			return fmt.Errorf("creating the bleve index: %w", err)
		}
		return bi.Close()
	}
	bb, err := bleve.NewBuilder(dir, im, map[string]interface{}{
		"batchSize":       docs + 1, // one segment
		"buildPathPrefix": filepath.Dir(dir),
	})
	if err != nil {
		return fmt.Errorf("creating the bleve index: %w", err)
	}
	for i, g := range groups {
		if i%1024 == 0 && ctx.Err() != nil {
			bb.Close()
			return fmt.Errorf("writing the bleve index: %w", ctx.Err())
		}
		if err := bb.Index(strconv.Itoa(i), docOf(streams, g)); err != nil {
			bb.Close()
			return err
		}
	}
	if err := bb.Close(); err != nil {
		return fmt.Errorf("writing the bleve index: %w", err)
	}
	return nil
}

// templatesMatching returns the templates whose bleve document matches q, with its score.
func (ix *Index) templatesMatching(ctx context.Context, q query.Query) (map[*Template]float64, error) {
	req := bleve.NewSearchRequestOptions(q, max(len(ix.groups), 1), 0, false)
	res, err := ix.bleve.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("searching the index: %w", err)
	}
	out := make(map[*Template]float64, len(res.Hits))
	for _, h := range res.Hits {
		i, err := strconv.Atoi(h.ID)
		if err != nil || i < 0 || i >= len(ix.groups) {
			return nil, fmt.Errorf("the index names template %q that it does not hold", h.ID)
		}
		for _, t := range ix.groups[i] {
			out[t] = h.Score
		}
	}
	return out, nil
}

func termQuery(field, term string) query.Query {
	q := bleve.NewTermQuery(term)
	q.SetField(field)
	return q
}
