package analyze

import (
	"fmt"
	"strings"
	"testing"

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
