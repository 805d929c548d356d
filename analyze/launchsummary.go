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
	raised, quieting := false, false
	for i, l := range lines {
		switch k := kinds[i]; {
		case k == kindNone && !raised:
		case k == kindException && !isSummaryLine(l.text) && !peerGone(l.text):
			raised = raised || l.line > lastProgress
		case raised && (k == kindExit || k == kindSignal) && isSummaryLine(l.text):
			kinds[i], quieting = kindNone, true
		case k == kindNone && raised && !quieting && workerWentOn(l.text):
			// The worker printed on after the exception: it was caught, and the report
			// below is of another death.
			raised = false
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

// workerWentOn says whether t, a line of no kind after a worker's exception, is the worker's
// own output (a log record, a message) rather than a traceback's frame, a blank line or a
// launcher's chatter as it stops the other workers.
func workerWentOn(t []byte) bool {
	trim := bytes.TrimSpace(t)
	if len(trim) == 0 || t[0] == ' ' || t[0] == '\t' || bytes.HasPrefix(trim, []byte("Traceback (most recent call last)")) {
		return false
	}
	for _, w := range []string{"torch.distributed.elastic", "torch/distributed/elastic", "launch.py:", "LAUNCH ", "closing signal", "Killing subprocess", "Container rank", "env {", "tcp_store.cc", "During handling of the above exception", "The above exception was the direct cause", "wandb:"} {
		if bytes.Contains(trim, []byte(w)) {
			return false
		}
	}
	return true
}

// peerGone says whether exception line t says only that another process went away (c10d's
// "... got error: Connection reset by peer. This may indicate a possible application crash on
// rank 0"): the worker raised because a peer died, and the launcher's report of a death below it
// may be that peer's, so it does not explain the report.
func peerGone(t []byte) bool {
	for _, w := range []string{"possible application crash", "Connection reset by peer", "Connection closed by peer", "remote process exited"} {
		if bytes.Contains(t, []byte(w)) {
			return true
		}
	}
	return false
}
