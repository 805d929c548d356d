package analyze

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRayRequestsThatNeverGetResources: a Ray job whose tasks, actors or placement groups wait
// for resources no node gives them is a scheduling failure, named by the autoscaler's own
// sentences or by its last status report; a wait the job got past is none. The lines are
// those of the threads rules/ray.yaml cites.
func TestRayRequestsThatNeverGetResources(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	status := "======== Autoscaler status: 2025-02-17 18:36:14.406028 ========\n" +
		"Node status\n---------------------------------------------------------------\n" +
		"Active:\n 1 node_9ce4595c6c9628208ab67348060cfe32348196bec94f997ee553da82\n" +
		"Pending:\n (no pending nodes)\nRecent failures:\n (no failures)\n\n" +
		"Resources\n---------------------------------------------------------------\n" +
		"Usage:\n 0.0/112.0 CPU\n 0.0/1.0 GPU\n\n" +
		"Demands:\n {'GPU': 1.0, 'CPU': 1.0} * 8 (STRICT_PACK): 1+ pending placement groups\n"
	training := "(RayTrainWorker pid=82347) epoch 1 step 10 loss 2.1\n(RayTrainWorker pid=82347) epoch 1 step 20 loss 2.0\n" +
		"(RayTrainWorker pid=82347) epoch 1 step 30 loss 1.9\n(RayTrainWorker pid=82347) epoch 1 step 40 loss 1.8\n"
	unschedulable := "(autoscaler +2m17s) Warning: The following resource request cannot be scheduled right now: {'CPU': 1.0, 'GPU': 1.0}. " +
		"This is likely due to all cluster resources being claimed by actors. Consider creating fewer actors or adding more nodes to this Ray cluster.\n"
	tests := []struct {
		name   string
		log    string
		ruleID string // with want "": the warning the log shows, if any
		want   Verdict
	}{
		{"the last status report still lists a placement group", status, "scheduling/ray-unmet-demands", VerdictUnhealthy},
		{"a later report lists no demand",
			status + "======== Autoscaler status: 2025-02-17 18:37:14.406028 ========\nDemands:\n (no resource demands)\n", "", ""},
		{"no node type can hold the request",
			"(autoscaler +34s) Error: No available node types can fulfill resource request defaultdict(<class 'float'>, {'CPU': 8.0, 'GPU': 8.0}). " +
				"Add suitable node types to this cluster to resolve this issue.\n", "scheduling/ray-no-node-type", VerdictUnhealthy},
		{"a request waiting is shown, not the failure: it may be placed later",
			unschedulable + training, "scheduling/ray-request-unschedulable", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tt.log)
			if tt.want == "" {
				require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
				if tt.ruleID != "" {
					require.True(t, slices.ContainsFunc(res.Findings, func(f *Finding) bool {
						return f.RuleID == tt.ruleID && f.Severity == SeverityWarning
					}), "the warning %s", tt.ruleID)
				}
				return
			}
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryScheduling, res.RootCause.Category)
			require.Equal(t, tt.ruleID, res.RootCause.RuleID)
		})
	}
}

// TestRayDemandsWithoutWait: one status report's demand is a moment of a wait; a last report
// that adds a node for it, or training after it, is no failure.
func TestRayDemandsWithoutWait(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	report := "======== Autoscaler status: 2023-09-19 10:15:05.945390 ========\nDemands:\n {'CPU': 1.0, 'GPU': 1.0}: 1+ pending tasks/actors\n"
	for _, tc := range []struct{ name, text string }{
		{"training after the report", report +
			"(RolloutWorker pid=123) step:1 - actor/entropy:0.2 - actor/pg_loss:0.1\n(RolloutWorker pid=123) step:2 - actor/entropy:0.2 - actor/pg_loss:0.1\n"},
		{"the last report adds a node", report +
			"======== Autoscaler status: 2023-09-19 10:15:10.945390 ========\nPending:\n 10.0.0.5: gpu_worker, setting up\n" +
			"Demands:\n {'CPU': 1.0, 'GPU': 1.0}: 1+ pending tasks/actors\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tc.text)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", res.VerdictReason, findingsOf(res))
		})
	}
}

