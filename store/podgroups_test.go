package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPodGroupsInTheStore: a 64-rank job whose report folds the pods that failed alike into a
// group (format version 3) still has a row per pod in the store, with its rank, node and exit
// code, as a report of version 2 had.
func TestPodGroupsInTheStore(t *testing.T) {
	ctx := context.Background()
	d := diagnose64(t)
	rep := d.Report
	require.Equal(t, 3, rep.FormatVersion)
	grouped, listed := 0, 0
	for _, r := range rep.Job.Replicas {
		listed += len(r.Pods)
		for _, g := range r.Groups {
			grouped += g.Count
		}
	}
	require.Positive(t, grouped, "the pods that failed alike are a group")
	require.Equal(t, 64, grouped+listed)

	a, err := FromDiagnosis(ctx, d, Meta{Cluster: "c1", RulesVersion: "rules-1", AnalyzedAt: time.Unix(1e9, 0)})
	require.NoError(t, err)
	require.Len(t, a.Pods, 64)
	ranks := map[int]bool{}
	for _, p := range a.Pods {
		require.NotNil(t, p.Rank, p.Name)
		ranks[*p.Rank] = true
		assert.NotEmpty(t, p.Node, p.Name)
		assert.NotNil(t, p.ExitCode, p.Name)
	}
	require.Len(t, ranks, 64)

	s := open(t)
	require.NoError(t, s.Put(ctx, a))
	assert.Equal(t, 64, count(t, s, `SELECT count(*) FROM pods`))
	assert.Equal(t, 64, count(t, s, `SELECT count(DISTINCT rank) FROM pods`))
	assert.Equal(t, 64, count(t, s, `SELECT count(*) FROM pods WHERE phase = 'Failed' AND finished_at IS NOT NULL`))
}
