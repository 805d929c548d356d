package analyze

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTracebackCutInFrames: a traceback that ends before its exception line is named, at low
// confidence, by its innermost frame when that frame is where one error is by far the most
// often raised; any other frame, and any traceback whose exception is there, is read as
// before. The frames are those of the threads cutframe.go cites, cut before their exception.
func TestTracebackCutInFrames(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tiers := map[string][]*Rule{"both tiers": all, "second tier alone": WithoutSpecific(all)}
	for _, tc := range []struct {
		name, log string
		want      Category
	}{
		{"torch.load opening the checkpoint (OpenGVLab/Diffree#1)", `Loading model from checkpoints/epoch=000041-step=000010999.ckpt
Traceback (most recent call last):
  File "app.py", line 151, in <module>
    model = load_model_from_config(config, args.ckpt, args.vae_ckpt)
  File "app.py", line 47, in load_model_from_config
    pl_sd = torch.load(ckpt, map_location="cpu")
  File "C:\Users\28687\.conda\envs\diffree\lib\site-packages\torch\serialization.py", line 791, in load
    with _open_file_like(f, 'rb') as opened_file:
  File "C:\Users\28687\.conda\envs\diffree\lib\site-packages\torch\serialization.py", line 271, in _open_file_like
    return _open_file(name_or_buffer, mode)
`, CategoryFileNotFound},
		{"torch.save opening its file (thunlp/OpenKE#389)", `Traceback (most recent call last):
  File "train_transe_FB15K237.py", line 41, in <module>
    transe.save_checkpoint('./checkpoint/transe.ckpt')
  File "/root/ABC/openke/module/BaseModule.py", line 21, in save_checkpoint
    torch.save(self.state_dict(), path)
  File "/root/miniconda3/lib/python3.8/site-packages/torch/serialization.py", line 369, in save
    with _open_file_like(f, 'wb') as opened_file:
  File "/root/miniconda3/lib/python3.8/site-packages/torch/serialization.py", line 230, in _open_file_like
    return _open_file(name_or_buffer, mode)
  File "/root/miniconda3/lib/python3.8/site-packages/torch/serialization.py", line 211, in __init__
    super(_open_file, self).__init__(open(name, mode))
`, CategoryFileNotFound},
		{"DeepSpeed saving a ZeRO checkpoint (OpenMOSS/MOSS#270)", `Traceback (most recent call last):
  File "finetune_moss.py", line 309, in <module>
    train(args)
  File "finetune_moss.py", line 274, in train
    model.save_checkpoint(args.output_dir, global_step)
  File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/engine.py", line 3137, in save_checkpoint
    self._save_zero_checkpoint(save_dir, tag)
  File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/engine.py", line 3425, in _save_zero_checkpoint
    self.checkpoint_engine.save(zero_sd, zero_checkpoint_name)
`, CategoryDiskFull},
		{"the GCS client uploading (googleapis/python-storage#237)", `Traceback (most recent call last):
  File "/usr/local/google/home/aaxue/Documents/google/temp/lib/python3.8/site-packages/google/cloud/storage/blob.py", line 1910, in upload_from_file
    created_json = self._do_upload(
  File "/usr/local/google/home/aaxue/Documents/google/temp/lib/python3.8/site-packages/google/cloud/storage/blob.py", line 1758, in _do_upload
    response = self._do_multipart_upload(
`, CategoryStorageError},
		{"frames alone, header and exception cut off: vLLM sizing its KV cache (wtdcode/vllm-backport#15)", `(EngineCore pid=90)   File "/usr/local/lib/python3.12/dist-packages/vllm/tracing/otel.py", line 178, in sync_wrapper
(EngineCore pid=90)     return func(*args, **kwargs)
(EngineCore pid=90)            ^^^^^^^^^^^^^^^^^^^^^
(EngineCore pid=90)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 304, in _initialize_kv_caches
(EngineCore pid=90)     kv_cache_configs = get_kv_cache_configs(
(EngineCore pid=90)                        ^^^^^^^^^^^^^^^^^^^^^
`, CategoryCUDAOOM},
		{"DeepSpeed checking the batch sizes it was given (bigcode-project/starcoder#77)", `Traceback (most recent call last):
  File "train.py", line 353, in <module>
    main()
  File "/opt/conda/lib/python3.7/site-packages/deepspeed/__init__.py", line 157, in initialize
    config_class = DeepSpeedConfig(config, mpu)
  File "/opt/conda/lib/python3.7/site-packages/deepspeed/runtime/config.py", line 942, in _configure_train_batch_size
    self._batch_assertion()
  File "/opt/conda/lib/python3.7/site-packages/deepspeed/runtime/config.py", line 891, in _batch_assertion
    assert train_batch == micro_batch * grad_acc * self.world_size, (
`, CategoryConfigError},
		{"DeepSpeed's configuration asking the process group for the world size: no guess", `Traceback (most recent call last):
  File "train.py", line 353, in <module>
    main()
  File "/opt/conda/lib/python3.7/site-packages/deepspeed/__init__.py", line 157, in initialize
    config_class = DeepSpeedConfig(config, mpu)
  File "/opt/conda/lib/python3.7/site-packages/deepspeed/runtime/config.py", line 790, in __init__
    self.world_size = dist.get_world_size(group=self.mpu.get_data_parallel_group())
`, CategoryUnknown},
		// Where nothing is known of the error: user code, a standard stream, an image opened.
		{"DeepSpeed's engine, not its configuration: no guess", `Traceback (most recent call last):
  File "train.py", line 88, in <module>
    model_engine.step()
  File "/usr/local/lib/python3.8/dist-packages/deepspeed/runtime/engine.py", line 2213, in step
    self._take_model_step(lr_kwargs)
`, CategoryUnknown},
		{"a cut in the model's own code", `Traceback (most recent call last):
  File "train.py", line 88, in <module>
    out = model(batch)
  File "/workspace/model.py", line 41, in forward
    h = self.proj(x) * self.scale
`, CategoryUnknown},
		{"a write to stdout", `Traceback (most recent call last):
  File "train.py", line 88, in <module>
    log(step)
  File "/workspace/utils.py", line 12, in log
    sys.stdout.write(msg)
`, CategoryUnknown},
		{"diffusers enabling xFormers (showlab/Tune-A-Video#97)", `Traceback (most recent call last):
  File "/mnt/data/Tune-A-Video/train_tuneavideo.py", line 123, in main
    unet.enable_xformers_memory_efficient_attention()
  File "/home/admin1/.local/lib/python3.10/site-packages/diffusers/modeling_utils.py", line 215, in enable_xformers_memory_efficient_attention
    self.set_use_memory_efficient_attention_xformers(True)
  File "/home/admin1/.local/lib/python3.10/site-packages/diffusers/modeling_utils.py", line 203, in set_use_memory_efficient_attention_xformers
    fn_recursive_set_mem_eff(module)
  File "/home/admin1/.local/lib/python3.10/site-packages/diffusers/modeling_utils.py", line 199, in fn_recursive_set_mem_eff
    fn_recursive_set_mem_eff(child)
`, CategoryModuleNotFound},
		{"a function of the same name in the user's own code", `Traceback (most recent call last):
  File "/workspace/train.py", line 210, in <module>
    main()
  File "/workspace/models/attn.py", line 40, in set_use_memory_efficient_attention_xformers
    self.attn.apply(flag)
`, CategoryUnknown},
		{"a socket written under http.client", `Traceback (most recent call last):
  File "/workspace/train.py", line 210, in <module>
    wandb.log(metrics)
  File "/usr/lib/python3.10/http/client.py", line 1001, in send
    self.sock.sendall(data)
  File "/usr/lib/python3.10/ssl.py", line 1235, in send
    return self._sslobj.write(data)
`, CategoryUnknown},
		{"a log file written", `Traceback (most recent call last):
  File "/workspace/train.py", line 210, in <module>
    main()
  File "/workspace/train.py", line 120, in log_metrics
    self.log_file.write(json.dumps(metrics) + "\n")
`, CategoryUnknown},
		{"torch.save in the user's code", `Traceback (most recent call last):
  File "/workspace/train.py", line 210, in <module>
    main()
  File "/workspace/train.py", line 190, in main
    torch.save(state, f"/ckpt/step{step}.pt")
`, CategoryUnknown},
		{"an image opened", `Traceback (most recent call last):
  File "/workspace/data.py", line 30, in __getitem__
    img = Image.open(path)
`, CategoryUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, rules := range tiers {
				res := analyzeLogs(t, rules, tc.log)
				require.Equal(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, res.VerdictReason)
				require.Equal(t, tc.want, res.RootCause.Category, "%s: %s", name, findingsOf(res))
				require.Equal(t, ConfidenceLow, res.Confidence, name)
				if tc.want != CategoryUnknown {
					require.Contains(t, res.RootCause.Title, "the traceback ends in", name)
				}
			}
		})
	}

	// One frame line at the end of a log is no traceback.
	res := analyzeLogs(t, all, "step 10 loss 2.1\nstep 20 loss 2.0\n  File \"/workspace/train.py\", line 88, in <module>\n")
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)

	// Frames alone whose last code raises with words of its own are read by those words.
	res = analyzeLogs(t, all, `  File "/workspace/train.py", line 88, in <module>
    state = load_latest(args.ckpt_dir)
  File "/workspace/ckpt.py", line 30, in load_latest
    raise RuntimeError(f"CUDA out of memory while loading {path}")
`)
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category, findingsOf(res))
	require.NotContains(t, res.RootCause.Title, "the traceback ends in")

	// The exception line, when the log has it, decides.
	res = analyzeLogs(t, all, `Traceback (most recent call last):
  File "/root/miniconda3/lib/python3.8/site-packages/torch/serialization.py", line 230, in _open_file_like
    return _open_file(name_or_buffer, mode)
  File "/root/miniconda3/lib/python3.8/site-packages/torch/serialization.py", line 211, in __init__
    super(_open_file, self).__init__(open(name, mode))
PermissionError: [Errno 13] Permission denied: '/ckpt/last.pth'
`)
	require.NotNil(t, res.RootCause, res.VerdictReason)
	require.Equal(t, CategoryPermissionDenied, res.RootCause.Category, findingsOf(res))
	require.False(t, strings.Contains(res.RootCause.Title, "the traceback ends in"))
}

