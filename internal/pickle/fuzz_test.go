package pickle

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode: whatever the bytes, Decode returns a value or an error, within its limits.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01](K\x01eu."))
	f.Add([]byte("\x80\x02ctorch.jit._pickle\nrestore_type_tag\nq\x00](K\x01eX\x09\x00\x00\x00List[int]\x86R."))
	f.Add([]byte("\x80\x02](h\x00e."))
	seeds, _ := filepath.Glob("../../frtrace/testdata/*/*")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil && IsPickle(data) && len(data) < 64<<10 {
			f.Add(data)
		}
	}
	lim := Limits{MaxBytes: 1 << 20, MaxDepth: 32, MaxValues: 100_000, MaxString: 4096}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data, lim)
		if err == nil && v == nil && !IsPickle(data) {
			t.Fatal("no error and no pickle")
		}
	})
}
