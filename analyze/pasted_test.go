package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPastedContainerState: a container's end pasted as text (a kubectl get pods row, a
// kubectl describe block, the pod's YAML or JSON) is the same fact as the pod's own status in
// a bundle: the same reason and exit code give the same root cause, its confidence and the
// lines that show it, with the pod named when the paste names it.
func TestPastedContainerState(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tests := []struct {
		name, log  string
		category   Category
		confidence Confidence
		pod        string
		evidence   string
	}{
		{
			name: "listing: OOMKilled beside a Completed pod",
			log: "NAME                     READY   STATUS      RESTARTS   AGE\n" +
				"train-launcher-0         0/1     Completed   0          126m\n" +
				"train-worker-0           0/1     OOMKilled   0          126m\n",
			category: CategoryHostOOM, confidence: ConfidenceHigh, pod: "train-worker-0",
			evidence: "train-worker-0           0/1     OOMKilled   0          126m",
		},
		{
			name:     "listing with namespaces, cut after STATUS",
			log:      "kubeflow     training-operator-8569f97489-zkxbt      0/1     OOMKilled\n",
			category: CategoryHostOOM, confidence: ConfidenceHigh, pod: "training-operator-8569f97489-zkxbt",
			evidence: "kubeflow     training-operator-8569f97489-zkxbt      0/1     OOMKilled",
		},
		{
			name: "listing: an Error row says a process failed, not why",
			log: "NAME             READY   STATUS    RESTARTS      AGE\n" +
				"train-worker-0   0/1     Error     0             5m\n" +
				"train-worker-1   1/1     Running   1 (3m ago)    5m\n",
			category: CategoryUnknown, confidence: ConfidenceLow, pod: "train-worker-0",
			evidence: "train-worker-0   0/1     Error     0             5m",
		},
		{
			name: "describe: reason and exit code",
			log: "    State:          Terminated\n" +
				"      Reason:       OOMKilled\n" +
				"      Exit Code:    137\n" +
				"      Started:      Mon, 13 Dec 2021 18:02:32 -0800\n",
			category: CategoryHostOOM, confidence: ConfidenceHigh,
			evidence: "Reason:       OOMKilled; Exit Code:    137",
		},
		{
			name: "describe names its pod",
			log: "Name:         train-worker-1\n" +
				"Namespace:    default\n" +
				"Containers:\n" +
				"  pytorch:\n" +
				"    State:          Waiting\n" +
				"      Reason:       CrashLoopBackOff\n" +
				"    Last State:     Terminated\n" +
				"      Reason:       OOMKilled\n" +
				"      Exit Code:    137\n",
			category: CategoryHostOOM, confidence: ConfidenceHigh, pod: "train-worker-1",
			evidence: "Reason:       OOMKilled; Exit Code:    137",
		},
		{
			name: "describe: a signal's exit code",
			log: "    Last State:     Terminated\n" +
				"      Reason:       Error\n" +
				"      Exit Code:    139\n",
			category: CategoryCrashSignal, confidence: ConfidenceLow,
			evidence: "Reason:       Error; Exit Code:    139",
		},
		{
			name: "yaml, exit code first",
			log: "containerID: containerd://0f30d47b321c\n" +
				"exitCode: 137\n" +
				"finishedAt: \"2025-12-17T10:56:44Z\"\n" +
				"reason: OOMKilled\n",
			category: CategoryHostOOM, confidence: ConfidenceHigh,
			evidence: "exitCode: 137; reason: OOMKilled",
		},
		{
			name: "json",
			log: "\"lastState\": {\n  \"terminated\": {\n    \"exitCode\": 137,\n" +
				"    \"reason\": \"OOMKilled\"\n  }\n}\n",
			category: CategoryHostOOM, confidence: ConfidenceHigh,
			evidence: "\"exitCode\": 137; \"reason\": \"OOMKilled\"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tt.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
			require.NotNil(t, res.RootCause)
			require.Equal(t, tt.category, res.RootCause.Category, res.RootCause.Title)
			require.Equal(t, tt.confidence, res.Confidence)
			require.Equal(t, tt.pod, res.RootCause.Pod)
			require.Equal(t, tt.evidence, res.RootCause.Evidence[0].Text)
		})
	}
}

// TestPastedContainerStateNoFailure: Completed and Running rows, and a container that exited
// 0, are no failure.
func TestPastedContainerStateNoFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, log := range []string{
		"NAME             READY   STATUS      RESTARTS      AGE\n" +
			"train-worker-0   0/1     Completed   0             5m\n" +
			"train-worker-1   1/1     Running     1 (3m ago)    5m\n",
		"    State:          Terminated\n      Reason:       Completed\n      Exit Code:    0\n",
	} {
		res := analyzeLogs(t, all, log)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
	}
}

// TestPastedListingBesideTheError: a listed Error row says only that a process failed; the
// error its log shows is the root cause, and the row follows from it.
func TestPastedListingBesideTheError(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "NAME             READY   STATUS    RESTARTS      AGE\n" +
		"train-worker-0   0/1     Error     0             5m\n" +
		"train-worker-1   1/1     Running   1 (3m ago)    5m\n" +
		"$ kubectl logs train-worker-0\n" +
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.14 GiB of which 1.2 GiB is free.\n"
	res := analyzeLogs(t, all, log)
	require.NotNil(t, res.RootCause, findingsOf(res))
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, findingsOf(res))
	require.Equal(t, ConfidenceHigh, res.Confidence)
}
