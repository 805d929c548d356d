package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The error records of these tests are copied from public logs: Mooncake's transfer engine
// whose queue pairs never connect (kvcache-ai/Mooncake#204, as SGLang runs it in
// sgl-project/sglang#6548), the Neuron runtime's record at the end of a compilation that
// worked (aws-neuron/aws-neuron-sdk#1078).
const (
	qpRecord1    = "E0331 12:03:04.222625 56060 rdma_endpoint.cpp:385] [Handshake] Failed to modify QP to RTR, check mtu, gid, peer lid, peer qp num: Connection timed out [110]\n"
	qpSGLang1    = "E0523 06:18:19.069025  2716 rdma_endpoint.cpp:408] [Handshake] Failed to modify QP to RTR, check mtu, gid, peer lid, peer qp num: Connection timed out [110]\n"
	qpSGLang2    = "E0523 06:18:19.101030  2659 rdma_endpoint.cpp:408] [Handshake] Failed to modify QP to RTR, check mtu, gid, peer lid, peer qp num: Connection timed out [110]\n"
	mooncakeInfo = "I0331 12:02:38.364027 56056 transfer_engine_bench.cpp:377] VRAM is used\n" +
		"I0331 12:02:47.507619 56056 rdma_context.cpp:199] length:75161927680\n"
)

// TestLogEndingInErrorRecordsIsLow: a log that ends in its runtime's error records, nothing
// after them, is named by the vocabulary at low confidence, the first record its evidence,
// with or without the specific rules.
func TestLogEndingInErrorRecordsIsLow(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tc := range []struct{ name, log, first string }{
		{"Mooncake's glog E records after its INFO ones", mooncakeInfo + qpRecord1 + "\n", qpRecord1},
		{"SGLang's copy, several ranks", qpSGLang1 + qpSGLang2 + qpSGLang2, qpSGLang1},
	} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, tc.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, tc.name+": "+res.VerdictReason)
			require.Equal(t, CategoryCollectiveError, res.RootCause.Category, tc.name)
			require.Equal(t, ConfidenceLow, res.Confidence, tc.name)
			require.Equal(t, tc.first[:len(tc.first)-1], res.RootCause.Evidence[0].Text, tc.name)
		}
	}
}

// TestErrorRecordNotTheEndStaysHealthy: healthy look-alikes of a log that ends in error
// records. A record the run went on after (its next training progress), a runtime's ERROR
// record that ends a paste of a compilation that worked, a WARN record, and lines that hold a
// failure's words without an error level are no error record that ends the log.
func TestErrorRecordNotTheEndStaysHealthy(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tc := range []struct{ name, log string }{
		{"progress after the records", mooncakeInfo + qpRecord1 +
			"{'loss': 1.8125, 'grad_norm': 2.41, 'learning_rate': 1.9e-05, 'epoch': 0.31}\n" +
			"{'loss': 1.7731, 'grad_norm': 2.20, 'learning_rate': 1.9e-05, 'epoch': 0.32}\n"},
		{"an INFO record after the records", qpSGLang1 + qpSGLang2 + mooncakeInfo},
		// https://github.com/aws-neuron/aws-neuron-sdk/issues/1078: the compilation worked.
		{"Neuron's nrt_close record at a compilation's end", "Compiler status PASS\n" +
			"2025-Jan-03 21:00:33.247541 13423:13423 ERROR   NRT:nrt_close                               Unexpected runtime state: NRT_STATE_START\n"},
		// https://github.com/kvcache-ai/Mooncake/issues/204: a WARN record.
		{"a WARN record ends it", mooncakeInfo + "W0331 12:02:38.332201 56056 transfer_engine_bench.cpp:409] Invalid flag: buffer size is samller than require_size, adjust to 75161927680\n"},
		// https://github.com/coreweave/nccl-tests/issues/39: SHARP's WARN while NCCL sets up.
		{"an NCCL WARN record with a failure's word", "hostname:174:4057 [3] NCCL INFO SHARP rank 0/8 initialized on mlx5_4:1\n" +
			"hostname:174:4057 [3] sharp_plugin.c:354 NCCL WARN SHARP group create: Streaming Tree lock failed (-18)\n\n"},
		// https://github.com/NVIDIA/nccl/issues/851: NCCL's WARN after an epoch that finished.
		{"an NCCL WARN record after progress", "{'loss': 1.7731, 'grad_norm': 2.20, 'learning_rate': 1.9e-05, 'epoch': 0.32}\n" +
			"NCCL WARN [Service thread] Unknown command 790 from localRank -1\n"},
		// Training said it was over before a tracker's upload failed (a review of session 26).
		{"an MLflow upload error after Lightning finished", "Epoch 2: 100%|##########| 1563/1563 [05:12<00:00,  5.00it/s, v_num=3, train_loss=0.213]\n" +
			"`Trainer.fit` stopped: `max_epochs=3` reached.\n" +
			"[2024-06-01 11:00:00,412][mlflow.utils.requests_utils][ERROR] - API request to https://mlflow.internal/api/2.0/mlflow/runs/log-batch failed: Read timed out. (read timeout=120)\n"},
		// https://github.com/SymbioticLab/Justitia/issues/3 and thustorage/Sherman#5: the
		// words without a record's level.
		{"failure words without a level", "I connect server 0\nfailed to modify QP state to RTR\nfailed to modify QP state to RTS\n"},
	} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, tc.log)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, tc.name+": "+res.VerdictReason)
		}
	}
}
