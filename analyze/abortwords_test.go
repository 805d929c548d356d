package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAbortAgreeingWithItself: a library's error report above "Aborted (core dumped)" is the
// abort's cause; when no rule or term names it, the vocabulary reads only the abort's own words
// ("aborted", "core dumped") and agrees with the abort rule. That is the same evidence twice, not
// a cause: the process aborted, at low confidence, never "likely" at medium.
func TestAbortAgreeingWithItself(t *testing.T) {
	all, err := DefaultRules()
	require.NoError(t, err)
	// ROCm/rocBLAS#1339: rocBLAS without a Tensile library for the GPU.
	tensile := "rocBLAS error: Cannot read /opt/rocm-5.4.0/lib/rocblas/library/TensileLibrary.dat: Illegal seek\nAborted (core dumped)\n"
	// ROCm/legacy-rocm-build#3015: the same abort for a gfx1036 iGPU, the library files listed.
	gfx1036 := "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1036\n" +
		" List of available TensileLibrary Files : \n" +
		"\"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat\"\n" +
		"\"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat\"\n" +
		"Aborted (core dumped)\n"
	for _, log := range []string{tensile, gfx1036} {
		for _, res := range analyzeInEitherTier(t, all, log) {
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.NotNil(t, res.RootCause)
			require.Equal(t, CategoryCrashSignal, res.RootCause.Category)
			require.Equal(t, "Aborted (core dumped)", res.RootCause.Evidence[0].Text)
			require.Equal(t, ConfidenceLow, res.Confidence)
		}
	}
	// A run that stops on purpose and finishes is no abort.
	requireNotUnhealthyInEitherTier(t, all, "step 1000 loss 1.20\nAborting training: max_steps reached\nTraining completed. Saving model.\n")
}
