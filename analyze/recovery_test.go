package analyze

import (
	"bytes"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGroupLineOf: an agent's restart and start lines are read as such (a restart with no
// attempt left is none), and a line without the words every such line holds is neither: the
// check for those words first is what keeps groupLineOf to two reads of an ordinary line.
func TestGroupLineOf(t *testing.T) {
	for _, w := range append(append(slices.Clip(groupRestartWords), groupStartWords...), restoredWords[1]) {
		require.True(t, slices.ContainsFunc(groupWords, func(g []byte) bool { return bytes.Contains(w, g) }), "%s", w)
	}
	for line, want := range map[string]int{ // 0: neither, 1: a start, 2: a restart
		"INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 2/3 attempts left; will restart worker group": 2,
		"INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 0/3 attempts left; will restart worker group": 0,
		"[default] Starting worker group":                  1,
		"Rendezvous complete, start training worker group": 1,
		"FailureDecision.RETRY after NCCL timeout":         2,
		"worker group":          0,
		"FailureDecision.ABORT": 0,
		"[rank3]: step 120 loss 2.1, the worker group is healthy": 0,
		"Starting Worker Group":                                   0,
		"(TorchTrainer pid=611, ip=10.108.2.65) Restored on 10.108.2.65 from checkpoint: Checkpoint(filesystem=local, path=/mnt/ckpt/checkpoint_000006)": 2,
		"Attempting to recover trial state from last checkpoint.":                                  2,
		"Resuming from checkpoint: Checkpoint(filesystem=local, path=/mnt/ckpt/checkpoint_000006)": 0,
		"Restored on 10.108.2.65": 0,
	} {
		g, ok := groupLineOf([]byte(line))
		got := 0
		if ok {
			got = 1
			if g.restart {
				got = 2
			}
		}
		require.Equal(t, want, got, line)
	}
}