// TestRayWrappedException: Ray re-raises a task's exception in its caller wrapped, the
// task's class in parentheses; the second tier reads the line as the exception that ends the
// traceback and names the task's class (TideDra/lmm-r1#82, ray-project/ray#13953), in a
// paste that starts inside the traceback.
func TestRayWrappedException(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "  File \"/app/train.py\", line 167, in train\n" +
		"    ray.get(trainer.fit.remote())\n" +
		"  File \"/usr/local/lib/python3.11/site-packages/ray/_private/worker.py\", line 919, in get_objects\n" +
		"    raise value.as_instanceof_cause()\n" +
		"ray.exceptions.RayTaskError(ZeroDivisionError): ray::PPOTrainer.fit() (pid=111331, ip=0.0.0.0, actor_id=3f2e3f20c069108222cc6eae02000000)\n" +
		"  File \"/app/trainer.py\", line 88, in fit\n"
	res := analyzeLogs(t, WithoutSpecific(all), log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Contains(t, res.RootCause.Title, "ZeroDivisionError")
}

// TestRayTrainMemoryMonitorAndArrowS3: two lines a Ray Train or Tune driver prints when its
// workers die of something outside the training code: the memory monitor's report of the
// worker it killed (even when the OutOfMemoryError line above it was not pasted), and Arrow's
// S3 filesystem failing a checkpoint upload or read. Tune's status line about the node's memory
// and an S3 request refused for access are neither. The lines are those of the threads
// rules/hostmem.yaml and rules/storage.yaml cite.
func TestRayTrainMemoryMonitorAndArrowS3(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	training := "(RayTrainWorker pid=82347) epoch 1 step 10 loss 2.1\n(RayTrainWorker pid=82347) epoch 1 step 20 loss 2.0\n" +
		"(RayTrainWorker pid=82347) epoch 1 step 30 loss 1.9\n(RayTrainWorker pid=82347) epoch 1 step 40 loss 1.8\n"
	killed := "Memory on the node (IP: 172.31.237.1, ID: 2c0ca846c8a9b1630ce2a4aae5ce82dd974531325a67acab1801dbf1) where the task " +
		"(task ID: 76b2551f16836f9d58427a0096d8ccf5ba077e2703000000, name=pi4_sample, pid=664672, memory used=0.05GB) was running " +
		"was 219.41GB / 230.40GB (0.952289), which exceeds the memory usage threshold of 0.95. Ray killed this worker " +
		"(ID: ba84684289453ec054c6d0aa4293b77bdf7d3f3e0c77b2724ee41479) because it was the most recently scheduled task\n"
	upload := "IOError: When initiating multiple part upload for key 'data1.parquet' in bucket 'parquetpoc01': " +
		"AWS Error NETWORK_CONNECTION during CreateMultipartUpload operation: curlCode: 28, Timeout was reached\n"
	denied := "OSError: When reading information for key 'embedded_images/timestamp=2025-07-30-14/task_1286/0.parquet' in bucket 'xxxx': " +
		"AWS Error ACCESS_DENIED during HeadObject operation: No response body.\n"
	for _, tc := range []struct {
		name, log, rule, evidence string
		category                  Category
	}{
		{"the memory monitor's kill report", training + killed, "host-oom/ray-memory-monitor", "Memory on the node (IP: 172.31.237.1", CategoryHostOOM},
		{"Arrow's S3 upload fails", training + upload, "storage-error/object-store", "AWS Error NETWORK_CONNECTION during CreateMultipartUpload", CategoryStorageError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tc.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, tc.category, res.RootCause.Category)
			require.Equal(t, tc.rule, res.RootCause.RuleID)
			require.Equal(t, ConfidenceHigh, res.Confidence)
			require.Contains(t, res.RootCause.Evidence[0].Text, tc.evidence)
		})
	}
	t.Run("Tune's node memory status is no kill", func(t *testing.T) {
		// Tune prints its status block again and again, last at the log's end: with no
		// training after it to recover to, only reading it right keeps the run healthy.
		status := "== Status ==\nMemory usage on this node: 61.2/64.0 GiB\nUsing FIFO scheduling algorithm.\n"
		for _, res := range analyzeInEitherTier(t, all, training+status) {
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", res.VerdictReason, findingsOf(res))
			for _, f := range res.Findings {
				for _, e := range f.Evidence {
					require.NotContains(t, e.Text, "Memory usage on this node", f.RuleID)
				}
			}
		}
	})
	// A request the store refused (access denied, a key it does not know, 403) is the user's
	// credentials, permanent; a redirect to the bucket's region is configuration. Neither is a
	// failure of the store.
	for _, line := range []string{
		denied,
		"OSError: When getting information for key 'ckpt/model.pt' in bucket 'ml-ckpts': AWS Error UNKNOWN (HTTP status 403) during HeadObject operation: No response body.\n",
		"OSError: When getting information for key 'ckpt/model.pt' in bucket 'ml-ckpts': AWS Error INVALID_ACCESS_KEY_ID during HeadObject operation: The AWS Access Key Id you provided does not exist in our records.\n",
	} {
		res := analyzeLogs(t, all, training+line)
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, "permission-denied/object-store-denied", res.RootCause.RuleID, line)
		require.Equal(t, FaultUser, res.RootCause.Fault, line)
	}
	res := analyzeLogs(t, all, training+"OSError: When getting information for key 'uber' in bucket 'coiled-data': AWS Error UNKNOWN (HTTP status 301) during HeadObject operation: No response body. Looks like the configured region is 'us-east-1' while the bucket is located in 'us-east-2'.\n")
	if res.RootCause != nil {
		require.NotEqual(t, CategoryStorageError, res.RootCause.Category, res.RootCause.RuleID)
	}
}

