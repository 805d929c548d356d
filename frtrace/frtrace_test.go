package frtrace

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// load decodes every dump of a scenario of testdata (written by testdata/gen.py), each with
// the rank its file name ends with; ext picks the pickles ("") or the JSON twins (".json").
func load(t *testing.T, scenario, ext string) []RankDump {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", scenario, "*"))
	require.NoError(t, err)
	sort.Strings(files)
	var out []RankDump
	for _, f := range files {
		if filepath.Ext(f) != ext && !(ext == "" && !strings.HasSuffix(f, ".json")) {
			continue
		}
		if ext == "" && strings.HasSuffix(f, ".json") {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.True(t, bundle.IsFlightRecord(data), "%s is not sniffed as a dump", f)
		d, err := Decode(data, DefaultLimits())
		require.NoError(t, err, f)
		rank, ok := RankFromName(f)
		require.True(t, ok, f)
		out = append(out, RankDump{Rank: rank, Source: filepath.Base(f), Dump: d})
	}
	require.NotEmpty(t, out)
	return out
}

func failures(a *Analysis) []Problem {
	var out []Problem
	for _, p := range a.Problems {
		if p.Kind != NoDump {
			out = append(out, p)
		}
	}
	return out
}

func TestDecodeVersions(t *testing.T) {
	for _, tc := range []struct {
		scenario, version, format, commLib string
		entries                            int
	}{
		{"bare-list", "", "pickle", "", 12},
		{"missing-rank-tagged", "2.3", "pickle", "2.21.5", 29},
		{"tutorial", "2.4", "pickle", "2.21.5", 5},
		{"missing-rank", "2.10", "pickle", "2.21.5", 29},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			d := load(t, tc.scenario, "")[0].Dump
			assert.Equal(t, tc.version, d.Version)
			assert.Equal(t, tc.format, d.Format)
			assert.Equal(t, tc.commLib, d.CommLibVersion)
			require.Len(t, d.Entries, tc.entries)
			e := d.Entries[len(d.Entries)-1]
			assert.Equal(t, "nccl:all_reduce", e.Op)
			assert.Equal(t, "0", e.Group)
			assert.Equal(t, [][]int64{{1024}}, e.InputSizes)
			assert.Greater(t, e.Created, int64(1_700_000_000_000_000_000), "a LONG1 timestamp")
			require.NotEmpty(t, e.Frames)
			assert.Equal(t, "train.py", filepath.Base(e.Frames[2].File))
		})
	}
}

// TestJSONTwinMatchesPickle: dump_json's twin (pg_status as strings, 0 for a time not
// reached, no frames) reads as the pickle does.
func TestJSONTwinMatchesPickle(t *testing.T) {
	p, j := load(t, "stalled", ""), load(t, "stalled", ".json")
	require.Len(t, j, 4)
	pd, jd := p[0].Dump, j[0].Dump
	assert.Equal(t, "json", jd.Format)
	assert.Equal(t, pd.Groups, jd.Groups)
	assert.Equal(t, pd.Status, jd.Status)
	require.Len(t, jd.Entries, len(pd.Entries))
	for i := range pd.Entries {
		want := pd.Entries[i]
		want.Frames = nil
		assert.Equal(t, want, jd.Entries[i])
	}
	assert.Equal(t, []Group{{Name: "0", Desc: "default_pg", Ranks: []int{0, 1, 2, 3}}}, pd.Groups)
	assert.Equal(t, []Status{{PGID: "0", LastEnqueued: 7, LastStarted: 7, LastCompleted: 6}}, pd.Status)
	assert.Equal(t, comparable(Match(p).Problems), comparable(Match(j).Problems))
}

// comparable lets the problems of JSON twins be compared with the pickles': the twin has no
// frames and its sources end in .json.
func comparable(ps []Problem) []Problem {
	out := make([]Problem, len(ps))
	for i, p := range ps {
		p.Source = strings.TrimSuffix(p.Source, ".json")
		for _, e := range []**Entry{&p.Last, &p.Waiting} {
			if *e != nil {
				c := **e
				c.Frames = nil
				*e = &c
			}
		}
		out[i] = p
	}
	return out
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		kind     string
		ranks    []int
		others   []int
		seq      int64
		op       string
		detail   string
		frame    string
	}{
		// PyTorch's tutorial: rank 0 ran one extra all_reduce; rank 1 is missing from #5.
		{"tutorial", Missing, []int{1}, []int{0}, 5, "nccl:all_reduce", "its last collective was #4 (all_reduce, completed)", "train_step (/workspace/train.py:211)"},
		{"missing-rank", Missing, []int{2}, []int{0, 1, 3}, 48, "nccl:all_reduce", "its last collective was #47 (all_reduce, completed)", "evaluate (/workspace/train.py:160)"},
		{"missing-rank-tagged", Missing, []int{1}, []int{0}, 48, "nccl:all_reduce", "", ""},
		{"bare-list", Missing, []int{1}, []int{0}, 12, "nccl:all_reduce", "", ""},
		{"coalesced", Missing, []int{1}, []int{0}, 4, "nccl:all_reduce+nccl:all_reduce", "", ""},
		{"stalled", Stalled, []int{0, 1, 2, 3}, nil, 7, "nccl:all_reduce", "the kernel started on every rank and completed on none", ""},
		{"stalled-gpu", Stalled, []int{2}, []int{0, 1, 3}, 7, "nccl:all_reduce", "the kernel never started on rank 2; it runs on ranks 0, 1 and 3", ""},
		{"mismatch-op", Mismatch, []int{1}, []int{0, 2}, 3, "nccl:all_reduce", "operation differ: ranks 0 and 2 called nccl:all_reduce; rank 1 called nccl:all_gather", ""},
		{"mismatch-size", Mismatch, []int{2}, []int{0, 1}, 4, "nccl:all_reduce", "sizes differ: ranks 0 and 1 sent [[1024]]; rank 2 sent [[2048]]", ""},
		{"p2p", PeerMissing, []int{1}, []int{0}, 1, "nccl:send 0->1", "rank 0 posted send 0->1 and rank 1 never posted the matching recv", ""},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			a := Match(load(t, tc.scenario, ""))
			assert.Empty(t, a.Warnings)
			ps := failures(a)
			require.Len(t, ps, 1, "%+v", ps)
			p := ps[0]
			assert.Equal(t, tc.kind, p.Kind)
			assert.Equal(t, tc.ranks, p.Ranks)
			assert.Equal(t, tc.others, p.Others)
			assert.Equal(t, tc.seq, p.Seq)
			assert.Equal(t, tc.op, p.Op)
			if tc.detail != "" {
				assert.Equal(t, tc.detail, p.Detail)
			}
			if tc.frame != "" {
				require.NotNil(t, p.Last)
				assert.Equal(t, tc.frame, p.Last.Frames[2].String())
			}
			assert.NotZero(t, p.Time)
		})
	}
}

