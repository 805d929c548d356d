package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTFSessionPeersUnreachable: TF 1's distributed runtime (ps/worker, Estimator, TFJob)
// creates its session by contacting every task of the cluster spec; a log that ends while
// it still waits for one ("CreateSession still waiting for response from worker") or after
// contacting one failed ("Master init: Unavailable") never got a session. Named
// rendezvous-failure at medium: the task that did not answer is not in this log. One wait,
// or waits followed by the session's start, are a slow start and no failure.
func TestTFSessionPeersUnreachable(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tt := range []struct{ name, log, evidence string }{
		// https://github.com/tensorflow/benchmarks/issues/165 (128 GPUs)
		{"master init unavailable", "2018-04-17 00:29:26.707462: E tensorflow/core/distributed_runtime/master.cc:269] Master init: Unavailable: OS Error\n" +
			"2018-04-17 00:29:27.711554: E tensorflow/core/distributed_runtime/master.cc:269] Master init: Unavailable: OS Error\n" +
			"2018-04-17 00:29:29.711819: I tensorflow/core/distributed_runtime/master.cc:221] CreateSession still waiting for response from worker: /job:ps/replica:0/task:1\n",
			"Master init: Unavailable: OS Error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tt.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryRendezvous, res.RootCause.Category)
			require.Equal(t, "rendezvous-failure/tf-session-peers-unreachable", res.RootCause.RuleID)
			require.Equal(t, ConfidenceMedium, res.Confidence)
			require.Equal(t, BasisSymptom, res.ConfidenceBasis)
			require.Contains(t, res.RootCause.Evidence[0].Text, tt.evidence)
		})
	}
	// The second tier alone names none of it: a worker that starts before its ps prints the
	// master's errors and recovers (review, session 22).
	res := analyzeLogs(t, WithoutSpecific(all), "2018-04-17 00:29:26.707462: E tensorflow/core/distributed_runtime/master.cc:269] Master init: Unavailable: OS Error\n"+
		"2018-04-17 00:29:27.711554: E tensorflow/core/distributed_runtime/master.cc:269] Master init: Unavailable: OS Error\n")
	require.NotEqual(t, ConfidenceMedium, res.Confidence, res.VerdictReason)
	// A slow start: one wait (https://github.com/tensorflow/tensorflow/issues/19907's first
	// line), or waits the session then ended (yahoo/TensorFlowOnSpark#240's waits, then
	// tensorflow/tensorflow#18737's session start and its wait for the chief's variables).
	wait := "2018-03-02 08:50:57.918293: I tensorflow/core/distributed_runtime/master.cc:221] CreateSession still waiting for response from worker: /job:ps/replica:0/task:0\n"
	started := "2018-04-21 00:34:14.953222: I tensorflow/core/distributed_runtime/master_session.cc:1017] Start master session b6a0c9c95637b2bf with config: allow_soft_placement: true operation_timeout_in_ms: 600000\n" +
		"INFO:tensorflow:Waiting for model to be ready.  Ready_for_local_init_op:  Variables not initialized: encoder/gru_cell/gates/w_h, encoder/gru_cell/candidate/u, ready: None\n"
	master := "2018-04-17 00:29:26.707462: E tensorflow/core/distributed_runtime/master.cc:269] Master init: Unavailable: OS Error\n"
	for _, log := range []string{
		"I tensorflow/core/distributed_runtime/master.cc:221] CreateSession still waiting for response from worker: /job:ps/replica:0/task:0\n",
		strings.Repeat(wait, 3) + started,
		// Waits to the end are a log that stops (yahoo/TensorFlowOnSpark#244): one round of waits
		// for two ps tasks is already two lines.
		strings.Repeat(wait, 3),
		// The master's errors, then the session (tensorflow/tensorflow#18737's line) or the
		// script's own training rows under TF_CPP_MIN_LOG_LEVEL=2.
		strings.Repeat(master, 2) + started,
		strings.Repeat(master, 2) + "step 0, loss 2.3026\nstep 100, loss 0.4410\nDone training, final loss 0.2204\n",
	} {
		res := analyzeLogs(t, all, log)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s\n%s", res.VerdictReason, log)
	}
	// An exception of another cause below the master's errors is the cause, not the session.
	res = analyzeLogs(t, all, master+"Traceback (most recent call last):\n  File \"train.py\", line 80, in <module>\n    sess = tf.train.MonitoredTrainingSession(master=server.target)\n"+
		"tensorflow.python.framework.errors_impl.NotFoundError: Key conv1/weights not found in checkpoint\n")
	require.NotEqual(t, CategoryRendezvous, res.RootCause.Category, findingsOf(res))
}
