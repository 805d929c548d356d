package compare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/diagnose"
	"github.com/coroner-dev/coroner/internal/samplegen"
)

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// generate writes a samplegen bundle (a master and ranks-1 workers, one rank out of GPU memory,
// the others timing out in NCCL) of about perRank bytes of log a rank; seeds give other values.
func generate(t *testing.T, ranks int, perRank int64, seed uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("run-%d-%d", ranks, seed))
	require.NoError(t, samplegen.GenerateKind(dir, samplegen.Options{Kind: samplegen.Repetitive, Ranks: ranks, Size: int64(ranks) * perRank, Seed: seed}))
	return dir
}

// edit rewrites one file of a bundle.
func edit(t *testing.T, dir, rel string, fn func(string) string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte(fn(string(data))), 0o644))
}

// editAll rewrites every file under a folder of a bundle.
func editAll(t *testing.T, dir, under string, fn func(string) string) {
	t.Helper()
	require.NoError(t, filepath.Walk(filepath.Join(dir, under), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		edit(t, dir, filepath.ToSlash(rel), fn)
		return nil
	}))
}

// lines maps the lines of a log, keeping its last newline.
func lines(s string, fn func(i int, l string) string) string {
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range ls {
		ls[i] = fn(i, l)
	}
	return strings.Join(ls, "\n") + "\n"
}

// TestGeneratedPairs: pairs of generated runs (GOOD seed 1, BAD seed 2: other values on every
// line) with one planted difference each; the difference is found and ranked first in its
// section, and the sections it does not touch stay empty. Without a plant, the diff is empty.
func TestGeneratedPairs(t *testing.T) {
	if testing.Short() {
		t.Skip("generates bundles")
	}
	const ranks = 16
	good := generate(t, ranks, 64<<10, 1)
	worker := "logs/ml/big-train-worker-6/pytorch.log"
	for _, tt := range []struct {
		name    string
		plant   func(t *testing.T, bad string)
		section string
		check   func(t *testing.T, c *Change)
		others  []string // the sections that must stay empty
		// progress checks the first progress change, when the plant makes one besides its
		// section's.
		progress func(t *testing.T, c *Change)
	}{
		{"noise only", func(*testing.T, string) {}, "", nil, []string{SectionSpec, SectionLogs, SectionProgress, SectionDiagnosis}, nil},
		{"new image tag", func(t *testing.T, bad string) {
			editAll(t, bad, "resources", func(s string) string { return strings.ReplaceAll(s, "llm:2.4.1", "llm:2.5.0") })
		}, SectionSpec, func(t *testing.T, c *Change) {
			assert.Equal(t, "image", c.Kind)
			assert.Equal(t, "registry.local/ml/llm:2.5.0", c.Bad)
		}, []string{SectionLogs, SectionProgress}, nil},
		{"a new warning on one rank", func(t *testing.T, bad string) {
			edit(t, bad, worker, func(s string) string {
				return lines(s, func(i int, l string) string {
					if i < 100 || i >= 110 {
						return l
					}
					ts, _, _ := strings.Cut(l, " ")
					return l + "\n" + ts + fmt.Sprintf(" [rank7]: UserWarning: DataLoader worker %d took %d s to return a batch", i%4, 30+i)
				})
			})
		}, SectionLogs, func(t *testing.T, c *Change) {
			assert.Equal(t, "template-new", c.Kind)
			assert.Equal(t, "warning", c.Template.Level)
			assert.Equal(t, 10, c.Template.BadCount)
			assert.Equal(t, []string{"big-train-worker-6"}, c.Template.Pods)
			assert.Equal(t, "logs/ml/big-train-worker-6/pytorch.log", c.Template.First.Path)
			assert.Equal(t, 102, c.Template.First.Line)
		}, []string{SectionSpec}, nil},
		{"nan from step 150 on the master", func(t *testing.T, bad string) {
			edit(t, bad, "logs/ml/big-train-master-0/pytorch.log", func(s string) string {
				return lines(s, func(_ int, l string) string {
					var step int
					if i := strings.Index(l, "]: step "); i > 0 {
						fmt.Sscanf(l[i+len("]: step "):], "%d", &step)
					}
					if step >= 150 {
						if i, j := strings.Index(l, "| loss "), strings.Index(l, " | lr"); i > 0 && j > i {
							l = l[:i] + "| loss nan" + l[j:]
						}
					}
					return l
				})
			})
		}, SectionLogs, func(t *testing.T, c *Change) {
			assert.Equal(t, "template-new", c.Kind)
			assert.Contains(t, c.Template.Text, "loss nan")
			assert.Equal(t, []string{"big-train-master-0"}, c.Template.Pods)
			assert.InDelta(t, 149, c.Template.First.Step, 2, "after about 149 step lines")
		}, []string{SectionSpec}, func(t *testing.T, c *Change) {
			assert.Equal(t, "nonfinite", c.Kind)
			assert.Equal(t, "loss", c.Progress.Metric)
			assert.Equal(t, int64(150), c.Progress.Step, "the step the line names")
			assert.Equal(t, "big-train-master-0", c.Path)
		}},
		{"loss four times higher from step 100 on the master", func(t *testing.T, bad string) {
			edit(t, bad, "logs/ml/big-train-master-0/pytorch.log", func(s string) string {
				return lines(s, func(_ int, l string) string {
					var step int
					var loss float64
					if i := strings.Index(l, "]: step "); i > 0 {
						fmt.Sscanf(l[i+len("]: step "):], "%d", &step)
					}
					if i, j := strings.Index(l, "| loss "), strings.Index(l, " | lr"); step >= 100 && i > 0 && j > i {
						if _, err := fmt.Sscanf(l[i+len("| loss "):j], "%g", &loss); err == nil {
							l = l[:i] + fmt.Sprintf("| loss %.4f", 4*loss) + l[j:]
						}
					}
					return l
				})
			})
		}, SectionProgress, func(t *testing.T, c *Change) {
			assert.Equal(t, "curve", c.Kind)
			assert.Equal(t, "loss", c.Progress.Metric)
			assert.InDelta(t, 4, c.Progress.Ratio, 0.5)
		}, []string{SectionSpec, SectionLogs}, nil},
		{"a slower rank", func(t *testing.T, bad string) {
			// worker-6's clock runs at half speed from its first line: each step takes twice as long.
			edit(t, bad, worker, func(s string) string {
				var t0 time.Time
				return lines(s, func(i int, l string) string {
					ts, rest, _ := strings.Cut(l, " ")
					tm, err := time.Parse(time.RFC3339Nano, ts)
					if err != nil {
						return l
					}
					if t0.IsZero() {
						t0 = tm
					}
					return t0.Add(2*tm.Sub(t0)).Format(time.RFC3339Nano) + " " + rest
				})
			})
		}, SectionProgress, func(t *testing.T, c *Change) {
			assert.Equal(t, "straggler", c.Kind)
			assert.Equal(t, "big-train-worker-6", c.Path)
			assert.InDelta(t, 2, c.Progress.Ratio, 0.1)
		}, []string{SectionSpec}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := generate(t, ranks, 64<<10, 2)
			tt.plant(t, bad)
			r := diff(t, good, bad)
			for _, s := range tt.others {
				assert.Empty(t, titles(r.Section(s)), "%s: nothing but the plant differs", s)
			}
			if tt.section == "" {
				assert.True(t, r.Empty(), "%v", titles(r.Changes))
				return
			}
			got := r.Section(tt.section)
			require.NotEmpty(t, got, "the plant is found")
			tt.check(t, got[0])
			if tt.progress != nil {
				got := r.Section(SectionProgress)
				require.NotEmpty(t, got, "the plant changes the curves")
				tt.progress(t, got[0])
			}
		})
	}

	t.Run("a changed world size", func(t *testing.T) {
		r := diff(t, good, generate(t, ranks-2, 64<<10, 2))
		spec := r.Section(SectionSpec)
		require.NotEmpty(t, spec)
		assert.Equal(t, "replicas", spec[0].Kind)
		assert.Equal(t, "pytorchReplicaSpecs.Worker.replicas", spec[0].Path)
		assert.Equal(t, "15", spec[0].Good)
		assert.Equal(t, "13", spec[0].Bad)
		assert.Empty(t, titles(r.Section(SectionLogs)), "fewer ranks, the same lines per rank")
	})
}