// TestMatchSubset: with the dumps of two ranks of four, both waiting in the same collective,
// the absent ranks may be the ones behind: the gap is named, and no rank is blamed.
func TestMatchSubset(t *testing.T) {
	a := Match(load(t, "subset", ""))
	assert.Empty(t, failures(a))
	require.Len(t, a.Problems, 1)
	assert.Equal(t, NoDump, a.Problems[0].Kind)
	assert.Equal(t, []int{2, 3}, a.Problems[0].Ranks)
	require.Len(t, a.Groups, 1)
	assert.Equal(t, []int{2, 3}, a.Groups[0].NoDump)
	assert.Len(t, a.Groups[0].Lanes, 2)
}

// TestMatchHealthy: dumps taken of a job whose collectives all completed show no problem.
func TestMatchHealthy(t *testing.T) {
	ds := load(t, "stalled", "")
	for _, d := range ds {
		for i := range d.Dump.Entries {
			d.Dump.Entries[i].State = "completed"
		}
	}
	a := Match(ds)
	assert.Empty(t, a.Problems)
	require.Len(t, a.Groups, 1)
	l := a.Groups[0].Lanes[0]
	assert.Equal(t, int64(7), l.Enqueued)
	assert.Equal(t, int64(7), l.Completed)
	assert.Len(t, l.Last, LaneEntries)
}

func TestMatchVersionsDiffer(t *testing.T) {
	ds := load(t, "tutorial", "")
	ds[1].Dump.Version = "2.10"
	a := Match(ds)
	assert.Equal(t, []string{"the dumps' versions differ: 2.10 (rank 1), 2.4 (rank 0); they are matched all the same"}, a.Warnings)
}

func TestRankFromName(t *testing.T) {
	for name, want := range map[string]int{
		"nccl_trace_rank_3": 3, "/tmp/comm_lib_trace_rank_12": 12, "gpu-node-7.cluster.local_trace_rank_5.json": 5,
		"trace_rank_0.pkl": 0,
	} {
		got, ok := RankFromName(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	for _, name := range []string{"trace", "rank_", "x12345678901"} {
		_, ok := RankFromName(name)
		assert.False(t, ok, name)
	}
}

func TestRankList(t *testing.T) {
	assert.Equal(t, "rank 3", RankList([]int{3}))
	assert.Equal(t, "ranks 0 and 1", RankList([]int{1, 0}))
	assert.Equal(t, "ranks 0-3, 5 and 7", RankList([]int{0, 1, 2, 3, 5, 7}))
}

func TestDecodeRefusesWhatIsNotADump(t *testing.T) {
	for name, data := range map[string]string{
		"json list":   `[1, 2]`,
		"json object": `{"a": 1}`,
		"pickle int":  "\x80\x02K\x05.",
		"entry shape": "\x80\x02]q\x00(K\x01e.",
	} {
		_, err := Decode([]byte(data), DefaultLimits())
		assert.Error(t, err, name)
	}
	assert.False(t, bundle.IsFlightRecord([]byte("2024-01-01 step 1 loss 2.3\n")))
	assert.False(t, bundle.IsFlightRecord([]byte(`{"level":"info","msg":"step"}`)))
}

// TestEncodeJSONRoundTrip: a pickle rewritten as JSON (as collect and redact do, to redact it)
// reads back as the same dump, frames included.
func TestEncodeJSONRoundTrip(t *testing.T) {
	for _, scenario := range []string{"missing-rank", "missing-rank-tagged", "bare-list", "p2p"} {
		d := load(t, scenario, "")[0].Dump
		data, err := EncodeJSON(d)
		require.NoError(t, err)
		require.True(t, bundle.IsFlightRecord(data))
		back, err := Decode(data, DefaultLimits())
		require.NoError(t, err)
		back.Format = d.Format
		if d.Version == "" {
			back.CommLibVersion = d.CommLibVersion
		}
		want := *d
		if want.Groups == nil {
			want.Groups = back.Groups
		}
		if want.Status == nil {
			want.Status = back.Status
		}
		assert.Equal(t, &want, back, scenario)
	}
}
