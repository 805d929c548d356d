package search

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/search/syntax"
)

const sample = "../samples/pytorchjob-cuda-oom-rank"

func open(t *testing.T, inputs ...string) *Source {
	t.Helper()
	src, err := Open(t.Context(), inputs, strings.NewReader(""), Options{Version: "test", Limits: bundle.DefaultLimits()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, src.Close()) })
	return src
}

// TestSearchFindsLogsEventsAndObjects: one search reads the logs, the events (a line each)
// and the objects' YAML, and returns the hits by time, untimed object lines last.
func TestSearchFindsLogsEventsAndObjects(t *testing.T) {
	src := open(t, sample)
	res, err := src.Search(t.Context(), Query{Query: "CUDA out of memory"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits)
	for _, h := range res.Hits {
		require.False(t, res.Objects[h.Path], "%s is a log", h.Path)
		require.Contains(t, strings.ToLower(h.Text), "cuda out of memory")
	}

	res, err = src.Search(t.Context(), Query{Query: "Scheduled OR nvidia.com/gpu"})
	require.NoError(t, err)
	var events, objects int
	for i, h := range res.Hits {
		require.True(t, res.Objects[h.Path], "%s is an event or object", h.Path)
		switch {
		case strings.HasPrefix(h.Path, "events/"):
			events++
			require.NotNil(t, h.Time, h.Text)
			require.Zero(t, objects, "timed event lines come before untimed object lines")
		case strings.HasPrefix(h.Path, "resources/"):
			objects++
		}
		if i > 0 && h.Time != nil {
			require.False(t, h.Time.Before(*res.Hits[i-1].Time), "hits are sorted by time")
		}
	}
	require.Positive(t, events)
	require.Positive(t, objects)
}

// TestSearchErrorsSayWhatIsWrong: a query, a glob or a time that cannot be used is an error
// of its own type, so a front end can say which of its inputs is wrong.
func TestSearchErrorsSayWhatIsWrong(t *testing.T) {
	src := open(t, sample)

	_, err := src.Search(t.Context(), Query{Query: `nccl "unclosed`})
	var qe *index.QueryError
	require.ErrorAs(t, err, &qe)
	var se *syntax.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, 5, se.Pos)

	_, err = src.Search(t.Context(), Query{Query: "memory", Pods: []string{"worker-3"}})
	var ge *GlobError
	require.ErrorAs(t, err, &ge)
	require.Equal(t, "pod", ge.Field)
	require.False(t, ge.Bad)
	require.Contains(t, ge.Names, "train-job-worker-3", "the names it could have matched")

	_, err = src.Search(t.Context(), Query{Query: "memory", Containers: []string{"[py"}})
	require.ErrorAs(t, err, &ge)
	require.Equal(t, GlobError{Field: "container", Glob: "[py", Bad: true}, *ge)

	_, err = src.Search(t.Context(), Query{Query: "memory", Until: "noon"})
	var te *TimeError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "until", te.Bound)

	res, err := src.Search(t.Context(), Query{Query: "NCCL", Pods: []string{"*worker-3"}, Containers: []string{"py*"}})
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits)
	for _, h := range res.Hits {
		require.Equal(t, "train-job-worker-3", h.Pod)
	}
}

// TestSearchWindowTakesTimesOfDayOnTheLogsDay: "10:02" is that time on the day the logs start.
func TestSearchWindowTakesTimesOfDayOnTheLogsDay(t *testing.T) {
	src := open(t, sample)
	q := Query{Query: "NCCL", Containers: []string{"pytorch"}, All: true, Limit: 1000}
	all, err := src.Search(t.Context(), q)
	require.NoError(t, err)
	require.Greater(t, len(all.Hits), 1)
	first, last := *all.Hits[0].Time, *all.Hits[len(all.Hits)-1].Time
	require.True(t, first.Before(last), "the sample's hits span some time")
	cut := first.Add(last.Sub(first) / 2).Truncate(time.Second)
	q.Since = cut.Format("15:04:05")
	res, err := src.Search(t.Context(), q)
	require.NoError(t, err)
	require.NotEmpty(t, res.Hits)
	require.Less(t, len(res.Hits), len(all.Hits))
	for _, h := range res.Hits {
		require.False(t, h.Time.Before(cut), "%s is before --since %s", h.Time, cut)
	}
}

// TestSearchMasksSecrets: the lines found are masked as analyze masks its report, unless
// told not to; the same input gives the same tokens.
func TestSearchMasksSecrets(t *testing.T) {
	token := "hf_" + strings.Repeat("aB3dE6gH9k", 3) + "mN0p"
	p := filepath.Join(t.TempDir(), "train.log")
	require.NoError(t, os.WriteFile(p, []byte("2026-03-14T10:00:00Z starting\n2026-03-14T10:00:01Z HF_TOKEN="+token+" exported\n"), 0o644))
	src := open(t, p)

	res, err := src.Search(t.Context(), Query{Query: "HF_TOKEN"})
	require.NoError(t, err)
	require.Len(t, res.Hits, 1)
	require.NotContains(t, res.Hits[0].Text, token)
	require.Contains(t, res.Hits[0].Text, "[REDACTED:")
	require.Equal(t, 1, res.Masked)
	require.Contains(t, res.MaskedBy, " 1")
	again, err := src.Search(t.Context(), Query{Query: "HF_TOKEN"})
	require.NoError(t, err)
	require.Equal(t, res.Hits[0].Text, again.Hits[0].Text)

	res, err = src.Search(t.Context(), Query{Query: "HF_TOKEN", NoRedact: true})
	require.NoError(t, err)
	require.Contains(t, res.Hits[0].Text, token)
	require.Zero(t, res.Masked)
}

