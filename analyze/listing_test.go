package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPastedListingRows: what a row of a pasted kubectl get pods listing says depends on the
// rest of the paste. A Pending row is no wait for a node once the paste shows the pod got
// past it (a watch's later row, its Scheduled event, training progress after it); an Evicted
// row is a leftover beside other workloads that run (evicted pods stay listed until they are
// collected), and so is a row of a pod rejected at admission, which training after it also
// shows was replaced; and a row's wait is not explained by another pod's failure.
func TestPastedListingRows(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	const head = "NAME             READY   STATUS    RESTARTS   AGE\n"
	pending := "train-worker-0   0/1     Pending   0          6m\n"
	for _, tc := range []struct{ name, text string }{
		{"a watch: the pod is created, then runs", head + pending +
			"train-worker-0   0/1     ContainerCreating   0          6m\ntrain-worker-0   1/1     Running   0          7m\n"},
		{"training after the row", head + pending +
			"[rank0]: Epoch 1 step 100 loss 2.31\n[rank0]: Epoch 1 step 200 loss 2.10\n[rank0]: Epoch 1 step 300 loss 1.95\n"},
		{"its Scheduled event: bound to a node",
			"Events:\n  Type    Reason     Age   From               Message\n" +
				"  Normal  Scheduled  6m    default-scheduler  Successfully assigned ml/train-worker-0 to gpu-1\n" + head + pending},
		{"an old eviction of another namespace's daemon",
			"NAMESPACE   NAME                       READY   STATUS      RESTARTS   AGE\n" +
				"ml          train-worker-0             1/1     Running     0          3h\n" +
				"ml          train-worker-1             1/1     Running     0          3h\n" +
				"kube-system fluentd-x7k2p              0/1     Evicted     0          38d\n"},
		{"an old rejected smoke test of another namespace",
			"NAMESPACE   NAME                 READY   STATUS                     RESTARTS   AGE\n" +
				"default     gpu-smoke-test       0/1     UnexpectedAdmissionError   0          3d\n" +
				"ml          trainer-worker-0     1/1     Running                    0          38m\n" +
				"ml          trainer-worker-1     1/1     Running                    0          38m\n"},
		{"a rejected pod, training after the row", "NAME               READY   STATUS                     RESTARTS   AGE\n" +
			"train-worker-0-a   0/1     UnexpectedAdmissionError   0          40m\n" +
			"[rank0]: Epoch 1 step 100 loss 2.31\n[rank0]: Epoch 1 step 200 loss 2.10\n[rank0]: Epoch 1 step 300 loss 1.95\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tc.text)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", res.VerdictReason, findingsOf(res))
			require.Nil(t, res.RootCause, findingsOf(res))
		})
	}

	// The pod still Pending at the end of the watch, another pod bound: still waiting.
	res := analyzeLogs(t, all, head+pending+"train-worker-1   1/1     Running   0          6m\n"+
		"  Normal  Scheduled  6m    default-scheduler  Successfully assigned ml/train-worker-1 to gpu-1\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "scheduling/pending-listed", res.RootCause.RuleID, findingsOf(res))

	// The job's pod rejected at admission, alone: the rejection is the failure, and the pod
	// is Failed, its age no wait.
	res = analyzeLogs(t, all, "NAME             READY   STATUS                     RESTARTS   AGE\n"+
		"train-worker-0   0/1     UnexpectedAdmissionError   0          40m\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "scheduling/device-admission", res.RootCause.RuleID, findingsOf(res))
	require.NotContains(t, res.VerdictReason, "pending", res.VerdictReason)

	// Evicted beside its own workload's running pods (https://github.com/SeldonIO/seldon-core/issues/515):
	// the workload lost pods.
	res = analyzeLogs(t, all, "serve0315-serve0315-a4e34ed-84fb7dbbd7-rlgj8          0/2     Evicted            0          3h\n"+
		"serve0315-serve0315-a4e34ed-84fb7dbbd7-xsqhd          2/2     Running            0          3h\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "preempted-evicted/status-listed", res.RootCause.RuleID, findingsOf(res))

	// One pod Pending, another Evicted: the eviction is the failure, and it does not say why
	// the other pod waits.
	res = analyzeLogs(t, all, head+"train-worker-0   0/1     Pending   0          2m\ntrain-worker-1   0/1     Evicted   0          2m\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "preempted-evicted/status-listed", res.RootCause.RuleID, findingsOf(res))
	for _, f := range res.Findings {
		if f.RuleID == "scheduling/pending-listed" {
			require.Empty(t, f.SecondaryOf, findingsOf(res))
		}
	}
}

// TestPastedClusterRows: a pasted listing of the cluster's nodes or of its batch queue is the
// cluster's state when it was pasted; a NotReady node or another user's job pending on
// drained nodes is not why the job fails once the job trains after the listing, and still is
// when nothing follows it.
func TestPastedClusterRows(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	const training = "[rank0] step 100 loss 2.31\n[rank0] step 200 loss 2.11\n[rank0] step 300 loss 2.01\n"
	nodes := "$ kubectl get nodes\nNAME          STATUS     ROLES    AGE   VERSION\n" +
		"gpu-node-1    Ready      <none>   9d    v1.28.3\ncpu-node-7    NotReady   <none>   9d    v1.28.3\n"
	queue := "$ squeue\n  JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n" +
		"1290410       gpu     bash    alice PD       0:00      1 (ReqNodeNotAvail, UnavailableNodes:d[001-032])\n" +
		"1290411       gpu    train      bob  R    2:10:00      4 g[001-004]\n"
	for _, tc := range []struct{ name, listing, rule string }{
		{"a NotReady node", nodes, "preempted-evicted/node-not-ready-message"},
		{"a job pending on drained nodes", queue, "scheduling/slurm-pending-nodes-down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tc.listing+"$ tail train.log\n"+training)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", res.VerdictReason, findingsOf(res))
			require.Nil(t, res.RootCause, findingsOf(res))

			res = analyzeLogs(t, all, training+tc.listing)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, tc.rule, res.RootCause.RuleID, findingsOf(res))
		})
	}
}

