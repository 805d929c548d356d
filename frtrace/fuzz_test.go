package frtrace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/internal/pickle"
)

// FuzzDecode: a hostile dump (pickle or JSON) is an error or a dump, and matching it with
// itself as two ranks never panics.
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil && len(data) < 64<<10 && bundle.IsFlightRecord(data) {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"version":"2.10","pg_config":{"0":{"name":"0","desc":"x","ranks":"[0, 1]"}},"entries":[{"collective_seq_id":"1"}]}`))
	lim := Limits{Pickle: pickle.Limits{MaxBytes: 1 << 20, MaxDepth: 32, MaxValues: 100_000, MaxString: 4096},
		MaxEntries: 1000, MaxFrames: 16, MaxGroups: 100, MaxRanks: 1000}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(data, lim)
		if err != nil {
			return
		}
		Match([]RankDump{{Rank: 0, Dump: d}, {Rank: 1, Dump: d}})
	})
}