func TestParseWhen(t *testing.T) {
	from := time.Date(2026, 3, 14, 10, 2, 30, 0, time.UTC)
	for _, c := range []struct {
		in, want, err string
	}{
		{"", "0001-01-01T00:00:00Z", ""},
		{"2026-03-15T01:02:03Z", "2026-03-15T01:02:03Z", ""},
		{"2026-03-15T01:02:03+02:00", "2026-03-14T23:02:03Z", ""},
		{"2026-03-15 01:02", "2026-03-15T01:02:00Z", ""},
		{"2026-03-15T01:02:03", "2026-03-15T01:02:03Z", ""},
		{"10:05", "2026-03-14T10:05:00Z", ""},
		{"10:02", "2026-03-14T10:02:00Z", ""},    // the minute the logs start in
		{"09:00:05", "2026-03-15T09:00:05Z", ""}, // before the logs' start: the next day
		{"noon", "", `cannot read "noon" as a time`},
	} {
		got, err := ParseWhen(c.in, from)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got.Format(time.RFC3339), c.in)
	}
	_, err := ParseWhen("10:05", time.Time{})
	require.ErrorContains(t, err, "the logs have no timestamps")
}

// TestMerge: hits of several indexes by time, untimed ones last in their order, cut at the
// limit with the rest counted; a partial result stays partial.
func TestMerge(t *testing.T) {
	at := func(s int) *time.Time { v := time.Unix(int64(s), 0).UTC(); return &v }
	hit := func(text string, tm *time.Time) index.Hit {
		return index.Hit{Line: index.Line{Text: text, Time: tm}, Count: 1}
	}
	logs := &index.Result{Hits: []index.Hit{hit("l1", at(1)), hit("l3", at(3)), hit("l-", nil)}, Lines: 3, Partial: true}
	objects := &index.Result{Hits: []index.Hit{hit("o-", nil), hit("o2", at(2))}, Lines: 2, Omitted: 1, ContextCut: true}
	got := Merge([]*index.Result{logs, objects}, 4)
	var texts []string
	for _, h := range got.Hits {
		texts = append(texts, h.Text)
	}
	require.Equal(t, []string{"l1", "o2", "l3", "l-"}, texts)
	require.Equal(t, 5, got.Lines)
	require.Equal(t, 2, got.Omitted, "one omitted before, one cut here")
	require.True(t, got.Partial)
	require.True(t, got.ContextCut)
	require.Same(t, logs, Merge([]*index.Result{logs}, 1), "one result is returned as it is")
}

// TestSearchRebuildsADamagedIndex: a damaged cached index fails no search: it is rebuilt with
// one word to Log, and the search gives the hits it gave before.
func TestSearchRebuildsADamagedIndex(t *testing.T) {
	cache := &index.Cache{Dir: t.TempDir()}
	q := Query{Query: "NCCL", Containers: []string{"pytorch"}}
	search := func() (*Result, []string) {
		var logged []string
		src, err := Open(t.Context(), []string{sample}, nil, Options{Cache: cache, Version: "test", Limits: bundle.DefaultLimits(),
			Log: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }})
		require.NoError(t, err)
		defer src.Close()
		res, err := src.Search(t.Context(), q)
		require.NoError(t, err)
		return res, logged
	}
	want, logged := search()
	require.NotEmpty(t, want.Hits)
	require.Empty(t, logged)
	files, err := filepath.Glob(filepath.Join(cache.Dir, "*", "bodies.bin"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, p := range files {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		data[len(data)/2] ^= 0x01
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	got, logged := search()
	require.Equal(t, want.Result, got.Result)
	require.Len(t, logged, 1)
	require.Contains(t, logged[0], "rebuilding it")
	_, logged = search()
	require.Empty(t, logged, "the rebuilt index is sound")
}

// TestResourcePartsReadsOnlyResourceFiles: a resource is searched as text when it is at
// resources/<group>/<kind>/<namespace>/<file>, an Event file for its events; nothing else is.
func TestResourcePartsReadsOnlyResourceFiles(t *testing.T) {
	for _, tc := range []struct {
		path, kind, ns string
		ok             bool
	}{
		{"resources/core/Pod/ml/w-0.yaml", "Pod", "ml", true},
		{"resources/core/Event/ml/events.yaml", "Event", "ml", true},
		{"resources/core/Node/_cluster/n1.yaml", "Node", "_cluster", true},
		{"resources/core/Pod//w.yaml", "Pod", "", true},
		{"resources/core/Pod/ml/sub/w-0.yaml", "", "", false},
		{"resources/core/Pod/w-0.yaml", "", "", false},
		{"logs/core/Pod/ml/w-0.yaml", "", "", false},
		{"other/core/Pod/w-0.yaml", "", "", false},
		{"resources", "", "", false},
	} {
		kind, ns, ok := resourceParts(tc.path)
		if ok != tc.ok || (ok && (kind != tc.kind || ns != tc.ns)) {
			t.Errorf("resourceParts(%q) = %q, %q, %v; want %q, %q, %v", tc.path, kind, ns, ok, tc.kind, tc.ns, tc.ok)
		}
	}
}
