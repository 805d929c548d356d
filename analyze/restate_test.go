package analyze

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestXidCleanupRestatesItsCause: an Xid 45 line that names the Xid it cleaned up after is
// also that Xid's own line, so a node log holding only the cleanup still names the fault (an
// NVLink error here, the root cause); a cleanup caused by another cleanup (the driver prints
// that too) restates nothing: one cleanup finding, no catch-all "GPU driver error (Xid 45)".
func TestXidCleanupRestatesItsCause(t *testing.T) {
	rules, err := DefaultRules()
	require.NoError(t, err)
	categoriesAndTitles := func(res *Result) []string {
		var out []string
		for _, f := range res.Findings {
			out = append(out, string(f.Category)+": "+f.Title)
		}
		slices.Sort(out)
		return out
	}

	// The form from the driver's format string (kernel_rc.c), after an NVLink Xid.
	res := analyzeLogs(t, rules, "[Tue Mar 10 09:14:02 2026] NVRM: Xid (PCI:0000:18:00): 45, pid=2231, name=python, Ch 00000004 caused by previous Xid 74\n")
	require.Equal(t, []string{
		"gpu-hardware: GPU channel cleaned up after a fault (Xid 45)",
		"gpu-hardware: NVLink error (Xid 74)",
	}, categoriesAndTitles(res))
	require.NotNil(t, res.RootCause)
	require.Equal(t, "NVLink error (Xid 74)", res.RootCause.Title)

	// https://github.com/vllm-project/vllm/issues/40652: cleanups caused by an Xid 45.
	res = analyzeLogs(t, rules,
		"NVRM: Xid (PCI:0000:48:00): 45, pid=22884, name=VLLM::Worker, channel 0x00000010 caused by previous Xid 45\n"+
			"NVRM: Xid (PCI:0000:48:00): 45, pid=22884, name=VLLM::Worker, channel 0x00000011 caused by previous Xid 45\n")
	cleanups := 0
	for _, f := range res.Findings {
		require.NotContains(t, f.Title, "GPU driver error", "the cause restated as a catch-all Xid finding")
		if f.Title == "GPU channel cleaned up after a fault (Xid 45)" {
			cleanups++
			require.Equal(t, 2, f.Count, "both lines counted in one finding")
		}
	}
	require.Equal(t, 1, cleanups)
}