// TestCutFrameYieldsToNamedFailure: a frame's guess is taken only when no log's failure
// names itself: one log cut inside a checkpoint's save does not hide another log's
// rendezvous timeout, whatever order the logs come in.
func TestCutFrameYieldsToNamedFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	cut := `step 100 loss 2.31
[rank0]: Traceback (most recent call last):
[rank0]:   File "/workspace/train.py", line 210, in <module>
[rank0]:     engine.save_checkpoint(args.output_dir, step)
[rank0]:   File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 3425, in _save_zero_checkpoint
[rank0]:     self.checkpoint_engine.save(zero_sd, zero_checkpoint_name)
`
	named := "step 100 loss 2.31\nfatal error: rendezvous timed out waiting for all workers to join\n"
	for name, rules := range map[string][]*Rule{"both tiers": all, "second tier alone": WithoutSpecific(all)} {
		for _, logs := range [][]string{{cut, named}, {named, cut}} {
			res := analyzeLogs(t, rules, logs...)
			require.NotNil(t, res.RootCause, "%s: %s", name, res.VerdictReason)
			require.Equal(t, CategoryRendezvous, res.RootCause.Category, "%s: %s", name, findingsOf(res))
			require.NotContains(t, res.RootCause.Title, "the traceback ends in", name)
		}
	}
}

