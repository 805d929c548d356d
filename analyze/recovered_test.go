package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecoveredWarningIsNoFailure: a plain log whose NCCL network plugin failed to
// initialise and whose NCCL then went on over sockets is not called a failure by either tier
// (aws/aws-ofi-nccl#715, aws/aws-k8s-tester#454).
func TestRecoveredWarningIsNoFailure(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	log := "algo-1:17774:17853 [1] nccl_net_ofi_create_plugin:259 NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n" +
		"algo-1:17780:17851 [7] NCCL INFO NET/Socket : Using [0]eth0:10.0.227.37<0>\n" +
		"algo-1:17774:17853 [1] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n" +
		"algo-1:17780:17851 [7] NCCL INFO Using non-device net plugin version 0\n" +
		"algo-1:17780:17851 [7] NCCL INFO Using network Socket\n"
	for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
		res := analyzeLogs(t, rules, log)
		require.NotEqual(t, VerdictUnhealthy, res.Verdict, "root cause: %+v", res.RootCause)
	}
}
