package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDistributedMisuseIsTheProgramsError: torch.distributed's own checks of how the training
// code uses it (ranks running different collectives, a process group used before it exists,
// DDP's reducer, DDP given a frozen module, a wrapper given a module on the wrong device, FSDP's
// flattening, DTensor, a script started without its launcher's environment, a mesh that does
// not fit the devices) name the program's or its launch's error, by their rule with all tiers
// and by the vocabulary alone; none is the collective timeout or rendezvous failure its words
// ("collective", "OpType", "init_process_group", "rendezvous") would suggest. The lines are
// those of the public threads the rules cite.
func TestDistributedMisuseIsTheProgramsError(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tb := "Traceback (most recent call last):\n  File \"train.py\", line 40, in <module>\n    main()\n"
	tests := []struct {
		name     string
		log      string
		category Category
		ruleID   string
	}{
		{"two ranks broadcast tensors of different shapes under TORCH_DISTRIBUTED_DEBUG=DETAIL",
			progress + tb + "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running inconsistent collective: " +
				"CollectiveFingerPrint(OpType=BROADCAST, TensorShape=[34112], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), " +
				"device=cuda, layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))\n",
			CategoryUserCodeError, "user-code-error/collective-mismatch"},
		{"SyncBatchNorm run as one process without a launcher",
			tb + "  File \"/env/lib/python3.9/site-packages/torch/distributed/distributed_c10d.py\", line 358, in _get_default_group\n" +
				"    raise RuntimeError(\"Default process group has not been initialized, \"\n" +
				"RuntimeError: Default process group has not been initialized, please make sure to call init_process_group.\n",
			CategoryUserCodeError, "user-code-error/process-group-not-initialized"},
		{"a head that takes no part in the loss under DDP",
			progress + tb + "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. " +
				"This error indicates that your module has parameters that were not used in producing loss.\n",
			CategoryUserCodeError, "user-code-error/ddp-unused-parameters"},
		{"reentrant checkpointing under DDP marks a parameter ready twice, the paste cut before the exception",
			"Parameter at index 988 with name img_backbone.levels.3.blocks.3.gamma2 has been marked as ready twice. " +
				"This means that multiple autograd engine  hooks have fired for this particular parameter during this iteration.\n" +
				tb + "  File \"/env/lib/python3.10/site-packages/torch/autograd/__init__.py\", line 200, in backward\n",
			CategoryUserCodeError, "user-code-error/ddp-parameter-ready-twice"},
		{"DDP given device_ids for a model spread over two GPUs",
			tb + "ValueError: DistributedDataParallel device_ids and output_device arguments only work with single-device/multiple-device GPU modules or CPU modules, " +
				"but got device_ids [0], output_device 0, and module parameters {device(type='cuda', index=0), device(type='cuda', index=1)}.\n",
			CategoryUserCodeError, "user-code-error/distributed-wrong-device"},
		{"FSDP wraps LoRA adapters in fp32 beside bf16 weights",
			tb + "ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and torch.float32\n",
			CategoryUserCodeError, "user-code-error/fsdp-mixed-dtype"},
		{"a tensor-parallel layer meets an input that was never distributed",
			progress + tb + "RuntimeError: aten.mm.default: got mixed torch.Tensor and DTensor, need to convert all torch.Tensor to DTensor before calling distributed operators!\n",
			CategoryUserCodeError, "user-code-error/dtensor-mixed-with-tensor"},
		{"a frozen module wrapped in DDP like the trained one",
			tb + "    unet = DDP(unet, device_ids=[local_rank], output_device=local_rank)\n" +
				"RuntimeError: DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.\n",
			CategoryUserCodeError, "user-code-error/ddp-no-trainable-parameters"},
		{"a script that reads the launcher's variables started as a plain process",
			tb + "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable RANK expected, but not set\n",
			CategoryConfigError, "config-error/env-rendezvous-unset"},
		{"a mesh written for eight devices on a machine with one",
			"INFO:rank:Initializing mesh for self.local_mesh_config=(1, 8) self.between_hosts_config=(1, 1)...\n" +
				tb + "ValueError: Number of devices 1 must equal the product of mesh_shape (1, 8)\n",
			CategoryConfigError, "config-error/device-mesh-size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireNamedByRule(t, all, tt.log, tt.category, tt.ruleID)
			if tt.ruleID != "user-code-error/ddp-parameter-ready-twice" {
				// (that paste ends in a frame: the second tier reads no exception to word)
				requireNamedByVocabulary(t, all, tt.log, tt.category)
			}
		})
	}
}

// TestDistributedHintsOfWorkingRuns: the reducer's and ProcessGroupNCCL's performance and
// device-guess warnings print on runs that train on; they are not failures.
func TestDistributedHintsOfWorkingRuns(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, hint := range []string{
		"[W reducer.cpp:1278] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any unused parameters in the forward pass. " +
			"This flag results in an extra traversal of the autograd graph every iteration,  which can adversely affect performance. (function operator())\n",
		"UserWarning: Grad strides do not match bucket view strides. This may indicate grad was not created according to the gradient layout contract, " +
			"or that the param's strides changed since DDP was constructed.  This is not an error, but may impair performance.\n" +
			"grad.sizes() = [64, 256, 1, 1], strides() = [256, 1, 256, 256]\n",
		"[W ProcessGroupNCCL.cpp:1569] Rank 1 using best-guess GPU 1 to perform barrier as devices used by this process are currently unknown. " +
			"This can potentially cause a hang if this rank to GPU mapping is incorrect.Specify device_ids in barrier() to force use of a particular device.\n",
	} {
		res := analyzeLogs(t, all, progress+hint+progress)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, hint)
	}
}
