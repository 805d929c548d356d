package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNonFiniteTrainingOnly: a non-finite training loss is named nan-loss in the forms trainers
// print it, a loss scale that fell to 0 is a collapse, and an exception that says what is NaN
// names it too; a NaN evaluation while the training loss stays finite is no failure. The lines are made up in the trainers' formats.
func TestNonFiniteTrainingOnly(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tt := range []struct {
		name, log string
		unhealthy bool
	}{
		{"the loss in brackets", "E54 iter[ 14/ 15] | [Loss] 0.8123 | [step]   824\n" +
			"E55 iter[ 14/ 15] | [Loss] nan | [step]   839\n", true},
		{"the training loss and the validation's", "100/100 [==============================] - 332s 3s/step - loss: nan - val_loss: nan\n", true},
		{"a project's own NaN guard", "epoch 3 step 120 loss 0.4123\n" +
			"Traceback (most recent call last):\n" +
			"  File \"train.py\", line 88, in <module>\n" +
			"    raise ValueError(\"Network outputs is NAN! Stop Training\")\n" +
			"ValueError: Network outputs is NAN! Stop Training\n", true},
		{"a DeepSpeed loss scale fallen to 0", "[deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 0.0, reducing to 0.0\n", true},
		{"a NaN evaluation, training finite", "{'loss': 1.2034, 'grad_norm': 0.91, 'learning_rate': 2e-05, 'epoch': 0.08}\n" +
			"{'eval_loss': nan, 'eval_accuracy': 0.0, 'eval_runtime': 17.3, 'epoch': 0.08}\n" +
			"{'loss': 1.1876, 'grad_norm': 0.88, 'learning_rate': 2e-05, 'epoch': 0.09}\n", false},
		{"a NaN validation loss printed before the NaN training loss", "Epoch 1: 100%|##########| 938/938 [00:10<00:00, 91.57it/s, v_num=0, val_loss=nan, train_loss=nan]\n", true},
		{"a NaN validation column before the NaN loss column", "epoch 1 | val_loss: nan | loss: nan\n", true},
		{"a NaN validation loss in Keras", "100/100 [==============================] - 328s 3s/step - loss: 0.2445 - val_loss: nan\n", false},
		{"a ZeRO-2 overflow at the initial scale", "[deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 65536\n", false},
	} {
		res := analyzeLogs(t, all, tt.log)
		if !tt.unhealthy {
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s: root cause: %+v", tt.name, res.RootCause)
			continue
		}
		require.Equal(t, VerdictUnhealthy, res.Verdict, tt.name)
		require.Equal(t, CategoryNaNLoss, res.RootCause.Category, tt.name)
	}
}

// TestRuleExampleSkipsEvaluationColumn: a rule's example check (rules lint) finds the training
// loss after an evaluation column, as the analysis does.
func TestRuleExampleSkipsEvaluationColumn(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, r := range all {
		if r.ID != "nan-loss/loss-value" {
			continue
		}
		_, ok := r.matchText("epoch 1 | val_loss: nan | loss: nan")
		require.True(t, ok)
		_, ok = r.matchText("epoch 1 | loss: 0.31 | val_loss: nan")
		require.False(t, ok)
		return
	}
	t.Fatal("no rule nan-loss/loss-value")
}

// TestZeroLossNaNNormToTheEnd: a bare log whose Trainer rows end in a loss of 0.0 beside a
// non-finite gradient norm, however few, is nan-loss; the same row followed by finite norms
// is recovered, and a finite loss beside a NaN norm at the end (an fp16 skip as often as
// not) is no finding.
func TestZeroLossNaNNormToTheEnd(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	good := "{'loss': 1.2841, 'grad_norm': 3.517, 'learning_rate': 4.9e-05, 'epoch': 0.02}\n"
	zero := "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 4.8e-05, 'epoch': 0.04}\n"
	// https://github.com/chengtan9907/mc-cot/issues/2 (its title quotes the row)
	res := analyzeLogs(t, all, good+zero)
	require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	require.Equal(t, "nan-loss/zero-loss-nan-norm-to-end", res.RootCause.RuleID)
	res = analyzeLogs(t, all, zero)
	require.Equal(t, CategoryNaNLoss, res.RootCause.Category)

	res = analyzeLogs(t, all, zero+good)
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
	res = analyzeLogs(t, all, good+"{'loss': 0.2096, 'grad_norm': nan, 'learning_rate': 0.00026, 'epoch': 5.38}\n")
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}

// TestZeroLossNaNNormOneRowWhileRunning: a single such row at the end of the log of a job
// still running is the step it was at when collected (the next may be finite): medium, not
// high. A source line that prints the dict is no row at all.
func TestZeroLossNaNNormOneRowWhileRunning(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	zero := "2026-03-14T10:05:00Z {'loss': 0.0, 'grad_norm': nan, 'learning_rate': 1e-06, 'epoch': 0.01}\n"
	running := `  phase: Running
  startTime: "2026-03-14T10:00:10Z"
  containerStatuses:
  - name: pytorch
    image: registry.local/ml/trainer:v2
    imageID: registry.local/ml/trainer@sha256:1
    ready: true
    restartCount: 0
    state: {running: {startedAt: "2026-03-14T10:00:20Z"}}
`
	files := map[string]string{
		"resources/kubeflow.org/PyTorchJob/ml/train.yaml": pytorchJobYAML(1, "Running", "2026-03-14T10:00:30Z"),
		"resources/core/Pod/ml/train-worker-0.yaml":       workerPodYAML(0, running),
		"logs/ml/train-worker-0/pytorch.log":              "2026-03-14T10:04:00Z ***** Running training *****\n" + zero,
	}
	res := analyzeBundle(t, files, time.Date(2026, 3, 14, 10, 6, 0, 0, time.UTC), Options{})
	require.Equal(t, "nan-loss/zero-loss-nan-norm-to-end", res.RootCause.RuleID, res.VerdictReason)
	require.Equal(t, ConfidenceMedium, res.Confidence)
	require.Equal(t, BasisOneRow, res.ConfidenceBasis) // the report says why, not "no specific rule matched"
	files["logs/ml/train-worker-0/pytorch.log"] += strings.Replace(zero, "10:05:00", "10:05:30", 1)
	res = analyzeBundle(t, files, time.Date(2026, 3, 14, 10, 6, 0, 0, time.UTC), Options{})
	require.Equal(t, ConfidenceHigh, res.Confidence)

	res = analyzeLogs(t, all, "    print({'loss': 0.0, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.01})\n")
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}