// TestStackPrintedByALiveProcess: frames after other lines are a stack a running process
// printed (traceback.print_stack, logging's stack_info=True, faulthandler on a signal, gdb's
// py-bt, whose last frame is the outermost, torch.compile's graph-break report), not a
// traceback cut before its exception: the process did not fail, and its frames name no error.
func TestStackPrintedByALiveProcess(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tc := range []struct{ name, log string }{
		{"traceback.print_stack after progress", `step 100 loss 2.31
step 110 loss 2.29
debug: called from
  File "/workspace/train.py", line 210, in <module>
    main()
  File "/workspace/train.py", line 180, in main
    trainer.fit()
  File "/workspace/trainer.py", line 77, in fit
    traceback.print_stack()
`},
		{"logging's stack_info", `2024-05-01 10:00:00,000 INFO step 100 loss 2.31
2024-05-01 10:00:05,000 WARNING opening metrics file
Stack (most recent call last):
  File "/workspace/train.py", line 210, in <module>
    main()
  File "/workspace/metrics.py", line 20, in write_metrics
    logging.warning("opening metrics file", stack_info=True); f = open(path, "a")
`},
		{"faulthandler on SIGUSR1", `step 110 loss 2.29
Current thread 0x00007f2b8a1f3740 (most recent call first):
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 2050 in all_reduce
  File "/workspace/train.py", line 120 in train_step
  File "/workspace/train.py", line 200 in <module>
`},
		{"gdb's py-bt, outermost frame last", `step 110 loss 2.29
Traceback (most recent call first):
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 2050, in all_reduce
    work = group.allreduce([tensor], opts)
  File "/workspace/train.py", line 200, in <module>
    with open(cfg) as f: main(json.load(f))
`},
		{"torch.compile's graph break", `Graph break in user code at /workspace/model.py:41
Reason: Unsupported: call_function BuiltinVariable(open) [ConstantVariable()] {}
User code traceback:
  File "/workspace/train.py", line 88, in <module>
    out = model(batch)
  File "/workspace/model.py", line 41, in forward
    with open(self.stats_path, "a") as f: f.write(str(x.shape))
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, rules := range map[string][]*Rule{"both tiers": all, "second tier alone": WithoutSpecific(all)} {
				res := analyzeLogs(t, rules, tc.log)
				if res.Verdict == VerdictUnhealthy {
					// A live process's stack may say it hung; it never says the process failed.
					require.Equal(t, CategoryHang, res.RootCause.Category, "%s: %s %s", name, res.VerdictReason, findingsOf(res))
				}
			}
		})
	}
}

// TestTracebackWithAnExceptionTheVocabularyDoesNotKnow: a traceback that ends in its
// exception line is not cut, whether or not the vocabulary knows the exception: its frames
// name no guess ("with open(" above a bad zip file is no missing file).
func TestTracebackWithAnExceptionTheVocabularyDoesNotKnow(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	frames := `step 100 loss 2.31
Traceback (most recent call last):
  File "/workspace/train.py", line 210, in <module>
    main()
  File "/workspace/data.py", line 41, in load_shard
    with open(path, "rb") as f:
`
	for _, exc := range []string{
		"zipfile.BadZipFile: File is not a zip file",
		"http.client.RemoteDisconnected: Remote end closed connection without response",
		"StopIteration",
	} {
		t.Run(exc, func(t *testing.T) {
			for name, rules := range map[string][]*Rule{"both tiers": all, "second tier alone": WithoutSpecific(all)} {
				res := analyzeLogs(t, rules, frames+exc+"\n")
				if res.RootCause == nil {
					continue
				}
				require.NotEqual(t, CategoryFileNotFound, res.RootCause.Category, "%s: %s", name, findingsOf(res))
				require.NotContains(t, res.RootCause.Title, "the traceback ends in", name)
				require.NotContains(t, res.RootCause.Explanation, "before its exception line", name)
			}
		})
	}
}