// TestThousandRanks: two runs of 1,024 ranks that differ by noise and one error line on one
// rank give that line alone, within analyze's memory budget for two runs; the time and heap a
// diff takes are reported.
func TestThousandRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("generates two bundles of 1,024 pods")
	}
	good, bad := generate(t, 1024, 8<<10, 1), generate(t, 1024, 8<<10, 2)
	edit(t, bad, "logs/ml/big-train-worker-600/pytorch.log", func(s string) string {
		return lines(s, func(i int, l string) string {
			if i != 20 {
				return l
			}
			ts, _, _ := strings.Cut(l, " ")
			return l + "\n" + ts + " [rank601]: ERROR: checkpoint shard 3 failed its checksum, re-reading it"
		})
	})
	// What analyze holds of one run (its diagnosis and open index) is the budget: a diff holds
	// two runs, their curves and the report, and no more than twice that and a few MiB.
	base := liveHeap()
	opts := diagnose.DefaultOptions()
	opts.Version = "test"
	one, err := diagnose.Run(context.Background(), diagnose.Input{Paths: []string{bad}}, opts)
	require.NoError(t, err)
	analyzed := liveHeap() - base
	require.NoError(t, one.Close())

	base = liveHeap()
	start := time.Now()
	g, b := run(t, good), run(t, bad)
	diagnosed := time.Since(start)
	start = time.Now()
	r, err := Compare(context.Background(), g, b, "test", Options{})
	require.NoError(t, err)
	compared := time.Since(start)
	held := liveHeap() - base
	t.Logf("1,024 ranks: diagnosed in %s, compared in %s; live heap: analyze %d MiB, diff %d MiB; %d changes", diagnosed.Round(time.Millisecond),
		compared.Round(time.Millisecond), analyzed>>20, held>>20, len(r.Changes))
	assert.LessOrEqual(t, held, 2*analyzed+16<<20, "a diff holds two runs as analyze holds one, and its report")
	logs := r.Section(SectionLogs)
	require.Len(t, logs, 1, "%v", titles(r.Changes))
	assert.Equal(t, "template-new", logs[0].Kind)
	assert.Equal(t, 1, logs[0].Template.BadCount)
	assert.Empty(t, titles(r.Section(SectionSpec)))
	assert.Empty(t, titles(r.Section(SectionProgress)))
}
