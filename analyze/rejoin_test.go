package analyze

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// wrapAt hard-wraps a line at width characters, as a terminal paste does.
func wrapAt(line string, width int) []string {
	var out []string
	for utf8.RuneCountInString(line) > width {
		r := []rune(line)
		out = append(out, string(r[:width]))
		line = string(r[width:])
	}
	return append(out, line)
}

func findingOf(fs []*Finding, c Category) *Finding {
	for _, f := range fs {
		if f.Category == c {
			return f
		}
	}
	return nil
}

func findingOfRule(fs []*Finding, id string) *Finding {
	for _, f := range fs {
		if f.RuleID == id {
			return f
		}
	}
	return nil
}

// TestRejoinWrappedAtTerminalWidth: a CUDA OOM message pasted from a terminal 80 (or 132)
// columns wide, cut in the middle of "out of memory", is still a CUDA OOM, found on the first
// physical line of the message with the whole message as its evidence; the rank and the
// root cause follow.
func TestRejoinWrappedAtTerminalWidth(t *testing.T) {
	msg := "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 1 has a total capacity of 23.64 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 22.61 GiB memory in use."
	for _, width := range []int{80, 132} {
		// Cut "CUDA out of memory" itself: shift the message so that the cut falls inside it.
		at := strings.Index(msg, "out of memory") + 6
		pad := strings.Repeat(" ", width-at%width)
		lines := wrapAt(pad[:len(pad)-1]+msg, width)
		require.NotContains(t, strings.Join(lines, "\n"), "out of memory", "the test must cut the phrase")
		log := "step 10 | loss 2.31\n" + strings.Join(lines, "\n") + "\n"
		res := scan(t, log, 1<<20)
		f := findingOf(res.findings, CategoryCUDAOOM)
		require.NotNil(t, f, "width %d: %v", width, res.findings)
		require.Equal(t, 2, f.Evidence[0].Line, "the evidence is the message's first physical line")
		require.Contains(t, f.Evidence[0].Text, "CUDA out of memory. Tried to allocate 1.50 GiB")
		require.Equal(t, 1, f.Rank)
	}

	// Through Run: the wrapped OOM is the root cause, not the generic exception line.
	oom := "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free."
	lines := wrapAt(strings.Repeat(" ", 80-strings.Index(oom, "memory")-3)+oom, 80)
	require.NotContains(t, strings.Join(lines, "\n"), "out of memory")
	log := "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n" + strings.Join(lines, "\n") + "\n"
	res := analyzeFiles(t, map[string]string{"logs/ml/a/c.log": log})
	require.NotNil(t, res.RootCause)
	require.Equal(t, CategoryCUDAOOM, res.RootCause.Category)
}

// TestRejoinSplitByAnotherRank: rank 1's NCCL error is interrupted by rank 0's line; the two
// pieces of rank 1 are one message. A line of 80 characters that is complete does not join
// a following line into a false finding, and a piece waits only a few lines.
func TestRejoinSplitByAnotherRank(t *testing.T) {
	log := "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled \n" +
		"[rank0]: step 12 | loss 2.30 | lr 1.0e-04\n" +
		"[rank1]: system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
	res := scan(t, log, 1<<20)
	const sysErr = "collective-error/nccl-system-error"
	f := findingOfRule(res.findings, sysErr)
	require.NotNil(t, f, "%v", res.findings)
	require.Equal(t, 1, f.Evidence[0].Line)
	require.Equal(t, 1, f.Rank)

	// Without the other rank's prefix the interleaved line is skipped the same way.
	log = "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled \n" +
		"step 12 | loss 2.30 | lr 1.0e-04\n" +
		"system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
	require.NotNil(t, findingOfRule(scan(t, log, 1<<20).findings, sysErr))

	// Too far apart: not one message.
	log = "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled \n" +
		strings.Repeat("[rank0]: step 12 | loss 2.30 | lr 1.0e-04\n", 4) +
		"[rank1]: system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
	require.Nil(t, findingOfRule(scan(t, log, 1<<20).findings, sysErr))

	// A line that starts a record of its own (a date) continues no piece.
	cut := strings.Repeat(" ", 80-len("RuntimeError: CUDA out of")) + "RuntimeError: CUDA out of"
	require.Len(t, cut, 80)
	res = scan(t, cut+"\n2026-03-14 10:00:00 memory report: 3.1 GiB free\n", 1<<20)
	require.Nil(t, findingOf(res.findings, CategoryCUDAOOM))
	res = scan(t, cut+"\n memory. Tried to allocate 2.00 GiB\n", 1<<20)
	require.NotNil(t, findingOf(res.findings, CategoryCUDAOOM), "the same piece, continued")
	// A terminal wraps into the very next line only: a later line does not continue the piece.
	res = scan(t, cut+"\nstep 3 done\n memory. Tried to allocate 2.00 GiB\n", 1<<20)
	require.Nil(t, findingOf(res.findings, CategoryCUDAOOM))
}

// TestRejoinAtAWidthTheFirstWrapTeaches: a message hard-wrapped at a width no list has (116
// columns) is cut inside its first two lines, before three lines could teach the width: two
// consecutive lines of the same length, the longest so far, are one message; a line of
// another length does not continue the first.
func TestRejoinAtAWidthTheFirstWrapTeaches(t *testing.T) {
	msg := "[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 6] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives. This typically indicates a NCCL/CUDA API hang blocking the watchdog."
	lines := wrapAt(msg, 116)
	require.GreaterOrEqual(t, len(lines), 3)
	require.NotContains(t, lines[0], "watchdog got stuck", "the test must cut the phrase at the first wrap")
	const stuck = "collective-timeout/nccl-heartbeat-monitor"
	res := scan(t, "step 10 | loss 2.31\n"+strings.Join(lines, "\n")+"\n", 1<<20)
	f := findingOfRule(res.findings, stuck)
	require.NotNil(t, f, "%v", res.findings)
	require.Equal(t, 2, f.Evidence[0].Line, "the evidence is the message's first physical line")
	require.Equal(t, 6, f.Rank)

	// The first piece followed by a line of another length: no width is shown, no join.
	res = scan(t, "step 10 | loss 2.31\n"+lines[0]+"\n"+lines[1][:60]+"\n", 1<<20)
	require.Nil(t, findingOfRule(res.findings, stuck))
}
