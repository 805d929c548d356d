package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRDMACompletionError: the mlx5 provider's line for a work request that completed in
// error (here under a colocated RL job's weight sync) names the RDMA transfer with all tiers;
// the provider's name in NCCL's INFO lines and a CQE's hex rows alone are no failure.
func TestRDMACompletionError(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	res := analyzeLogs(t, all,
		"(LLMRayActor pid=4410, ip=10.0.0.7) update weight: model.layers.0.mlp.up_proj.weight, dtype: torch.bfloat16\n"+
			"(LLMRayActor pid=4410, ip=10.0.0.7) mlx5: gpu-node-7: got completion with error:\n"+
			"(LLMRayActor pid=4410, ip=10.0.0.7) 00000000 00000000 00000000 00000000\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryCollectiveError, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, "collective-error/mlx5-completion-error", res.RootCause.RuleID)
	require.Equal(t, "RDMA completion with error on gpu-node-7", res.RootCause.Title)

	res = analyzeLogs(t, all, progress+
		"node3:771:771 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.3<0>\n"+
		"00000000 00000000 00000000 00000000\n"+progress)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}

// TestTorchCompileExceptionIsAnException: torch.compile's exceptions, whose class names do
// not end in Error (FailOnRecompileLimitHit, BackendCompilerFailed), are the failing
// program's exception like any other, with all tiers and with the second tier alone.
func TestTorchCompileExceptionIsAnException(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := progress + "Traceback (most recent call last):\n" +
		"  File \"/usr/local/lib/python3.12/site-packages/torch/_dynamo/convert_frame.py\", line 981, in _compile\n" +
		"    raise FailOnRecompileLimitHit(\n" +
		"torch._dynamo.exc.FailOnRecompileLimitHit: Hard failure due to fullgraph=True\n"
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, log)
		require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.RootCause.Title)
		require.Equal(t, "user-code-error/python-exception", res.RootCause.RuleID)
		require.Equal(t, "torch._dynamo.exc.FailOnRecompileLimitHit", res.RootCause.Title)
	}
}

// TestRayCannotReachItsGCS: a Ray process that gives up on the head's GCS could not join the
// cluster (a rendezvous failure); the first attempt's warning, after which the client retries
// and the job trains, is no failure.
func TestRayCannotReachItsGCS(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	retry := "[2026-01-05 09:12:01,112 W 5120 5120] gcs_rpc_client.h:151: Failed to connect to GCS at address 10.1.2.3:6379 within 5 seconds.\n"
	res := analyzeLogs(t, all, "2026-01-05 09:11:56,001 INFO worker.py:1636 -- Connecting to existing Ray cluster at address: 10.1.2.3:6379...\n"+retry+
		"[2026-01-05 09:12:31,114 W 5120 5120] gcs_client.cc:183: Failed to get cluster ID from GCS server: TimedOut: Timed out while waiting for GCS to become available.\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryRendezvous, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, "rendezvous-failure/ray-gcs-unreachable", res.RootCause.RuleID)

	res = analyzeLogs(t, all, retry+progress+progress)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}

// TestTransformersUnknownModelType: AutoConfig's lookup of the checkpoint's model_type raising
// KeyError is a transformers older than the model (QwenLM/Qwen3#434: 'qwen2' on 4.32;
// huggingface/transformers#34161: 'qwen2_vl' on 4.44), as the ValueError newer releases give for
// it is; a KeyError of the training code's own stays the code's.
func TestTransformersUnknownModelType(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "Traceback (most recent call last):\n" +
		"  File \"/app/finetune.py\", line 344, in train\n" +
		"    config = transformers.AutoConfig.from_pretrained(\n" +
		"  File \"/usr/lib/python3.11/site-packages/transformers/models/auto/configuration_auto.py\", line 1022, in from_pretrained\n" +
		"    config_class = CONFIG_MAPPING[config_dict[\"model_type\"]]\n" +
		"  File \"/usr/lib/python3.11/site-packages/transformers/models/auto/configuration_auto.py\", line 723, in __getitem__\n" +
		"    raise KeyError(key)\n" +
		"KeyError: 'qwen2_vl'\n"
	res := analyzeLogs(t, all, log)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryConfigError, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, "config-error/transformers-unknown-model-type", res.RootCause.RuleID)

	own := "Traceback (most recent call last):\n  File \"/app/data.py\", line 12, in __getitem__\n    label = sample[\"labels\"]\nKeyError: 'labels'\n"
	res = analyzeLogs(t, all, own)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.RootCause.Title)
}
