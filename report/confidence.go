package report

import (
	"strings"

	"github.com/coroner-dev/coroner/analyze"
)

// ConfidenceText says in words how sure the root cause is, for people: a specific rule on
// unambiguous evidence, the second tier's "likely", or "could not tell", and why when the
// reason is not the usual one for that level (a symptom that names no cause, a cut frame).
func (rc *RootCause) ConfidenceText() string {
	switch {
	case rc.Confidence == analyze.ConfidenceMedium && rc.Basis == analyze.BasisSymptom:
		return "medium — a specific rule matched, but its words name no cause of their own (a peer gone, a launcher's abort): the rank that failed first may be in a log that is not here"
	case rc.Confidence == analyze.ConfidenceMedium && rc.Basis == analyze.BasisOneRow:
		return "medium — a specific rule matched, but on one row at the end of a job still running: the next row may be finite again"
	case rc.Confidence == analyze.ConfidenceMedium && rc.Basis == analyze.BasisRecentStall:
		return "medium — a specific rule matched a stall, but the job was still running and was collected soon after it (within the stuck threshold): the ranks it waits for may still come"
	case rc.Confidence == analyze.ConfidenceMedium && rc.Basis == analyze.BasisUsualCause:
		return "medium — a launcher reported the signal a process died of, and its usual cause is named (the OOM killer for a SIGKILL), not one the log shows: check the pod's last state or the node's kernel log"

	case rc.Confidence == analyze.ConfidenceLow && rc.Basis == analyze.BasisKillAfterTimeout:
		return "low — could not tell for sure: a launcher reported a SIGKILL (usually the OOM killer), but the same log shows a collective that had already timed out before it, and a launcher notices a dead worker within seconds, so the kill did not start that wait (a rank stuck swapping may have been killed at last); check the pod's last state or the node's kernel log"
	case rc.Confidence == analyze.ConfidenceLow && rc.Basis == analyze.BasisKillAfterTerm:
		return "low — could not tell for sure: a launcher reported a SIGKILL (usually the OOM killer), but the same log shows the process was sent SIGTERM before it, and a runner sends SIGKILL to what does not exit within its grace period; look for what stopped it (a timeout, a state set from outside, a deleted pod)"
	case rc.Confidence == analyze.ConfidenceLow && rc.Basis == analyze.BasisPossibleCauses:
		return "low — could not tell for sure: named only from a message's list of the causes the failure might have, not one it had"
	case rc.Confidence == analyze.ConfidenceLow && rc.Basis == analyze.BasisLibraryCall:
		return "low — could not tell for sure: named from where a class was constructed with an argument it does not take (inside an installed package, which two packages at versions that do not fit together do most often), not from the error's words"
	case rc.Confidence == analyze.ConfidenceLow && rc.Basis == analyze.BasisLoneStall:
		return "low — could not tell for sure: a stall was reported once, and such a report repeats while the stall lasts; nothing after it (the log, or a bundle collected within minutes of it) shows whether the job went on or stopped"
	case rc.Confidence == analyze.ConfidenceLow && rc.Basis == analyze.BasisFrame:
		return "low — could not tell for sure: named from the innermost frame of a traceback cut before its exception line"
	}
	switch rc.Confidence {
	case analyze.ConfidenceHigh:
		return "high — a specific rule matched"
	case analyze.ConfidenceMedium:
		if rc.RuleID != "" && !strings.HasPrefix(rc.RuleID, analyze.SecondTierRuleID) {
			// A generic rule (an abort, a launcher's summary) at medium: the failure's words
			// agreed on its category, but no rule names the message the process failed on.
			return "medium — likely: a generic rule matched (it says that the process failed, not why) and the words of the failure agree, but no specific rule names the message it failed on"
		}
		return "medium — likely: no specific rule matched, the cause was named from the words of the failure (the terms in its title)"
	case analyze.ConfidenceLow:
		return "low — could not tell for sure: only an exit code, a signal, a generic exception or retries that never succeed say that it failed"
	}
	return ""
}

// Hedged says whether the root cause is less than sure, so that a summary says so.
func (rc *RootCause) Hedged() bool {
	return rc.Confidence != "" && rc.Confidence != analyze.ConfidenceHigh
}
