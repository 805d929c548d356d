package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAirflowTaskSIGKILL: Airflow's task runner reports a task process killed with SIGKILL as
// "Task exited with return code -9" (openego/eGon-data#1225, an OOM kill at 142 GB) or, where
// it names the signal, "Negsignal.SIGKILL" (apache/airflow#27741,
// aws-samples/amazon-mwaa-examples#60). With nothing else in the log that is the OOM killer's
// usual signature: host-oom at medium, the runner's summary and not the task's own words. A
// task's own exception explains the exit; a task that exited 0 is no failure.
func TestAirflowTaskSIGKILL(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for name, log := range map[string]string{
		"return code -9": "[2025-04-01, 08:07:05 UTC] {local_task_job_runner.py:266} INFO - Task exited with return code -9. For more information, see https://airflow.apache.org/docs/apache-airflow/stable/troubleshooting.html#LocalTaskJob-killed\n" +
			"[2025-04-01, 08:07:05 UTC] {standard_task_runner.py:217} INFO - Process not found (most likely exited), stop collecting metrics\n",
		"Negsignal": "[2022-11-17, 10:02:11 UTC] {local_task_job.py:159} INFO - Task exited with return code Negsignal.SIGKILL\n",
	} {
		t.Run(name, func(t *testing.T) {
			res := analyzeLogs(t, all, log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryHostOOM, res.RootCause.Category, res.RootCause.Title)
			require.Equal(t, ConfidenceMedium, res.Confidence)
			require.Contains(t, res.RootCause.Evidence[0].Text, "Task exited with return code")
		})
	}
	// Airflow told the task to stop first (its execution timeout, a state set from outside) and
	// sent SIGKILL to what did not exit within the grace period: the kill is that escalation,
	// could not tell (low), whichever of Airflow's SIGTERM notices the log shows; in a log that
	// shows none, as above, it stays medium.
	for _, term := range []string{
		"[2023-06-21, 16:55:15 UTC] {taskinstance.py:1517} ERROR - Received SIGTERM. Terminating subprocesses.\n",
		"[2023-06-21, 16:55:15 UTC] {process_utils.py:131} INFO - Sending Signals.SIGTERM to group 28. PIDs of all processes in the group: [28]\n",
		"[2023-06-21, 16:56:15 UTC] {process_utils.py:149} WARNING - process psutil.Process(pid=28, name='airflow task runner', status='sleeping') did not respond to SIGTERM. Trying SIGKILL\n",
	} {
		res := analyzeLogs(t, all, "[2023-06-21, 16:50:01 UTC] {logging_mixin.py:137} INFO - epoch 1 step 200 loss 2.12\n"+term+
			"[2023-06-21, 16:56:15 UTC] {local_task_job.py:208} INFO - Task exited with return code Negsignal.SIGKILL\n")
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, ConfidenceLow, res.Confidence, term)
		require.Equal(t, BasisKillAfterTerm, res.ConfidenceBasis, term)
	}
	// A SIGTERM notice after the kill (the runner cleaning up) does not lower it.
	res := analyzeLogs(t, all, "[2022-11-17, 10:02:11 UTC] {local_task_job.py:159} INFO - Task exited with return code Negsignal.SIGKILL\n"+
		"[2022-11-17, 10:02:12 UTC] {process_utils.py:131} INFO - Sending Signals.SIGTERM to group 28. PIDs of all processes in the group: [28]\n")
	require.Equal(t, ConfidenceMedium, res.Confidence)

	// The task's own error explains the runner's line.
	own := "[2022-11-17, 10:02:10 UTC] {taskinstance.py:1851} ERROR - Task failed with exception\n" +
		"Traceback (most recent call last):\n" +
		"  File \"/opt/airflow/dags/train.py\", line 40, in train\n" +
		"    model = load()\n" +
		"ModuleNotFoundError: No module named 'xgboost'\n" +
		"[2022-11-17, 10:02:11 UTC] {local_task_job.py:159} INFO - Task exited with return code -9\n"
	res = analyzeLogs(t, all, own)
	require.Equal(t, CategoryModuleNotFound, res.RootCause.Category, res.RootCause.Title)
	// Healthy look-alike: a task that ended well.
	for _, ok := range []string{
		"[2024-05-12, 18:38:42 JST] {python.py:202} INFO - Done. Returned value was: None\n" +
			"[2024-05-12, 18:38:44 JST] {taskinstance.py:1400} INFO - Marking task as SUCCESS. dag_id=train, task_id=fit\n" +
			"[2024-05-12, 18:38:44 JST] {local_task_job_runner.py:240} INFO - Task exited with return code 0\n",
	} {
		require.NotEqual(t, VerdictUnhealthy, analyzeLogs(t, all, ok).Verdict, ok)
	}
}

// TestDstackInterruptedRun: dstack ends a run whose instance the cloud took away with the
// termination reason INTERRUPTED_BY_NO_CAPACITY (dstack issues 1738, 1654: a spot instance
// reclaimed); the machine was taken away, whatever the trainer printed last. A run that never
// got an instance (FAILED_TO_START_DUE_TO_NO_CAPACITY) or whose container failed on its own is
// not that.
func TestDstackInterruptedRun(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	interrupted := "epoch 1 step 120 loss 1.84\n" +
		"Run failed with error code INTERRUPTED_BY_NO_CAPACITY. Check CLI and server logs for more details.\n"
	res := analyzeLogs(t, all, interrupted)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryPreemptedEvicted, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, ConfidenceHigh, res.Confidence)
	require.Contains(t, res.RootCause.Evidence[0].Text, "INTERRUPTED_BY_NO_CAPACITY")

	own := "bash: qwerty: command not found\nRun failed with error code CONTAINER_EXITED_WITH_ERROR. Check CLI and server logs for more details.\n"
	if res := analyzeLogs(t, all, own); res.RootCause != nil {
		require.NotEqual(t, CategoryPreemptedEvicted, res.RootCause.Category, res.RootCause.Title)
	}
}
