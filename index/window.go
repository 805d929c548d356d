package index

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Window returns the lines from line-before to line+after of the log at a bundle path
// (fewer at the log's edges), read back from the bundle.
func (ix *Index) Window(path string, line, before, after int) ([]Line, error) {
	s := ix.stream(path)
	if s == nil {
		return nil, fmt.Errorf("%s: not a log of the index", path)
	}
	if line < 1 || line > s.Lines {
		return nil, fmt.Errorf("%s: no line %d (the log has %d)", path, line, s.Lines)
	}
	lo, hi := max(1, line-max(before, 0)), min(s.Lines, line+max(after, 0))
	nums := make([]int, 0, hi-lo+1)
	for n := lo; n <= hi; n++ {
		nums = append(nums, n)
	}
	out := make([]Line, 0, len(nums))
	err := ix.readLines(s, nums, func(n int, ts int64, text []byte) error {
		out = append(out, Line{Path: s.Path, Pod: s.Pod, Container: s.Container, Previous: s.Previous, Number: n,
			Time: timeOf(ts), Text: string(text)})
		return nil
	})
	return out, err
}

// Windows is Window for the log of a pod's container; a container name ending in
// ".previous" names the log of the previous (restarted) container.
func (ix *Index) Windows(pod, container string, line, before, after int) ([]Line, error) {
	name, prev := strings.CutSuffix(container, ".previous")
	for _, s := range ix.streams {
		if s.Pod == pod && s.Container == name && s.Previous == prev {
			return ix.Window(s.Path, line, before, after)
		}
	}
	return nil, fmt.Errorf("no log of %s/%s in the bundle", pod, container)
}

// ScoredWindow is a window of lines around a line that TopWindows found relevant.
type ScoredWindow struct {
	Path      string  `json:"path"`
	Pod       string  `json:"pod"`
	Container string  `json:"container"`
	Previous  bool    `json:"previous,omitempty"`
	Line      int     `json:"line"`
	Score     float64 `json:"score"`
	// Count is how often the line's template occurs in its log; Template is that shape.
	Count    int    `json:"count"`
	Template string `json:"template"`
	Lines    []Line `json:"lines"`
}

// WindowLines is how many lines TopWindows shows before and after a relevant line.
const WindowLines = 5

// TopWindows returns up to n windows of the logs most relevant to a free-text query (an error
// message, a finding's title): templates are scored by bleve on the query's words, rarer
// templates ranking higher (a failure is said once, a step line a million times), and each
// window is centred on the first line of its template. Windows of one log do not overlap.
// The order is deterministic: score, then path, then line.
func (ix *Index) TopWindows(text string, n int) ([]ScoredWindow, error) {
	if n <= 0 {
		return nil, nil
	}
	words := splitWords([]byte(text))
	seen := map[string]bool{}
	var terms []query.Query
	for _, w := range words {
		shape := w
		if hasDigit(w) {
			shape = shapeOf(w)
		}
		if !seen[shape] {
			seen[shape] = true
			terms = append(terms, termQuery("text", shape))
		}
	}
	if len(terms) == 0 {
		return nil, nil
	}
	scores, err := ix.templatesMatching(bleve.NewDisjunctionQuery(terms...))
	if err != nil {
		return nil, err
	}
	type cand struct {
		t     *Template
		s     *Stream
		score float64
	}
	cands := make([]cand, 0, len(scores))
	for t, sc := range scores {
		cands = append(cands, cand{t: t, s: ix.streams[t.stream], score: sc / (1 + math.Log(float64(t.Count)))})
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.s.Path != b.s.Path {
			return a.s.Path < b.s.Path
		}
		return a.t.FirstLine < b.t.FirstLine
	})
	var out []ScoredWindow
	for _, c := range cands {
		if len(out) == n {
			break
		}
		overlaps := false
		for _, w := range out {
			if w.Path == c.s.Path && abs(w.Line-c.t.FirstLine) <= 2*WindowLines {
				overlaps = true
				break
			}
		}
		if overlaps {
			continue
		}
		lines, err := ix.Window(c.s.Path, c.t.FirstLine, WindowLines, WindowLines)
		if err != nil {
			return nil, err
		}
		out = append(out, ScoredWindow{Path: c.s.Path, Pod: c.s.Pod, Container: c.s.Container, Previous: c.s.Previous,
			Line: c.t.FirstLine, Score: c.score, Count: c.t.Count, Template: c.t.Text, Lines: lines})
	}
	return out, nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
