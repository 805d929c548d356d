package narrate

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/coroner-dev/coroner/analyze"
	"github.com/coroner-dev/coroner/index"
	"github.com/coroner-dev/coroner/internal/samplegen"
	"github.com/coroner-dev/coroner/report"
)

// generated analyzes a bundle of internal/samplegen: a PyTorchJob of ranks ranks, one of which
// runs out of GPU memory while the others time out in NCCL.
func generated(t *testing.T, ranks int, logBytes int64) (*report.Report, *index.Index) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, samplegen.Generate(dir, ranks, logBytes, 1))
	return analyzed(t, dir)
}

// TestStrictPriorityOnALargeJob: a 1,024-rank job at the context sizes of small local models.
// Its parts do not fit, so each role is asked first; every prompt (each role's and the
// job's) holds a prefix of its candidates in relevance order, shortened where one does not
// fit whole, with the root cause and its evidence line in the job's prompt and in its role's.
func TestStrictPriorityOnALargeJob(t *testing.T) {
	if testing.Short() {
		t.Skip("analyzes a generated 1,024-rank bundle")
	}
	rep, ix := generated(t, 1024, 6<<20)
	require.NotNil(t, rep.RootCause)
	require.Equal(t, analyze.Category("cuda-oom"), rep.RootCause.Category)
	for _, numCtx := range []int{2048, 4096, 8192} {
		n := options(ix, nil)
		n.NumCtx = numCtx
		ps, err := Prompts(t.Context(), rep, n)
		require.NoError(t, err)
		for _, p := range ps {
			t.Logf("--num-ctx %d, prompt %q: %d tokens, %d parts, left out %+v", numCtx, p.Role, p.Tokens, len(p.Included), p.Left)
			requireStrictPriority(t, rep, n, p, len(ps) > 1 && p.Role == "")
		}
		job := ps[len(ps)-1]
		if numCtx == 8192 {
			// Its 1,022 workers that failed alike are one group, whose lifecycle is a few
			// moments: the whole job fits, and one question is enough.
			require.Len(t, ps, 1)
			require.False(t, job.Info().Cut(), "left out %+v", job.Left)
			continue
		}
		require.True(t, job.Info().Cut(), "a 1,024-rank job does not fit %d tokens whole", numCtx)
		require.Len(t, ps, 3, "--num-ctx %d: the Master's, the Workers', then the job's", numCtx)
		require.Equal(t, []string{"Master", "Worker", ""}, []string{ps[0].Role, ps[1].Role, ps[2].Role})
		require.Equal(t, rep.RootCause.ID, ps[1].Included[0].Ref, "the Workers' prompt starts with the root cause")
		require.True(t, ps[1].Info().Cut(), "1,023 workers do not fit %d tokens whole", numCtx)
		require.Contains(t, ps[1].Messages[1].Content, "1,022 pods alike (group Worker/1, ranks 1-36,38-1023, on 128 nodes): Failed (Error, exit 1)",
			"the workers that failed alike are one line with their exact count and ranks")
	}
}
