package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDmlcLoggingLineBeforeItsStack: dmlc-core's logging line is the process's failure when
// the stack of its throw follows it (apache/mxnet#8693) or the log ends on it; the same line
// of a caught error, with the run's own lines or its training rows after it, is none.
func TestDmlcLoggingLineBeforeItsStack(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	check := "[06:46:00] /home/travis/build/dmlc/mxnet-distro/mxnet-build/dmlc-core/include/dmlc/logging.h:308: [06:46:00] src/kvstore/kvstore_dist.h:80: Reached max retry for bind: Address already in use. errno = 98\n"
	stack := "\nStack trace returned 8 entries:\n[bt] (0) /usr/local/lib/python3.5/dist-packages/mxnet/libmxnet.so(+0x272d0c) [0x7efbfe725d0c]\n"
	for _, log := range []string{check + stack, check} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryRendezvous, res.RootCause.Category)
		}
	}
	// apache/mxnet#4900's Speedometer rows after the line: training went on.
	rows := "INFO:root:Epoch[1] Batch [100]  Speed: 12488.17 samples/sec     Train-accuracy=0.954219\n" +
		"INFO:root:Epoch[1] Batch [200]  Speed: 11174.90 samples/sec     Train-accuracy=0.953281\n"
	// A caught error: the run says what it does instead.
	caught := "INFO:root:Loading the checkpoint failed; starting from scratch\nINFO:root:Start training with [gpu(0)]\n"
	// dmlc appends the stack to every check it logs, caught or not: the stack followed by the
	// run going on is no failure either.
	for _, log := range []string{check + rows, check + caught, check + stack + caught} {
		for _, rules := range [][]*Rule{all, WithoutSpecific(all)} {
			res := analyzeLogs(t, rules, log)
			require.NotEqual(t, VerdictUnhealthy, res.Verdict, "%s\n%s", res.VerdictReason, log)
		}
	}
}
