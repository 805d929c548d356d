package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBatchSchedulerRefusalsBeforeTraining: a job launched by Slurm can fail before its first
// step in ways the scheduler's plugins print, not the trainer: pyxis cannot import the
// container image (the step never starts), or Lightning is asked for GPUs the allocation did
// not give the task. Lightning's is named by its own line, at high confidence (and by the
// second tier's words alone at medium); pyxis's by what enroot printed under it; the same
// tools' lines of a run that started stay healthy.
func TestBatchSchedulerRefusalsBeforeTraining(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	tests := []struct {
		name, log, ruleID, evidence string
		category                    Category
	}{
		// Lightning's device check (talmolab/sleap#2642), raised through the Trainer.
		{"Lightning asked for GPUs the task cannot see",
			"Traceback (most recent call last):\n  File \"train.py\", line 40, in <module>\n    trainer = pl.Trainer(devices=7)\n" +
				"lightning.fabric.utilities.exceptions.MisconfigurationException: You requested gpu: [0, 1, 2, 3, 4, 5, 6] But your machine only has: [0, 1]\n",
			"config-error/lightning-gpus-not-visible", "But your machine only has", CategoryConfigError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := requireNamedByRule(t, all, tt.log, tt.category, tt.ruleID)
			require.NotEmpty(t, res.RootCause.Evidence)
			require.Contains(t, res.RootCause.Evidence[0].Text, tt.evidence)
			requireNamedByVocabulary(t, all, tt.log, tt.category)
		})
	}
	// pyxis's summary names no cause of its own: the enroot lines it copies below say it. A
	// registry's 401 (NVIDIA/pyxis#168) is image-pull, at medium from those words; a full disk
	// under the same summary (NVIDIA/pyxis#53) is disk-full, an unwritable runtime directory
	// (NVIDIA/pyxis#12) permission-denied (a review of session 26).
	const pyxisHead = "pyxis: importing docker image: evuedsoacr.azurecr.io/dc-ecosys-appl-eng/mlperf-nvidia:stable_diffusion-pyt\n" +
		"slurmstepd: error: pyxis: child 1022281 failed with error code: 1\n" +
		"slurmstepd: error: pyxis: failed to import docker image\n" +
		"slurmstepd: error: pyxis: printing enroot log file:\n"
	for _, tc := range []struct {
		name, enroot string
		category     Category
	}{
		{"a registry's 401", "slurmstepd: error: pyxis:     [INFO] Querying registry for permission grant\n" +
			"slurmstepd: error: pyxis:     [ERROR] URL https://registry-1.docker.io/v2/evuedsoacr.azurecr.io/dc-ecosys-appl-eng/mlperf-nvidia/manifests/stable_diffusion-pyt returned error code: 401 Unauthorized\n", CategoryImagePull},
		{"a full disk", "slurmstepd: error: pyxis:     [INFO] Found all layers in cache\n" +
			"slurmstepd: error: pyxis:     [INFO] Creating squashfs filesystem...\n" +
			"slurmstepd: error: pyxis:     Write failed because No space left on device\n" +
			"slurmstepd: error: pyxis:     FATAL ERROR:Failed to write to output filesystem\n", CategoryDiskFull},
		{"an unwritable runtime directory", "slurmstepd: error: pyxis:     mkdir: cannot create directory '/run/enroot': Permission denied\n", CategoryPermissionDenied},
	} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, pyxisHead+tc.enroot+"slurmstepd: error: pyxis: couldn't start container\n"+
				"srun: error: compute-0: task 0: Exited with exit code 1\n")
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.NotNil(t, res.RootCause, tc.name)
			require.Equal(t, tc.category, res.RootCause.Category, "%s: %s", tc.name, res.RootCause.Title)
			if tc.category == CategoryImagePull {
				require.Equal(t, ConfidenceMedium, res.Confidence, tc.name)
			}
		}
	}
	for name, log := range map[string]string{
		"pyxis imported the image and the step ran": "pyxis: importing docker image: login1:5000#bert\n" +
			"pyxis: imported docker image: login1:5000#bert\n" + progress,
		"Lightning found the GPUs it was given": "GPU available: True, used: True\n" +
			"LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3]\n" +
			"initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8\n" + progress,
	} {
		t.Run(name, func(t *testing.T) {
			res := analyzeLogs(t, all, log)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
		})
	}
}
