package analyze

import "bytes"

// quietSummaries keeps a launcher's report of a worker's death from naming the failure when
// the worker's own exception is above it: torchelastic's agent line ("failed (exitcode: -9)
// local_rank: 0") and failure table ("traceback : Signal 9 (SIGKILL) received by PID 812"),
// the DeepSpeed launcher's "exits with return code = 1", Paddle's "ABORT!!! Out of all 4
// trainers". Without @record every row of torchelastic's table has error_file <N/A>, and its
// "Root Cause" is whichever process the agent listed first, often a peer it killed after
// another rank raised: the signal in the row is the agent's, the exception the failure.
// Only a worker's exception counts (a launcher's own, ChildFailedError or CalledProcessError,
// reports the same death), printed after the last training progress.
func quietSummaries(lines []tailLine, kinds []lineKind, lastProgress int) {
	raised := false
	for i, l := range lines {
		switch k := kinds[i]; {
		case k == kindNone:
		case k == kindException && !isSummaryLine(l.text):
			raised = raised || l.line > lastProgress
		case raised && (k == kindExit || k == kindSignal) && isSummaryLine(l.text):
			kinds[i] = kindNone
		}
	}
}

// isSummaryLine says whether t is a launcher's summary of a process's end (launcherLine),
// the exception a launcher raises for it, or paddle.distributed.launch's report of its
// container ("Container rank 0 status failed cmd [...] code 1 log log/workerlog.0":
// PaddlePaddle/PaddleDetection#7380, PaddlePaddle/Paddle#52213) and exit ("LAUNCH INFO
// 2022-11-21 02:35:54,390 Exit code 1", its controller's finalize), which come after the
// worker log's tail it prints.
func isSummaryLine(t []byte) bool {
	w := tailWordsOf(t)
	return launcherLine.matchWith(bytes.TrimSpace(t), w&launcherLine.bit != 0) ||
		bytes.Contains(t, []byte("failed (exitcode: ")) || bytes.Contains(t, []byte("CalledProcessError")) ||
		bytes.Contains(t, []byte(" status failed cmd [")) ||
		bytes.HasPrefix(t, []byte("LAUNCH ")) && bytes.Contains(t, []byte(" Exit code "))
}
