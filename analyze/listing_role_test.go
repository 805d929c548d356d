package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEvictedBesideItsJobsOtherRole: the pods of one training job differ by role and index as
// well as by suffix (the Kubeflow training operator names them <job>-master-0 and
// <job>-worker-N, the MPI operator <job>-launcher-<suffix> and <job>-worker-N, an indexed Job
// <job>-<index>-<suffix>), so an evicted pod beside running pods of another role or index of
// its job is the job's failure, not another workload's leftover.
func TestEvictedBesideItsJobsOtherRole(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tc := range []struct{ name, text string }{
		{"the master evicted, the workers run",
			"NAMESPACE   NAME                 READY   STATUS    RESTARTS   AGE\n" +
				"ml          llama-ft-master-0    0/1     Evicted   0          3h\n" +
				"ml          llama-ft-worker-0    1/1     Running   0          3h\n" +
				"ml          llama-ft-worker-1    1/1     Running   0          3h\n"},
		{"the master evicted, a worker restarted runs",
			"NAMESPACE   NAME                 READY   STATUS    RESTARTS     AGE\n" +
				"ml          llama-ft-master-0    0/1     Evicted   0            3h\n" +
				"ml          llama-ft-worker-0    1/1     Running   2 (5m ago)   3h\n"},
		{"a worker evicted, the launcher runs",
			"NAME                  READY   STATUS    RESTARTS   AGE\n" +
				"bert-mpi-launcher-8mx7k   1/1     Running   0          40m\n" +
				"bert-mpi-worker-0         0/1     Evicted   0          40m\n"},
		{"an indexed Job's pod evicted, its other indices run",
			"NAME                   READY   STATUS    RESTARTS   AGE\n" +
				"pretrain-0-x7k2p       0/1     Evicted   0          2h\n" +
				"pretrain-1-q9d4m       1/1     Running   0          2h\n" +
				"pretrain-2-h2n8c       1/1     Running   0          2h\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tc.text)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.NotNil(t, res.RootCause, findingsOf(res))
			require.Equal(t, "preempted-evicted/status-listed", res.RootCause.RuleID, findingsOf(res))
		})
	}
}

// TestEvictedBesideAnotherRunOfItsName: a name that ends in a number or a role may be
// another Job's, a CronJob's next run's or a job's earlier incarnation's; an evicted row
// listed days before the running pods of a name like its own is a leftover, not the job's
// failure named at high confidence.
func TestEvictedBesideAnotherRunOfItsName(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tc := range []struct{ name, text string }{
		{"two runs of a CronJob beside a training job",
			"NAMESPACE   NAME                         READY   STATUS    RESTARTS   AGE\n" +
				"ops         backup-28712345-abcde        0/1     Evicted   0          3d\n" +
				"ops         backup-28716665-xyzab        1/1     Running   0          5m\n" +
				"ml          llama-ft-worker-0            1/1     Running   0          2h\n"},
		{"numbered jobs of a sweep",
			"NAMESPACE   NAME                         READY   STATUS    RESTARTS   AGE\n" +
				"ml          sweep-3-x7k2p                0/1     Evicted   0          5d\n" +
				"ml          sweep-4-q9d4m                1/1     Running   0          2h\n" +
				"ml          sweep-4-h2n8c                1/1     Running   0          2h\n"},
		{"dated jobs",
			"NAMESPACE   NAME                         READY   STATUS    RESTARTS   AGE\n" +
				"ml          run-20241126-0-abcde         0/1     Evicted   0          2d\n" +
				"ml          run-20241127-0-xyzab         1/1     Running   0          2h\n" +
				"ml          run-20241127-1-qwert         1/1     Running   0          2h\n"},
		{"an earlier run of a job of the same name",
			"NAMESPACE   NAME                         READY   STATUS    RESTARTS   AGE\n" +
				"ml          bert-master-0                0/1     Evicted   0          5d\n" +
				"ml          bert-worker-3                1/1     Running   0          2h\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tc.text)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
		})
	}
}
