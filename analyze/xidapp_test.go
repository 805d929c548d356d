package analyze

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppXidIsNoLikelyHardwareFault: Xid 13, 31 and 43 are faults of the process named in them
// (gpu-hardware/xid-app-fault reads them as the user's, at warning severity): NVIDIA's device
// plugin does not mark a GPU unhealthy on them, and a tinygrad run's Xid 31 MMU faults went away
// with another kernel module (tinygrad/tinygrad#6947), relion's Xid 13 "Illegal Instruction
// Encoding" came from a kernel (3dem/relion#436). A log that shows nothing but them is no
// hardware fault at medium confidence: the vocabulary's "Xid"/"NVRM" in the same line is no
// second reading of it. The Xids that are hardware (79, 48, 94) stay high.
func TestAppXidIsNoLikelyHardwareFault(t *testing.T) {
	mmu := "[23203.142515] NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, name=python, Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2a_3c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n"
	sm := "Feb 15 17:37:45 Gipfeli kernel: [82659.755933] NVRM: Xid (PCI:0000:41:00): 13, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Illegal Instruction Encoding\n"
	all, err := DefaultRules()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, log, line string
		want            Confidence
	}{
		{"MMU faults alone", "[22859.081855] NVRM: GPU at PCI:0000:3b:00: GPU-af4f89ae-d08b-1b53-9938-c9ed209a3513\n" + mmu + mmu, mmu, ConfidenceLow},
		{"SM exceptions alone", sm + sm, sm, ConfidenceLow},
		{"fallen off the bus", "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.\n", "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.\n", ConfidenceHigh},
		{"contained ECC error", "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error\n", "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error\n", ConfidenceHigh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := analyzeLogs(t, all, tc.log)
			require.Equal(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
			require.Equal(t, CategoryGPUHardware, res.RootCause.Category)
			require.Equal(t, tc.want, res.Confidence)
			require.NotEmpty(t, res.RootCause.Evidence)
			require.Equal(t, tc.line[:len(tc.line)-1], res.RootCause.Evidence[0].Text)
		})
	}
	// A run that trains on after an MMU fault of another process stays healthy.
	res := analyzeLogs(t, all, mmu+"epoch 1 step 10 loss 2.1\nepoch 1 step 20 loss 2.0\nepoch 1 step 30 loss 1.9\ntraining finished\n")
	require.NotEqual(t, VerdictUnhealthy, res.Verdict, res.VerdictReason)
}
