package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/coroner-dev/coroner/internal/outfile"
)

// Queue keeps analyses on disk until the store takes them: the watcher adds each analysis
// before it writes it, and removes it once written, so that a store that is down (or a
// watcher that restarts) loses nothing; a Put that succeeded but whose file was not removed
// is written again, which Put makes harmless.
type Queue struct {
	Dir string
}

// Add writes a to the queue (atomically: a file is complete or absent) and returns its path.
func (q *Queue) Add(a *Analysis) (string, error) {
	if err := os.MkdirAll(q.Dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.Marshal(a)
	if err != nil {
		return "", err
	}
	// Named to sort in the order the analyses were made; the digest makes the name unique
	// per analysis, so adding the same analysis twice keeps one file.
	name := fmt.Sprintf("%s-%s.json", a.AnalyzedAt.UTC().Format("20060102T150405.000000000Z"), fileSafe(a.BundleDigest+"-"+a.RulesVersion))
	p := filepath.Join(q.Dir, name)
	return p, outfile.WriteFile(p, data)
}

// Pending lists the queued files, oldest first.
func (q *Queue) Pending() ([]string, error) {
	entries, err := os.ReadDir(q.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") {
			out = append(out, filepath.Join(q.Dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Putter writes an analysis: a *Store.
type Putter interface {
	Put(ctx context.Context, a *Analysis) error
}

var _ Putter = (*Store)(nil)

// Flush writes the queued analyses to s, oldest first, removing each once written, and
// returns how many it wrote. It stops at the first failure of the store (they are kept for
// the next Flush); a file that does not decode is set aside as .bad, never retried forever.
func (q *Queue) Flush(ctx context.Context, s Putter) (int, error) {
	files, err := q.Pending()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return n, err
		}
		var a Analysis
		if err := json.Unmarshal(data, &a); err != nil {
			if rerr := os.Rename(f, strings.TrimSuffix(f, ".json")+".bad"); rerr != nil {
				return n, rerr
			}
			continue
		}
		if err := s.Put(ctx, &a); err != nil {
			return n, err
		}
		if err := os.Remove(f); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// fileSafe keeps letters, digits, '-' and '.' of s, the rest as '_'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, s)
}
