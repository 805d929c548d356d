package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTorchLoadWarningIsNotAFailure: torch.load's FutureWarning about weights_only prints in
// runs that load their checkpoints fine; it is not the weights_only failure.
func TestTorchLoadWarningIsNotAFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := progress +
		"/env/lib/python3.10/site-packages/torch/serialization.py:1113: FutureWarning: You are using `torch.load` with `weights_only=False` (the current default value), which uses the default pickle module implicitly.\n" +
		"  return torch.load(f, map_location=map_location)\n" +
		progress
	res := analyzeLogs(t, all, log)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}

// TestTFCheckpointFileMissing: TensorFlow's NotFoundError on a checkpoint path (a shard
// MergeV2Checkpoints cannot open because each parameter server wrote to its own local
// directory, a restore prefix with no files behind it) is file-not-found at high, with the
// NotFoundError line as evidence; NotFoundError's other messages and the Saver's own progress
// are not.
func TestTFCheckpointFileMissing(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tt := range []struct{ name, log, evidence string }{
		// https://github.com/tensorflow/tensorflow/issues/6374 (two parameter servers, TF 1.x)
		{"merge of shards, TF 1.x", "INFO:tensorflow:global_step/sec: 12.3\n" +
			"INFO:tensorflow:Saving checkpoints for 0 into ./supervisor/model.ckpt.\n" +
			"NotFoundError (see above for traceback): ./supervisor/model.ckpt-0_temp_994ae96906954e838fc2f3481ce8f296/part-00001-of-00002.data-00000-of-00001\n" +
			"\t [[Node: save/MergeV2Checkpoints = MergeV2Checkpoints[delete_old_dirs=true, _device=\"/job:ps/replica:0/task:1/cpu:0\"](save/MergeV2Checkpoints/checkpoint_prefixes, _recv_save/Const_0_S81)]]\n",
			"part-00001-of-00002.data-00000-of-00001"},
		// https://github.com/cchen156/Learning-to-See-in-the-Dark/issues/67 (restore)
		{"restore, TF 1.x errors_impl", "loaded ./checkpoint/Sony/model.ckpt\n" +
			"Traceback (most recent call last):\n" +
			"  File \"/usr/local/lib/python3.6/dist-packages/tensorflow/python/client/session.py\", line 1334, in _do_call\n" +
			"    return fn(*args)\n" +
			"tensorflow.python.framework.errors_impl.NotFoundError: ./checkpoint/Sony/model.ckpt.data-00000-of-00001; No such file or directory\n",
			"model.ckpt.data-00000-of-00001; No such file or directory"},
		// https://github.com/huschen/kaggle_speech_recognition/issues/2
		{"restore prefix without files", "    self._traceback = self._graph._extract_stack()  # pylint: disable=protected-access\n\n" +
			"NotFoundError (see above for traceback): Unsuccessful TensorSliceReader constructor: Failed to find any matching files for check_point.\n",
			"Failed to find any matching files for check_point."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tt.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, "file-not-found/tf-checkpoint-missing", res.RootCause.RuleID, findingsOf(res))
			require.Equal(t, CategoryFileNotFound, res.RootCause.Category)
			require.Equal(t, ConfidenceHigh, res.Confidence)
			require.Contains(t, res.RootCause.Evidence[0].Text, tt.evidence)
		})
	}

	// A variable the checkpoint lacks is NotFoundError too, but no missing file.
	res := analyzeLogs(t, all, "NotFoundError (see above for traceback): Key conv13/weights not found in checkpoint\n"+
		"\t [[Node: save/RestoreV2_4 = RestoreV2[dtypes=[DT_FLOAT], _device=\"/job:localhost/replica:0/task:0/cpu:0\"](_recv_save/Const_0, save/RestoreV2_4/tensor_names, save/RestoreV2_4/shape_and_slices)]]\n")
	if res.RootCause != nil {
		require.NotEqual(t, "file-not-found/tf-checkpoint-missing", res.RootCause.RuleID)
	}

	// A dataset's missing shard is a missing file, not a checkpoint's (the review's case):
	// the second tier names it, and the checkpoint rule's explanation is not given.
	res = analyzeLogs(t, all, "Traceback (most recent call last):\n  File \"train.py\", line 50, in <module>\n    for x in ds:\n"+
		"tensorflow.python.framework.errors_impl.NotFoundError: /data/imagenet/train-00001-of-01024.tfrecord; No such file or directory [Op:IteratorGetNext]\n")
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, CategoryFileNotFound, res.RootCause.Category, findingsOf(res))
	require.NotEqual(t, "file-not-found/tf-checkpoint-missing", res.RootCause.RuleID)

	// The Saver writing its checkpoints in a run that goes on is healthy.
	res = analyzeLogs(t, all, "INFO:tensorflow:loss = 0.41, step = 400 (12.1 sec)\n"+
		"INFO:tensorflow:Saving checkpoints for 500 into /train_dir/model.ckpt.\n"+
		"INFO:tensorflow:loss = 0.38, step = 500 (12.0 sec)\n"+
		"INFO:tensorflow:loss = 0.36, step = 600 (11.9 sec)\n")
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}
