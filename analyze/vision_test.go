package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVisionStackFailures: failures of the computer-vision and diffusion training stacks
// (session 21's spot set) that no specific rule names are named by their class from the
// vocabulary, with all tiers and with the second alone, at medium: a video the decoder cannot
// open, an OpenMMLab package refusing its mmcv, mmcv or detectron2 ops without their CUDA
// kernels.
func TestVisionStackFailures(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tests := []struct {
		name     string
		log      string
		category Category
	}{
		{"decord finds no video stream in a dataset's clip",
			progress + "Traceback (most recent call last):\n" +
				"  File \"/env/lib/python3.8/site-packages/mmaction/datasets/pipelines/loading.py\", line 937, in __call__\n" +
				"    container = decord.VideoReader(file_obj, num_threads=self.num_threads)\n" +
				"  File \"/env/lib/python3.8/site-packages/decord/_ffi/base.py\", line 78, in check_call\n" +
				"    raise DECORDError(err_str)\n" +
				"decord._ffi.base.DECORDError: [09:27:10] /io/decord/src/video/video_reader.cc:125: Check failed: st_nb >= 0 (-1381258232 vs. 0) ERROR cannot find video stream with wanted index: -1\n",
			CategoryDataError},
		{"PyAV on a clip FFmpeg cannot parse",
			progress + "Traceback (most recent call last):\n" +
				"  File \"av/error.pyx\", line 336, in av.error.err_check\n" +
				"av.error.InvalidDataError: [Errno 1094995529] Invalid data found when processing input; last error log: [h264] Error splitting the input into NAL units.\n",
			CategoryDataError},
		{"an OpenMMLab package refusing the mmcv it found",
			"Traceback (most recent call last):\n  File \"tools/train.py\", line 14, in <module>\n    from mmdet import __version__\n" +
				"AssertionError: MMCV==1.3.9 is used but incompatible. Please install mmcv>=[1, 1, 4], <=[1, 2, 0].\n",
			CategoryModuleNotFound},
		{"mmcv installed without the CUDA kernel of an op",
			progress + "Traceback (most recent call last):\n" +
				"  File \"/env/lib/python3.8/site-packages/mmcv/ops/nms.py\", line 27, in forward\n    inds = ext_module.nms(\n" +
				"RuntimeError: nms_impl: implementation for device cuda:0 not found.\n",
			CategoryModuleNotFound},
		{"detectron2's ops built where PyTorch saw no CUDA",
			"Traceback (most recent call last):\n  File \"train_net.py\", line 90, in <module>\n" +
				"RuntimeError: Not compiled with GPU support (ROIAlign_forward at /home/u/detectron2/detectron2/layers/csrc/ROIAlign/ROIAlign.h:73)\n",
			CategoryModuleNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireNamedBySecondTier(t, all, tt.log, tt.category) })
	}
}

// TestVisionStackNearMisses: the same words where they name no bad data or broken build: a
// dataset that skips a clip the decoder cannot open and trains on, and a clip that is not
// there (a path, not the data).
func TestVisionStackNearMisses(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// As DAMO-NLP-SG/VideoLLaMA2#20: the decoder's complaint, then more training steps.
	skipped := progress + "[mov,mp4,m4a,3gp,3g2,mj2 @ 0x19a50700] moov atom not found\n" +
		"[h264 @ 0x1f0acd40] mmco: unref short failure\n" + "epoch 1 step 30 loss 1.9\nepoch 1 step 40 loss 1.8\n"
	missing := progress + "Traceback (most recent call last):\n" +
		"  File \"/env/lib/python3.8/site-packages/decord/_ffi/base.py\", line 78, in check_call\n" +
		"    raise DECORDError(err_str)\n" +
		"decord._ffi.base.DECORDError: [10:21:05] /github/workspace/src/video/video_reader.cc:83: ERROR opening: /data/videos/v_B7Ddfw2PXOI.mp4, No such file or directory\n"
	// The skip as the log's last line: the job may still be training, or hung; nothing
	// failed. And mmcv's version check logged as ignored.
	skipLast := progress + "WARNING: failed to load video /data/k400/abc.mp4: [11:37:01] /github/workspace/src/video/video_reader.cc:151: Check failed: st_nb >= 0 (-1381258232 vs. 0) ERROR cannot find video stream with wanted index: -1. Skipping.\n"
	ignored := progress + "ERROR - MMCV==1.7.0 is used but incompatible with mmdet 3.0; the check is ignored\n"
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		for _, log := range []string{skipped, skipLast, ignored} {
			res := analyzeLogs(t, rules, log)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s\n%s", res.VerdictReason, log)
		}
		res := analyzeLogs(t, rules, missing)
		require.NotNil(t, res.RootCause)
		require.NotEqual(t, CategoryDataError, res.RootCause.Category, res.RootCause.Title)
	}
}

// TestSignalledCommandEcho: torch.distributed.launch's CalledProcessError for a rank the OOM
// killer ended ("died with <Signals.SIGKILL: 9>") echoes the rank's argv, whose words (a
// "--gpu-ids" list, a "--resume-from" path) say nothing: the second tier alone names the
// signal's cause, host-oom at medium, as the specific rule does at high.
func TestSignalledCommandEcho(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "Traceback (most recent call last):\n" +
		"  File \"/env/lib/python3.8/site-packages/torch/distributed/launch.py\", line 326, in main\n" +
		"    sigkill_handler(signal.SIGTERM, None)  # not coming back\n" +
		"  File \"/env/lib/python3.8/site-packages/torch/distributed/launch.py\", line 301, in sigkill_handler\n" +
		"    raise subprocess.CalledProcessError(returncode=last_return_code, cmd=cmd)\n" +
		"subprocess.CalledProcessError: Command '['/env/bin/python', '-u', './train.py', '--local_rank=3', 'configs/culane/res18.py', " +
		"'--work-dir=./output/res18/', '--resume-from=./output/res18/latest.pth', '--launcher=pytorch', '--gpu-ids', '0', '1', '2', '3']' died with <Signals.SIGKILL: 9>.\n"
	res := analyzeLogs(t, WithoutSpecific(all), log)
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryHostOOM, res.RootCause.Category, res.RootCause.Title)
	require.Equal(t, ConfidenceMedium, res.Confidence)
	res = analyzeLogs(t, all, log)
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryHostOOM, res.RootCause.Category, res.RootCause.Title)
}
