package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGradScaleCollapseOfK2Recipes: the k2/icefall recipes (icefall, ZipVoice, vall-e) warn
// "Grad scale is small" under 0.01 and raise "grad_scale is too small, exiting" under 1e-05.
// A warning whose scale is under that floor, or the raise, is an fp16 scale that collapsed:
// nan-loss at high with all tiers, even when the paste is cut before the raise's exception
// line. A warning above the floor, with training going on after it, is no failure.
func TestGradScaleCollapseOfK2Recipes(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for name, log := range map[string]string{
		"the warning at 0.0 (lifeiteng/vall-e#47) above a traceback cut before its exception": progress +
			"2023-03-06 12:41:16,652 WARNING [trainer.py:680] (2/4) Grad scale is small: 0.0\n" +
			"Traceback (most recent call last):\n" +
			"  File \"/env/lib/python3.10/site-packages/torch/multiprocessing/spawn.py\", line 239, in spawn\n" +
			"    return start_processes(fn, args, nprocs, join, daemon, start_method='spawn')\n" +
			"  File \"/env/lib/python3.10/site-packages/torch/multiprocessing/spawn.py\", line 197, in start_processes\n" +
			"    while not context.join():\n",
		"the raise (k2-fsa/ZipVoice#17)": "-- Process 1 terminated with the following error:\n" +
			"Traceback (most recent call last):\n" +
			"  File \"/root/workspace/ZipVoice/zipvoice/train_flow.py\", line 769, in train_one_epoch\n" +
			"    raise RuntimeError(\n" +
			"RuntimeError: grad_scale is too small, exiting: 2.3283064365386963e-10\n",
	} {
		t.Run(name, func(t *testing.T) {
			requireNamedByRule(t, all, log, CategoryNaNLoss, "nan-loss/loss-scale-collapsed")
		})
	}
	// The vocabulary alone names the raise.
	requireNamedByVocabulary(t, all, "Traceback (most recent call last):\n"+
		"  File \"/root/workspace/ZipVoice/zipvoice/train_flow.py\", line 769, in train_one_epoch\n"+
		"    raise RuntimeError(\n"+
		"RuntimeError: grad_scale is too small, exiting: 2.3283064365386963e-10\n", CategoryNaNLoss)

	// k2-fsa/icefall#1946: a warning at 3e-05, above the floor, and the step's progress line.
	res := analyzeLogs(t, all, progress+
		"2025-05-20 02:38:47,195 WARNING [train_phone.py:1047] (7/8) Grad scale is small: 3.0517578125e-05\n"+
		"2025-05-20 02:38:47,195 INFO [train_phone.py:1056] (7/8) Epoch 1, batch 14300, loss[loss=0.6675, simple_loss=0.6511, pruned_loss=0.2501, ctc_loss=0.4594, over 19153.00 frames. ], tot_loss[loss=0.6085, simple_loss=0.5909, pruned_loss=0.2276, ctc_loss=0.4316, over 37589436.30 frames. ], batch size: 130, lr: 2.73e-02, grad_scale: 6.103515625e-05\n")
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, findingsOf(res))
}

// TestXFormersThatCannotBeUsed: diffusers refusing to enable xFormers' attention because it is
// not installed is a broken environment, not a bug in the training code, with all tiers and
// with the second alone; xFormers' warning that its extensions do not load, printed at import
// by a run that then trains on (baichuan-inc/Baichuan2#248, its lines; the bar constructed),
// and the same words as a script's warning, are no failure.
func TestXFormersThatCannotBeUsed(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// d8ahazard/sd_dreambooth_extension#1201
	notAvailable := "Traceback (most recent call last):\n" +
		"  File \"E:\\Program Files (x86)\\stable-diffusion-webui\\extensions\\sd_dreambooth_extension\\dreambooth\\train_dreambooth.py\", line 305, in inner_loop\n" +
		"    raise ValueError(\n" +
		"ValueError: xformers is not available. Make sure it is installed correctly\n"
	for name, rules := range map[string][]*Rule{"both tiers": all, "second tier alone": WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, notAvailable)
		require.Equal(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, res.VerdictReason)
		require.Equal(t, CategoryModuleNotFound, res.RootCause.Category, "%s: %s", name, findingsOf(res))
		require.Equal(t, ConfidenceMedium, res.Confidence, name)
	}

	warned := "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n" +
		"    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cpu)\n" +
		"    Python  3.8.10 (you have 3.8.0)\n" +
		"  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-xformers)\n" +
		"  Memory-efficient attention, SwiGLU, sparse and more won't be available.\n" +
		"  Set XFORMERS_MORE_DETAILS=1 for more details\n" + progress +
		"Steps: 100%|██████████| 400/400 [10:02<00:00,  1.51s/it, loss=0.112, lr=1e-6]\n"
	// diffusers' scripts log the same words as a warning and train on without xFormers
	// (geocine/sd-easy-mode#11 shows the script's line; the log lines constructed).
	logged := "02/16/2023 10:00:05 - WARNING - __main__ - xformers is not available. Make sure it is installed correctly\n" +
		progress + "Steps: 100%|██████████| 400/400 [10:02<00:00,  1.51s/it, loss=0.112, lr=1e-6]\n"
	for name, rules := range map[string][]*Rule{"both tiers": all, "second tier alone": WithoutSpecific(all)} {
		for _, log := range []string{warned, logged} {
			res := analyzeLogs(t, rules, log)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, findingsOf(res))
		}
	}
}

// TestYOLOLossesNaNToEnd: YOLO's epoch rows with NaN in every loss column, to the end of the
// log, are a run that learns nothing (ultralytics/yolov5#4962, its validation rows after the
// NaN row); a NaN epoch mean followed by a finite epoch recovered, and finite rows are
// training (ultralytics/ultralytics#21765).
func TestYOLOLossesNaNToEnd(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	requireNamedByRule(t, all, "     Epoch   gpu_mem       box       obj       cls    labels  img_size\n"+
		"      1/99     2.64G         nan       nan       nan         4       416: 100%|██████████| 7/7 [00:15<00:00,  2.27s/it]\n"+
		"               Class     Images     Labels          P          R     mAP@.5 mAP@.5:.95: 100%|██████████| 1/1 [00:01<00:00,  1.30s/it]\n"+
		"                 all               14          0             0          0            0              0\n",
		CategoryNaNLoss, "nan-loss/yolo-losses-nan-to-end")

	for name, log := range map[string]string{
		"a NaN epoch, then a finite one": "      0/99     2.64G         nan       nan       nan         4       416: 100%|██████████| 7/7 [00:15<00:00,  2.27s/it]\n" +
			"      1/99     2.64G    0.1254   0.04242   0.08415         4       416: 100%|██████████| 7/7 [00:15<00:00,  2.27s/it]\n",
		"finite YOLOv8 rows": "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n" +
			"      22/55      9.02G     0.1157      5.355      2.998         17        640: 100%|██████████| 954/954 [11:33<00:00,  1.38it/s]\n" +
			"      23/55      9.03G     0.1126       5.27      2.976         19        640: 100%|██████████| 954/954 [11:52<00:00,  1.34it/s]\n",
	} {
		res := analyzeLogs(t, all, log)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: %s", name, findingsOf(res))
	}
}
