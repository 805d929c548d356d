package analyze

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLogEndingInRetries: a log whose end is nothing but a retry printed again and again, or
// the last try of a count, ends in the failure it retried, with all tiers and with the second
// tier alone (at low confidence unless the last line numbers itself the last try: a log cut
// while its process still retries may be a hang); a retry the log got past, a count with tries
// left, a client retrying between training lines and a retry loop announced are no end. The
// retry lines are NCCL's (NVIDIA/nccl#1515, NVIDIA/nccl#1618), urllib3's as pip prints them
// (pypa/pip#9489), the Hub client's and wandb's (wandb/wandb#805, #2039).
func TestLogEndingInRetries(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	refused := "node-1:941227:943077 [0] NCCL INFO Call to connect returned Connection refused, retrying\n"
	wandb := "wandb: Network error (ReadTimeout), entering retry loop.\n"
	pip := func(left int) string {
		return fmt.Sprintf("WARNING: Retrying (Retry(total=%d, connect=None, read=None, redirect=None, status=None)) after connection "+
			"broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='pypi.org', port=443): Read timed out. (read timeout=15)\")': /simple/torch/\n", left)
	}
	var training strings.Builder
	for step := 100; step <= 500; step += 100 {
		fmt.Fprintf(&training, "Epoch 1 step %d loss 2.3%d lr 0.001\n%s", step, step/100, wandb)
	}
	tests := []struct {
		name       string
		log        string
		unhealthy  bool
		category   Category
		confidence Confidence
	}{
		{"the same refused connect, again and again, from two processes",
			"node-1:16:63 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>\n" + refused + refused +
				"node-1:18:64 [2] NCCL INFO Call to connect returned Connection refused, retrying\n" + refused,
			true, CategoryRendezvous, ConfidenceLow},
		{"the last try of a count",
			"node-2:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, retrying (34/34) after sleep for 3400 msec\n",
			true, CategoryRendezvous, ConfidenceMedium},
		{"a last try whose words name no cause",
			"probe: command failed, retrying (5/5)\n",
			true, CategoryUnknown, ConfidenceLow},
		// pip's last try of a download (pypa/pip#9487's line, total=0): an HTTP read timeout
		// names no collective.
		{"the last try of an HTTP download",
			"Collecting torch\n  WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by " +
				"'ReadTimeoutError(\"HTTPSConnectionPool(host='files.pythonhosted.org', port=443): Read timed out. (read timeout=15)\")': /packages/torch.whl\n",
			true, CategoryUnknown, ConfidenceLow},
		{"retries the log got past",
			refused + refused + refused + "node-1:941227:943077 [0] NCCL INFO Connected all rings\n",
			false, "", ""},
		{"each rank of a healthy start replacing its network plugin",
			"node-1:16:63 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n" +
				"node-1:16:63 [0] NCCL INFO Using network Socket\nnode-1:17:64 [1] NCCL INFO Using network Socket\n" +
				"node-1:18:65 [2] NCCL INFO Using network Socket\n",
			false, "", ""},
		{"each try of a readiness loop, its command and error included",
			strings.Repeat("+ curl -sf http://trainer-master-0:8000/ready\ncurl: (7) Failed to connect to trainer-master-0 port 8000: Connection refused\n"+
				"master not ready, retrying in 5s\n", 3),
			true, CategoryUnknown, ConfidenceLow},
		{"a client retrying between training lines", training.String(), false, "", ""},
		{"a retry loop announced again and again", wandb + wandb + wandb, false, "", ""},
		{"three tries of five",
			"Loading checkpoint shards\nRetrying in 1s [Retry 1/5].\nRetrying in 1s [Retry 2/5].\nRetrying in 1s [Retry 3/5].\n",
			false, "", ""},
		{"urllib3's tries with tries left", pip(3) + pip(2) + pip(1), false, "", ""},
		{"the first try of a count",
			"node-2:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, retrying (1/34) after sleep for 100 msec\n",
			false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
				res := analyzeLogs(t, rules, tt.log)
				if !tt.unhealthy {
					require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
					continue
				}
				require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
				require.NotNil(t, res.RootCause)
				require.Equal(t, tt.category, res.RootCause.Category, res.RootCause.Title)
				require.Equal(t, tt.confidence, res.Confidence)
			}
		})
	}
}

// TestFailedPodEndingInFewRetries: a failed pod whose log ends in one or two of NCCL's
// connect retries (an INFO line: NCCL retries a refused connect silently for its budget and
// gives up in a WARN line of its own; wenet-e2e/wenet#959 saw it on every run) shows that
// the process still tried when its output stopped, not why the pod then failed: the retry's
// words may name the category, at low, never medium. A pod that trained on after them is no
// failure.
func TestFailedPodEndingInFewRetries(t *testing.T) {
	// huggingface/transformers#10282 (an intermittent CI failure: the line repeated).
	const retry = "stdout: multi-gpu-ci-runner:18062:18089 [1] NCCL INFO Call to connect returned Connection refused, retrying\n"
	failed := `  phase: Failed
  startTime: "2026-03-14T09:29:00Z"
  containerStatuses:
  - {name: pytorch, image: "registry.local/ml/trainer:v2", imageID: "registry.local/ml/trainer@sha256:1", ready: false, restartCount: 0, state: {terminated: {exitCode: 1, reason: Error, startedAt: "2026-03-14T09:29:10Z", finishedAt: "2026-03-14T10:37:25Z"}}}
`
	collected := time.Date(2026, 3, 14, 10, 40, 0, 0, time.UTC)
	for n := 1; n <= 3; n++ {
		files := map[string]string{
			"resources/kubeflow.org/PyTorchJob/ml/train.yaml": pytorchJobYAML(1, "Failed", "2026-03-14T10:37:30Z"),
			"resources/core/Pod/ml/train-worker-0.yaml":       workerPodYAML(0, failed),
			"logs/ml/train-worker-0/pytorch.log":              strings.Repeat(retry, n),
		}
		res := analyzeBundle(t, files, collected, Options{})
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, ConfidenceLow, res.Confidence, "%d retries: %s", n, findingsOf(res))
		require.Contains(t, res.RootCause.Evidence[0].Text, "Connection refused, retrying")
	}

	// The same retries, then training, in a job that succeeded.
	succeeded := strings.NewReplacer("phase: Failed", "phase: Succeeded", "exitCode: 1, reason: Error", "exitCode: 0, reason: Completed").Replace(failed)
	files := map[string]string{
		"resources/kubeflow.org/PyTorchJob/ml/train.yaml": pytorchJobYAML(1, "Succeeded", "2026-03-14T10:37:30Z"),
		"resources/core/Pod/ml/train-worker-0.yaml":       workerPodYAML(0, succeeded),
		"logs/ml/train-worker-0/pytorch.log":              retry + retry + "{'loss': 1.9021, 'grad_norm': 1.83, 'learning_rate': 1.2e-05, 'epoch': 0.25}\n{'train_runtime': 4011.2, 'train_loss': 1.61, 'epoch': 1.0}\n",
	}
	res := analyzeBundle(t, files, collected, Options{})
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s %s", res.VerdictReason, findingsOf(res))
}
