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