// TestRetriedFailureTrainedPast: a failure whose client says it tries again, after which
// training goes on in the same log, did not end the job, however its words read (Ray Tune's
// syncer failing a checkpoint upload once). The same failure printed again after the
// training, with no retry said, or a retry that says it is the last, is how the log ends.
func TestRetriedFailureTrainedPast(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	before := "(RayTrainWorker pid=82347, ip=10.0.12.7) epoch 3 step 100 loss 1.214\n(RayTrainWorker pid=82347, ip=10.0.12.7) epoch 3 step 200 loss 1.198\n"
	failed := "2023-08-01 10:12:44,123\tERROR syncer.py:466 -- The latest sync operation failed with the following error: OSError(\"When initiating multiple part upload for key 'experiments/ft/checkpoint_000003/model.pt' in bucket 'ckpts': AWS Error NETWORK_CONNECTION during CreateMultipartUpload operation: curlCode: 28, Timeout was reached\")\n"
	after := "(RayTrainWorker pid=82347, ip=10.0.12.7) epoch 4 step 100 loss 1.187\n(RayTrainWorker pid=82347, ip=10.0.12.7) epoch 4 step 200 loss 1.171\n" +
		"(RayTrainWorker pid=82347, ip=10.0.12.7) epoch 5 step 100 loss 1.160\n(RayTrainWorker pid=82347, ip=10.0.12.7) epoch 5 step 200 loss 1.152\n"
	for _, retry := range []string{
		"Retrying 2 more time(s) after sleeping for 5 seconds...\n",
		"WARNING syncer.py:470 -- Sync failed, will retry in 5 seconds\n",
	} {
		res := analyzeLogs(t, all, before+failed+retry+after)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", res.VerdictReason, findingsOf(res))
		require.Contains(t, res.VerdictReason, "retried, training went on", retry)
	}
	// The retry's own line: the error says it is retried.
	res := analyzeLogs(t, all, before+strings.TrimSuffix(failed, "\n")+" Retrying after sleeping for 1.0 seconds...\n"+after)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", res.VerdictReason, findingsOf(res))

	for name, log := range map[string]string{
		"no retry said":                 before + failed + after,
		"failed again after training":   before + failed + "Retrying 2 more time(s) after sleeping for 5 seconds...\n" + after + failed,
		"the last try":                  before + failed + "Retrying in 5s [Retry 5/5]\n" + after,
		"retried, no training after":    before + failed + "Retrying 2 more time(s) after sleeping for 5 seconds...\n",
		"a retry the client gave up on": before + failed + "Retrying failed: giving up after 3 attempts\n" + after,
	} {
		res := analyzeLogs(t, all, log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, res.VerdictReason)
		require.Equal(t, "storage-error/object-store", res.RootCause.RuleID, name)
	}
}

