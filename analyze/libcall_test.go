package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLibraryConstructsWithUnknownArgument: a class constructed with a keyword argument it
// does not take, in a call an installed package's frame makes, is named a broken environment
// (two packages at versions that do not fit together) at low confidence, with all tiers and
// with the second tier alone. The same TypeError raised in the script's own frame, or in a
// frame that passes on its caller's arguments (a config registry's obj_cls(**args)), stays the
// code's error.
func TestLibraryConstructsWithUnknownArgument(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	skewed := []struct{ log, title string }{
		// vllm-project/vllm#3249: a benchmark script of vLLM's main branch against the 0.3.3
		// release, whose EngineArgs does not have the option yet.
		{"  File \"/usr/local/lib/python3.10/dist-packages/vllm/entrypoints/llm.py\", line 91, in __init__\n" +
			"    engine_args = EngineArgs(\n" +
			"TypeError: EngineArgs.__init__() got an unexpected keyword argument 'ray_workers_use_nsight'\n",
			"possibly module-not-found: vllm constructs 'EngineArgs' with an argument it does not take ('ray_workers_use_nsight')"},
	}
	for name, rules := range map[string][]*Rule{"both tiers": all, "second tier alone": WithoutSpecific(all)} {
		t.Run(name, func(t *testing.T) {
			for _, tc := range skewed {
				res := analyzeLogs(t, rules, tc.log)
				require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
				require.Equal(t, CategoryModuleNotFound, res.RootCause.Category, res.RootCause.Title)
				require.Equal(t, tc.title, res.RootCause.Title)
				require.Equal(t, ConfidenceLow, res.Confidence)
				require.Equal(t, BasisLibraryCall, res.ConfidenceBasis)
				require.Contains(t, res.RootCause.Evidence[0].Text, "got an unexpected keyword argument")
			}

			// huggingface/autotrain-advanced#802: the program's own frame constructs TRL's
			// trainer with an argument TRL no longer takes: the code's call.
			res := analyzeLogs(t, rules, "  File \"/app/src/autotrain/trainers/clm/train_clm_orpo.py\", line 47, in train\n"+
				"    trainer = ORPOTrainer(\n"+
				"TypeError: ORPOTrainer.__init__() got an unexpected keyword argument 'tokenizer'\n")
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.RootCause.Title)
			require.NotEqual(t, BasisLibraryCall, res.ConfidenceBasis)

			// The script's frame calls the package, which passes the script's argument on in a
			// line Python does not print: whose the argument is, the frames do not say (the
			// review's cases). vllm-project/vllm#548, vLLM 0.1.2 from pip under a script of
			// the source tree; a misspelt option handed to vLLM's LLM (huggingface/open-r1#309's
			// typo, Python 3.11's carets).
			for _, log := range []string{
				"Traceback (most recent call last):\n" +
					"  File \"benchmark_latency.py\", line 18, in main\n" +
					"    llm = LLM(\n" +
					"  File \"/usr/local/lib/python3.8/dist-packages/vllm/entrypoints/llm.py\", line 53, in __init__\n" +
					"    engine_args = EngineArgs(\n" +
					"TypeError: __init__() got an unexpected keyword argument 'trust_remote_code'\n",
				"Traceback (most recent call last):\n" +
					"  File \"/workspace/gen_rollouts.py\", line 2, in <module>\n" +
					"    llm = LLM(model=\"Qwen/Qwen2.5-7B-Instruct\", gpu_memory_utilisation=0.5)\n" +
					"          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" +
					"  File \"/usr/lib/python3.11/site-packages/vllm/entrypoints/llm.py\", line 8, in __init__\n" +
					"    engine_args = EngineArgs(\n" +
					"                  ^^^^^^^^^^^\n" +
					"TypeError: EngineArgs.__init__() got an unexpected keyword argument 'gpu_memory_utilisation'\n",
			} {
				res := analyzeLogs(t, rules, log)
				require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
				require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.RootCause.Title)
				require.NotEqual(t, BasisLibraryCall, res.ConfidenceBasis)
			}

			// open-mmlab/mmdetection#7443: mmcv's registry builds the class from the user's
			// config (its "_delete_" key): the frame passes on arguments it was given.
			res = analyzeLogs(t, rules, "Traceback (most recent call last):\n"+
				"  File \"/home/deploy/miniconda3/envs/openmmlab/lib/python3.7/site-packages/mmcv/utils/registry.py\", line 52, in build_from_cfg\n"+
				"    return obj_cls(**args)\n"+
				"TypeError: __init__() got an unexpected keyword argument '_delete_'\n")
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryUserCodeError, res.RootCause.Category, res.RootCause.Title)
			require.NotEqual(t, BasisLibraryCall, res.ConfidenceBasis)
		})
	}
}