// TestListedRestartThatRuns: a watch (or a second listing pasted under the first) that shows
// a pod's container end in Error, back off and then run with every container ready is a pod
// that got past its failure (an MPI launcher started before its workers' network was up,
// kubeflow/mpi-operator#470's wording): the listing's newest row is the pod's state. A pod's
// name is what its owner called it: an "nccl-tests" launcher's row says nothing of NCCL, so
// the second tier does not read the NAME column. A pod still not ready, or another pod
// running, is no such restart.
func TestListedRestartThatRuns(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	const head = "NAME                          READY   STATUS             RESTARTS      AGE\n"
	failed := head + "allreduce-nccl-launcher-q8x2z   0/1     Error              0             6s\n" +
		head + "allreduce-nccl-launcher-q8x2z   0/1     CrashLoopBackOff   1 (12s ago)   20s\n"
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, failed+head+"allreduce-nccl-launcher-q8x2z   1/1     Running            2 (20s ago)   31s\n")
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", res.VerdictReason, findingsOf(res))
		require.Nil(t, res.RootCause, findingsOf(res))

		// Running again but not ready: the restart has not shown it runs.
		res = analyzeLogs(t, rules, failed+head+"allreduce-nccl-launcher-q8x2z   0/1     Running            2 (2s ago)    31s\n")
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.NotEqual(t, CategoryCollectiveError, res.RootCause.Category, findingsOf(res))
		require.Equal(t, ConfidenceLow, res.Confidence, findingsOf(res))

		// Another pod runs: the launcher's failure stands, and its name names no cause.
		res = analyzeLogs(t, rules, failed+head+"allreduce-nccl-worker-0        1/1     Running            0             31s\n")
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.NotEqual(t, CategoryCollectiveError, res.RootCause.Category, findingsOf(res))

		// A crash loop is Running between its crashes (the review's cases): a watch that ran,
		// failed again and was cut while Running, and a row that had restarted 7 times.
		loop := head + "allreduce-nccl-launcher-q8x2z   1/1     Running            0             5s\n" +
			"allreduce-nccl-launcher-q8x2z   0/1     Error              0             12s\n" +
			"allreduce-nccl-launcher-q8x2z   1/1     Running            1 (2s ago)    14s\n" +
			"allreduce-nccl-launcher-q8x2z   0/1     Error              1 (9s ago)    21s\n" +
			"allreduce-nccl-launcher-q8x2z   0/1     CrashLoopBackOff   1 (12s ago)   33s\n" +
			"allreduce-nccl-launcher-q8x2z   1/1     Running            2 (14s ago)   35s\n"
		many := head + "allreduce-nccl-launcher-q8x2z   0/1     CrashLoopBackOff   7 (2m ago)    14m\n" +
			head + "allreduce-nccl-launcher-q8x2z   1/1     Running            8 (5s ago)    16m\n"
		for _, log := range []string{loop, many} {
			res = analyzeLogs(t, rules, log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, "%s: %s", res.VerdictReason, findingsOf(res))
		}
	}
}

// TestDiskPressureEvictionIsAFullDisk: the second tier names a pod evicted for its node's
// DiskPressure a full disk, as the specific rule does and as the corpus labels it (its
// "Evicted" alone named preempted-evicted at medium); an eviction for memory stays
// preempted-evicted, and a node without disk pressure is no failure.
func TestDiskPressureEvictionIsAFullDisk(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tier := WithoutSpecific(all)
	res := analyzeLogs(t, tier, "  Warning  Evicted    12m  kubelet  The node had condition: [DiskPressure].\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryDiskFull, res.RootCause.Category, findingsOf(res))
	require.Equal(t, ConfidenceMedium, res.Confidence)

	res = analyzeLogs(t, tier, "  Warning  Evicted    12m  kubelet  The node was low on resource: memory. Container trainer was using 61Gi, which exceeds its request of 32Gi.\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryPreemptedEvicted, res.RootCause.Category, findingsOf(res))

	for _, rules := range [][]*Rule{all, tier} {
		res = analyzeLogs(t, rules, "  Normal  NodeHasNoDiskPressure  2m  kubelet  Node gpu-3 status is now: NodeHasNoDiskPressure\n")
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
	}
}

// TestListedNamesAreNotWords: the second tier skips a listing row's NAMESPACE and NAME
// columns, and only a row's: a pod's name is lower case, its status capitalised, so another
// program's line of the same shape ("NCCL 1/8 ranks 0 failed") keeps its words.
func TestListedNamesAreNotWords(t *testing.T) {
	row := "ml     nccl-tests-efa-launcher-x7k2p   0/1   Error   0   5s"
	text := "NAMESPACE   NAME   READY   STATUS   RESTARTS   AGE\n" + row + "\nRuntimeError: NCCL 1/8 ranks 0 failed\n"
	spans := listedNames(text)
	require.Len(t, spans, 1, "%v", spans)
	require.Equal(t, "ml     nccl-tests-efa-launcher-x7k2p", text[spans[0][0]:spans[0][1]])
}