// TestRestoredFromCheckpointTrainedPast: Ray Train restores a run whose worker failed from its
// last checkpoint (FailureConfig(max_failures)) and says so as the new trainer starts ("Restored
// on <ip> from checkpoint: Checkpoint(...)", ray-project/ray#46814 and Ray's fault-tolerance
// example); a memory monitor's kill before it, with training after it, did not end the run. A
// kill after the restore, a restore with no training after it, and a restore that begins the
// log (a resumed run) before a kill leave the kill the root cause.
func TestRestoredFromCheckpointTrainedPast(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	step := func(pid, epoch string) string {
		return "(RayTrainWorker pid=" + pid + ", ip=10.0.0.12) {'loss': 1.0544, 'learning_rate': 4.4e-05, 'epoch': " + epoch + "}\n"
	}
	before := step("2145", "0.4") + step("2145", "0.8")
	killed := "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n" +
		"Memory on the node (IP: 10.0.0.12, ID: 6f2b1c) where the task (actor ID: 8c1d, name=RayTrainWorker.__init__, pid=2145, memory used=27.10GB) was running was 30.40GB / 32.00GB (0.95), which exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: 91ab) because it was the most recently scheduled task.\n"
	restored := "(TorchTrainer pid=2390, ip=10.0.0.12) Restored on 10.0.0.12 from checkpoint: Checkpoint(filesystem=local, path=/root/ray_results/TorchTrainer_6eea7_00000_0/checkpoint_000004)\n"
	after := step("2512", "1.2") + step("2512", "1.6") + step("2512", "2.0") + step("2512", "2.4")

	for _, restore := range []string{restored, "2019-02-17 01:50:20,572\tINFO trial_runner.py:460 -- Attempting to recover trial state from last checkpoint.\n",
		"2023-01-20 10:14:09,000\tINFO trial_runner.py:1457 -- Trial TorchTrainer_6eea7_00000: Attempting to restore trial state from last checkpoint.\n"} {
		res := analyzeLogs(t, all, before+killed+restore+after)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", res.VerdictReason, findingsOf(res))
		require.Contains(t, res.VerdictReason, "Ray killed workers for memory pressure, worker group restarted, resumed at", restore)
	}
	// Population based training clones one trial into another, and the function trainable
	// prints the restore: no retry of the trial that was killed (a review of session 26).
	pbt := "2024-03-02 10:14:09,000\tINFO pbt.py:804 -- [PopulationBasedTraining] [Exploit] Cloning trial 4b7c2_00003 (score = 0.430000) into trial 4b7c2_00001\n" +
		"(train_fn pid=2390, ip=10.0.0.12) Restored on 10.0.0.12 from checkpoint: Checkpoint(filesystem=local, path=/root/ray_results/train_fn_4b7c2_00003_3/checkpoint_000002)\n"
	for name, log := range map[string]string{
		"another trial cloned by PBT":    before + killed + pbt + after,
		"killed again after the restore": before + killed + restored + after + killed,
		"no training after the restore":  before + killed + restored + step("2512", "1.2"),
		"a resumed run killed later":     restored + before + killed,
	} {
		res := analyzeLogs(t, all, log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, res.VerdictReason)
		require.Equal(t, CategoryHostOOM, res.RootCause.Category, name)
		require.Equal(t, ConfidenceHigh, res.Confidence, name)
	}
}
