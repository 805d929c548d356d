package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

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
